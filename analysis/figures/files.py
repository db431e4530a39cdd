"""Where a figure or table goes: PNG + PDF for figures, Markdown + CSV for tables, each written
to a temp name in the same folder and renamed, so a reader never sees half a file."""
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
    `data` is the tidy seed summary, `panels` the matrices or series actually plotted."""
    paths: list[Path]
    data: pd.DataFrame
    panels: dict[str, pd.DataFrame] = field(default_factory=dict)


def _atomic(path: Path, write) -> Path:
    with atomic_path(path) as tmp:
        write(tmp)
    return path


def save_figure(fig: plt.Figure, out_dir: Path, name: str) -> list[Path]:
    paths = [_atomic(Path(out_dir) / f"{name}.{ext}",
                     lambda tmp, ext=ext: fig.savefig(tmp, format=ext, dpi=150,
                                                      bbox_inches="tight"))
             for ext in ("png", "pdf")]
    plt.close(fig)
    return paths


def save_table(df: pd.DataFrame, markdown: str, out_dir: Path, name: str) -> list[Path]:
    def write_text(tmp, text=markdown):
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
