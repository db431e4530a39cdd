"""Tidy Parquet output of one run, written atomically (temp file in the same folder, then
rename), so a reader never sees a half-written file.

    rounds.parquet   one row per round (drift, cosine distances, bytes, reports, mean accuracy)
    tasks.parquet    one row per round x task (accuracy where evaluated, reports, cosine dist.)
    summary.parquet  one row: every config key (`server.lr`, ...) + final metrics
"""
from __future__ import annotations

import json
import os

import pandas as pd

from fcl.atomic_file import atomic_path
from fcl.engine import RunResult

SCHEMA_VERSION = 1


def write_parquet_atomic(df: pd.DataFrame, path: str) -> None:
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)


def result_frames(result: RunResult) -> dict[str, pd.DataFrame]:
    rounds = pd.DataFrame(result.records)
    rounds["tasks_trained"] = rounds["tasks_trained"].map(json.dumps)
    tasks = pd.DataFrame(result.task_records)
    summary = pd.DataFrame([{**result.config.to_flat(), **result.summary,
                             "schema_version": SCHEMA_VERSION}])
    for df in (rounds, tasks):
        df.insert(0, "seed", result.config.seed)
        df["schema_version"] = SCHEMA_VERSION
    return {"rounds": rounds, "tasks": tasks, "summary": summary}


def write_result(result: RunResult, out_dir: str) -> list[str]:
    paths = []
    for name, df in result_frames(result).items():
        path = os.path.join(out_dir, f"{name}.parquet")
        write_parquet_atomic(df, path)
        paths.append(path)
    return paths


# --- Study tables (results/<study>/trials.parquet and rounds.parquet) -------------------------
# trials.parquet: one row per trial: study, trial_id, status, error, every config key
#   (`server.lr`, ...), the run's summary metrics (acc, bwt_f, bwt_f_literal, bytes_up, ...),
#   schema_version.
# rounds.parquet: one row per trial x round x task: study, trial_id, round, phase, task,
#   accuracy (NaN where not evaluated), the task's reports/cos_head/cos_module, the round's
#   drift/mean_acc/bytes_up/bytes_down/tcc_bytes/compression_ratio/clients_reporting/
#   train_loss, every config key, schema_version.
ROUND_COLUMNS = ("drift", "mean_acc", "bytes_up", "bytes_down", "tcc_bytes", "compression_ratio",
                 "clients_sampled", "clients_reporting", "train_loss", "evaluated")


def trial_row(study: str, trial_id: str, result: RunResult | None, config_flat: dict,
              status: str = "TERMINATED", error: str = "") -> dict:
    """One trials.parquet row; `result` is None for a trial that failed."""
    metrics = dict(result.summary) if result is not None else {}
    return {"study": study, "trial_id": trial_id, "status": status, "error": error,
            **config_flat, **metrics, "schema_version": SCHEMA_VERSION}


def trial_rounds_frame(study: str, trial_id: str, result: RunResult) -> pd.DataFrame:
    """rounds.parquet rows of one trial: the round x task records joined with the round's."""
    tasks = pd.DataFrame(result.task_records)
    rounds = pd.DataFrame(result.records)[["round", "phase", *ROUND_COLUMNS]]
    df = tasks.rename(columns={"reports": "task_reports"}).merge(rounds, on="round")
    for key, value in result.config.to_flat().items():
        df[key] = value
    df.insert(0, "trial_id", trial_id)
    df.insert(0, "study", study)
    df["schema_version"] = SCHEMA_VERSION
    return df
