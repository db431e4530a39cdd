"""Figures 3, 4 and 5 of the FCL paper, each a function of one stored study.

Every function takes a `Study` and an output folder, writes `<name>.png` and `<name>.pdf`, and
returns `Produced` with the seed summary it drew. Seeds are aggregated as mean with a 95% band
(curves, bars) or mean +- std (heatmap cells); with one seed, the mean alone. Axes stay inside
the values a metric can take (accuracy 0-100, cosine distance from 0). A setting that varies in
the study but is not one of the figure's axes (say `server.tau`, or the data set) gets its own
panel, never an average.

How the paper is read:
- Fig. 3a "task-wise accuracy": each task's accuracy after the last round, per task order.
- Fig. 3b and 4b "cosine distance between the models from consecutive rounds": `cos_head`, the
  distance of a task's head (its fully connected layer) between consecutive server states; Fig. 3b
  averages it over the tasks updated in the round, Fig. 4b follows one task.
- Fig. 4a/4b "Task 1": task 0 (fcl numbers tasks from 0, as the CLI, the Parquet `task` column
  and the labels of every figure do); FedSGD against FedAdam at every server learning rate the
  study holds.
- Fig. 5: the caption and the text disagree on which of (a)/(b) is which; we follow the caption:
  5a = client x server learning rate, 5b = rounds x local epochs, 5c clients, 5d Dirichlet alpha
  (IID shown as alpha = inf, the limit), 5e straggler probability. ACC in a green map (darker is
  higher); BWT_f in a red-blue map centred at 0 (red: a drop, blue: a gain); each metric's colour
  scale is one for the whole figure and never narrower than a cell's 95% interval
  (`analysis/figures/heatmaps.py`).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from analysis.figures.curves import (VALUE_RANGE, clip_axis, curve_stats, draw_band, panels,
                                     partial_seeds, phase_boundaries, share_y, single_value,
                                     tag)
from analysis.figures.files import Produced, save_figure
from analysis.figures.heatmaps import heatmaps
from analysis.labels import FCL_ORDERS, OPTIMIZER_LABELS, ORDER_LABELS, over_seeds
from analysis.seed_stats import seed_summary
from analysis.study_tables import Study, fmt_value, require

TRACKED_TASK = 0


# --- Fig. 3 ------------------------------------------------------------------------------------
def fig3a(study: Study, out: Path) -> Produced:
    """Task-wise accuracy after the last round, one bar per task order, per task; the y axis is
    accuracy's 0-100 and each bar's 95% interval is cut to it."""
    rounds = study.need_rounds("fig3a")
    require(rounds, ("schedule.order", "rounds"), f"fig3a: {study.folder}/rounds.parquet")
    last = rounds[rounds["round"] == rounds["rounds"] - 1]
    facets = study.facets(last, ("schedule.order",))
    fig, axs = panels(len(facets))
    summaries = []
    for ax, (title, df) in zip(axs, facets):
        stats = seed_summary(df, ["schedule.order", "task"], "accuracy")
        orders = [o for o in FCL_ORDERS if o in set(stats["schedule.order"])] + sorted(
            set(stats["schedule.order"]) - set(FCL_ORDERS))
        tasks = sorted(stats["task"].unique())
        width = 0.8 / max(len(orders), 1)
        for i, order in enumerate(orders):
            s = stats[stats["schedule.order"] == order].set_index("task").reindex(tasks)
            ax.bar(np.arange(len(tasks)) + (i - (len(orders) - 1) / 2) * width, s["mean"],
                   width, yerr=_inside(s, VALUE_RANGE["accuracy"]), capsize=2,
                   label=ORDER_LABELS.get(order, order))
        ax.set_xticks(np.arange(len(tasks)), [f"T{t}" for t in tasks])
        ax.set(xlabel="task", ylabel="accuracy after the last round (%)", title=title)
        ax.set_ylim(*VALUE_RANGE["accuracy"])
        summaries.append(tag(stats, title))
    axs[-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    data = pd.concat(summaries, ignore_index=True)
    fig.suptitle("Fig. 3a: task-wise accuracy per task order "
                 f"({over_seeds(data['n'], 'and 95% CI')})")
    paths = save_figure(fig, out, "fig3a", study.provenance)
    return Produced(paths, data)


def _inside(s: pd.DataFrame, bounds: tuple[float, float]) -> np.ndarray:
    """Error bars (below, above) of mean +- ci95, cut to `bounds` (none for one seed)."""
    mean, ci = s["mean"].to_numpy(float), np.nan_to_num(s["ci95"].to_numpy(float))
    return np.vstack([mean - np.clip(mean - ci, *bounds), np.clip(mean + ci, *bounds) - mean])


def fig3b(study: Study, out: Path) -> Produced:
    """Cosine distance of the heads between consecutive rounds, averaged over updated tasks."""
    rounds = study.need_rounds("fig3b")
    require(rounds, ("schedule.order", "cos_head"), f"fig3b: {study.folder}/rounds.parquet")
    settings = [c for c in rounds.columns if "." in c or c in ("rounds", "dataset")]
    per_round = (rounds.groupby(["trial_id", "round"], sort=False)
                 .agg({"cos_head": "mean", **{c: "first" for c in settings}}).reset_index())
    return _round_lines(study, per_round, out, "fig3b", "cos_head", ["schedule.order"],
                        "cosine distance of the heads",
                        "Fig. 3b: client drift per task order",
                        lambda k: ORDER_LABELS.get(k[0], k[0]), evaluated_only=False)


# --- Fig. 4 ------------------------------------------------------------------------------------
def _fedsgd_vs_fedadam(rounds: pd.DataFrame) -> pd.DataFrame:
    one_task = rounds[rounds["task"] == TRACKED_TASK]
    wanted = one_task["server.optimizer"].isin(["fedsgd", "fedadam"])
    return one_task[wanted] if wanted.any() else one_task


def _opt_label(key: tuple) -> str:
    return f"{OPTIMIZER_LABELS.get(key[0], key[0])} η={fmt_value(key[1])}"


def fig4a(study: Study, out: Path) -> Produced:
    """Accuracy of task 0 over rounds, FedSGD vs FedAdam, phase boundaries dashed."""
    rounds = study.need_rounds("fig4a")
    require(rounds, ("server.optimizer", "server.lr"), f"fig4a: {study.folder}/rounds.parquet")
    return _round_lines(study, _fedsgd_vs_fedadam(rounds), out, "fig4a", "accuracy",
                        ["server.optimizer", "server.lr"], f"accuracy of task {TRACKED_TASK} (%)",
                        f"Fig. 4a: task {TRACKED_TASK} over rounds ({study.name})",
                        _opt_label, evaluated_only=True)


def fig4b(study: Study, out: Path) -> Produced:
    """Cosine distance of task 0's head between consecutive rounds: the drift spikes."""
    rounds = study.need_rounds("fig4b")
    require(rounds, ("server.optimizer", "server.lr", "cos_head"),
            f"fig4b: {study.folder}/rounds.parquet")
    return _round_lines(study, _fedsgd_vs_fedadam(rounds), out, "fig4b", "cos_head",
                        ["server.optimizer", "server.lr"],
                        f"cosine distance, task {TRACKED_TASK} head",
                        f"Fig. 4b: drift spikes ({study.name})",
                        _opt_label, evaluated_only=True)


def _line_order(key: tuple) -> tuple:
    """Task orders as the paper lists them (FMTL, sync, async), optimizers as in Table 3."""
    names = [*FCL_ORDERS, *OPTIMIZER_LABELS]
    return tuple((names.index(k), "") if k in names else (len(names), str(k)) for k in key)


def _round_lines(study: Study, df: pd.DataFrame, out: Path, name: str, value: str,
                 lines: list[str], ylabel: str, suptitle: str, label, evaluated_only: bool
                 ) -> Produced:
    if evaluated_only:       # accuracy exists at evaluated rounds only; cos_head where updated
        df = df[pd.to_numeric(df[value], errors="coerce").notna()]
    facets = study.facets(df, tuple(lines) + ("round",))
    fig, axs = panels(len(facets), width=6.0)
    summaries = []
    for ax, (title, sub) in zip(axs, facets):
        curves = curve_stats(sub, lines, value)
        for key in sorted(curves, key=_line_order):
            stats = curves[key]
            draw_band(ax, stats, "round", label(key), bounds=VALUE_RANGE.get(value))
            summaries.append(tag(stats, title))
        phase_boundaries(ax, single_value(sub, "rounds"), single_value(sub, "data.num_tasks"))
        clip_axis(ax, VALUE_RANGE.get(value))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set(xlabel="round", ylabel=ylabel, title=title)
        ax.legend(fontsize=8)
    share_y(axs)
    data = pd.concat(summaries, ignore_index=True)
    hollow = any(partial_seeds(stats).any() for stats in summaries)
    full = data.groupby("panel")["n"].transform("max")      # each line's seeds, per panel
    fig.suptitle(f"{suptitle} ({over_seeds(full, 'and 95% band')}"
                 + ("; hollow: fewer seeds" if hollow else "") + ")")
    paths = save_figure(fig, out, name, study.provenance)
    return Produced(paths, data)


# --- Fig. 5 ------------------------------------------------------------------------------------
def fig5a(study: Study, out: Path) -> Produced:
    return heatmaps(study, study.trials, out, "fig5a", "client.lr", "server.lr",
                     "Fig. 5a: client x server learning rate")


def fig5b(study: Study, out: Path) -> Produced:
    return heatmaps(study, study.trials, out, "fig5b", "client.local_epochs", "rounds",
                     "Fig. 5b: rounds x local epochs")


def fig5c(study: Study, out: Path) -> Produced:
    return heatmaps(study, study.trials, out, "fig5c", "data.num_clients", None,
                     "Fig. 5c: number of clients")


def fig5d(study: Study, out: Path) -> Produced:
    """Dirichlet alpha from IID (alpha = inf) down to the most skewed, left to right."""
    trials = study.trials.copy()
    require(trials, ("data.alpha",), "fig5d: trials.parquet")
    if "data.partition" in trials:
        iid = trials["data.partition"] == "iid"
        trials["data.alpha"] = trials["data.alpha"].astype(float).where(~iid, math.inf)
        trials = trials.drop(columns="data.partition")
    order = sorted(trials["data.alpha"].unique(), reverse=True)
    return heatmaps(study, trials, out, "fig5d", "data.alpha", None,
                     "Fig. 5d: non-IID (Dirichlet alpha; inf = IID)", col_order=order,
                     col_labels={math.inf: "iid"})


def fig5e(study: Study, out: Path) -> Produced:
    return heatmaps(study, study.trials, out, "fig5e", "participation.straggler_prob", None,
                     "Fig. 5e: straggler probability")
