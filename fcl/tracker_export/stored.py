"""Stored studies read into what a tracker logs: per trial its settings, its summary metrics,
its per-round history (the round's metrics and each task's accuracy) and its provenance tags.
Read only: a study folder is one with a `study.json` beside its Parquet files."""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field

import pandas as pd

from fcl.results_io import MANIFEST_FILE, STUDY_SUMMARY_TYPES

# per-round columns worth a curve (the round's bookkeeping columns left out)
ROUND_METRICS = ("mean_acc", "train_loss", "drift", "cos_head", "cos_module", "bytes_up",
                 "bytes_down", "tcc_bytes", "compression_ratio", "clients_reporting", "wall_s")


@dataclass
class StoredTrial:
    trial_id: str
    status: str
    params: dict                     # the study's varying keys and the seed
    config: dict                     # every config key of the trial
    summary: dict                    # its summary metrics (finite numbers only)
    history: list[tuple[int, dict]] = field(default_factory=list)   # (round, {metric: value})
    tags: dict = field(default_factory=dict)


@dataclass
class StoredStudy:
    name: str                        # where it lies below the exported folder: "results/noniid"
    manifest: dict
    trials: list[StoredTrial]


def finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value)


def plain(value):
    """A Parquet cell as a plain Python value (numpy scalars, pandas' NA)."""
    if value is None or value is pd.NA:
        return None
    return value.item() if hasattr(value, "item") else value


def read_study(path: str, name: str) -> StoredStudy:
    with open(os.path.join(path, MANIFEST_FILE)) as f:
        manifest = json.load(f)
    trials = pd.read_parquet(os.path.join(path, "trials.parquet"))
    rounds = pd.read_parquet(os.path.join(path, "rounds.parquet"))
    tasks = pd.read_parquet(os.path.join(path, "tasks.parquet"))
    config_keys = [c for c in trials.columns if "." in c]
    varying = [k for k in manifest.get("varying", []) if k in trials.columns]
    histories = history_by_trial(rounds, tasks)
    out = []
    for row in trials.to_dict("records"):
        row = {k: plain(v) for k, v in row.items()}
        trial_id = row["trial_id"]
        out.append(StoredTrial(
            trial_id=trial_id, status=row["status"],
            params={**{k: row[k] for k in varying}, "seed": row["seed"]},
            config={k: row[k] for k in config_keys},
            summary={k: row[k] for k in STUDY_SUMMARY_TYPES if finite(row.get(k))},
            history=histories.get(trial_id, []),
            tags={"fcl.study": manifest["study"], "fcl.folder": name, "fcl.trial_id": trial_id,
                  "fcl.status": row["status"], "fcl.preset": manifest.get("preset", ""),
                  "fcl.git": row.get("fcl_git") or manifest.get("fcl_git", ""),
                  "fcl.command": manifest.get("command", "")}))
    return StoredStudy(name, manifest, out)


def history_by_trial(rounds: pd.DataFrame, tasks: pd.DataFrame) -> dict:
    """trial id -> [(round, {metric: value})]: the round's metrics, and `acc/task_T` for each
    task scored that round (how each task's accuracy moves as later tasks train: forgetting)."""
    steps: dict[str, dict[int, dict]] = {}
    metrics = [c for c in ROUND_METRICS if c in rounds.columns]
    for row in rounds[["trial_id", "round", *metrics]].to_dict("records"):
        values = {m: plain(row[m]) for m in metrics if finite(plain(row[m]))}
        steps.setdefault(row["trial_id"], {}).setdefault(int(row["round"]), {}).update(values)
    for row in tasks[["trial_id", "round", "task", "accuracy"]].to_dict("records"):
        acc = plain(row["accuracy"])
        if finite(acc):
            steps.setdefault(row["trial_id"], {}).setdefault(int(row["round"]), {})[
                f"acc/task_{int(row['task'])}"] = acc
    return {t: sorted(by_round.items()) for t, by_round in steps.items()}
