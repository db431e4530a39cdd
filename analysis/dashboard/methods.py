"""The dashboard's charts of a study that compares methods (a variant axis setting the client
algorithm and the server optimizer together, as studies/drift_correction.py does): ACC and
BWT_f per method, a bar per task order, with 95% intervals over seeds."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from analysis.labels import DRIFT_ORDERS, ORDER_LABELS
from analysis.methods import METRICS, method_order, method_stats

# The axis that makes a study a comparison of methods (`fcl.manifest.Manifest.axes`).
METHOD_AXIS_KEYS = {"client.algorithm", "server.optimizer"}


def method_charts(trials: pd.DataFrame) -> list[go.Figure]:
    stats = method_stats(trials)
    methods = sorted(stats["method"].unique(), key=method_order)
    charts = []
    for metric, ylabel in METRICS:
        fig = go.Figure()
        s = stats[stats["metric"] == metric]
        for order in [o for o in DRIFT_ORDERS if o in set(s["schedule.order"])]:
            row = s[s["schedule.order"] == order].set_index("method").reindex(methods)
            fig.add_bar(x=methods, y=row["mean"].tolist(), name=ORDER_LABELS[order],
                        error_y=dict(type="data", array=row["ci95"].fillna(0).tolist(),
                                     visible=True),
                        customdata=row["n"].fillna(0).astype(int).tolist(),
                        hovertemplate="%{x}: %{y:.2f} (n=%{customdata})")
        fig.update_layout(title=f"{ylabel} per method and task order (mean, 95% CI over seeds)",
                          barmode="group", yaxis_title=ylabel, height=400,
                          margin=dict(t=50, b=110))
        charts.append(fig)
    return charts
