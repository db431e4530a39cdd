"""What the dashboard shows of a study, decided from its manifest (`Study.manifest`): a search
as a search (`Manifest.searcher`), a grid per data set with ACC and BWT_f per setting (the
settings: `Manifest.varying`, in the order the study declares them; the bars coloured by its
last axis, `Manifest.axes`), as methods where a variant axis sets the client algorithm and
the server optimizer together (`Manifest.axes`), and bytes against ACC where the study compares
messages (it varies the compression or the adapter, or its base config is a LoRA one). Every
view's header says the preset, data set and commit it was drawn from. A folder without a
manifest is refused before any view is drawn (`analysis/study_folder.py`)."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.dashboard import charts, optimizers, search
from analysis.dashboard.message_methods import message_method_labels
from analysis.dashboard.methods import METHOD_AXIS_KEYS, method_charts
from analysis.flocora_regime import regime_line
from analysis.labels import ORDER_LABELS, method_label, over_seeds
from analysis.methods import METHOD_KEYS
from analysis.seed_stats import per_trial_round
from analysis.seed_comparisons import rule_summary
from analysis.study_tables import Study, is_config_key
from fcl.results_io import EARLY_STOPPED

# Config keys whose values change what a message costs: a study varying one compares messages.
MESSAGE_KEYS = ("compression.", "model.adapter", "model.lora_")


@dataclass(frozen=True)
class View:
    key: str                 # "<study>/<data set>"
    title: str
    charts: list[dict]       # plotly figure specs (data + layout)
    note: str = ""           # under the title: what the study is, how to read it
    source: str = ""         # under the title: preset, data set and commit drawn from
    doc: str = ""            # the study's doc, first paragraph (the page title of one study)
    fixed: str = ""          # under the source: `fixed: server.tau=0.1 · ...` (the manifest's)
    runs: tuple[str, ...] = ()   # the run sets (ids) its run table shows (`runs.run_set`)
    why: tuple[str, ...] = ()    # lines under the source: why folders' numbers differ
    regime: tuple[str, ...] = ()     # under the source: the FLoCoRA regime (`regime_lines`)
    verdicts: str = ""       # the paired comparisons' verdicts, in words


def declared_axes(study: Study, keys: list[str]) -> list[list[str]]:
    """`keys` grouped per axis of the study's space (a variant axis sets several together), the
    axes and their keys in the order the study declares them (`Manifest.varying`)."""
    m = study.manifest
    axis_of = {k: axis for axis, axis_keys in m.axes.items() for k in axis_keys}
    groups: dict[str, list[str]] = {}
    for k in [k for k in m.varying if k in keys] + [k for k in keys if k not in m.varying]:
        groups.setdefault(axis_of.get(k, k), []).append(k)
    return list(groups.values())


def opens_first(study: Study) -> bool:
    """The study is about the server optimizer (its first declared axis): its view compares
    each optimizer to FedAvg, the page's headline comparison."""
    return study.manifest.varying[:1] == (optimizers.OPTIMIZER,)


def compares_methods(study: Study) -> bool:
    return any(METHOD_AXIS_KEYS <= set(keys) for keys in study.manifest.axes.values())


def compares_messages(study: Study, trials: pd.DataFrame) -> bool:
    mb = trials["bytes_up"] + trials["bytes_down"]
    if mb.nunique() > 1:
        return True
    m = study.manifest
    return (any(k.startswith(MESSAGE_KEYS) for k in m.varying)
            or m.base.get("model.adapter") == "lora")


def regime_lines(trials: pd.DataFrame, folder: str = "") -> tuple[str, ...]:
    """The regime line of FLoCoRA's figures (`analysis.flocora_regime`) on one line, prefixed
    with `folder` where given; none where no trial ran Table III's LoRA."""
    line = regime_line(trials)
    if line is None:
        return ()
    line = line.replace("\n", " ")
    return (f"{folder}: {line}" if folder else line,)


def method_labels(df: pd.DataFrame, keys: list[str]) -> pd.Series:
    """A setting of a study that compares methods, named as its bars name it: `FedProx
    μ=0.001, Async FCL` (the method, `analysis.labels.method_label`, then the task order and
    any other key as `charts.setting_label` writes it)."""
    if not len(df):
        return pd.Series(dtype=str)
    methods = [method_label(*r) for r in df[list(METHOD_KEYS)].itertuples(index=False)]
    rest = [k for k in keys if k not in METHOD_KEYS]
    df = df.assign(**{k: df[k].map(lambda v: ORDER_LABELS.get(v, v))
                      for k in rest if k == "schedule.order"})
    others = charts.settings_labels(df, rest) if rest else pd.Series([""] * len(df))
    return pd.Series([", ".join(p for p in (m, o) if p) for m, o in zip(methods, others)],
                     index=df.index)


def search_views(study: Study) -> list[View]:
    """A search as a search: one view of every trial it ran (early-stopped ones included)."""
    raw = pd.read_parquet(study.folder / "trials.parquet")
    keys = search.sampled_keys(raw, study.settings)
    found = search.search_charts(raw, keys)
    if compares_messages(study, study.trials):
        found.append(charts.pareto_chart(study.trials, [k for k in keys if k in study.trials][:2]))
    stopped = int((raw["status"] == EARLY_STOPPED).sum())
    title = (f"{study.name} · search ({raw['optuna_trial'].nunique()} Optuna trials, "
             f"{stopped} stopped early)")
    return [View(f"{study.name}/search", title, [c.to_plotly_json() for c in found],
                 study.doc, study.drawn_from(), study.doc, regime=regime_lines(study.trials))]


def grid_charts(study: Study, trials: pd.DataFrame, axes: list[list[str]]) -> list:
    """One data set's charts of a grid study over its varying keys, grouped per declared axis."""
    keys = [k for axis in axes for k in axis]
    labels = method_labels if compares_methods(study) and set(METHOD_KEYS) <= set(trials) \
        else message_method_labels(trials, axes)
    if compares_methods(study):       # settings that read better as methods
        found = method_charts(trials)
    else:
        per_setting = trials.groupby(keys, dropna=False)["seed"] if keys else trials["seed"]
        seeds = over_seeds(per_setting.nunique(), "and 95% CI")
        flat = bool((pd.to_numeric(trials["bwt_f"], errors="coerce").fillna(0) == 0).all())
        found = [charts.metric_chart(trials, keys, "acc", f"ACC per setting ({seeds})"
                                     + (" · BWT_f is 0 in every trial: no BWT_f chart"
                                        if flat else ""), axes, labels)]
        if not flat:
            found.append(charts.metric_chart(trials, keys, "bwt_f",
                                             f"BWT_f per setting ({seeds})", axes, labels))
    rounds = None if study.rounds is None else \
        study.rounds[study.rounds["trial_id"].isin(trials["trial_id"])]
    by_optimizer = optimizers.OPTIMIZER in keys and not compares_methods(study)
    if by_optimizer:                  # paired to FedSGD, accuracy and drift per optimizer
        found += optimizers.optimizer_charts(trials, rounds, keys)
    if rounds is not None:
        found.append(charts.task_curves(rounds, trials, keys, labels))
    if rounds is not None and not by_optimizer:
        carried = [c for c in rounds.columns if is_config_key(c) or c == "dataset"]
        drift = per_trial_round(rounds, "drift", carried)
        found.append(charts.band_curves(drift, "drift", keys, "client drift (Eq. 2) over "
                                        "rounds (mean, 95% band, cut at 0)", "drift", trials,
                                        floor=0.0, labels=labels))
    if compares_messages(study, trials):
        found.append(charts.pareto_chart(trials, keys, labels))
    return found


def study_views(study: Study) -> list[View]:
    """A search's one view, or a grid's view per data set."""
    if study.is_search:
        return search_views(study)
    views = []
    for dataset, trials in study.trials.groupby("dataset", sort=True):
        axes = declared_axes(study, study.varying(trials, exclude=("dataset",)))
        keys = [k for axis in axes for k in axis]
        found = grid_charts(study, trials, axes)
        views.append(View(f"{study.name}/{dataset}",
                          f"{study.name} · {dataset} ({len(trials)} trials)",
                          [c.to_plotly_json() for c in found],
                          study.doc + " Bars: mean over seeds with 95% t-intervals.",
                          study.drawn_from(dataset), study.doc,
                          optimizers.fixed_line(study.manifest.base, keys,
                                                study.manifest.preset),
                          verdicts=" · ".join(filter(None, (
                              optimizers.verdict_line(trials, keys)
                              if optimizers.OPTIMIZER in keys and not compares_methods(study)
                              else "", rule_summary(study.manifest.seeds_auto)))),
                          regime=regime_lines(trials)))
    return views
