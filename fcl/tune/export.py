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
import logging
import os
import re
from collections import Counter
from dataclasses import dataclass, field

import pandas as pd
import ray
import ray.util.client
from ray.tune import ExperimentAnalysis
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from fcl.config import RunConfig
from fcl.provenance import fcl_git, versions
from fcl.results_io import (EARLY_STOPPED, ERROR, NODE_COLUMNS, OPTUNA_COLUMN, STUDY_COLUMNS,
                            TERMINATED, VERSION_COLUMNS, config_hash, empty, empty_trials,
                            metric_types, round_rows, round_types, task_rows, task_types,
                            trial_row, typed, typed_trials)
from fcl.tune.progress import filtered_ray_logs
from fcl.tune.report import (TUNE_DONE, TUNE_HOSTNAME, TUNE_NODE_IP, TUNE_TRIAL_ID,
                             TrialReport)
from fcl.tune.space import resolve
from fcl.tune.trial import load_result, seed_configs


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
    hint: str = ""               # ERROR: Ray's advice in the error, if it gave any
    node: dict = field(default_factory=dict)      # hostname, node_ip: where it (last) ran


ROOT = re.compile(r"^\s*([A-Za-z_.]*(?:Error|Exception)): (.+)$")


def error_line(error: BaseException) -> str:
    """The original exception of a failed trial as one line: `Type: message`. Where the
    trial's worker died (Ray's ActorDiedError: e.g. it could not import the trainable), the
    exception that killed it, which Ray's message holds further down."""
    cause = getattr(error, "cause", None) or error
    text = str(cause).strip().splitlines()
    line = f"{type(cause).__name__}: {text[0] if text else ''}".strip()
    if "ActorDied" not in type(cause).__name__:
        return line
    first = next((i for i, t in enumerate(text) if t.startswith("During handling")), len(text))
    roots = [m.group(0).strip() for t in text[1:first] if (m := ROOT.match(t))]
    return f"{roots[-1]} (the trial's worker died: {type(cause).__name__})" if roots else line


HINT_STARTS = ("hint", "check that", "make sure", "try ", "consider ", "this may be because")


def error_hint(error: BaseException) -> str:
    """Ray's advice in a failed trial's error (e.g. its shared-storage one: "Check that all
    nodes in the cluster have read/write access to the configured storage path."): the first
    sentence that starts like advice, after the message's first line; "" if none."""
    cause = getattr(error, "cause", None) or error
    for line in str(cause).splitlines()[1:]:
        for sentence in line.strip().split(". "):
            if sentence.lower().startswith(HINT_STARTS):
                return sentence.rstrip(".:") + "."
    return ""


def node_of(metrics: dict, error: BaseException | None = None) -> dict:
    """Where a trial ran: Tune fills `hostname` and `node_ip` into every report; a trial whose
    worker died before reporting has its node's IP in Ray's error (`ip: ...`)."""
    ip = str(metrics.get(TUNE_NODE_IP) or "")
    if not ip and error is not None:
        found = re.search(r"^\s*ip: (\S+)$", str(getattr(error, "cause", None) or error),
                          re.MULTILINE)
        ip = found.group(1) if found else ""
    return {"hostname": str(metrics.get(TUNE_HOSTNAME) or ""), "node_ip": ip}


def tune_ids(res, config: dict | None = None) -> dict:
    """Tune's trial id, the trial's folder, and its Optuna trial number where a search drew it.
    The id is one of Tune's auto-filled metrics, in every `Result.metrics` (Ray fills it in for
    a trial that never reported too): tests/test_tune.py checks it on a trial that failed
    before its first report."""
    return {"tune_trial_id": (res.metrics or {}).get(TUNE_TRIAL_ID, ""),
            "tune_trial_dir": str(res.path),
            OPTUNA_COLUMN: (config or trial_config(res) or {}).get(OPTUNA_COLUMN)}


def trial_config(res, planned: dict | None = None) -> dict | None:
    """The trial's config: from its last report, else (a trial that failed before reporting,
    even before its worker could start: fcl missing there) what Tune's experiment state holds
    for it (`planned`, by Tune trial id) or the params.json Tune wrote in its folder; None for
    a trial still pending when the study stopped."""
    if res.config is not None or res.error is None:
        return res.config
    tid = (res.metrics or {}).get(TUNE_TRIAL_ID)
    if planned and tid in planned:
        return planned[tid]
    try:
        with res.filesystem.open_input_stream(f"{res.path}/params.json") as f:
            return json.loads(f.read().decode())
    except (OSError, ValueError):
        return None


def planned_configs(result_grid) -> dict:
    """Every trial's config as Tune's experiment state holds it, by Tune trial id ({} where
    that state cannot be read)."""
    try:
        with filtered_ray_logs(OneLineFailures()):
            analysis = ExperimentAnalysis(result_grid.experiment_path,
                                          storage_filesystem=result_grid.filesystem)
        return analysis.get_all_configs()
    except Exception:                # noqa: BLE001  (a trial's params.json is the fallback)
        return {}


class OneLineFailures(logging.Filter):
    """Each failed attempt of a trial as Tune's one line, without its traceback (it is in the
    trial's error.txt, and the study ends with one line per failed trial); Tune's note that
    trials which never reported have no metrics is dropped (their rows say so)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message.startswith("Failed to fetch metrics for"):
            return False
        if message.startswith("Trial task failed for trial"):
            record.exc_info, record.exc_text = None, None
        return True


def outcomes(result_grid, base: RunConfig, seeds: int = 1
             ) -> tuple[list[TrialOutcome], int]:
    """Finished and failed trials of a Tune ResultGrid (a row per seed where a trial ran
    several: `seeds`, where it never reported how many); also counts unfinished ones. A trial
    that failed before its first report is a row too (ERROR, its config, its error)."""
    out, unfinished = [], 0
    driver = {**versions(), "fcl_git": fcl_git()}
    planned = None
    for res in result_grid:
        if res.error is not None and res.config is None and planned is None:
            planned = planned_configs(result_grid)
        order, config = os.path.basename(str(res.path)), trial_config(res, planned)
        if config is None:           # never reported: still pending when the study stopped
            unfinished += 1
            continue
        ids, metrics = tune_ids(res, config), res.metrics or {}
        report = TrialReport.from_tune(metrics)
        cfgs = seed_configs(resolve(base, config), int(report.seeds) if report else seeds)
        node = node_of(metrics, res.error)
        if res.error is not None:
            out += [TrialOutcome(c, ERROR, error_line(res.error), None, driver, order,
                                 tune=ids, hint=error_hint(res.error), node=node)
                    for c in cfgs]
            continue
        loaded = load_result(res.checkpoint) if res.checkpoint is not None else None
        if loaded is None and report is not None and metrics.get(TUNE_DONE):
            # Tune marks a trial its scheduler stopped as done; a finished one has its result
            reached = {"round_reached": report.round, "acc_reached": report.acc}
            out += [TrialOutcome(c, EARLY_STOPPED, "", None, driver, order, reached, ids,
                                 node=node) for c in cfgs]
            continue
        if loaded is None:
            unfinished += 1
            continue
        results, meta = loaded
        out += [TrialOutcome(r.config, TERMINATED, "", r, {**driver, **meta["versions"]},
                             order, tune=ids, node=node) for r in results]
    return out, unfinished


def read_outcomes(result_grid, base: RunConfig, seeds: int = 1
                  ) -> tuple[list[TrialOutcome], int]:
    """`outcomes`, read where the trials' checkpoints are (`on_storage`)."""
    return on_storage(outcomes, result_grid, base, seeds)


def on_storage(fn, *args):
    """`fn(*args)` where the trials' checkpoints are: by the driver, or, for a driver on Ray
    Client (`ray://`, whose machine need not see `--storage`), by a task on the cluster's head
    node, the answer travelling back through Ray."""
    if not ray.util.client.ray.is_connected():
        return fn(*args)
    head = next(n["NodeID"] for n in ray.nodes()
                if n.get("Alive") and "node:__internal_head__" in n["Resources"])
    task = ray.remote(num_cpus=0, max_retries=0)(fn).options(
        scheduling_strategy=NodeAffinitySchedulingStrategy(head, soft=False))
    return ray.get(task.remote(*args))


def trial_ids(trials: list[TrialOutcome]) -> list[str]:
    """Config hash; equal configs (num_samples > 1 over a grid) get -1, -2, ... in Ray's order."""
    hashes = [config_hash(t.config) for t in trials]
    counts = Counter(hashes)
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
        row.update({**{k: "" for k in NODE_COLUMNS}, **t.node})
        rows.append(row)
        if t.result is not None:
            rounds += round_rows(study, tid, t.result)
            tasks += task_rows(study, tid, t.result)
    metrics = metric_types([t.result.summary.row() for t in trials if t.result is not None])
    trials_df = typed_trials(pd.DataFrame(rows) if rows else empty_trials(), metrics)
    keys = [k for k in sort_keys if k in trials_df] + ["trial_id"]
    trials_df = trials_df.sort_values(keys, kind="stable").reset_index(drop=True)
    order = {tid: i for i, tid in enumerate(trials_df["trial_id"])}
    return {"trials": trials_df,
            "rounds": _in_order(rounds, round_types(), order, ["round"]),
            "tasks": _in_order(tasks, task_types(), order, ["round", "task"])}


def _in_order(rows: list[dict], types: dict[str, str], order: dict[str, int],
              keys: list[str]) -> pd.DataFrame:
    """The trials' rows, typed, in the order of trials.parquet, then by `keys` (every column
    even with no rows: a study whose trials all failed)."""
    df = typed(pd.DataFrame(rows), types) if rows else empty(types)    # typed once: 10x faster
    return (df.assign(_order=df["trial_id"].map(order))
            .sort_values(["_order", *keys], kind="stable")
            .drop(columns="_order").reset_index(drop=True))


def failed_lines(trials_df: pd.DataFrame, keys: list[str], hints: dict[str, str]) -> list[str]:
    """One line per failed trial: its id, the values of the keys the study varies, the first
    line of its error and Ray's hint (`error_hint`), and the node it failed on if known."""
    out = []
    for _, row in trials_df[trials_df["status"] == ERROR].iterrows():
        config = ", ".join(f"{k}={row[k]}" for k in keys if k in row)
        where = f" on {row['node_ip']}" if row.get("node_ip") else ""
        hint = hints.get(row["trial_id"], "")
        out.append(f"failed: trial {row['trial_id']} ({config}){where}: {row['error']}" +
                   (f" [Ray: {hint}]" if hint else ""))
    return out


def summary_line(trials_df: pd.DataFrame) -> str:
    done = trials_df[trials_df["status"] == TERMINATED]
    stopped = int((trials_df["status"] == EARLY_STOPPED).sum())
    failed = len(trials_df) - len(done) - stopped
    diverged = done["diverged"].fillna(False).astype(bool) if "diverged" in done else None
    kept = done if diverged is None else done[~diverged]
    # one trial's ACC, not a setting's merit (best_line names a best only when it is one)
    best = "" if kept.empty else f"; highest trial ACC {kept['acc'].max():.2f}%"
    early = f", {stopped} stopped early (ASHA)" if stopped else ""
    blown = f" ({int(diverged.sum())} diverged)" if diverged is not None and diverged.any() else ""
    return (f"{len(done)} trials finished{blown}{early}, {failed} failed{best}; "
            f"{done['wall_s'].sum() / 60:.1f} trial-minutes")
