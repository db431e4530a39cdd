"""The dashboard's view of a search (an Optuna study run by studies/search.py): every trial in
the order Optuna drew it with the best ACC so far, the sampled keys against ACC (parallel
coordinates, and one scatter per key), and the bytes-vs-ACC front where they differ.

Trials the ASHA scheduler stopped early are drawn too, at the ACC they had reached (open
markers), never dropped: a search's story is as much in what it stopped as in what it kept.
A trial run at several seeds (`--seeds N`) is one point: the mean over its seeds.
"""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

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
    agg = {k: "first" for k in [*keys, "status", "round_reached", "rounds"] if k in shown}
    agg.update(value="mean", bytes_up="mean", bytes_down="mean")
    out = shown.groupby(NUMBER, sort=True).agg(agg).reset_index()
    out[NUMBER] = out[NUMBER].astype(int)
    return out


def sampled_keys(trials: pd.DataFrame, keys: tuple[str, ...] | None = None) -> list[str]:
    """The config keys the search sampled (`keys`: its manifest's `varying`; None: every config
    column) that took more than one value, in column order (seeds and plumbing left out)."""
    return [c for c in trials.columns if (c in keys if keys is not None else is_config_key(c))
            and c not in NOT_A_SETTING and trials[c].nunique(dropna=True) > 1]


def history_chart(t: pd.DataFrame) -> go.Figure:
    fig = go.Figure()
    for status, g in t.groupby("status"):
        label = "finished" if status == TERMINATED else "stopped early (ACC reached)"
        fig.add_scatter(x=g[NUMBER], y=g["value"], mode="markers", name=label,
                        marker=MARKERS.get(status, {}), customdata=g["round_reached"],
                        hovertemplate="trial %{x}: %{y:.2f} (round %{customdata})")
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


def parallel_chart(t: pd.DataFrame, keys: list[str]) -> go.Figure:
    dims = [_dimension(t[k], k) for k in keys]
    dims.append(_dimension((t["status"] == STOPPED).map({True: "stopped", False: "finished"}),
                           "status"))
    dims.append(dict(label="ACC (%)", values=t["value"].tolist()))
    fig = go.Figure(go.Parcoords(line=dict(color=t["value"].tolist(), colorscale="Viridis",
                                           showscale=True, colorbar=dict(title="ACC")),
                                 dimensions=dims))
    fig.update_layout(title="sampled keys of every trial (colour: ACC; stopped trials at the "
                            "ACC they reached)", height=460, margin=dict(l=80, r=80, t=90))
    return fig


def slice_chart(t: pd.DataFrame, keys: list[str]) -> go.Figure:
    cols = min(3, len(keys)) or 1
    rows = (len(keys) + cols - 1) // cols or 1
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=keys)
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
    return charts
