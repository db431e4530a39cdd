"""Seed-aggregated curves over rounds (a mean line with its 95% band, phase boundaries), and the
row of panels every figure draws into."""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from analysis.seed_stats import seed_summary


# The range a metric can take: its band is drawn inside it (a t-interval over 2-3 seeds is
# symmetric and can reach below 0 for a cosine distance near 0); the CSVs keep the raw ci95.
VALUE_RANGE = {"accuracy": (0.0, 100.0), "mean_acc": (0.0, 100.0), "cos_head": (0.0, 2.0),
               "cos_module": (0.0, 2.0)}


def draw_band(ax: plt.Axes, stats: pd.DataFrame, x: str, label: str,
              bounds: tuple[float, float] | None = None, **line) -> None:
    """`stats` from `seed_summary`: the mean as a line with markers, mean +- ci95 shaded
    (inside `bounds`, the values the metric can take, where given)."""
    stats = stats.sort_values(x)
    xs, mean = stats[x].to_numpy(float), stats["mean"].to_numpy(float)
    ci = np.nan_to_num(stats["ci95"].to_numpy(float))
    low, high = mean - ci, mean + ci
    if bounds is not None:
        low, high = np.clip(low, *bounds), np.clip(high, *bounds)
    partial = partial_seeds(stats).to_numpy() if "n" in stats else np.zeros(len(xs), bool)
    (handle,) = ax.plot(xs, np.where(partial, np.nan, mean), marker="o", markersize=2.5,
                        linewidth=1.2, label=label, **line)
    if partial.any():          # fewer seeds: hollow markers on a thin line, no band
        ax.plot(xs, mean, linewidth=0.5, alpha=0.5, color=handle.get_color(), zorder=1)
        ax.plot(xs[partial], mean[partial], linestyle="none", marker="o", markersize=3,
                markerfacecolor="white", markeredgewidth=0.8, color=handle.get_color())
    ax.fill_between(xs, low, high, where=~partial, color=handle.get_color(), alpha=0.2,
                    linewidth=0, interpolate=False)


def clip_axis(ax: plt.Axes, bounds: tuple[float, float] | None) -> None:
    """The y axis kept inside the values the metric can take (no 0-100 accuracy axis runs to
    125 because an interval or a margin passes 100)."""
    if bounds is not None:
        low, high = ax.get_ylim()
        ax.set_ylim(max(low, bounds[0]), min(high, bounds[1]))


def curve_stats(df: pd.DataFrame, lines: list[str], value: str) -> dict[tuple, pd.DataFrame]:
    """{line key: seed summary over rounds} for each combination of the `lines` settings."""
    stats = seed_summary(df, [*lines, "round"], value)
    if not lines:
        return {(): stats}
    return {k if isinstance(k, tuple) else (k,): g for k, g in
            stats.groupby(lines, dropna=False, sort=True)}


def partial_seeds(stats: pd.DataFrame) -> pd.Series:
    """The points of a line that average fewer seeds than its others (a task not trained
    that round in some seed's order): drawn hollow and without a band, not as the same mean."""
    return stats["n"] < stats["n"].max()


def share_y(axs: list[plt.Axes]) -> None:
    """One y-scale for panels that are compared side by side (a spike is as tall in each)."""
    low = min(ax.get_ylim()[0] for ax in axs)
    high = max(ax.get_ylim()[1] for ax in axs)
    for ax in axs:
        ax.set_ylim(low, high)


def phase_boundaries(ax: plt.Axes, rounds: int, num_tasks: int) -> None:
    """Dashed lines between round pQ-1 and pQ, where phase p (a new task for new clients)
    starts (rounds numbered from 0, Q = R / T)."""
    q = rounds // num_tasks
    for p in range(1, num_tasks):
        ax.axvline(p * q - 0.5, color="grey", linestyle="--", linewidth=0.7, zorder=0)


def single_value(df: pd.DataFrame, column: str) -> int:
    """A setting every row of a panel shares (rounds, data.num_tasks)."""
    return int(pd.to_numeric(df[column]).max())


def panels(n: int, width: float = 5.0, height: float = 3.6) -> tuple[plt.Figure, list[plt.Axes]]:
    """A figure with `n` panels side by side (one per facet)."""
    fig, axs = plt.subplots(1, n, figsize=(width * n, height), squeeze=False)
    return fig, list(axs[0])


def tag(df: pd.DataFrame, title: str) -> pd.DataFrame:
    """A panel's numbers, labelled with its title (the `panel` column of a figure's CSV)."""
    return df.assign(panel=title)
