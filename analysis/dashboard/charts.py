"""The charts of a grid study's dashboard view (plotly): ACC and BWT_f per setting, accuracy per
task over rounds, a per-round value with its 95% band, and bytes against ACC with the Pareto
front. Every chart takes the view's trials (or rounds) and `keys`, the settings the study
varies there in the order it declares them; the bars also take `axes`, those keys grouped per
axis of the study's space (`views.declared_axes`)."""
from __future__ import annotations

import math
from typing import Callable

import pandas as pd
import plotly.graph_objects as go

from analysis.labels import key_symbol
from analysis.methods import METRICS
from analysis.seed_stats import seed_summary
from analysis.study_tables import fmt_value
from fcl.results_io import per_distinct_row


def setting_label(row: pd.Series, keys: list[str]) -> str:
    """`fedadam, η=0.5` (a key whose symbol is "" shows its value alone)."""
    parts = []
    for k in keys:
        name = key_symbol(k)
        parts.append(fmt_value(row[k]) if name == "" else f"{name}={fmt_value(row[k])}")
    return ", ".join(parts) or "all trials"


def settings_labels(df: pd.DataFrame, keys: list[str]) -> pd.Series:
    """Each row's `setting_label`, made once per distinct setting (a rounds table repeats its
    trial's on every row)."""
    if not len(df):
        return pd.Series(dtype=str)
    if not keys:
        return pd.Series("all trials", index=df.index)
    return pd.Series(per_distinct_row(df[keys], lambda row: setting_label(row, keys)),
                     index=df.index)


Labeller = Callable[[pd.DataFrame, list[str]], pd.Series]   # rows, keys -> a setting's name


def bar_axes(keys: list[str], axes: list[list[str]] | None = None
             ) -> tuple[list[str], list[str]]:
    """(keys along x, keys for colour): the last axis the study declares colours the bars, the
    others lie along x; a variant axis (keys set together, e.g. an adapter with its rank) stays
    whole: its keys are no grid to split between x and colour. One axis: no colour. `axes`:
    `keys` grouped per declared axis, in the study's order (None: each key its own axis)."""
    axes = axes if axes is not None else [[k] for k in keys]
    colour = axes[-1] if len(axes) > 1 else []
    return [k for k in keys if k not in colour], colour


METRIC_TITLES = dict(METRICS)            # acc -> "ACC (%)", bwt_f -> "BWT_f (points; ...)"
MANY = 6                                 # more settings than this: lines without bands
PERCENT = {"acc": (0.0, 100.0), "drop_share": (0.0, 100.0)}   # metrics that live in 0-100


def metric_chart(trials: pd.DataFrame, keys: list[str], metric: str, title: str,
                 axes: list[list[str]] | None = None, labels: Labeller | None = None
                 ) -> go.Figure:
    """`metric` per setting, a dot with its 95% interval over seeds. `labels`: as `task_curves`
    takes it; one with an `order(rows, keys)` also orders the x axis."""
    xkeys, colour = bar_axes(keys, axes)
    name = labels or settings_labels
    t = trials.assign(_x=name(trials, xkeys).to_numpy())
    fig = go.Figure()
    groups = list(t.groupby(colour, sort=True, dropna=False)) if colour else [((), t)]
    ends = []
    bounds = PERCENT.get(metric)
    for _, g in groups:
        s = seed_summary(g, ["_x"], metric)
        ci = s["ci95"].fillna(0)
        high, low = s["mean"] + ci, s["mean"] - ci
        if bounds:          # an interval stays inside what the metric can take (ACC: 0-100)
            high, low = high.clip(upper=bounds[1]), low.clip(lower=bounds[0])
        ends += [low.min(), high.max()]
        blown = s["_x"].map(diverged_counts(g, "_x")).fillna(0).astype(int)
        marks = [f"{n} diverged" if n else "" for n in blown]
        # dots, not bars: a bar from an axis fitted to 58-65 makes a 1-point gap look large
        fig.add_scatter(x=s["_x"], y=s["mean"], mode="markers+text", marker=dict(size=10),
                        name=name(g.iloc[:1], colour).iloc[0] if colour
                        else METRIC_TITLES.get(metric, metric),
                        error_y=dict(type="data", symmetric=False,
                                     array=(high - s["mean"]).tolist(),
                                     arrayminus=(s["mean"] - low).tolist(), visible=True),
                        text=marks, textposition="top center", customdata=list(zip(s["n"], marks)),
                        hovertemplate="%{x}: %{y:.2f} (n=%{customdata[0]}) %{customdata[1]}")
    fig.update_layout(title=title, scattermode="group",
                      yaxis_title=METRIC_TITLES.get(metric, metric), height=380,
                      margin=dict(t=50, b=60),
                      legend_title=", ".join(key_symbol(k) or k for k in colour) or None)
    if ends:        # fitted to the means and their intervals: 58-65% is not flattened by 0
        low, high = fitted_range(min(ends), max(ends))
        fig.update_yaxes(range=[max(low, bounds[0]), min(high, bounds[1])] if bounds
                         else [low, high])
    if xkeys:       # x in the order of the values (rank 8 before 16), not of the labels' text
        order = (labels.order(t, xkeys) if hasattr(labels, "order") else
                 t.sort_values(xkeys, kind="stable")["_x"].drop_duplicates().tolist())
        fig.update_xaxes(categoryorder="array", categoryarray=order)
    return fig


def diverged_counts(trials: pd.DataFrame, by: str) -> pd.Series:
    """Per value of `by`, how many trials diverged (trials.parquet's `diverged`; studies stored
    before the flag have no such column and count none): a bar's mean then includes failed
    optimisations, so the bar says so."""
    if "diverged" not in trials:
        return pd.Series(dtype=int)
    return trials["diverged"].fillna(False).astype(bool).groupby(trials[by]).sum()


def fitted_range(low: float, high: float, margin: float = 0.08) -> list[float]:
    """[low, high] widened by `margin` of its span on each side (a flat span: by 1)."""
    pad = (high - low) * margin if high > low else 1.0
    return [low - pad, high + pad]


def phase_shapes(fig: go.Figure, trials: pd.DataFrame) -> None:
    """Dashed lines where each phase (a new task) starts, when every setting shares them."""
    if trials["rounds"].nunique() != 1 or trials["data.num_tasks"].nunique() != 1:
        return                  # the boundaries differ between settings: none drawn
    rounds, tasks = int(trials["rounds"].iloc[0]), int(trials["data.num_tasks"].iloc[0])
    for p in range(1, tasks):
        fig.add_vline(x=p * rounds // tasks - 0.5, line_dash="dash", line_color="grey",
                      line_width=1)


def task_curves(rounds: pd.DataFrame, trials: pd.DataFrame, keys: list[str],
                labels: Labeller | None = None) -> go.Figure:
    """Mean accuracy (over seeds) of every task at each evaluated round; a menu picks the
    setting, whose T curves are shown together. It opens on the setting with the best mean
    ACC (`trials`' `acc`, where given), the menu listing that one first. `labels`: a
    setting's name from its rows and `keys` (default `settings_labels`)."""
    labels = labels or settings_labels
    ev = rounds[rounds["accuracy"].notna()]
    ev = ev.assign(_s=labels(ev, keys))
    settings = sorted(ev["_s"].unique())
    if "acc" in trials and len(trials) and all(k in trials for k in keys):
        acc = trials.assign(_s=labels(trials, keys)).groupby("_s")["acc"].mean()
        best = acc.reindex(settings).idxmax() if acc.reindex(settings).notna().any() else None
        if best is not None:
            settings = [best] + [s for s in settings if s != best]
    fig = go.Figure()
    owner = []
    for s in settings:
        stats = seed_summary(ev[ev["_s"] == s], ["task", "round"], "accuracy")
        for task, g in stats.groupby("task"):
            fig.add_scatter(x=g["round"], y=g["mean"], mode="lines+markers",
                            name=f"task {task}", visible=(s == settings[0]),
                            legendgroup=str(task),
                            hovertemplate=f"{s}, task {task}: " + "%{y:.2f} @ round %{x}")
            owner.append(s)
    buttons = [dict(label=s, method="update",
                    args=[{"visible": [o == s for o in owner]},
                          {"title": f"accuracy per task: {s}"}])
               for s in settings]
    best = " (best ACC)" if "acc" in trials and len(settings) > 1 else ""
    fig.update_layout(title=f"accuracy per task: {settings[0] if settings else ''}{best}",
                      xaxis_title="round", yaxis_title="accuracy (%)", height=400,
                      updatemenus=[dict(buttons=buttons, x=0.0, y=1.02, xanchor="left",
                                        yanchor="bottom")]
                      if len(settings) > 1 else [], margin=dict(t=100), title_y=0.97)
    phase_shapes(fig, trials)
    return fig


def band_curves(df: pd.DataFrame, value: str, keys: list[str], title: str, ytitle: str,
                trials: pd.DataFrame, floor: float | None = None,
                labels: Labeller | None = None) -> go.Figure:
    """`value` over rounds per setting: the mean over seeds with its 95% band (cut at
    `floor`: drift is >= 0). `labels`: as `task_curves` takes it."""
    df = df.assign(_s=(labels or settings_labels)(df, keys))
    fig = go.Figure()
    many = df["_s"].nunique() > MANY
    if many:
        title += f" · {df['_s'].nunique()} settings: bands left out (group by in the run table)"
    for i, (s, g) in enumerate(df.groupby("_s", sort=True)):
        st = seed_summary(g, ["round"], value).sort_values("round")
        ci = st["ci95"].fillna(0)
        colour = f"hsl({(i * 67) % 360},60%,45%)"
        if not many:
            fig.add_scatter(x=pd.concat([st["round"], st["round"][::-1]]),
                            y=pd.concat([st["mean"] + ci,
                                         (st["mean"] - ci).clip(lower=floor)[::-1]]),
                            fill="toself", line=dict(width=0), fillcolor=colour, opacity=0.2,
                            hoverinfo="skip", showlegend=False, legendgroup=s)
        fig.add_scatter(x=st["round"], y=st["mean"], mode="lines", name=s, legendgroup=s,
                        line=dict(color=colour))
    fig.update_layout(title=title, xaxis_title="round", yaxis_title=ytitle, height=400)
    phase_shapes(fig, trials)
    return fig


def pareto_chart(trials: pd.DataFrame, keys: list[str], labels: Labeller | None = None
                 ) -> go.Figure:
    """Bytes sent over the whole run against ACC per setting, and the front of the settings
    that beat every cheaper one. `labels`: as `task_curves` takes it."""
    t = trials.assign(_s=(labels or settings_labels)(trials, keys),
                      _mb=(trials["bytes_up"] + trials["bytes_down"]) / 1e6)
    acc = seed_summary(t, ["_s"], "acc")
    mb = t.groupby("_s")["_mb"].mean().rename("mb").reset_index()
    s = acc.merge(mb, on="_s").sort_values("mb")
    front, best = [], -float("inf")
    for _, r in s.iterrows():        # cheapest first: on the front if it beats every cheaper one
        if r["mean"] > best:
            front.append(r)
            best = r["mean"]
    fig = go.Figure()
    front = pd.DataFrame(front)
    # labelled: the front's settings, one per cluster of near-equal cost (the best of it);
    # labels of settings that cost the same would pile up
    cluster = (front["mb"].map(lambda v: float(f"{v:.2g}")) if len(front)
               else pd.Series(dtype=float))
    on_front = set(front.loc[front.groupby(cluster)["mean"].idxmax(), "_s"]) if len(front) \
        else set()
    fig.add_scatter(x=s["mb"], y=s["mean"], mode="markers+text", name="settings",
                    text=[x if x in on_front else "" for x in s["_s"]],   # the rest on hover
                    textposition="top center", customdata=s["_s"], cliponaxis=False,
                    hovertemplate="%{customdata}: ACC %{y:.2f} at %{x:.3g} MB",
                    error_y=dict(type="data", array=s["ci95"].fillna(0).tolist(), visible=True))
    fig.add_scatter(x=front["mb"], y=front["mean"], mode="lines", name="Pareto front",
                    line=dict(dash="dot"))
    fig.update_layout(title="bytes (up + down, whole run) vs ACC; labels: the settings on the "
                            "front", xaxis_type="log",
                      xaxis_title="MB communicated per run (log)", yaxis_title="ACC (%)",
                      height=420, margin=dict(t=60))
    if len(s) and (s["mb"] > 0).all():    # padded: a label centred on the cheapest point fits
        low, high = math.log10(s["mb"].min()), math.log10(s["mb"].max())
        pad = max((high - low) * 0.15, 0.3)
        fig.update_xaxes(range=[low - pad, high + pad])
    return fig
