"""Beyond the papers: the drift_correction study (studies/drift_correction.py), client-side
correction (FedProx, SCAFFOLD), server-side adaptivity (FedAdam) and both, per task order.

Methods as in `analysis/methods.py` (FedAvg, FedProx μ=..., SCAFFOLD, FedAdam, FedAdam+SCAFFOLD,
...). The figure draws ACC and BWT_f (the boundary drops of Eq. 10; closer to 0 is better) per
method, one bar per task order, as the mean over seeds with its 95% t-interval; the table holds
the same numbers.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from analysis.figures.files import Produced, markdown_table, save_figure, save_table
from analysis.labels import DRIFT_ORDERS, ORDER_LABELS, over_seeds
from analysis.methods import METHOD_KEYS, METRICS, method_order, method_stats, with_methods
from analysis.study_tables import Study


def drift_correction(study: Study, out: Path) -> Produced:
    facets = study.facets(with_methods(study.trials), (*METHOD_KEYS, "schedule.order", "method"))
    fig, axs = plt.subplots(len(facets), 2, figsize=(13, 4.2 * len(facets)), squeeze=False)
    summaries, drawn = [], {}
    for i, (ptitle, trials) in enumerate(facets):
        stats = method_stats(trials).assign(panel=ptitle)
        summaries.append(stats)
        methods = sorted(stats["method"].unique(), key=method_order)
        orders = [o for o in DRIFT_ORDERS if o in set(stats["schedule.order"])]
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
    data = pd.concat(summaries, ignore_index=True)
    fig.suptitle("Drift correction: client (FedProx, SCAFFOLD) vs server (FedAdam) vs both "
                 f"({over_seeds(data['n'], 'and 95% CI')})")
    fig.tight_layout()
    paths = save_figure(fig, out, "drift_correction", study.provenance)
    paths += save_table(data, _markdown(data), out, "drift_correction_table",
                        study.provenance)
    return Produced(paths, data, drawn)


def _markdown(data: pd.DataFrame) -> str:
    """Methods as rows; ACC and BWT_f per order as `mean ± ci95 (n)` columns."""
    orders = [o for o in DRIFT_ORDERS if o in set(data["schedule.order"])]
    blocks = []
    for ptitle, panel in data.groupby("panel", sort=True):
        header = ["method"] + [f"{m} {o}" for o in orders for m, _ in METRICS]
        rows = []
        for method in sorted(panel["method"].unique(), key=method_order):
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
