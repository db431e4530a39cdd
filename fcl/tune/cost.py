"""The dry run (`--dry-run`): the trial table and what the study will cost, in training samples
and, where a CPU rate was measured, in minutes. Runs nothing."""
from __future__ import annotations

import itertools
from typing import TextIO

import ray
import torch

from fcl.config import RunConfig, with_overrides
from fcl.data.datasets import ImageDataset
from fcl.tune import cluster, nodes, schedulers, space as spaces
from fcl.tune.left_to_run import left_to_run
from fcl.tune.node_kinds import study_kinds
from fcl.tune.plan import StudyPlan
from fcl.federated.participation import training_samples
from fcl.tune.data_sharing import dataset_key
from fcl.tune.space import Space, describe_value, grid_points
from fcl.tune.study import StudyOutcome

# What a seed run costs beyond its training samples at the measured rate: the data split, the
# evaluations, a report and a checkpoint every round. Smoke trials (400 samples, width 8) took
# 0.8-1.7 s of Tune's time_total_s on 2 cores, against 0.1 s of training; without it a small
# study's ETA read 0:01 before its first trial ended. A study's real trials (minutes each)
# hardly notice it.
RUN_FIXED_S = 1.0


def cpu_seconds(samples: float, runs: float, rate: float) -> float:
    """Seconds that `runs` seed runs training `samples` in all take on CPU, one at a time, at
    `rate` training samples/s (`measured_rate`), each run's fixed cost on top."""
    return samples / rate + runs * RUN_FIXED_S


# Config keys `training_samples` reads: a searched one changes what a trial costs.
COST_KEYS = ("rounds", "client.local_epochs", "participation.straggler_prob",
             "participation.fraction", "data.num_clients", "data.num_tasks",
             "data.train_per_class")


def dry_run(plan: StudyPlan, out: TextIO) -> StudyOutcome:
    """The trial table and what it will cost; runs nothing."""
    have, autoscales, on = ((cluster.local_resources(), False, None) if plan.address is None
                            else connected_resources(plan.address))
    on = on or nodes.one_node(have)
    res = plan.resources(have, autoscales, on)
    n = nodes.concurrency(on, res.cpus, res.gpus, plan.opts.max_concurrent)
    cfg = plan.cfg if plan.cfg.run.threads else with_overrides(plan.cfg,
                                                                {"run.threads": res.threads})
    left = left_to_run(plan, cfg, lambda: study_kinds(plan.address, res.cpus, res.gpus))
    space, notes = left.space, left.notes()
    trials, table = plan_table(space, plan.cfg, plan.opts.num_samples, plan.datasets, n,
                               res.threads, res.gpus, plan.study.searcher is not None,
                               plan.trial_seeds)
    print(f"study {plan.name} (preset {plan.opts.preset}): {res.cpus:g} CPU / {res.gpus:g} GPU "
          f"per trial", *notes, table, sep="\n", file=out)
    if plan.scheduler is not None:
        rf = plan.opts.scheduler.reduction_factor
        print(f"scheduler: {schedulers.describe(plan.scheduler, rf)} (the cost above is the "
              "most it can take)", file=out)
    return StudyOutcome(trials)


def connected_resources(address: str | None) -> tuple[dict, bool, list]:
    """What the cluster at `address` has, whether it can grow, and its live nodes (joined
    just to ask)."""
    started = cluster.connect(address)
    try:
        return ray.cluster_resources(), cluster.can_autoscale(), nodes.alive_nodes()
    finally:
        if started:
            ray.shutdown()


def images_per_task(cfg: RunConfig, ds: ImageDataset) -> float:
    counts = torch.bincount(ds.train_y)
    if cfg.data.train_per_class:
        counts = counts.clamp(max=cfg.data.train_per_class)
    return float(counts.sum()) / cfg.data.num_tasks


def point_cost(point: dict, base: RunConfig, datasets: dict) -> tuple[float, float, dict]:
    """(mean, max, the costliest values) of the training samples of one trial at grid point
    `point`: its sampled cost keys at every combination of their representatives (both ends
    of a range, every choice), so the mean is that of draws spread evenly over the ranges."""
    fixed = {k: v for k, v in point.items() if not isinstance(v, (spaces.Domain, spaces.Given))}
    sampled = {k: spaces.representatives(v) for k, v in point.items()
               if k in COST_KEYS and k not in fixed}
    costs = []
    for combo in itertools.product(*sampled.values()):
        values = dict(zip(sampled, combo))
        cfg = spaces.resolve(base, {**fixed, **values})
        ds = datasets[dataset_key(cfg)]
        costs.append((training_samples(cfg, images_per_task(cfg, ds)), values))
    top = max(costs, key=lambda c: c[0])
    return sum(c for c, _ in costs) / len(costs), top[0], top[1]


def trial_lines(space: Space, points: list[dict], searched: bool) -> list[str]:
    """A search's ranges, one key a line; or a grid's points, one a line under a header."""
    if searched:
        return [f"  {k:<30} {describe_value(v)}" for k, v in space.items()]
    keys = [k for k in space if spaces.is_grid(space[k])]
    rows = [["#"] + keys] + [[str(i)] + [describe_value(p[k]) for k in keys]
                             for i, p in enumerate(points)]
    widths = [max(len(r[j]) for r in rows) for j in range(len(rows[0]))]
    return ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]


def plan_table(space: Space, base: RunConfig, num_samples: int, datasets: dict,
               concurrent: int, threads: int, gpus: float, searched: bool,
               seeds_per_trial: int = 1) -> tuple[int, str]:
    """The dry run: one line per grid point (x num_samples), or the searched ranges, and the
    expected cost in training samples (and minutes, where a CPU rate is known). Sampled keys
    are priced over their ranges: the mean of draws spread evenly, and the most they can cost."""
    points = grid_points(space)
    trials = num_samples if searched else len(points) * num_samples
    priced = [point_cost(p, base, datasets) for p in points]
    scale = trials / len(points) * seeds_per_trial
    mean, most = sum(p[0] for p in priced) * scale, sum(p[1] for p in priced) * scale
    repeat = f" x {num_samples} samples" if num_samples > 1 and not searched else ""
    repeat += f" x {seeds_per_trial} seeds each" if seeds_per_trial > 1 else ""
    cost = f"{trials} trials{repeat}; {mean:,.0f} training samples in all"
    costliest = {k: v for p in priced for k, v in p[2].items()}
    if most > mean:
        cost += (f" for draws spread evenly over the ranges, at most {most:,.0f} (" +
                 ", ".join(f"{k}={describe_value(v)}" for k, v in costliest.items()) + ")")
    if not gpus:
        rate = measured_rate(base, datasets, threads)
        runs = trials * seeds_per_trial
        minutes = [_minutes(cpu_seconds(n, runs, rate) / concurrent / 60) for n in (mean, most)]
        upto = f" (at most {minutes[1]})" if most > mean else ""
        cost += (f"; about {minutes[0]} min{upto} at {concurrent} trials at a time, at "
                 f"{rate:.0f} training samples/s per trial (measured by this command: SGD "
                 f"steps of the base config's model on {threads} thread"
                 f"{'s' if threads > 1 else ''}, taken as what each trial gets; its evaluations "
                 "and Ray's start of each trial come on top)")
    return trials, "\n".join(trial_lines(space, points, searched) + [cost])


# (model, compute mode, batch, momentum, seed, image shape, tasks, threads) -> (samples/s, the
# seconds its look took): the rates this command has measured
_RATES: dict[tuple, tuple[float, float]] = {}


def measured_rate(cfg: RunConfig, datasets: dict, threads: int, seconds: float = 2.0) -> float:
    """Training samples/s of one trial of `cfg` on `threads` threads, measured for about
    `seconds` where the dry run runs (`fcl.bench.step_rate`: its model, compute mode and batch
    size). Measured once per command for each model, compute mode, batch and thread count:
    `run_all.py`'s next study or `--auto-seeds`' next batch reuses a look at least as long
    (each look is 2 s plus the model's build and warm-up)."""
    from fcl.bench import step_rate
    ds = datasets[dataset_key(cfg)]
    per_task = max(1, ds.num_classes // cfg.data.num_tasks)
    # the weights do not change the speed, and they may be a file only the nodes have
    random_init = with_overrides(cfg, {"model.weights": "", "model.pretrained": "none"})
    key = (repr(random_init.model), repr(random_init.run), random_init.client.batch_size,
           random_init.client.momentum, random_init.seed, tuple(ds.image_shape), per_task,
           cfg.data.num_tasks, threads)
    known = _RATES.get(key)
    if known is not None and known[1] >= seconds:
        return known[0]
    rate = step_rate(random_init, ds.image_shape, [per_task] * cfg.data.num_tasks, threads,
                     seconds)
    _RATES[key] = (rate, seconds)
    return rate


def _minutes(m: float) -> str:
    return f"{m:.1f}" if m < 10 else f"{m:.0f}"
