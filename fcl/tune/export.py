"""A finished (or resumed) study as three tidy Parquet files (`fcl.results_io`'s schema: trials,
rounds, tasks), written by the driver.

Rows come from each trial's last checkpoint (the whole `RunResult`), never from Tune's
progress logs, which repeat the rounds a resumed trial replays: so a study killed and resumed
exports exactly the rows of one that never stopped. Trials are sorted by the keys the study
varies, then by `trial_id` (a hash of the trial's whole config, stable across reruns), and
columns have fixed types, so exporting the same results twice writes the same files.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import pandas as pd

from fcl.config import RunConfig
from fcl.provenance import fcl_git, versions
from fcl.results_io import (EARLY_STOPPED, ERROR, OPTUNA_COLUMN, STUDY_COLUMNS, TERMINATED,
                            VERSION_COLUMNS, config_hash, empty, empty_trials, metric_types,
                            round_types, task_types, trial_rounds_frame, trial_row,
                            trial_tasks_frame, typed_trials)
from fcl.tune.space import resolve
from fcl.tune.trainable import load_result, seed_configs


@dataclass(frozen=True)
class TrialOutcome:
    config: RunConfig
    status: str                  # TERMINATED | ERROR | EARLY_STOPPED (by the ASHA scheduler)
    error: str
    result: object | None        # RunResult when TERMINATED
    versions: dict
    order: str                   # Ray's trial directory name: breaks ties between equal configs
    reached: dict = field(default_factory=dict)   # EARLY_STOPPED: round_reached, acc_reached
    tune: dict = field(default_factory=dict)      # tune_trial_id, tune_trial_dir, optuna_trial


def error_line(error: BaseException) -> str:
    """The original exception of a failed trial as one line: `Type: message`."""
    cause = getattr(error, "cause", None) or error
    text = str(cause).strip().splitlines()
    return f"{type(cause).__name__}: {text[0] if text else ''}".strip()


def tune_ids(res) -> dict:
    """Tune's trial id, the trial's folder, and its Optuna trial number where a search drew it.
    The id is one of Tune's auto-filled metrics, in every `Result.metrics` (Ray fills it in for
    a trial that never reported too): tests/test_tune.py checks it on a trial that failed
    before its first report."""
    return {"tune_trial_id": (res.metrics or {}).get("trial_id", ""),
            "tune_trial_dir": str(res.path),
            OPTUNA_COLUMN: (trial_config(res) or {}).get(OPTUNA_COLUMN)}


def trial_config(res) -> dict | None:
    """The trial's config: from its last report, else (a trial that failed before reporting,
    read back by a resumed study) from the params.json Tune wrote in its folder; None for a
    trial still pending when the study stopped."""
    if res.config is not None or res.error is None:
        return res.config
    try:
        with res.filesystem.open_input_stream(f"{res.path}/params.json") as f:
            return json.loads(f.read().decode())
    except (OSError, ValueError):
        return None


def outcomes(result_grid, base: RunConfig) -> tuple[list[TrialOutcome], int]:
    """Finished and failed trials of a Tune ResultGrid (a row per seed where a trial ran
    several); also counts unfinished ones."""
    out, unfinished = [], 0
    driver = {**versions(), "fcl_git": fcl_git()}
    for res in result_grid:
        order, config = os.path.basename(str(res.path)), trial_config(res)
        if config is None:           # never reported: still pending when the study stopped
            unfinished += 1
            continue
        ids, metrics = tune_ids(res), res.metrics or {}
        cfgs = seed_configs(resolve(base, config), int(metrics.get("seeds") or 1))
        if res.error is not None:
            out += [TrialOutcome(c, ERROR, error_line(res.error), None, driver, order,
                                 tune=ids) for c in cfgs]
            continue
        loaded = load_result(res.checkpoint) if res.checkpoint is not None else None
        if loaded is None and metrics.get("done"):
            # Tune marks a trial its scheduler stopped as done; a finished one has its result
            reached = {"round_reached": metrics["round"], "acc_reached": metrics["acc"]}
            out += [TrialOutcome(c, EARLY_STOPPED, "", None, driver, order, reached, ids)
                    for c in cfgs]
            continue
        if loaded is None:
            unfinished += 1
            continue
        results, meta = loaded
        out += [TrialOutcome(r.config, TERMINATED, "", r, {**driver, **meta["versions"]},
                             order, tune=ids) for r in results]
    return out, unfinished


def trial_ids(trials: list[TrialOutcome]) -> list[str]:
    """Config hash; equal configs (num_samples > 1 over a grid) get -1, -2, ... in Ray's order."""
    hashes = [config_hash(t.config) for t in trials]
    counts = {h: hashes.count(h) for h in hashes}
    seen: dict[str, int] = {}
    ids = []
    for h, t in sorted(zip(hashes, trials), key=lambda p: (p[0], p[1].order)):
        seen[h] = seen.get(h, 0) + 1
        ids.append((id(t), h if counts[h] == 1 else f"{h}-{seen[h]}"))
    by_obj = dict(ids)
    return [by_obj[id(t)] for t in trials]


def study_frames(study: str, preset: str, trials: list[TrialOutcome], sort_keys: list[str]
                 ) -> dict[str, pd.DataFrame]:
    ids = trial_ids(trials)
    rows, rounds, tasks = [], [], []
    for tid, t in zip(ids, trials):
        row = trial_row(study, tid, t.result, t.config.to_flat(), t.status, t.error)
        row.update({"preset": preset, **{k: t.versions.get(k, "") for k in VERSION_COLUMNS}})
        if t.result is not None:
            row.update(round_reached=t.config.rounds - 1, acc_reached=t.result.summary.acc)
        row.update(t.reached)
        row.update({k: "" for k in STUDY_COLUMNS if k.startswith("tune_")})
        row.update({OPTUNA_COLUMN: None, **t.tune})
        rows.append(row)
        if t.result is not None:
            rounds.append(trial_rounds_frame(study, tid, t.result))
            tasks.append(trial_tasks_frame(study, tid, t.result))
    metrics = metric_types([t.result.summary.row() for t in trials if t.result is not None])
    trials_df = typed_trials(pd.DataFrame(rows) if rows else empty_trials(), metrics)
    keys = [k for k in sort_keys if k in trials_df] + ["trial_id"]
    trials_df = trials_df.sort_values(keys, kind="stable").reset_index(drop=True)
    order = {tid: i for i, tid in enumerate(trials_df["trial_id"])}
    return {"trials": trials_df,
            "rounds": _in_order(rounds, round_types(), order, ["round"]),
            "tasks": _in_order(tasks, task_types(), order, ["round", "task"])}


def _in_order(frames: list[pd.DataFrame], types: dict[str, str], order: dict[str, int],
              keys: list[str]) -> pd.DataFrame:
    """The trials' frames in the order of trials.parquet, then by `keys` (every column even
    with no rows: a study whose trials all failed)."""
    df = pd.concat(frames, ignore_index=True) if frames else empty(types)
    return (df.assign(_order=df["trial_id"].map(order))
            .sort_values(["_order", *keys], kind="stable")
            .drop(columns="_order").reset_index(drop=True))


def summary_line(trials_df: pd.DataFrame) -> str:
    done = trials_df[trials_df["status"] == TERMINATED]
    stopped = int((trials_df["status"] == EARLY_STOPPED).sum())
    failed = len(trials_df) - len(done) - stopped
    best = "" if done.empty else f"; best ACC {done['acc'].max():.2f}%"
    early = f", {stopped} stopped early (ASHA)" if stopped else ""
    return (f"{len(done)} trials finished{early}, {failed} failed{best}; "
            f"{done['wall_s'].sum() / 60:.1f} trial-minutes")
