"""Read one study's Parquet (results/<study>/{trials,rounds,tasks}.parquet) and check it.

The schema is `fcl.results_io`'s: trials.parquet has one row per trial (study, trial_id, status,
error, every config key as a column such as `server.lr`, the run's summary metrics, and
`schema_version`); rounds.parquet one row per trial x round; tasks.parquet one row per trial x
round x task. The figures read `Study.rounds`, one row per trial x round x task with the round's
columns beside the task's (`load_study` joins the two files, the task's `reports` named
`task_reports` and its cosines kept over the round's means).
This module neither trains nor imports Ray: analysis is a function of these files.

Beside them, `study.json` (`fcl.manifest.Manifest`) says what the study was: its doc, searcher,
the config keys it varies, preset, data set and commit. `load_study` reads a folder only when
its manifest is there and agrees with its files (`analysis/study_folder.py`; SchemaError, one
line, otherwise), so the figures and the dashboard take the study's settings from it instead of
re-inferring them, and state what they were drawn from (`Study.provenance`).

Trials that failed (status ERROR, or no final ACC) are left out of every figure; how many were
left out is kept so the caller can say so.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from analysis.forgetting import COLUMNS as FORGETTING
from analysis.forgetting import forgetting_columns
from analysis.study_folder import REEXPORT, SchemaError, checked_manifest, holds_study
from fcl.manifest import Manifest, dataset_label
from fcl.results_io import ERROR, SCHEMA_VERSION, methods_as_today  # the one schema this code reads
from fcl.results_io import REQUIRED_ROUND_COLUMNS as ROUND_COLUMNS
from fcl.results_io import REQUIRED_TASK_COLUMNS as TASK_COLUMNS
from fcl.results_io import REQUIRED_TRIAL_COLUMNS as TRIAL_COLUMNS

# Config columns that never make two trials "different settings" in a figure.
NOT_A_SETTING = ("seed", "data.name", "data.root", "run.device", "run.threads")


@dataclass(frozen=True)
class Study:
    name: str
    folder: Path
    trials: pd.DataFrame             # completed trials only, plus a `dataset` column
    rounds: pd.DataFrame | None      # rows of completed trials; None when rounds.parquet is absent
    manifest: Manifest               # study.json, checked against the files
    failed: int = 0                  # trials left out (status ERROR or no ACC)

    def need_rounds(self, figure: str) -> pd.DataFrame:
        if self.rounds is None:
            raise MissingStudy(f"{figure}: {self.folder / 'rounds.parquet'} not found; skipped")
        return self.rounds

    @property
    def settings(self) -> tuple[str, ...]:
        """The config keys the study varies (the manifest's)."""
        return self.manifest.varying

    def varying(self, df: pd.DataFrame, exclude: tuple[str, ...] = ()) -> list[str]:
        return varying_settings(df, exclude, self.settings)

    def facets(self, df: pd.DataFrame, axes: tuple[str, ...]) -> list[tuple[str, pd.DataFrame]]:
        return facets(df, axes, self.settings)

    @property
    def is_search(self) -> bool:
        """Drawn by a searcher (Optuna), as the manifest says."""
        return self.manifest.searcher is not None

    @property
    def doc(self) -> str:
        """The first paragraph of the study script's docstring, as one line."""
        return " ".join(self.manifest.doc.strip().split("\n\n")[0].split())

    def drawn_from(self, dataset: str | None = None) -> str:
        """`preset cifar10-local · data set cifar10 · commit <short hash>`: what the study (or its
        data set `dataset`) was drawn from; the data sets its trials ran on, else the
        manifest's."""
        stored = ", ".join(sorted(self.trials["dataset"].astype(str).unique())) or \
            self.manifest.dataset
        return (f"preset {self.manifest.preset or '?'} · data set {dataset or stored or '?'} · "
                f"commit {self.manifest.commits}")

    @property
    def provenance(self) -> str:
        """`drawn from results/ablation_lr · preset ... · data set ... · commit ...`, the line
        under every figure and table (the folder as `<results folder>/<study>`)."""
        folder = self.folder.resolve()
        return f"drawn from {folder.parent.name}/{folder.name} · {self.drawn_from()}"


class MissingStudy(LookupError):
    """A study (or the part of it a figure needs) is not stored: skip, with this one line."""


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
    if versions - {SCHEMA_VERSION}:
        raise SchemaError(f"{path}: schema_version {sorted(versions)} is not the one this "
                          f"analysis reads ({SCHEMA_VERSION}); "
                          + REEXPORT.format(results=path.parent.parent))
    return methods_as_today(df)


def per_task_rounds(folder: Path) -> pd.DataFrame | None:
    """One row per trial x round x task with the round's columns (None: no rounds stored)."""
    rounds_path, tasks_path = folder / "rounds.parquet", folder / "tasks.parquet"
    if not rounds_path.is_file():
        return None
    if not tasks_path.is_file():       # a manifest naming rounds without tasks: not an export
        raise SchemaError(f"{folder}: refused: rounds.parquet without tasks.parquet (the "
                          f"export writes both)")
    rounds = _read(rounds_path, ROUND_COLUMNS)
    tasks = _read(tasks_path, TASK_COLUMNS).rename(columns={"reports": "task_reports"})
    extra = [c for c in rounds.columns if c not in tasks.columns or c in ("trial_id", "round")]
    return tasks.merge(rounds[extra], on=["trial_id", "round"], how="left")


def load_study(results: str | os.PathLike, name: str) -> Study:
    """The study's completed trials (and their rounds); MissingStudy if no study is stored
    there, SchemaError if the folder is not whole (`checked_manifest`) or a file is there but
    is not a study table."""
    folder = Path(results) / name
    trials_path = folder / "trials.parquet"
    if not holds_study(folder):
        raise MissingStudy(f"{name}: {trials_path} not found; skipped")
    manifest = checked_manifest(folder)
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
        trials = with_forgetting(trials, rounds)
    return Study(name, folder, trials.reset_index(drop=True), rounds, manifest, failed)


def with_forgetting(trials: pd.DataFrame, rounds: pd.DataFrame) -> pd.DataFrame:
    """`trials` plus the forgetting measures of `analysis.forgetting` where a trial's tasks
    are stored (columns the trials already hold are kept as stored)."""
    new = [c for c in FORGETTING if c not in trials.columns]
    if not new or "data.num_tasks" not in trials:
        return trials
    measures = forgetting_columns(trials, rounds.rename(columns={"task_reports": "reports"}))
    return trials.merge(measures[["trial_id", *new]], on="trial_id", how="left")


def is_config_key(column: str) -> bool:
    return "." in column or column in ("rounds", "seed")


def require(df: pd.DataFrame, columns: tuple[str, ...], where: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise SchemaError(f"{where}: missing column(s) {', '.join(missing)}")


def varying_settings(df: pd.DataFrame, exclude: tuple[str, ...] = (),
                     keys: tuple[str, ...] | None = None) -> list[str]:
    """The settings that take more than one value across these trials, in column order: the
    config keys the study varies (`keys`: its manifest's `varying`; None: every config
    column, for a bare table of trials) and the data set; seeds, plumbing (`NOT_A_SETTING`)
    and the figure's own axes (`exclude`) left out."""
    def candidate(column: str) -> bool:
        if column == "dataset":
            return True
        if column in NOT_A_SETTING:
            return False
        return column in keys if keys is not None else is_config_key(column)

    cols = [c for c in df.columns if candidate(c) and c not in exclude]
    return [k for k in cols if df[k].nunique(dropna=False) > 1]


def facets(df: pd.DataFrame, axes: tuple[str, ...], keys: tuple[str, ...] | None = None
           ) -> list[tuple[str, pd.DataFrame]]:
    """Split the trials by every varying setting that is not one of the figure's axes, so a
    figure never averages over a setting silently: one panel per combination, titled
    `key=value, ...` (a single untitled panel when nothing else varies)."""
    extra = varying_settings(df, exclude=axes, keys=keys)
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
