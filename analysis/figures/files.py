"""Where a figure or table goes: PNG + PDF for figures, Markdown + CSV for tables, each written
to a temp name in the same folder and renamed, so a reader never sees half a file. Every figure
and every Markdown table states what it was drawn from (`Study.provenance`: the study folder,
preset, data set and commit), a figure in a footer under everything it draws, a table in a line
under it; the CSVs stay pure data."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib.pyplot as plt     # the Agg backend: chosen in analysis/figures/__init__.py
import pandas as pd

from fcl.atomic_file import atomic_path


@dataclass(frozen=True)
class Produced:
    """What a figure/table function wrote, and the numbers it drew (for tests and notes):
    `data` is the tidy seed summary, `panels` the matrices or series actually plotted,
    `scales` each colour scale's (vmin, vmax) by metric."""
    paths: list[Path]
    data: pd.DataFrame
    panels: dict[str, pd.DataFrame] = field(default_factory=dict)
    scales: dict[str, tuple[float, float]] = field(default_factory=dict)


def _atomic(path: Path, write) -> Path:
    with atomic_path(path) as tmp:
        write(tmp)
    return path


FOOTER_PT = 7.5                 # the provenance footer's font size (points)
FOOTER_GAP_IN = 0.08            # its gap below the lowest thing drawn (inches)


def add_footer(fig: plt.Figure, source: str) -> None:
    """`source` in small grey text, left-aligned under the lowest and leftmost thing the figure
    draws (tick labels, axis labels, colour bars, legends), so it overlaps none of them; the
    tight bounding box of the saved file grows to hold it."""
    box = fig.get_tightbbox(fig.canvas.get_renderer())          # inches, figure origin
    width, height = fig.get_size_inches()
    fig.text(box.x0 / width, (box.y0 - FOOTER_GAP_IN) / height, source, ha="left", va="top",
             fontsize=FOOTER_PT, color="#444444")


def wrap_titles(fig: plt.Figure) -> None:
    """Panel titles wider than their panel broken after a `, ` (a facet's title lists every
    setting it fixes), so that neighbouring titles do not run into each other."""
    for ax in fig.axes:
        title = ax.get_title()
        width_pt = ax.get_position().width * fig.get_size_inches()[0] * 72
        chars = max(20, int(width_pt / (0.55 * ax.title.get_fontsize())))
        lines = [""]
        for part in title.split(", ") if len(title) > chars else ():
            if lines[-1] and len(lines[-1]) + 2 + len(part) > chars:
                lines[-1] += ","
                lines.append(part)
            else:
                lines[-1] = f"{lines[-1]}, {part}" if lines[-1] else part
        if len(lines) > 1:
            ax.set_title("\n".join(lines))


def save_figure(fig: plt.Figure, out_dir: Path, name: str, source: str) -> list[Path]:
    """`<name>.png` and `.pdf`: titles wrapped, laid out so that nothing overlaps, `source`
    (what it was drawn from) as the footer."""
    wrap_titles(fig)
    fig.tight_layout()
    add_footer(fig, source)
    paths = [_atomic(Path(out_dir) / f"{name}.{ext}",
                     lambda tmp, ext=ext: fig.savefig(tmp, format=ext, dpi=150,
                                                      bbox_inches="tight"))
             for ext in ("png", "pdf")]
    plt.close(fig)
    return paths


def save_table(df: pd.DataFrame, markdown: str, out_dir: Path, name: str,
               source: str) -> list[Path]:
    """`<name>.csv` (the numbers, nothing else) and `<name>.md`, `source` in a line under it."""
    def write_text(tmp, text=f"{markdown.rstrip()}\n\n{source}\n"):
        Path(tmp).write_text(text)
    return [_atomic(Path(out_dir) / f"{name}.csv", lambda tmp: df.to_csv(tmp, index=False)),
            _atomic(Path(out_dir) / f"{name}.md", write_text)]


def save_data_csv(df: pd.DataFrame, out_dir: Path, name: str) -> Path:
    """The seed summary a figure drew (mean, std, n, ci95 per point), beside the figure."""
    return _atomic(Path(out_dir) / f"{name}.csv", lambda tmp: df.to_csv(tmp, index=False))


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def mean_pm(mean: float, std: float, digits: int = 2) -> str:
    """`80.04 ± 0.31` (the mean alone when there is one seed)."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "-"
    if std is None or (isinstance(std, float) and math.isnan(std)):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def same_seed_diff(row, reference: bool) -> str:
    """A table cell for a same-seed difference from the reference row (`d_acc`, `d_ci95`,
    `d_n` seeds): `+1.00 ± 2.48 (3 seeds)`, `0 (reference)` on the reference itself."""
    if reference:
        return "0 (reference)"
    if not row["d_n"]:
        return "-"
    if row["d_n"] < 2:
        return f"{row['d_acc']:+.2f} (1 seed, no interval)"
    return f"{row['d_acc']:+.2f} ± {row['d_ci95']:.2f} ({int(row['d_n'])} seeds)"

