"""The results schema (version 2), in one place, and atomic Parquet writes (temp file in the same
folder, then rename: a reader never sees a half-written file).

The same three files for one run (`fcl run --out DIR`) and for a study (`results/<study>/`):

    trials.parquet   one row per trial: study, trial_id, status, every config key, the run's
                     summary (`fcl.records.RunSummary`), schema_version (a study adds its own
                     columns: `fcl.tune.export`)
    rounds.parquet   one row per trial x round: study, trial_id, `fcl.records.RoundRecord`'s
                     fields, every config key, schema_version
    tasks.parquet    one row per trial x round x task: study, trial_id, `fcl.records.TaskRecord`'s
                     fields, every config key, schema_version

Columns and types are derived from the record dataclasses and the config fields, so every file
carries every column with one type, whatever its trials' fate (an empty study included).
"""
from __future__ import annotations

import hashlib
import json
import os

import pandas as pd

from fcl.atomic_file import atomic_path
from fcl.config import RunConfig, field_types
from fcl.engine import RunResult
from fcl.records import PANDAS_TYPES, RoundRecord, RunSummary, TaskRecord, columns

SCHEMA_VERSION = 2
KEY_TYPES = {"study": "string", "trial_id": "string"}
TRIAL_TYPES = {**KEY_TYPES, "status": "string", "error": "string"}
# null for trials that did not finish; `rounds` is the config key's column
SUMMARY_TYPES = {k: t for k, t in columns(RunSummary, nullable=True).items() if k != "rounds"}


def config_types() -> dict[str, str]:
    return {key: PANDAS_TYPES[typ] for key, typ in field_types().items()}


def round_types() -> dict[str, str]:
    return {**KEY_TYPES, **columns(RoundRecord), **config_types(), "schema_version": "int64"}


def task_types() -> dict[str, str]:
    return {**KEY_TYPES, **columns(TaskRecord), **config_types(), "schema_version": "int64"}


def config_hash(cfg: RunConfig) -> str:
    """12 hex digits of the whole config: a trial's id, stable across reruns."""
    text = json.dumps(cfg.to_flat(), sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def typed(df: pd.DataFrame, types: dict[str, str]) -> pd.DataFrame:
    """`df` with exactly the columns of `types`, in that order and of those types (missing
    columns null); columns `types` does not list are kept after them."""
    out = pd.DataFrame(index=df.index)
    for col, dtype in types.items():
        values = df[col] if col in df else pd.Series([None] * len(df), index=df.index,
                                                     dtype="object")
        if dtype in ("Int64", "boolean", "string"):
            values = values.astype("object").where(values.notna(), None)
        out[col] = values.astype(dtype)
    rest = [c for c in df.columns if c not in types]
    return pd.concat([out, df[rest]], axis=1) if rest else out


def trial_row(study: str, trial_id: str, result: RunResult | None, config_flat: dict,
              status: str = "TERMINATED", error: str = "") -> dict:
    """One trials.parquet row; `result` is None for a trial that did not finish."""
    metrics = dict(result.summary) if result is not None else {}
    return {"study": study, "trial_id": trial_id, "status": status, "error": error,
            **config_flat, **metrics, "schema_version": SCHEMA_VERSION}


def trial_rounds_frame(study: str, trial_id: str, result: RunResult) -> pd.DataFrame:
    """rounds.parquet rows of one trial: one per round."""
    rows = [{**r.row(), "tasks_trained": json.dumps(list(r.tasks_trained))}
            for r in result.records]
    return typed(_with_keys(pd.DataFrame(rows), study, trial_id, result.config), round_types())


def trial_tasks_frame(study: str, trial_id: str, result: RunResult) -> pd.DataFrame:
    """tasks.parquet rows of one trial: one per round x task."""
    rows = [t.row() for t in result.task_records]
    return typed(_with_keys(pd.DataFrame(rows), study, trial_id, result.config), task_types())


def _with_keys(df: pd.DataFrame, study: str, trial_id: str, cfg: RunConfig) -> pd.DataFrame:
    return df.assign(study=study, trial_id=trial_id, **cfg.to_flat(),
                     schema_version=SCHEMA_VERSION)


def empty(types: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=d) for c, d in types.items()})


def run_frames(result: RunResult, study: str = "run") -> dict[str, pd.DataFrame]:
    """The three tables of one run (`fcl run --out`), in the study schema."""
    tid = config_hash(result.config)
    trials = typed(pd.DataFrame([trial_row(study, tid, result, result.config.to_flat())]),
                   {**TRIAL_TYPES, **config_types(), **SUMMARY_TYPES, "schema_version": "int64"})
    return {"trials": trials, "rounds": trial_rounds_frame(study, tid, result),
            "tasks": trial_tasks_frame(study, tid, result)}


def write_parquet_atomic(df: pd.DataFrame, path: str) -> None:
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)


def write_frames(frames: dict[str, pd.DataFrame], folder: str) -> list[str]:
    """`<name>.parquet` for every frame, each written atomically; the paths."""
    paths = []
    for name, df in frames.items():
        path = os.path.join(folder, f"{name}.parquet")
        write_parquet_atomic(df, path)
        paths.append(path)
    return paths


def write_result(result: RunResult, out_dir: str) -> list[str]:
    return write_frames(run_frames(result), out_dir)
