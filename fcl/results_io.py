"""Tidy Parquet output of one run, written atomically (temp file in the same folder, then
rename), so a reader never sees a half-written file.

    rounds.parquet   one row per round (drift, cosine distances, bytes, reports, mean accuracy)
    tasks.parquet    one row per round x task (accuracy where evaluated, reports, cosine dist.)
    summary.parquet  one row: every config key (`server.lr`, ...) + final metrics
"""
from __future__ import annotations

import json
import os
import tempfile

import pandas as pd

from fcl.engine import RunResult

SCHEMA_VERSION = 1


def write_parquet_atomic(df: pd.DataFrame, path: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".parquet")
    os.close(fd)
    try:
        df.to_parquet(tmp, index=False)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


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
