"""The dashboard's view of a search (an Optuna study run by studies/search.py): every trial in
the order Optuna drew it with the best ACC so far, the sampled keys against ACC (parallel
coordinates, and one scatter per key), and the bytes-vs-ACC front where they differ.

Trials the ASHA scheduler stopped early are drawn too, at the ACC they had reached (open
markers), never dropped: a search's story is as much in what it stopped as in what it kept.
A trial run at several seeds (`--seeds N`) is one point: the mean over its seeds, marked
`N diverged` where N of them diverged.
"""
from __future__ import annotations

import warnings

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analysis.labels import key_symbol
from analysis.study_tables import NOT_A_SETTING, is_config_key
from fcl.results_io import EARLY_STOPPED as STOPPED
from fcl.results_io import OPTUNA_COLUMN as NUMBER
from fcl.results_io import TERMINATED

MARKERS = {TERMINATED: dict(symbol="circle", size=9, color="#1f77b4"),
           STOPPED: dict(symbol="circle-open", size=9, color="#d62728", line=dict(width=2))}


def per_trial(raw: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per Optuna trial (the mean over its seeds), finished or stopped early, with
    `value`: its final ACC, or the ACC it had reached when it was stopped; `keys`: the
    sampled keys, carried along."""
    shown = raw[raw["status"].isin([TERMINATED, STOPPED]) & raw[NUMBER].notna()].copy()
    shown["value"] = shown["acc"].where(shown["status"] == TERMINATED, shown["acc_reached"])
    shown["diverged"] = (shown["diverged"].fillna(False).astype(bool).astype(int)
                         if "diverged" in shown else 0)     # stored before the flag: none
    agg = {k: "first" for k in [*keys, "status", "round_reached", "rounds"] if k in shown}
    agg.update(value="mean", bytes_up="mean", bytes_down="mean", diverged="sum")
    out = shown.groupby(NUMBER, sort=True).agg(agg).reset_index()
    out[NUMBER] = out[NUMBER].astype(int)
    return out


def sampled_keys(trials: pd.DataFrame, keys: tuple[str, ...] | None = None) -> list[str]:
    """The config keys the search sampled (`keys`: its manifest's `varying`; None: every config
    column) that took more than one value, in column order (seeds and plumbing left out)."""
    return [c for c in trials.columns if (c in keys if keys is not None else is_config_key(c))
            and c not in NOT_A_SETTING and trials[c].nunique(dropna=True) > 1]


def history_chart(t: pd.DataFrame) -> go.Figure:
    """Each trial's ACC in Optuna's order, `N diverged` beside a trial whose seeds diverged
    (as the heatmaps mark their cells), and the best so far."""
    fig = go.Figure()
    for status, g in t.groupby("status"):
        label = "finished" if status == TERMINATED else "stopped early (ACC reached)"
        marks = [f"{n} diverged" if n else "" for n in g["diverged"].astype(int)]
        fig.add_scatter(x=g[NUMBER], y=g["value"], mode="markers+text", name=label,
                        marker=MARKERS.get(status, {}), text=marks, textposition="top center",
                        customdata=list(zip(g["round_reached"] + 1, marks)),
                        hovertemplate="trial %{x}: %{y:.2f} (after %{customdata[0]} rounds) "
                                      "%{customdata[1]}")
    done = t[t["status"] == TERMINATED].sort_values(NUMBER)
    fig.add_scatter(x=done[NUMBER], y=done["value"].cummax(), mode="lines",
                    line=dict(shape="hv", color="#2ca02c"), name="best ACC so far")
    fig.update_layout(title="ACC of each trial, in the order Optuna drew them, and the best so far",
                      xaxis_title="Optuna trial number", yaxis_title="ACC (%)", height=400)
    return fig


def _dimension(values: pd.Series, label: str) -> dict:
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        return dict(label=label, values=values.astype(float).tolist())
    cats = sorted(values.astype(str).unique())
    codes = values.astype(str).map({c: i for i, c in enumerate(cats)})
    return dict(label=label, values=codes.tolist(), tickvals=list(range(len(cats))),
                ticktext=cats)


def short(key: str) -> str:
    """A parallel axis' label: the key's symbol (`η`, `client lr`, `K`), else its last part."""
    return key_symbol(key) or key.split(".")[-1]


AXES_PER_LINE = 3        # the parallel chart's title names its axes, this many a line


def parallel_chart(t: pd.DataFrame, keys: list[str]) -> go.Figure:
    dims = [_dimension(t[k], short(k)) for k in keys]
    dims.append(_dimension((t["status"] == STOPPED).map({True: "stopped", False: "finished"}),
                           "status"))
    dims.append(dict(label="ACC (%)", values=t["value"].tolist()))
    fig = go.Figure(go.Parcoords(line=dict(color=t["value"].tolist(), colorscale="Viridis",
                                           showscale=True, colorbar=dict(title="ACC")),
                                 dimensions=dims, labelangle=-20, labelside="top"))
    names = [f"{short(k)} = {k}" for k in keys]
    lines = [", ".join(names[i:i + AXES_PER_LINE]) for i in range(0, len(names), AXES_PER_LINE)]
    # the title at the top, its lines above the axis labels Parcoords draws over the plot
    fig.update_layout(title=dict(text="sampled keys of every trial (colour: ACC; stopped trials "
                                      "at the ACC they reached)<br>axes: " + ",<br>".join(lines),
                                 yref="container", y=1, yanchor="top", pad=dict(t=12)),
                      height=420 + 20 * len(lines),
                      margin=dict(l=80, r=80, t=90 + 20 * len(lines)), title_font_size=13)
    return fig


def slice_chart(t: pd.DataFrame, keys: list[str]) -> go.Figure:
    cols = min(3, len(keys)) or 1
    rows = (len(keys) + cols - 1) // cols or 1
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=keys, horizontal_spacing=0.08,
                        vertical_spacing=0.25 / rows)
    for i, key in enumerate(keys):
        for status, g in t.groupby("status"):
            g = g[g[key].notna()]
            fig.add_scatter(x=g[key], y=g["value"], mode="markers", row=i // cols + 1,
                            col=i % cols + 1, marker=MARKERS.get(status, {}),
                            name="finished" if status == TERMINATED else "stopped early",
                            legendgroup=status, showlegend=i == 0, customdata=g[NUMBER],
                            hovertemplate=f"trial %{{customdata}}: {key}=%{{x}}, ACC %{{y:.2f}}")
        if key.endswith("lr") or key in ("server.tau", "data.alpha"):
            fig.update_xaxes(type="log", row=i // cols + 1, col=i % cols + 1)
    fig.update_layout(title="ACC against each sampled key", height=300 * rows,
                      yaxis_title="ACC (%)")
    return fig


def search_charts(raw: pd.DataFrame, keys: list[str] | None = None) -> list[go.Figure]:
    """The charts of a search view, from the study's whole trials table (`raw`: early-stopped
    trials included) and the keys it sampled (default: `sampled_keys(raw)`)."""
    keys = sampled_keys(raw) if keys is None else keys
    t = per_trial(raw, keys)
    keys = [k for k in keys if k in t]
    charts = [history_chart(t)]
    if keys:
        charts += [parallel_chart(t, keys), slice_chart(t, keys)]
        importance = importance_chart(t, keys)
        if importance is not None:
            charts.insert(1, importance)
    return charts


def distribution(values: pd.Series):
    """The Optuna distribution a stored key was drawn from, as well as its values tell: a
    float (log where it spans 10x or more, as the lr keys do), an int, or a category."""
    from optuna.distributions import (CategoricalDistribution, FloatDistribution,
                                      IntDistribution)
    v = values.dropna()
    if pd.api.types.is_bool_dtype(v) or not pd.api.types.is_numeric_dtype(v):
        return CategoricalDistribution(sorted(v.astype(str).unique())), str
    if pd.api.types.is_integer_dtype(v) or (v == v.round()).all() and v.abs().max() < 1e6 \
            and not pd.api.types.is_float_dtype(v):
        return IntDistribution(int(v.min()), int(v.max())), int
    low, high = float(v.min()), float(v.max())
    return FloatDistribution(low, high, log=low > 0 and high / low >= 10), float


def importances(t: pd.DataFrame, keys: list[str]) -> dict[str, float] | None:
    """Optuna's PED-ANOVA importance of each sampled key for ACC, over the finished trials (the
    stored ones rebuilt as an in-memory Optuna study); None with fewer than 4 trials or one
    key (nothing to apportion)."""
    import optuna
    done = t[(t["status"] == TERMINATED) & t["value"].notna()]
    keys = [k for k in keys if done[k].nunique(dropna=True) > 1]
    if len(done) < 4 or len(keys) < 2:
        return None
    dists = {k: distribution(done[k]) for k in keys}
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize")
    for _, r in done.iterrows():
        if any(pd.isna(r[k]) for k in keys):
            continue
        study.add_trial(optuna.trial.create_trial(
            params={k: cast(r[k]) for k, (_, cast) in dists.items()},
            distributions={k: d for k, (d, _) in dists.items()}, value=float(r["value"])))
    with warnings.catch_warnings():          # PED-ANOVA is marked experimental
        warnings.simplefilter("ignore")
        evaluator = optuna.importance.PedAnovaImportanceEvaluator()   # no scikit-learn needed
        return optuna.importance.get_param_importances(study, evaluator=evaluator)


FEW_TRIALS = 10          # fewer finished trials: the importance title says it is indicative


def importance_chart(t: pd.DataFrame, keys: list[str]) -> go.Figure | None:
    """A bar per sampled key: its share of ACC's variance over the finished trials (Optuna's
    PED-ANOVA evaluator, one of those optuna-dashboard offers)."""
    found = importances(t, keys)
    if not found:
        return None
    order = sorted(found, key=found.get)
    n = int(((t["status"] == TERMINATED) & t["value"].notna()).sum())
    fig = go.Figure(go.Bar(x=[found[k] for k in order], y=order, orientation="h",
                           text=[f"{found[k]:.2f}" for k in order], textposition="outside",
                           hovertemplate="%{y}: %{x:.3f}"))
    few = "<br>(so few: indicative only)" if n < FEW_TRIALS else ""
    fig.update_layout(title=f"hyperparameter importance for ACC (Optuna PED-ANOVA over {n} "
                            f"finished trials; sums to 1){few}", xaxis_title="importance",
                      height=120 + 40 * len(order), margin=dict(l=180, t=80 if few else 60),
                      xaxis_range=[0, max(found.values()) * 1.2])
    return fig
