"""The dashboard's charts of a study that compares methods (a variant axis setting the client
algorithm and the server optimizer together, as studies/drift_correction.py does): ACC and
BWT_f per method, a bar per task order, with 95% intervals over seeds; each bar says how
`analysis claims` judges it against FedAvg in the same task order, paired by seed."""
from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go

from analysis.dashboard.charts import fitted_range
from analysis.dashboard.optimizers import verdict_words
from analysis.labels import DRIFT_ORDERS, ORDER_LABELS, over_seeds
from analysis.methods import METRICS, method_order, method_stats, with_methods
from analysis.seed_stats import t975

# The axis that makes a study a comparison of methods (`fcl.manifest.Manifest.axes`).
METHOD_AXIS_KEYS = {"client.algorithm", "server.optimizer"}
REFERENCE = "FedAvg"


def versus_fedavg(trials: pd.DataFrame, metric: str) -> dict[tuple[str, str], tuple[str, str]]:
    """(method, task order) -> (`+1.20 ± 0.80 vs FedAvg: higher: holds`, its verdict words):
    the method's `metric` minus FedAvg's on the same seed and task order, mean and 95% interval
    over seeds, judged as `analysis claims` does (`optimizers.verdict_words`); none without a
    FedAvg run in that task order."""
    t = with_methods(trials)
    out = {}
    for order, g in t.groupby("schedule.order"):
        base = g[g["method"] == REFERENCE].groupby("seed")[metric].mean()
        if base.empty:
            continue
        for method, m in g[g["method"] != REFERENCE].groupby("method"):
            d = (m.groupby("seed")[metric].mean() - base).dropna()
            n = len(d)
            if not n:
                continue
            half = t975(n - 1) * d.std() / math.sqrt(n) if n > 1 else math.nan
            words = verdict_words(d.mean(), half, n)
            out[(method, order)] = (f"{d.mean():+.2f} ± {half:.2f} vs {REFERENCE}: {words}",
                                    words)
    return out


def method_charts(trials: pd.DataFrame) -> list[go.Figure]:
    stats = method_stats(trials)
    methods = sorted(stats["method"].unique(), key=method_order)
    charts = []
    for metric, ylabel in METRICS:
        fig = go.Figure()
        s = stats[stats["metric"] == metric]
        ci = s["ci95"].fillna(0)
        judged = versus_fedavg(trials, metric)
        for order in [o for o in DRIFT_ORDERS if o in set(s["schedule.order"])]:
            row = s[s["schedule.order"] == order].set_index("method").reindex(methods)
            said = [judged.get((m, order), ("", "")) for m in methods]
            fig.add_bar(x=methods, y=row["mean"].tolist(), name=ORDER_LABELS[order],
                        error_y=dict(type="data", array=row["ci95"].fillna(0).tolist(),
                                     visible=True),
                        text=[w.split(":")[0] if w.endswith("holds") else "" for _, w in said],
                        textposition="inside",
                        customdata=list(zip(row["n"].fillna(0).astype(int).tolist(),
                                            [line for line, _ in said])),
                        hovertemplate="%{x}: %{y:.2f} (n=%{customdata[0]}) %{customdata[1]}")
        fig.update_layout(title=f"{ylabel} per method and task order "
                                f"({over_seeds(s['n'], 'and 95% CI')})<br><sup>bar text: "
                                f"higher / lower than {REFERENCE} in the same task order on "
                                "the same seed, 95% CI (hover: the difference); blank: not "
                                "resolved</sup>",
                          barmode="group", yaxis_title=ylabel, height=400,
                          margin=dict(t=70, b=110))
        if len(s):           # fitted to the means and their intervals, not from 0
            fig.update_yaxes(range=fitted_range(float((s["mean"] - ci).min()),
                                                float((s["mean"] + ci).max())))
        charts.append(fig)
    return charts
