"""The results contract (schema version 2), in one place: every column, its type and the trial
statuses; atomic Parquet writes (temp file in the same folder, then rename: a reader never sees a
half-written file); and the manifest that commits a folder of results. Imports no Ray.

The same three files for one run (`fcl run --out DIR`) and for a study (`results/<study>/`):

    trials.parquet   one row per trial: study, trial_id, status, error, every config key, the
                     run's summary (`fcl.records.RunSummary`), schema_version; a study adds its
                     own columns (`STUDY_COLUMNS`, `optuna_trial`, how far a trial got, versions)
    rounds.parquet   one row per trial x round: study, trial_id, `fcl.records.RoundRecord`'s
                     fields, every config key, schema_version
    tasks.parquet    one row per trial x round x task: study, trial_id, `fcl.records.TaskRecord`'s
                     fields, every config key, schema_version
    study.json       the manifest (`Manifest`), written last: what the study was (name, doc,
                     searcher, the keys it varies, preset, data set, base config, seeds,
                     scheduler, command, fcl_git) and per Parquet file its rows and sha256

Columns and types are derived from the record dataclasses and the config fields, so every file
carries every column with one type, whatever its trials' fate (an empty study included).
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import TYPE_CHECKING

import pandas as pd

from fcl.atomic_file import atomic_path
from fcl.config import RunConfig, bool_or_auto_keys, field_types
from fcl.methods.registry import method, method_of, methods
from fcl.records import PANDAS_TYPES, RoundRecord, RunSummary, TaskRecord, columns

if TYPE_CHECKING:
    from fcl.engine import RunResult

SCHEMA_VERSION = 2

# Trial statuses (Tune's names): finished all its rounds / failed for good / stopped by the
# scheduler (ASHA) before its last round.
TERMINATED, ERROR, EARLY_STOPPED = "TERMINATED", "ERROR", "EARLY_STOPPED"
STATUSES = (TERMINATED, ERROR, EARLY_STOPPED)

KEY_TYPES = {"study": "string", "trial_id": "string"}
TRIAL_TYPES = {**KEY_TYPES, "status": "string", "error": "string"}
# null for trials that did not finish; `rounds` is the config key's column
SUMMARY_TYPES = {k: t for k, t in columns(RunSummary, nullable=True).items() if k != "rounds"}

# A study's trials.parquet adds: the Tune columns, which join a row to its trial in Tune's storage
# (TensorBoard, MLflow runs: the trial folder's name) and, in an Optuna search, to
# optuna-dashboard's trial number; how far the trial got (R - 1 when finished; where ASHA stopped
# it, and the acc it was compared on); and the versions that produced it.
STUDY_COLUMNS = ("study", "trial_id", "status", "error", "preset", "tune_trial_id",
                 "tune_trial_dir")
OPTUNA_COLUMN = "optuna_trial"          # Int64; null outside Optuna searches
VERSION_COLUMNS = ("fcl_version", "fcl_git", "torch_version", "ray_version", "python_version")
# Where the trial ran (Tune's `hostname` and `node_ip` of its last report; "" if it never
# reported): with VERSION_COLUMNS from that node's own report, which node ran which fcl.
NODE_COLUMNS = ("hostname", "node_ip")
STUDY_SUMMARY_TYPES = {**SUMMARY_TYPES, "round_reached": "Int64", "acc_reached": "float64"}

# What a reader needs at least (analysis checks these).
REQUIRED_TRIAL_COLUMNS = ("study", "trial_id", "status", "seed", "acc", "bwt_f",
                          "schema_version")
REQUIRED_ROUND_COLUMNS = ("trial_id", "round", "phase", "schema_version")
REQUIRED_TASK_COLUMNS = ("trial_id", "round", "task", "accuracy", "reports", "schema_version")

FILES = ("trials", "rounds", "tasks")
MANIFEST_FILE = "study.json"


def config_types() -> dict[str, str]:
    return {key: PANDAS_TYPES[typ] for key, typ in field_types().items()}


def round_types() -> dict[str, str]:
    return {**KEY_TYPES, **columns(RoundRecord), **config_types(), "schema_version": "int64"}


def task_types() -> dict[str, str]:
    return {**KEY_TYPES, **columns(TaskRecord), **config_types(), "schema_version": "int64"}


def run_trial_types() -> dict[str, str]:
    """Every column of one run's trials.parquet (`fcl run --out`) and its type, in order."""
    return {**TRIAL_TYPES, **config_types(), **SUMMARY_TYPES, "schema_version": "int64"}


def study_trial_types(metrics: dict[str, str] = STUDY_SUMMARY_TYPES, nodes: bool = True
                      ) -> dict[str, str]:
    """Every column of a study's trials.parquet and its type, in order: its summary metrics as
    `metrics` (`metric_types`), the node columns where `nodes` (trials exported before them
    have none)."""
    return {**{c: "string" for c in STUDY_COLUMNS}, **config_types(), OPTUNA_COLUMN: "Int64",
            **metrics, **{c: "string" for c in VERSION_COLUMNS},
            **{c: "string" for c in (NODE_COLUMNS if nodes else ())}, "schema_version": "int64"}


# Keys that were bools before they took `auto` too (all the true/false/auto keys): their
# true/false hash as those bools, so a config that does not use `auto` keeps the trial id it
# had (stored studies, resumes).
WERE_BOOLS = bool_or_auto_keys()
# Keys added after studies were stored: at their default they are left out of the hash, so a
# stored trial (whose config lacks them) keeps its id. A method's own keys are among them unless
# every stored trial id holds them (`Method.keys_always_hashed`: NetTailor's and LoRA's), so a
# method added later changes no stored id.
CORE_ADDED_KEYS = ("run.divergence_loss", "compression.prune", "compression.prune_server",
                   "run.compile")


def added_keys() -> tuple[str, ...]:
    return CORE_ADDED_KEYS + tuple(k for m in methods().values() if not m.keys_always_hashed
                                   for k in m.keys)


DEFAULTS = RunConfig().to_flat()


def config_hash(cfg: RunConfig) -> str:
    """12 hex digits of the whole config: a trial's id, stable across reruns (a method that
    had another name when its trials were stored hashes under that one, `Method.hashed_as`)."""
    flat = cfg.to_flat()
    for key in added_keys():
        if flat[key] == DEFAULTS[key]:
            del flat[key]
    for key in WERE_BOOLS:
        if flat.get(key) in ("true", "false"):
            flat[key] = flat[key] == "true"
    flat["model.adapter"] = method(cfg.model.adapter).hashed_as or cfg.model.adapter
    text = json.dumps(flat, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode(), digest_size=6).hexdigest()


def as_today(stored: pd.DataFrame) -> pd.DataFrame:
    """Stored rows' config columns as today's config spells them: a key that was a bool and now
    also takes `auto` as its word (`true`/`false`), and a key added since at its default, which
    is what the stored trial ran (its id, the config's hash, proves it: `added_keys` at their
    defaults are left out of the hash), and a method stored under the name it had before its
    own (`Method.spelled_before`) by its name."""
    out = stored.copy()
    for key in WERE_BOOLS:
        if key in out and pd.api.types.is_bool_dtype(out[key]):
            out[key] = out[key].map({True: "true", False: "false"})
    for key in added_keys():
        if key not in out:
            out[key] = DEFAULTS[key]
    return methods_as_today(out)


def methods_as_today(rows: pd.DataFrame) -> pd.DataFrame:
    """`rows` with a method stored under the name it had before its own (`full` with a ZeroFL
    sparsity: `Method.spelled_before`) named as today (`zerofl`); `rows` itself if none is."""
    if "model.adapter" not in rows or not len(rows) or \
            not any(m.spelled_before for m in methods().values()):
        return rows
    model = rows[[c for c in rows if c.startswith("model.")]]
    names = per_distinct_row(model, lambda row: method_of(row).name)
    if names == rows["model.adapter"].tolist():
        return rows
    out = rows.copy()
    out["model.adapter"] = pd.Series(names, index=rows.index, dtype=rows["model.adapter"].dtype)
    return out


def per_distinct_row(frame: pd.DataFrame, fn) -> list:
    """`fn(row as a dict)` for every row of `frame`, called once per distinct row (NaN equal to
    NaN): a rounds table repeats its trial's settings on every row."""
    group = frame.groupby(list(frame.columns), dropna=False, sort=False).ngroup().to_numpy()
    firsts = frame[~pd.Series(group).duplicated().to_numpy()].to_dict("records")
    values = [fn(row) for row in firsts]
    return [values[g] for g in group]


def typed(df: pd.DataFrame, types: dict[str, str]) -> pd.DataFrame:
    """`df` with exactly the columns of `types`, in that order and of those types (missing
    columns null); columns `types` does not list are kept after them."""
    cols = {}
    for col, dtype in types.items():
        values = df[col] if col in df else pd.Series([None] * len(df), index=df.index,
                                                     dtype="object")
        if dtype in ("Int64", "boolean", "string"):
            values = values.astype("object").where(values.notna(), None)
        cols[col] = values.astype(dtype)
    out = pd.DataFrame(cols, index=df.index)    # at once: a column at a time is 10x slower
    rest = [c for c in df.columns if c not in types]
    return pd.concat([out, df[rest]], axis=1) if rest else out


def empty(types: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=d) for c, d in types.items()})


def empty_trials() -> pd.DataFrame:
    """A study's trials.parquet with no trial to show yet (all pending): no rows, every column
    (untyped: `typed_trials` gives them their types)."""
    cols = [*STUDY_COLUMNS, *field_types(), OPTUNA_COLUMN, *VERSION_COLUMNS, *NODE_COLUMNS,
            "schema_version"]
    return pd.DataFrame({c: pd.Series(dtype="object") for c in cols})


def typed_trials(df: pd.DataFrame, metrics: dict[str, str]) -> pd.DataFrame:
    """A study's trials with every column present and of one type, whatever the trials' fate,
    typed as a run's are (`typed`) from `study_trial_types`; the metrics in the rows' order."""
    ordered = {**{c: metrics[c] for c in df.columns if c in metrics}, **metrics}
    return typed(df, study_trial_types(ordered, nodes=all(c in df for c in NODE_COLUMNS)))


def metric_types(summaries: list[dict]) -> dict[str, str]:
    """`STUDY_SUMMARY_TYPES`, plus the types of summary metrics it does not list (a newer
    engine's), read from the finished runs' values."""
    out, config = dict(STUDY_SUMMARY_TYPES), field_types()
    for summary in summaries:
        for key, value in summary.items():
            if key in out or key in config:
                continue
            out[key] = ("boolean" if isinstance(value, bool) else "Int64" if isinstance(value, int)
                        else "float64" if isinstance(value, float) else "string")
    return out


def trial_row(study: str, trial_id: str, result: RunResult | None, config_flat: dict,
              status: str = TERMINATED, error: str = "") -> dict:
    """One trials.parquet row; `result` is None for a trial that did not finish."""
    metrics = result.summary.row() if result is not None else {}
    return {"study": study, "trial_id": trial_id, "status": status, "error": error,
            **config_flat, **metrics, "schema_version": SCHEMA_VERSION}


def trial_rounds_frame(study: str, trial_id: str, result: RunResult) -> pd.DataFrame:
    """rounds.parquet rows of one trial: one per round."""
    return typed(pd.DataFrame(round_rows(study, trial_id, result)), round_types())


def trial_tasks_frame(study: str, trial_id: str, result: RunResult) -> pd.DataFrame:
    """tasks.parquet rows of one trial: one per round x task."""
    return typed(pd.DataFrame(task_rows(study, trial_id, result)), task_types())


def round_rows(study: str, trial_id: str, result: RunResult) -> list[dict]:
    """`trial_rounds_frame`'s rows, untyped: a study types all its trials' rows at once."""
    keys = _keys(study, trial_id, result.config)
    return [{**r.row(), "tasks_trained": json.dumps(list(r.tasks_trained)), **keys}
            for r in result.records]


def task_rows(study: str, trial_id: str, result: RunResult) -> list[dict]:
    keys = _keys(study, trial_id, result.config)
    return [{**t.row(), **keys} for t in result.task_records]


def _keys(study: str, trial_id: str, cfg: RunConfig) -> dict:
    """The columns every row of a trial repeats: study, trial id, config, schema version."""
    return {"study": study, "trial_id": trial_id, **cfg.to_flat(),
            "schema_version": SCHEMA_VERSION}


def run_frames(result: RunResult, study: str = "run") -> dict[str, pd.DataFrame]:
    """The three tables of one run (`fcl run --out`), in the study schema."""
    tid = config_hash(result.config)
    trials = typed(pd.DataFrame([trial_row(study, tid, result, result.config.to_flat())]),
                   run_trial_types())
    return {"trials": trials, "rounds": trial_rounds_frame(study, tid, result),
            "tasks": trial_tasks_frame(study, tid, result)}


def write_parquet_atomic(df: pd.DataFrame, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)


def write_frames(frames: dict[str, pd.DataFrame], folder: str | os.PathLike) -> list[str]:
    """`<name>.parquet` for every frame, each written atomically; the paths."""
    paths = []
    for name, df in frames.items():
        path = os.path.join(folder, f"{name}.parquet")
        write_parquet_atomic(df, path)
        paths.append(path)
    return paths

