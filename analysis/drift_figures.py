"""The drift_correction study (studies/drift_correction.py): client-side correction (FedProx,
SCAFFOLD), server-side adaptivity (FedAdam) and both, per task order.

A *method* is the pair (client algorithm, server optimizer): FedAvg is plain SGD clients with
FedSGD at eta = 1; "FedAdam+SCAFFOLD" is SCAFFOLD clients with FedAdam. The figure draws ACC and
BWT_f (the boundary drops of Eq. 10; closer to 0 is better) per method, one bar per task order,
as the mean over seeds with its 95% t-interval; the table holds the same numbers.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from analysis.figure_files import Produced, markdown_table, save_figure, save_table
from analysis.seed_stats import seed_summary
from analysis.study_tables import Study, facets, fmt_value, require

METHOD_KEYS = ("client.algorithm", "client.prox_mu", "server.optimizer", "server.lr")
CLIENT_LABELS = {"sgd": "", "fedprox": "FedProx", "scaffold": "SCAFFOLD"}
SERVER_LABELS = {"fedadam": "FedAdam", "fedadagrad": "FedAdagrad", "fedyogi": "FedYogi"}
ORDER_LABELS = {"async": "Async FCL", "sync": "Sync FCL", "fmtl": "FMTL"}
METRICS = (("acc", "ACC (%)"), ("bwt_f", "BWT_f (points; 0 = no drop)"))


def method_label(algorithm: str, mu: float, optimizer: str, server_lr: float) -> str:
    """`FedAvg`, `FedProx μ=0.01`, `SCAFFOLD`, `FedAdam`, `FedAdam+FedProx μ=0.01`, ..."""
    client = CLIENT_LABELS.get(algorithm, algorithm)
    if algorithm == "fedprox":
        client += f" μ={fmt_value(float(mu))}"
    if optimizer == "fedsgd":
        server = "" if float(server_lr) == 1.0 else f"FedSGD η={fmt_value(float(server_lr))}"
    else:
        server = SERVER_LABELS.get(optimizer, optimizer)
    return "+".join(p for p in (server, client) if p) or "FedAvg"


def _sort_key(label: str) -> tuple:
    """FedAvg and the client-side methods first, then the server-side ones."""
    return (label.startswith(tuple(SERVER_LABELS.values())) or label.startswith("FedSGD"),
            "SCAFFOLD" in label, label)


def with_methods(trials: pd.DataFrame) -> pd.DataFrame:
    require(trials, (*METHOD_KEYS, "schedule.order", "acc", "bwt_f"), "drift_correction: "
            "trials.parquet")
    return trials.assign(method=[method_label(*row) for row in
                                 trials[list(METHOD_KEYS)].itertuples(index=False)])


def method_stats(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per method x task order x metric: mean, std, n, ci95 over seeds."""
    t = with_methods(trials)
    return pd.concat([seed_summary(t, ["method", "schedule.order"], m).assign(metric=m)
                      for m, _ in METRICS], ignore_index=True)


def drift_correction(study: Study, out: Path) -> Produced:
    panels = facets(with_methods(study.trials), (*METHOD_KEYS, "schedule.order", "method"))
    fig, axs = plt.subplots(len(panels), 2, figsize=(13, 4.2 * len(panels)), squeeze=False)
    summaries, drawn = [], {}
    for i, (ptitle, trials) in enumerate(panels):
        stats = method_stats(trials).assign(panel=ptitle)
        summaries.append(stats)
        methods = sorted(stats["method"].unique(), key=_sort_key)
        orders = [o for o in ORDER_LABELS if o in set(stats["schedule.order"])]
        width = 0.8 / max(len(orders), 1)
        for j, (metric, ylabel) in enumerate(METRICS):
            ax = axs[i][j]
            s = stats[stats["metric"] == metric]
            for k, order in enumerate(orders):
                row = s[s["schedule.order"] == order].set_index("method").reindex(methods)
                ax.bar(np.arange(len(methods)) + (k - (len(orders) - 1) / 2) * width,
                       row["mean"], width, yerr=row["ci95"].fillna(0), capsize=2,
                       label=ORDER_LABELS[order])
                drawn[f"{ptitle}|{metric}|{order}" if ptitle else f"{metric}|{order}"] = row
            ax.set_xticks(np.arange(len(methods)), methods, rotation=35, ha="right", fontsize=8)
            ax.axhline(0, color="black", linewidth=0.6)
            ax.set(ylabel=ylabel, title=f"{ylabel.split(' ')[0]}{' — ' + ptitle if ptitle else ''}")
            ax.legend(fontsize=8)
    fig.suptitle("Drift correction: client (FedProx, SCAFFOLD) vs server (FedAdam) vs both "
                 "(mean, 95% CI over seeds)")
    fig.tight_layout()
    data = pd.concat(summaries, ignore_index=True)
    paths = save_figure(fig, out, "drift_correction")
    paths += save_table(data, _markdown(data), out, "drift_correction_table")
    return Produced(paths, data, drawn)


def _markdown(data: pd.DataFrame) -> str:
    """Methods as rows; ACC and BWT_f per order as `mean ± ci95 (n)` columns."""
    orders = [o for o in ORDER_LABELS if o in set(data["schedule.order"])]
    blocks = []
    for ptitle, panel in data.groupby("panel", sort=True):
        header = ["method"] + [f"{m} {o}" for o in orders for m, _ in METRICS]
        rows = []
        for method in sorted(panel["method"].unique(), key=_sort_key):
            cells = [method]
            for o in orders:
                for m, _ in METRICS:
                    r = panel[(panel["method"] == method) & (panel["schedule.order"] == o)
                              & (panel["metric"] == m)]
                    cells.append("-" if r.empty else _cell(r.iloc[0]))
            rows.append(cells)
        title = f"**{ptitle}**\n\n" if ptitle else ""
        blocks.append(title + markdown_table(header, rows))
    return "Mean ± 95% CI half-width over seeds (n seeds).\n\n" + "\n".join(blocks)


def _cell(r: pd.Series) -> str:
    ci = "" if pd.isna(r["ci95"]) else f" ± {r['ci95']:.2f}"
    return f"{r['mean']:.2f}{ci} ({int(r['n'])})"


def dashboard_charts(trials: pd.DataFrame) -> list:
    """The dashboard's drift_correction tab: ACC and BWT_f per method, a bar per task order,
    with 95% intervals."""
    import plotly.graph_objects as go
    stats = method_stats(trials)
    methods = sorted(stats["method"].unique(), key=_sort_key)
    charts = []
    for metric, ylabel in METRICS:
        fig = go.Figure()
        s = stats[stats["metric"] == metric]
        for order in [o for o in ORDER_LABELS if o in set(s["schedule.order"])]:
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
