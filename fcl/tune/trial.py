"""One Tune trial = one engine run, reported every round and checkpointed every few rounds.

Checkpoints hold per seed the engine's `RunState` (server params, buffers and optimizer moments
per task, the accuracy matrix, running totals) and the round records reported so far; every
random stream of a run is derived from (seed, round, client), so a trial resumed from one
finishes bit-identical to an uninterrupted trial. A trial of several seeds (a search's
`--seeds N`) runs them in lockstep and reports their mean every round. The last report carries
a checkpoint with the whole `RunResult`: the driver builds the Parquet rows from it, and a trial
restored from it (the driver died after it finished) just reports it again.
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import torch
from ray import tune

from fcl.config import RunConfig, with_overrides
from fcl.data.datasets import ImageDataset, load_dataset
from fcl.data.federated import FederatedData, build_federated_data
from fcl.engine import RunResult, RunState, finish, run_round, start
from fcl.provenance import versions
from fcl.records import RoundRecord
from fcl.tune.report import TrialReport
from fcl.tune.data_sharing import data_signature, dataset_key
from fcl.tune.shipped_methods import received
from fcl.tune.space import resolve
from fcl.tune.trial_models import save_trial_models

STATE_FILE, RESULT_FILE, META_FILE = "run_state.pt", "run_result.pt", "meta.json"

# Per worker process: prepared data by signature (a reused actor keeps it between trials).
_PREPARED: dict[tuple, FederatedData] = {}


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


class SeedRun:
    """One seed of a trial, advanced one round at a time (several seeds of a trial move in
    lockstep, so each report covers the same round of all of them). It holds the engine's plan
    and state between rounds (`engine.start`, `engine.run_round`): every random stream derives
    from (seed, round, client), so a run advanced round by round, or resumed from a checkpoint
    of its state, is bit-identical to one run straight through."""

    def __init__(self, cfg: RunConfig, datasets: dict,
                 saved: tuple[RunState, list[RoundRecord]] | None):
        resume, self.records = saved if saved is not None else (None, [])
        # the engine's state holds no history: the trial keeps the records reported so far
        self.plan, self.state = start(cfg, data=federated_data(cfg, datasets), resume=resume)

    @property
    def next_round(self) -> int:
        return self.state.next_round

    @property
    def done(self) -> bool:
        return self.state.next_round >= self.plan.cfg.rounds

    def step(self) -> None:
        """Train the next round."""
        self.state, record = run_round(self.plan, self.state, self.state.next_round)
        self.records.append(record)

    def result(self, wall_s: float) -> RunResult:
        """The whole run (after its last round), `wall_s` being this seed's share of the
        trial's time, from its first round (before any resume) to its last."""
        return finish(self.plan, self.state, self.records, wall_s)

    def saved(self) -> tuple[RunState, list[RoundRecord]]:
        """What a checkpoint keeps of this seed: the engine's state and the records so far (a
        copy: the next round appends to them)."""
        return self.state, list(self.records)


def _save(obj, name: str, meta: dict) -> tempfile.TemporaryDirectory:
    tmp = tempfile.TemporaryDirectory(prefix="fcl-ckpt-")
    torch.save(obj, os.path.join(tmp.name, name))
    with open(os.path.join(tmp.name, META_FILE), "w") as f:
        json.dump(meta, f)
    return tmp


def _load(checkpoint: tune.Checkpoint) -> tuple[str, list, dict]:
    """(file name, the seeds' RunStates or RunResults, meta) of a trial's checkpoint."""
    with checkpoint.as_directory() as d:
        with open(os.path.join(d, META_FILE)) as f:
            meta = json.load(f)
        name = RESULT_FILE if os.path.exists(os.path.join(d, RESULT_FILE)) else STATE_FILE
        obj = torch.load(os.path.join(d, name), weights_only=False)
        return name, obj if isinstance(obj, list) else [obj], meta


def load_result(checkpoint: tune.Checkpoint) -> tuple[list[RunResult], dict] | None:
    """The finished runs (one per seed) in a trial's last checkpoint (None if the trial did
    not finish)."""
    name, obj, meta = _load(checkpoint)
    return (obj, meta) if name == RESULT_FILE else None


def seed_configs(cfg: RunConfig, seeds: int) -> list[RunConfig]:
    return [cfg] if seeds == 1 else [with_overrides(cfg, {"seed": cfg.seed + i})
                                     for i in range(seeds)]


def train_trial(config: dict, base: RunConfig, datasets: dict, checkpoint_every: int,
                seeds: int = 1, save_models: bool = False, methods: tuple = ()) -> None:
    """The Tune function trainable (bound with `tune.with_parameters`): the trial's config at
    `seeds` seeds (seed, seed+1, ...), reported every round as the mean over them; the last
    checkpoint holds the seeds' trained models too with `save_models`. `methods`: the driver's
    methods from outside fcl (`fcl.tune.shipped_methods`), registered before anything else."""
    logging.getLogger("ray.train").setLevel(logging.WARNING)   # a line per checkpoint at INFO
    received(methods)
    cfgs = seed_configs(resolve(base, config), seeds)
    states, wall_before = [None] * len(cfgs), 0.0
    checkpoint = tune.get_checkpoint()
    if checkpoint is not None:
        name, obj, meta = _load(checkpoint)
        if name == RESULT_FILE:                      # finished before the driver restarted
            tune.report(meta["final_metrics"], checkpoint=checkpoint)
            return
        states, wall_before = obj, meta["wall_s"]
    runs = [SeedRun(c, datasets, s) for c, s in zip(cfgs, states)]
    wall = _train_and_report(runs, wall_before, checkpoint_every)
    results = [r.result(wall / len(runs)) for r in runs]
    final = TrialReport.mean([TrialReport.final(res) for res in results], wall).to_tune()
    meta = {"wall_s": wall, "final_metrics": final, "versions": versions()}
    with _save(results, RESULT_FILE, meta) as d:
        if save_models:
            save_trial_models(runs, results, d)
        tune.report(final, checkpoint=tune.Checkpoint.from_directory(d))


def _train_and_report(runs: list[SeedRun], wall_before: float, checkpoint_every: int) -> float:
    """Every round of `runs`, each reported to Tune (with a checkpoint every `checkpoint_every`
    rounds) but the last; returns the trial's wall time after its last round.

    A function trainable's `tune.report` blocks until the driver has taken the result and asks
    for the next (Ray runs it with synchronous reporting): ~10-100 ms a round, measured on 2 cores,
    against rounds of about a second. So round r+1 trains in a worker thread while round r's
    report is out. That is safe because the engine's state is immutable data (every round
    returns new tensors; the model is the only thing trained in place), so the reported state
    and records are a snapshot. A trial the scheduler stops may leave one round training in
    that thread, discarded."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fcl-round")
    t0 = time.perf_counter()
    try:
        pending = pool.submit(_step_all, runs)
        while True:
            pending.result()
            wall = wall_before + time.perf_counter() - t0
            if runs[0].done:
                return wall
            metrics = TrialReport.mean([TrialReport.after(r.records, r.state.totals.tcc, wall)
                                        for r in runs]).to_tune()
            saved = [r.saved() for r in runs] if runs[0].next_round % checkpoint_every == 0 \
                else None
            pending = pool.submit(_step_all, runs)
            if saved is None:
                tune.report(metrics)
                continue
            with _save(saved, STATE_FILE, {"wall_s": wall, "next_round": saved[0][0].next_round}
                       ) as d:
                tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(d))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _step_all(runs: list[SeedRun]) -> None:
    for r in runs:
        r.step()
