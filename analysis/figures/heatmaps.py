"""The heatmaps of FCL Fig. 5: ACC and BWT_f per cell of one or two config axes, one row of two
maps per panel (a setting the study varies beside the axes), each cell `mean ± std` over its
seeds (the mean alone for one seed) and `N diverged` where seeds of it diverged.

Colour scales never stretch a difference smaller than the seeds' spread into full contrast:
- one scale per metric for the whole figure (every panel alike);
- never narrower than the widest 95% interval of a cell mean (2 x its t half-width), so that
  cells whose means differ by less than one interval show close colours;
- ACC on a sequential green map (darker is higher), inside 0-100;
- BWT_f on a diverging red-blue map centred at 0 and symmetric about it (red: a drop, blue: a
  gain, white: none), so that drops and gains both show;
- a cell whose same-seed difference from the panel's highest cell is not resolved (its 95%
  t-interval reaches 0) is hatched: a colour step is not read as an effect.
"""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

from analysis.figures.curves import tag
from analysis.figures.files import Produced, save_figure
from analysis.labels import over_seeds
from analysis.seed_stats import seed_summary, t975
from analysis.study_tables import Study, require

METRICS = (("acc", "ACC (%)"), ("bwt_f", "BWT_f (points)"))
ACC_DOMAIN = (0.0, 100.0)
STYLE = {"acc": dict(cmap="Greens", cbar_kws={"label": "ACC (%)"}),
         "bwt_f": dict(cmap="RdBu", cbar_kws={"label": "BWT_f (red: drop, blue: gain)"})}


def colour_limits(stats: pd.DataFrame, metric: str) -> tuple[float, float]:
    """(vmin, vmax) for `metric` from the seed summaries of every cell of a figure."""
    means, ci = stats["mean"].dropna(), stats["ci95"].dropna()
    widest = float(ci.max()) if len(ci) else 0.0           # the largest t half-width
    if metric == "bwt_f":                                  # symmetric about 0
        half = max(float(means.abs().max()) if len(means) else 0.0, widest) or 1.0
        return -half, half
    lo, hi = (float(means.min()), float(means.max())) if len(means) else ACC_DOMAIN
    width = max(hi - lo, 2 * widest) or 1.0
    vmin, vmax = (lo + hi - width) / 2, (lo + hi + width) / 2
    shift = max(ACC_DOMAIN[0] - vmin, 0.0) - max(vmax - ACC_DOMAIN[1], 0.0)
    return max(vmin + shift, ACC_DOMAIN[0]), min(vmax + shift, ACC_DOMAIN[1])


def heatmaps(study: Study, trials: pd.DataFrame, out: Path, name: str, cols: str,
             rows: str | None, title: str, col_order=None, col_labels=None) -> Produced:
    axes = tuple(a for a in (rows, cols) if a)
    require(trials, (*axes, "acc", "bwt_f"), f"{name}: trials.parquet")
    facets = study.facets(trials, axes)
    stats = {(i, m): seed_summary(df, list(axes), m)
             for i, (_, df) in enumerate(facets) for m, _ in METRICS}
    every = {m: pd.concat([stats[(i, m)] for i in range(len(facets))]) for m, _ in METRICS}
    scales = {m: colour_limits(every[m], m) for m, _ in METRICS}
    w = max(3.0, 1.2 * trials[cols].nunique() + 1.5)
    height = 0.9 * (trials[rows].nunique() if rows else 1) + 1.8
    fig, axs = plt.subplots(len(facets), 2, figsize=(2 * w, height * len(facets)), squeeze=False)
    drawn, summaries, any_diverged, any_tied = {}, [], False, False
    for i, (ptitle, df) in enumerate(facets):
        for j, (metric, label) in enumerate(METRICS):
            s = stats[(i, metric)]
            mean = _grid(s, rows, cols, "mean", col_order)
            blown = _diverged_grid(df, axes, rows, cols, col_order, mean)
            any_diverged = any_diverged or bool((blown > 0).any())
            sns.heatmap(mean.rename(columns=col_labels or {}), ax=axs[i][j],
                        annot=_annotations(mean, _grid(s, rows, cols, "std", col_order), blown),
                        fmt="", linewidths=0.5, annot_kws={"fontsize": 8},
                        vmin=scales[metric][0], vmax=scales[metric][1], **STYLE[metric])
            tied = _tied_with_best(df, axes, rows, cols, col_order, metric, mean)
            any_tied = any_tied or bool(tied.any())
            _hatch(axs[i][j], tied)
            axs[i][j].set(title=f"{label}{' — ' + ptitle if ptitle else ''}", xlabel=cols,
                          ylabel=rows or "")
            if rows is None:
                axs[i][j].set_yticks([])
            drawn[f"{ptitle}|{metric}" if ptitle else metric] = mean
            summaries.append(tag(s.assign(metric=metric), ptitle))
    diverged_note = "; 'N diverged': seeds whose run diverged" if any_diverged else ""
    diverged_note += ("; hatched: not separated from the panel's highest cell, same seeds"
                      if any_tied else "")
    fig.suptitle(f"{title} (cells: {over_seeds(every['acc']['n'])}{diverged_note})\n"
                 f"{_scale_note(scales, every)}", fontsize=10)
    fig.tight_layout()
    paths = save_figure(fig, out, name, study.provenance)
    return Produced(paths, pd.concat(summaries, ignore_index=True), drawn, scales)


def _scale_note(scales: dict, every: dict) -> str:
    widest = {m: every[m]["ci95"].max() for m in scales}
    if all(pd.isna(v) for v in widest.values()):
        return "colours: one scale per metric across the figure (1 seed: no interval to bound it)"
    acc, bwt = scales["acc"], scales["bwt_f"]
    return (f"colours: one scale per metric across the figure, never narrower than the widest "
            f"95% interval of a cell (ACC {acc[0]:.2f}-{acc[1]:.2f}, BWT_f ±{bwt[1]:.2f})")


def _annotations(mean: pd.DataFrame, std: pd.DataFrame, blown: np.ndarray) -> np.ndarray:
    """Each cell's text: `mean`, `± std` under it with 2 or more seeds, `N diverged`."""
    return np.vectorize(lambda m, s, n: "" if math.isnan(m) else (
        f"{m:.2f}" if math.isnan(s) else f"{m:.2f}\n±{s:.2f}") + (
        f"\n{n:.0f} diverged" if n > 0 else ""))(mean.to_numpy(float),
                                                 std.reindex_like(mean).to_numpy(float), blown)


def _tied_with_best(df: pd.DataFrame, axes: tuple, rows: str | None, cols: str, col_order,
                    metric: str, like: pd.DataFrame) -> np.ndarray:
    """Per cell, whether its same-seed difference from the highest cell of the panel has a 95%
    t-interval that reaches 0 (the highest cell itself: False; fewer than 2 shared seeds: True,
    nothing separates them), shaped as `like`."""
    by_cell = {k if isinstance(k, tuple) else (k,): g.groupby("seed")[metric].mean()
               for k, g in df.groupby(list(axes), dropna=False)}
    if len(by_cell) < 2 or "seed" not in df:
        return np.zeros(like.shape, bool)
    top = max(by_cell, key=lambda k: by_cell[k].mean())
    rows_out = []
    for key, values in by_cell.items():
        d = (by_cell[top] - values).dropna()
        n = len(d)
        tied = key != top and (n < 2 or d.mean() - t975(n - 1) * d.std() / math.sqrt(n) <= 0)
        rows_out.append({**dict(zip(axes, key)), "tied": float(tied)})
    grid = _grid(pd.DataFrame(rows_out), rows, cols, "tied", col_order)
    return grid.reindex_like(like).fillna(0).to_numpy(float) > 0


def _hatch(ax: plt.Axes, tied: np.ndarray) -> None:
    """Diagonal hatching over the cells marked in `tied` (row i, column j of the map)."""
    for i, j in zip(*np.nonzero(tied)):
        ax.add_patch(plt.Rectangle((j, i), 1, 1, fill=False, hatch="///", edgecolor="#222222",
                                   linewidth=0, alpha=0.8))


def _diverged_grid(df: pd.DataFrame, axes: tuple, rows: str | None, cols: str, col_order,
                   like: pd.DataFrame) -> np.ndarray:
    """Per heatmap cell, how many of its seeds diverged (`diverged` in trials.parquet; results
    stored before the flag count none), shaped as `like`."""
    if "diverged" not in df:
        return np.zeros(like.shape)
    counts = (df.assign(n=df["diverged"].fillna(False).astype(bool).astype(float))
              .groupby(list(axes), dropna=False)["n"].sum().reset_index())
    return _grid(counts, rows, cols, "n", col_order).reindex_like(like).fillna(0).to_numpy(float)


def _grid(stats: pd.DataFrame, rows: str | None, cols: str, value: str, col_order) -> pd.DataFrame:
    if rows is None:
        grid = stats.set_index(cols)[[value]].T
        grid.index = [""]
    else:
        grid = stats.pivot(index=rows, columns=cols, values=value)
    if col_order is not None:
        grid = grid[[c for c in col_order if c in grid.columns]]
    return grid
