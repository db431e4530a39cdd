"""Read one study's Parquet (results/<study>/{trials,rounds,tasks}.parquet) and check it.

The schema is `fcl.results_io`'s: trials.parquet has one row per trial (study, trial_id, status,
error, every config key as a column such as `server.lr`, the run's summary metrics, and
`schema_version`); rounds.parquet one row per trial x round; tasks.parquet one row per trial x
round x task. The figures read `Study.rounds`, one row per trial x round x task with the round's
columns beside the task's (schema 1 stored exactly that in rounds.parquet; schema 2 is joined
here, the task's `reports` named `task_reports` and its cosines kept over the round's means).
Nothing here trains or imports Ray: analysis is a function of these files.

Trials that failed (status ERROR, or no final ACC) are left out of every figure; how many were
left out is kept so the caller can say so.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from fcl.results_io import ERROR, SCHEMA_VERSION  # the newest schema this code reads
from fcl.results_io import REQUIRED_ROUND_COLUMNS as ROUND_COLUMNS_V2
from fcl.results_io import REQUIRED_ROUND_COLUMNS_V1 as ROUND_COLUMNS
from fcl.results_io import REQUIRED_TASK_COLUMNS as TASK_COLUMNS
from fcl.results_io import REQUIRED_TRIAL_COLUMNS as TRIAL_COLUMNS

# Config columns that never make two trials "different settings" in a figure.
NOT_A_SETTING = ("seed", "data.name", "data.root", "run.device", "run.threads")


class SchemaError(ValueError):
    """A Parquet file that is not a study table this code can read; `str()` is one line."""


@dataclass(frozen=True)
class Study:
    name: str
    folder: Path
    trials: pd.DataFrame             # completed trials only, plus a `dataset` column
    rounds: pd.DataFrame | None      # rows of completed trials; None when rounds.parquet is absent
    failed: int = 0                  # trials left out (status ERROR or no ACC)

    def need_rounds(self, figure: str) -> pd.DataFrame:
        if self.rounds is None:
            raise MissingStudy(f"{figure}: {self.folder / 'rounds.parquet'} not found; skipped")
        return self.rounds


class MissingStudy(LookupError):
    """A study (or the part of it a figure needs) is not stored: skip, with this one line."""


def dataset_label(name: str, root: str) -> str:
    """`npz` data sets are named after their file (cifar10.npz -> cifar10)."""
    if name == "npz" and isinstance(root, str) and root:
        return Path(root).name.split(".")[0]
    return name


def _read(path: Path, required: tuple[str, ...]) -> pd.DataFrame:
    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several types for a file that is not Parquet
        raise SchemaError(f"{path}: not a readable Parquet file ({type(exc).__name__}: "
                          f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise SchemaError(f"{path}: missing column(s) {', '.join(missing)}; a study table "
                          f"needs {', '.join(required)} (see fcl/results_io.py)")
    versions = set(pd.to_numeric(df["schema_version"], errors="coerce").dropna().astype(int))
    if versions - set(range(1, SCHEMA_VERSION + 1)):
        raise SchemaError(f"{path}: schema_version {sorted(versions)} is not one this analysis "
                          f"reads (1..{SCHEMA_VERSION})")
    return df


def per_task_rounds(folder: Path) -> pd.DataFrame | None:
    """One row per trial x round x task with the round's columns (None: no rounds stored)."""
    rounds_path, tasks_path = folder / "rounds.parquet", folder / "tasks.parquet"
    if not rounds_path.is_file():
        return None
    if not tasks_path.is_file():                      # schema 1: already per task
        return _read(rounds_path, ROUND_COLUMNS)
    rounds = _read(rounds_path, ROUND_COLUMNS_V2)
    tasks = _read(tasks_path, TASK_COLUMNS).rename(columns={"reports": "task_reports"})
    extra = [c for c in rounds.columns if c not in tasks.columns or c in ("trial_id", "round")]
    return tasks.merge(rounds[extra], on=["trial_id", "round"], how="left")


def load_study(results: str | os.PathLike, name: str) -> Study:
    """The study's completed trials (and their rounds); MissingStudy if trials.parquet is absent,
    SchemaError if a file is there but is not a study table."""
    folder = Path(results) / name
    trials_path = folder / "trials.parquet"
    if not trials_path.is_file():
        raise MissingStudy(f"{name}: {trials_path} not found; skipped")
    trials = _read(trials_path, TRIAL_COLUMNS)
    ok = (trials["status"].astype(str) != ERROR) & pd.to_numeric(
        trials["acc"], errors="coerce").notna()
    failed = int((~ok).sum())
    if failed == len(trials):
        raise MissingStudy(f"{name}: no completed trial in {trials_path} ({failed} failed); "
                           f"skipped")
    trials = trials[ok].copy()
    trials["dataset"] = [dataset_label(n, r) for n, r in zip(
        trials.get("data.name", pd.Series("?", index=trials.index)),
        trials.get("data.root", pd.Series("", index=trials.index)))]
    rounds = per_task_rounds(folder)
    if rounds is not None:
        rounds = rounds[rounds["trial_id"].isin(trials["trial_id"])]
        # carry the trial's settings and data set label onto its rounds
        settings = [c for c in trials.columns if is_config_key(c) or c == "dataset"]
        missing = [c for c in settings if c not in rounds.columns]
        rounds = rounds.merge(trials[["trial_id", *missing]], on="trial_id", how="left")
    return Study(name, folder, trials.reset_index(drop=True), rounds, failed)


def is_config_key(column: str) -> bool:
    return "." in column or column in ("rounds", "seed")


def require(df: pd.DataFrame, columns: tuple[str, ...], where: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise SchemaError(f"{where}: missing column(s) {', '.join(missing)}")


def varying_settings(df: pd.DataFrame, exclude: tuple[str, ...] = ()) -> list[str]:
    """Config keys that take more than one value across the trials (seeds and the figure's own
    axes excluded); the data set counts as one setting."""
    keys = [c for c in df.columns if (is_config_key(c) or c == "dataset")
            and c not in NOT_A_SETTING and c not in exclude]
    return [k for k in keys if df[k].nunique(dropna=False) > 1]


def facets(df: pd.DataFrame, axes: tuple[str, ...]) -> list[tuple[str, pd.DataFrame]]:
    """Split the trials by every varying setting that is not one of the figure's axes, so a
    figure never averages over a setting silently: one panel per combination, titled
    `key=value, ...` (a single untitled panel when nothing else varies)."""
    extra = varying_settings(df, exclude=axes)
    if not extra:
        return [("", df)]
    out = []
    for values, sub in df.groupby(extra, dropna=False, sort=True):
        values = values if isinstance(values, tuple) else (values,)
        out.append((", ".join(f"{k}={fmt_value(v)}" for k, v in zip(extra, values)), sub))
    return out


def fmt_value(v) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        if math.isinf(v):
            return "inf"
        return f"{v:g}"
    return str(v)
