"""One Tune trial = one engine run, reported every round and checkpointed every few rounds.

Checkpoints hold the engine's `RunState` (server params, buffers and optimizer moments per
task, the accuracy matrix, the records so far); every random stream of a run is derived from
(seed, round, client), so a trial resumed from one finishes bit-identical to an uninterrupted
trial. The last report carries a checkpoint with the whole `RunResult`: the driver builds the
Parquet rows from it, and a trial restored from it (the driver died after it finished) just
reports it again.
"""
from __future__ import annotations

import json
import logging
import math
import os
import platform
import tempfile
import time

import torch
from ray import tune

from fcl.config import RunConfig
from fcl.data.datasets import ImageDataset, load_dataset
from fcl.data.federated import FederatedData, build_federated_data
from fcl.engine import RunResult, RunState, run
from fcl.tune.space import data_signature, dataset_key, resolve

STATE_FILE, RESULT_FILE, META_FILE = "run_state.pt", "run_result.pt", "meta.json"

# Per worker process: prepared data by signature (a reused actor keeps it between trials).
_PREPARED: dict[tuple, FederatedData] = {}


def versions() -> dict[str, str]:
    import fcl
    import ray
    return {"fcl_version": fcl.__version__, "torch_version": torch.__version__,
            "ray_version": ray.__version__, "python_version": platform.python_version()}


def federated_data(cfg: RunConfig, datasets: dict[tuple, ImageDataset]) -> FederatedData:
    """This trial's tasks and client shards, cut from the data set the driver loaded once (it
    reaches each node once, through the object store); cached per signature, never shared
    between different seeds or data keys."""
    key = data_signature(cfg)
    if key not in _PREPARED:
        if len(_PREPARED) >= 8:
            _PREPARED.clear()
        ds = datasets.get(dataset_key(cfg))
        if ds is None:              # a searched loader key: this trial's own data set
            ds = load_dataset(cfg.data.name, cfg.data.root, cfg.data)
        _PREPARED[key] = build_federated_data(ds, cfg.data, cfg.seed)
    return _PREPARED[key]


def round_metrics(records, bytes_total: int, wall_s: float) -> dict:
    """What `tune.report` gets after the last of `records`; `acc` is the mean accuracy at the
    latest evaluated round (NaN before the first evaluation), so the progress table shows it as
    it moves, and it equals the run's ACC after the last round."""
    record = records[-1]
    evaluated = [r for r in records if r["evaluated"]]
    return {"round": record["round"], "acc": evaluated[-1]["mean_acc"] if evaluated else math.nan,
            "drift": record["drift"], "train_loss": record["train_loss"],
            "bytes": bytes_total, "wall_s": wall_s}


def _save(obj, name: str, meta: dict) -> tempfile.TemporaryDirectory:
    tmp = tempfile.TemporaryDirectory(prefix="fcl-ckpt-")
    torch.save(obj, os.path.join(tmp.name, name))
    with open(os.path.join(tmp.name, META_FILE), "w") as f:
        json.dump(meta, f)
    return tmp


def _load(checkpoint: tune.Checkpoint) -> tuple[str, object, dict]:
    with checkpoint.as_directory() as d:
        with open(os.path.join(d, META_FILE)) as f:
            meta = json.load(f)
        name = RESULT_FILE if os.path.exists(os.path.join(d, RESULT_FILE)) else STATE_FILE
        return name, torch.load(os.path.join(d, name), weights_only=False), meta


def load_result(checkpoint: tune.Checkpoint) -> tuple[RunResult, dict] | None:
    """The finished run in a trial's last checkpoint (None if the trial did not finish)."""
    name, obj, meta = _load(checkpoint)
    return (obj, meta) if name == RESULT_FILE else None


def train_trial(config: dict, base: RunConfig, datasets: dict, checkpoint_every: int) -> None:
    """The Tune function trainable (bound with `tune.with_parameters`)."""
    logging.getLogger("ray.train._internal.storage").setLevel(logging.WARNING)  # per checkpoint
    cfg = resolve(base, config)
    resume, wall_before = None, 0.0
    checkpoint = tune.get_checkpoint()
    if checkpoint is not None:
        name, obj, meta = _load(checkpoint)
        if name == RESULT_FILE:                      # finished before the driver restarted
            tune.report(meta["final_metrics"], checkpoint=checkpoint)
            return
        resume, wall_before = obj, meta["wall_s"]
    data = federated_data(cfg, datasets)
    t0 = time.perf_counter()
    last = cfg.rounds - 1

    def on_round(record: dict, state: RunState) -> None:
        if record["round"] == last:                  # reported below, with the whole result
            return
        wall = wall_before + time.perf_counter() - t0
        metrics = round_metrics(state.records, state.bytes_up + state.bytes_down, wall)
        if (record["round"] + 1) % checkpoint_every:
            tune.report(metrics)
            return
        with _save(state, STATE_FILE, {"wall_s": wall, "next_round": state.next_round}) as d:
            tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(d))

    result = run(cfg, on_round=on_round, data=data, resume=resume)
    wall = wall_before + time.perf_counter() - t0
    summary = {**result.summary, "wall_s": wall,
               "samples_per_s": result.summary["samples"] / wall if wall > 0 else math.nan}
    result = RunResult(result.config, result.records, result.task_records, result.accuracy,
                       summary)
    final = {**round_metrics(result.records, summary["bytes_up"] + summary["bytes_down"], wall),
             **{k: v for k, v in summary.items() if isinstance(v, (int, float))}, "done": True}
    meta = {"wall_s": wall, "final_metrics": final, "versions": versions()}
    with _save(result, RESULT_FILE, meta) as d:
        tune.report(final, checkpoint=tune.Checkpoint.from_directory(d))

