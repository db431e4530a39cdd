"""The charts that compare server optimizers in a grid study that varies `server.optimizer`
(studies/optimizers.py: optimizer x eta): accuracy over rounds and client drift as small
multiples, one panel per optimizer with a line per eta (mean over seeds, 95% band, shared y),
and the paired same-seed difference of each (optimizer, eta) to FedSGD at eta = 1 (FedAvg),
computed by `analysis.paired.paired`, what `python -m analysis paired` prints. Also the view's
"fixed: ..." line: the base settings (the manifest's) that decide such a comparison."""
from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analysis.claims.judging import HOLDS, Comparison, verdict
from analysis.dashboard.charts import settings_labels
from analysis.labels import key_symbol
from analysis.paired import paired
from analysis.seed_stats import seed_summary
from analysis.study_tables import facets, fmt_value

OPTIMIZER = "server.optimizer"
# Base settings that change what an optimizer comparison means, in the order the line shows.
FIXED_KEYS = ("server.tau", "server.beta1", "server.beta2", "server.bias_correction",
              "server.momentum", "server.aggregate", "schedule.order", "rounds",
              "data.num_clients", "data.num_tasks", "data.partition", "client.lr",
              "client.local_epochs", "client.algorithm", "model.adapter")
REFERENCE = {OPTIMIZER: "fedsgd", "server.lr": "1"}     # FedSGD with eta = 1 is FedAvg
# "this setting's ACC minus FedSGD's is above 0" / "below 0", judged as analysis claims does
HIGHER = Comparison("vs FedSGD", "acc", {}, {}, sign=1)
LOWER = Comparison("vs FedSGD", "acc", {}, {}, sign=-1)


def fixed_line(base: dict, varying: list[str], preset: str | None) -> str:
    """`fixed: server.tau=0.1 · server.aggregate=mean · ... · preset cifar10-local`: the
    manifest's base value of every FIXED_KEYS key the view does not vary."""
    parts = [f"{k}={fmt_value(base[k])}" for k in FIXED_KEYS if k in base and k not in varying]
    if preset:
        parts.append(f"preset {preset}")
    return "fixed: " + " · ".join(parts) if parts else ""


# plotly's default colours, in the order the ACC bars give them to eta, then more (12 lines
# before one repeats)
PALETTE = ("#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a", "#19d3f3", "#ff6692",
           "#b6e880", "#ff97ff", "#fecb52", "#1f77b4", "#8c564b")


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def small_multiples(per_round: pd.DataFrame, value: str, keys: list[str], title: str,
                    ytitle: str, floor: float | None = None, shared: bool = True) -> go.Figure:
    """One panel per optimizer (shared y unless `shared` is False: drift differs by orders
    of magnitude between optimizers, and one axis flattens the small ones), a line per
    remaining setting (eta): `value`'s mean over seeds per round with its 95% band, the band
    cut at `floor` (drift is >= 0)."""
    others = [k for k in keys if k != OPTIMIZER]
    opts = sorted(per_round[OPTIMIZER].unique())
    # a key with one value per optimizer (task_order: FedAdam at eta 0.5, FedSGD at 1) goes
    # to the panel's title: as a line's label it would give each line two legend entries
    per_opt = [k for k in others if len(opts) > 1
               and per_round.groupby(OPTIMIZER)[k].nunique(dropna=False).max() == 1]
    others = [k for k in others if k not in per_opt]
    first = per_round.drop_duplicates(OPTIMIZER).set_index(OPTIMIZER)
    titles = [" ".join([opt] + [f"{key_symbol(k) or k}={fmt_value(first.loc[opt, k])}"
                                for k in per_opt]) for opt in opts]
    fig = make_subplots(rows=1, cols=len(opts), shared_yaxes=shared, subplot_titles=titles,
                        horizontal_spacing=0.02 if shared else 0.05)
    per_round = per_round.assign(_line=settings_labels(per_round, others) if others else value)
    lines = (per_round.drop_duplicates(others).sort_values(others)["_line"].tolist()
             if others else [value])          # in the order of their values, as the ACC bars
    shown = set()                             # each line in the legend once, where it first is
    for col, opt in enumerate(opts, start=1):
        sub = per_round[per_round[OPTIMIZER] == opt]
        for i, name in enumerate(lines):
            g = sub[sub["_line"] == name]
            if g.empty:
                continue
            st = seed_summary(g, ["round"], value).sort_values("round")
            ci = st["ci95"].fillna(0)
            low = st["mean"] - ci
            low = low.clip(lower=floor) if floor is not None else low
            fig.add_scatter(x=pd.concat([st["round"], st["round"][::-1]]),
                            y=pd.concat([st["mean"] + ci, low[::-1]]), fill="toself",
                            mode="lines", line=dict(width=0), fillcolor=colour(i), opacity=0.2,
                            hoverinfo="skip", showlegend=False, legendgroup=name,
                            row=1, col=col)
            fig.add_scatter(x=st["round"], y=st["mean"], mode="lines", name=name,
                            legendgroup=name, showlegend=name not in shown,
                            line=dict(color=colour(i)),
                            hovertemplate=f"{opt}, {name}: " + "%{y:.3g} @ round %{x}",
                            row=1, col=col)
            shown.add(name)
    fig.update_layout(title=title, height=360, margin=dict(t=80),
                      legend_title=key_symbol(others[0]) if others else None)
    fig.update_xaxes(title_text="round")
    fig.update_yaxes(title_text=ytitle, row=1, col=1)
    return fig


def mean_accuracy_rounds(rounds: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per trial x evaluated round: the mean accuracy over the tasks evaluated then."""
    ev = rounds[rounds["accuracy"].notna()]
    cols = list(dict.fromkeys(["trial_id", "round", "seed", *keys]))
    return ev.groupby(cols, dropna=False, sort=True)["accuracy"].mean().reset_index()


def reference(trials: pd.DataFrame) -> dict[str, str] | None:
    """FedSGD at eta = 1 when the grid has it, else FedSGD at its largest eta; None: none."""
    sgd = trials[trials[OPTIMIZER] == "fedsgd"]
    if sgd.empty or "server.lr" not in trials:
        return None
    lrs = sgd["server.lr"].astype(float)
    return {OPTIMIZER: "fedsgd", "server.lr": fmt_value(1.0 if (lrs == 1.0).any() else lrs.max())}


def paired_tables(trials: pd.DataFrame, keys: list[str]) -> list[tuple[str, dict, pd.DataFrame]]:
    """(facet, reference, `analysis.paired.paired`'s table) per combination of the settings
    other than optimizer and eta (one facet "" when nothing else varies); facets without a
    FedSGD run, or where FedSGD at that eta is not one setting, are left out."""
    out = []
    for label, sub in facets(trials, (OPTIMIZER, "server.lr"), tuple(keys)):
        ref = reference(sub)
        if ref is None or sub[OPTIMIZER].nunique() < 2:
            continue
        try:
            out.append((label, ref, paired(sub, ref, ["acc"], tuple(keys))))
        except ValueError:         # the reference is not one of the study's settings: none to pair
            continue
    return [(label, ref, table) for label, ref, table in out if len(table)]


def paired_chart(trials: pd.DataFrame, keys: list[str]) -> go.Figure | None:
    """ACC of each (optimizer, eta) minus FedSGD's on the same seed (eta = 1, FedAvg, where
    it ran): mean and 95% interval over seeds; None without a FedSGD run or an eta axis."""
    if "server.lr" not in keys:
        return None
    tables = paired_tables(trials, keys)
    if not tables:
        return None
    rows = [t.assign(_f=label) for label, _, t in tables]
    table = pd.concat(rows, ignore_index=True)
    table["_words"] = [verdict_words(m, h, n) for m, h, n in
                       zip(table["acc diff"], table["acc ci95"], table["acc n"])]
    table["_y"] = [f"{o} η={fmt_value(lr)}{f' · {f}' if f else ''} — {w}" for o, lr, f, w in
                   zip(table[OPTIMIZER], table["server.lr"], table["_f"], table["_words"])]
    table = table.sort_values([OPTIMIZER, "server.lr", "_f"], ascending=False)
    fig = go.Figure()
    for i, (lr, g) in enumerate(table.groupby("server.lr", sort=True)):
        fig.add_bar(y=g["_y"], x=g["acc diff"], name=f"η={fmt_value(lr)}", orientation="h",
                    marker_color=colour(i),
                    error_x=dict(type="data", array=g["acc ci95"].fillna(0).tolist(),
                                 visible=True),
                    customdata=list(zip(g["acc n"], g["_words"])),
                    hovertemplate="%{y}: %{x:+.2f} (n=%{customdata[0]})")
    fig.add_vline(x=0, line_color="black", line_width=1)
    refs = sorted({ref["server.lr"] for _, ref, _ in tables})
    fig.update_layout(title=f"ACC − ACC of FedSGD η={'/'.join(refs)} on the same seed "
                            "(mean, 95% CI over seeds), with the verdict", barmode="overlay",
                      height=160 + 28 * len(table), xaxis_title="Δ ACC (points)",
                      legend_title="η", margin=dict(t=50, l=360),
                      yaxis=dict(categoryorder="array", categoryarray=table["_y"].tolist()))
    return fig


def verdict_words(mean: float, half: float, n: int) -> str:
    """How `analysis claims` would judge "differs from FedSGD" on this pair: `higher: holds`
    / `lower: holds` where the 95% interval lies on one side of 0, else `not resolved at n
    seeds` (`analysis.claims.judging.verdict`)."""
    n = int(n) if n == n else 0
    result = [(float(mean), float(half) if half == half else math.inf, n)]
    if verdict(result, [HIGHER]) == HOLDS:
        return "higher: holds"
    if verdict(result, [LOWER]) == HOLDS:
        return "lower: holds"
    return f"not resolved at {n} seed{'s' if n != 1 else ''}"


def verdict_line(trials: pd.DataFrame, keys: list[str]) -> str:
    """`ACC vs FedSGD η=1 on the same seed: fedadam η=0.5 +1.20 ± 0.80 higher: holds; the
    other 10: not resolved at 3 seeds`: the paired chart's verdicts in words, for the view's
    header ("" without a paired chart)."""
    if "server.lr" not in keys:
        return ""
    parts = []
    for label, ref, t in paired_tables(trials, keys):
        head = f"ACC vs FedSGD η={ref['server.lr']} on the same seed" + \
            (f" ({label})" if label else "")
        words = [verdict_words(r["acc diff"], r["acc ci95"], r["acc n"]) for _, r in t.iterrows()]
        held = [f"{r[OPTIMIZER]} η={fmt_value(r['server.lr'])} {r['acc diff']:+.2f} ± "
                f"{r['acc ci95']:.2f} {w}" for (_, r), w in zip(t.iterrows(), words)
                if w.endswith("holds")]
        rest = [w for w in words if not w.endswith("holds")]
        tail = (f"{'the other ' if held else 'all '}{len(rest)}: "
                f"{' / '.join(sorted(set(rest)))}") if rest else ""
        parts.append(f"{head}: " + "; ".join(held + ([tail] if tail else [])))
    return " | ".join(parts)


def optimizer_charts(trials: pd.DataFrame, rounds: pd.DataFrame | None,
                     keys: list[str]) -> list[go.Figure]:
    """The paired differences to FedSGD, and accuracy and drift over rounds per optimizer."""
    found = [c for c in [paired_chart(trials, keys)] if c is not None]
    if rounds is None or rounds.empty:
        return found
    acc = mean_accuracy_rounds(rounds, keys)
    found.append(small_multiples(acc, "accuracy", keys, "mean accuracy over tasks per "
                                 "optimizer (mean, 95% band over seeds)", "accuracy (%)"))
    drift = rounds.drop_duplicates(["trial_id", "round"])
    found.append(small_multiples(drift, "drift", keys, "client drift (Eq. 2) per optimizer "
                                 "(mean, 95% band over seeds, cut at 0; each panel its own y)",
                                 "drift", floor=0.0, shared=False))
    return found
