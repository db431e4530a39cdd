"""`run_study`: the one orchestration loop every study script shares.

    space -> checked against the config (one line, exit 2, before any trial)
          -> Ray Tune trials (one engine run each; reported every round, checkpointed)
          -> results/<study>/{trials,rounds,tasks}.parquet (written by the driver)

    run_study(study, options) = plan_study (no Ray) -> claim_state (the resume policy) ->
    fit (Tune) -> export_study

Tune keeps its state under `--storage` (default `<results>/.tune/<study>`); `--resume`
continues a study whose driver stopped, from that state and the trials' checkpoints.
"""
from __future__ import annotations

import itertools
import json
import os
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any, TextIO

import pyarrow.fs
import torch

from fcl.config import ConfigError, RunConfig, with_overrides
from fcl.data.datasets import ImageDataset, load_dataset
from fcl.data.federated import build_federated_data
from fcl.presets import preset as run_preset
from fcl.tune import cluster, schedulers, space as spaces, trackers
from fcl.tune.space import Space, describe_value, grid_points, training_samples, varying_keys

# Study trials at each preset: `fcl.presets` sizes, made smaller where a study of dozens of
# trials has to fit a laptop. `local`: half the rounds of `fcl run --preset local` on a third of
# its training images, so a 36-trial study takes about 20 minutes on 2 CPU cores.
STUDY_SIZES: dict[str, dict[str, Any]] = {
    "smoke": {"rounds": 5, "data.train_per_class": 20, "data.test_per_class": 10,
              "model.width": 8},
    "local": {"rounds": 25, "data.train_per_class": 200, "data.test_per_class": 100},
    "paper": {},
}
DEFAULT_SEEDS = {"smoke": 1, "local": 3, "paper": 3, "cifar10-local": 3, "cifar10-gpu": 3}
# Samples/s of one trial of resnet_tiny (width 16) on one CPU core of the 2-core machine this
# was written on, 2 trials at a time: the median `samples_per_s` of the NetTailor trials of
# the 7 grid studies stored in results/ (Split CIFAR-10, bf16 autocast: 895-1149/s). The dry
# run scales it by (16 / model.width)^2: LoRA at width 32 measured 207-271/s there, against
# 250 so scaled. Ray's start of each trial (a few seconds) comes on top.
CPU_SAMPLES_PER_S = {"resnet_tiny": 1000.0}


@dataclass(frozen=True)
class Study:
    """A study script's declaration: what varies (`space`, plus axes per preset, e.g. rounds
    100-400 at `paper` and 25-100 at `local`), what the study fixes (`base` config overrides,
    applied before the user's `--set`), and how trials are drawn."""
    name: str
    space: Space
    base: dict[str, Any] = field(default_factory=dict)
    by_preset: dict[str, Space] = field(default_factory=dict)
    searcher: str | None = None          # None: grid (and random draws); "optuna": TPE
    num_samples: int = 1                 # default --num-samples
    doc: str | None = None
    presets: dict[str, str] = field(default_factory=dict)   # study preset -> run preset
    early_stopping: bool = False         # may `--scheduler asha` stop trials early? Searches
    #                                      only: a grid's figure needs every final value

    def space_for(self, preset: str) -> Space:
        return {**self.space, **self.by_preset.get(preset, {})}


@dataclass(frozen=True)
class StudyOptions:
    """The flags every study script takes (see `fcl.tune.cli`)."""
    preset: str = "local"
    sets: dict[str, str] = field(default_factory=dict)
    seeds: int | None = None
    results: str = "results"
    storage: str | None = None
    address: str | None = None
    cpus_per_trial: float | None = None
    gpus_per_trial: float | None = None
    num_samples: int = 1
    max_concurrent: int | None = None
    resume: bool = False
    fresh: bool = False
    dry_run: bool = False
    objective: str = "acc"
    max_failures: int = 2
    checkpoint_every: int | None = None
    scheduler: schedulers.SchedulerOptions = field(default_factory=schedulers.SchedulerOptions)
    callbacks: tuple[str, ...] = ()      # trackers: tensorboard, mlflow, wandb (fcl.tune.trackers)
    retry_errored: bool = False          # with resume: rerun trials that failed for good
    command: str = ""                    # how the user ran it (for the --resume hint)


@dataclass(frozen=True)
class StudyOutcome:
    trials: int                       # planned
    paths: tuple[str, ...] = ()       # Parquet files written
    finished: int = 0
    failed: int = 0
    unfinished: int = 0
    wall_s: float = 0.0
    result_grid: Any = None           # Tune's ResultGrid (None for a dry run)
    frames: dict = field(default_factory=dict)   # "trials", "rounds": the exported DataFrames
    interrupted: bool = False         # stopped by Ctrl-C (or SIGTERM); continue with --resume


def base_config(opts: StudyOptions, study_base: dict, run_presets: dict | None = None
                ) -> RunConfig:
    """The run preset, resized for a study (`STUDY_SIZES`), the study's own keys, then `--set`.
    `run_presets` maps a study preset to a run preset of its own (`local` -> `flocora-local`),
    whose sizes are then kept as they are."""
    if opts.preset in (run_presets or {}):
        return run_preset(run_presets[opts.preset], {**study_base, **opts.sets})
    return run_preset(opts.preset, {**STUDY_SIZES.get(opts.preset, {}), **study_base, **opts.sets})


_LOADED: dict[tuple, ImageDataset] = {}      # per driver process: data sets are read-only


def load_datasets(configs: list[RunConfig]) -> dict[tuple, ImageDataset]:
    """Each data set the study uses, loaded once in the driver (`spaces.dataset_key`)."""
    out = {}
    for c in configs:
        key = spaces.dataset_key(c)
        if key not in _LOADED:
            _LOADED[key] = load_dataset(c.data.name, c.data.root, c.data)
        out[key] = _LOADED[key]
    return out


def check_data(configs: list[RunConfig], datasets: dict) -> None:
    """Cut every distinct (data keys, seed) once, so a partition that cannot be made (too many
    clients, a Dirichlet draw that starves a client) fails here, before any trial."""
    seen = set()
    for cfg in configs:
        sig = spaces.data_signature(cfg)
        if sig not in seen:
            seen.add(sig)
            build_federated_data(datasets[spaces.dataset_key(cfg)], cfg.data, cfg.seed)


def images_per_task(cfg: RunConfig, ds: ImageDataset) -> float:
    counts = torch.bincount(ds.train_y)
    if cfg.data.train_per_class:
        counts = counts.clamp(max=cfg.data.train_per_class)
    return float(counts.sum()) / cfg.data.num_tasks


# Config keys `training_samples` reads: a searched one changes what a trial costs.
COST_KEYS = ("rounds", "client.local_epochs", "participation.straggler_prob",
             "participation.fraction", "data.num_clients", "data.num_tasks",
             "data.train_per_class")


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
        ds = datasets[spaces.dataset_key(cfg)]
        costs.append((training_samples(cfg, images_per_task(cfg, ds)), values))
    top = max(costs, key=lambda c: c[0])
    return sum(c for c, _ in costs) / len(costs), top[0], top[1]


def plan_table(space: Space, base: RunConfig, num_samples: int, datasets: dict,
               concurrent: int, threads: int, gpus: float, searched: bool,
               seeds_per_trial: int = 1) -> tuple[int, str]:
    """The dry run: one line per grid point (x num_samples), or the searched ranges, and the
    expected cost in training samples (and minutes, where a CPU rate is known). Sampled keys
    are priced over their ranges: the mean of draws spread evenly, and the most they can cost."""
    points = grid_points(space)
    trials = num_samples if searched else len(points) * num_samples
    if searched:
        lines = [f"  {k:<30} {describe_value(v)}" for k, v in space.items()]
    else:
        keys = [k for k in space if spaces.is_grid(space[k])]
        cells = [[str(i)] + [describe_value(p[k]) for k in keys] for i, p in enumerate(points)]
        rows = [["#"] + keys] + cells
        widths = [max(len(r[j]) for r in rows) for j in range(len(rows[0]))]
        lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
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
    rate = CPU_SAMPLES_PER_S.get(base.model.backbone)
    if rate and not gpus:
        rate *= (16 / base.model.width) ** 2          # measured at width 16; cost ~ width^2
        minutes = [_minutes(n / (rate * threads * concurrent) / 60) for n in (mean, most)]
        upto = f" (at most {minutes[1]})" if most > mean else ""
        cost += (f"; about {minutes[0]} min{upto} at {concurrent} trials at a time "
                 f"({rate:.0f} samples/s per trial core, measured for {base.model.backbone} "
                 f"at width 16 and scaled)")
    return trials, "\n".join(lines + [cost])


def _minutes(m: float) -> str:
    return f"{m:.1f}" if m < 10 else f"{m:.0f}"


def experiment_fs(path: str) -> tuple[pyarrow.fs.FileSystem, str]:
    if "://" in path:
        return pyarrow.fs.FileSystem.from_uri(path)
    return pyarrow.fs.LocalFileSystem(), os.path.abspath(path)


def read_meta(path: str) -> dict | None:
    fs, p = experiment_fs(path)
    try:
        with fs.open_input_stream(p + "/study.json") as f:
            return json.loads(f.read().decode())
    except (FileNotFoundError, OSError):
        return None


def write_meta(path: str, meta: dict) -> None:
    fs, p = experiment_fs(path)
    fs.create_dir(p, recursive=True)
    with fs.open_output_stream(p + "/study.json.tmp") as f:
        f.write(json.dumps(meta, indent=1, sort_keys=True, default=str).encode())
    fs.move(p + "/study.json.tmp", p + "/study.json")


def remove_experiment(path: str) -> None:
    fs, p = experiment_fs(path)
    if fs.get_file_info(p).type != pyarrow.fs.FileType.NotFound:
        fs.delete_dir(p)


@dataclass(frozen=True)
class StudyPlan:
    """A study resolved against its options before any trial: what the steps of `run_study`
    share."""
    study: Study
    opts: StudyOptions
    cfg: RunConfig                     # the base config every trial starts from
    space: Space                       # what Tune runs (a grid's seeds are one more axis)
    datasets: dict[tuple, ImageDataset]
    scheduler: Any                     # None (FIFO) or Tune's ASHA
    address: str | None                # a Ray cluster to join; None: start a local Ray

    @property
    def name(self) -> str:
        return self.study.name


def run_study(study: Study, opts: StudyOptions = StudyOptions(), out: TextIO | None = None
              ) -> StudyOutcome:
    """Run (or `--resume`, or `--dry-run`) `study` and export its Parquet. Returns the counts,
    the exported frames and Tune's `ResultGrid` (`StudyOutcome`)."""
    t0 = time.perf_counter()
    out = out or sys.stdout
    plan = plan_study(study, opts)
    if opts.dry_run:
        return dry_run(plan, out)
    import ray
    if plan.address is None and not ray.is_initialized():   # checked before a local Ray starts
        trial_share(plan, cluster.local_resources(), False)
    state = claim_state(study.name, opts, study.searcher)      # refuses a rerun before Ray starts
    started = cluster.connect(plan.address)
    try:
        res = trial_share(plan, ray.cluster_resources(), cluster.can_autoscale())
        if not plan.cfg.run.threads:
            plan = replace(plan, cfg=with_overrides(plan.cfg, {"run.threads": res.threads}))
        grid, interrupted = fit(plan, state, res, out)
        return export_study(plan, grid, interrupted, time.perf_counter() - t0, out)
    finally:
        if started:
            ray.shutdown()


def plan_study(study: Study, opts: StudyOptions) -> StudyPlan:
    """Every check that needs no Ray: the scheduler and trackers asked for, the space against
    the config, the data sets loaded and cut (one line, exit 2, before any trial)."""
    schedulers.check(opts.scheduler, study.name, study.early_stopping)
    trackers.check(opts.callbacks)
    cfg = base_config(opts, study.base, study.presets)
    space = study_space(study.space_for(opts.preset), cfg, opts, study.searcher)
    configs = spaces.check_space(space, cfg)
    scheduler = schedulers.make_scheduler(opts.scheduler, cfg.rounds_per_phase,
                                          max(c.rounds for c in configs))
    datasets = load_datasets(configs)
    check_data(configs, datasets)
    return StudyPlan(study, opts, cfg, space, datasets, scheduler,
                     opts.address or os.environ.get("RAY_ADDRESS") or None)


def trial_share(plan: StudyPlan, have: dict, autoscales: bool) -> cluster.TrialResources:
    o = plan.opts
    return cluster.trial_resources(have, o.cpus_per_trial, o.gpus_per_trial, o.max_concurrent,
                                   autoscales)


def dry_run(plan: StudyPlan, out: TextIO) -> StudyOutcome:
    """The trial table and what it will cost; runs nothing."""
    have, autoscales = ((cluster.local_resources(), False) if plan.address is None
                        else _connected_resources(plan.address))
    res = trial_share(plan, have, autoscales)
    n = cluster.concurrency(have, res, plan.opts.max_concurrent)
    searcher = plan.study.searcher
    trials, table = plan_table(plan.space, plan.cfg, plan.opts.num_samples, plan.datasets, n,
                               res.threads, res.gpus, searcher is not None,
                               trial_seeds(plan.opts, searcher))
    print(f"study {plan.name} (preset {plan.opts.preset}): {res.cpus:g} CPU / {res.gpus:g} GPU "
          f"per trial\n{table}", file=out)
    if plan.scheduler is not None:
        rf = plan.opts.scheduler.reduction_factor
        print(f"scheduler: {schedulers.describe(plan.scheduler, rf)} (the cost above is the "
              "most it can take)", file=out)
    return StudyOutcome(trials)


def study_space(space: Space, cfg: RunConfig, opts: StudyOptions, searcher: str | None
                ) -> Space:
    """The space Tune runs: a grid gets its seeds as one more axis; a search runs each draw
    at `trial_seeds` seeds inside the trial, and its conditional keys need Optuna's
    define-by-run space."""
    if opts.num_samples < 1:
        raise ConfigError("--num-samples", opts.num_samples, "out of range", ">= 1")
    if searcher is not None:
        if "seed" in space:
            raise ConfigError("--seeds", opts.seeds, "the study's space already varies `seed`",
                              "leave --seeds out for this study")
        return space
    conditional = [k for k, v in space.items() if isinstance(v, spaces.Given)]
    if conditional:
        raise ConfigError(conditional[0], "given(...)", "conditional keys need a searcher "
                          "that samples define-by-run", "searcher='optuna' in the Study")
    return spaces.with_seeds(space, cfg.seed, opts.seeds or DEFAULT_SEEDS.get(opts.preset, 3))


@dataclass(frozen=True)
class TuneState:
    """Where Tune keeps a study's state, and what is there."""
    storage: str
    path: str                  # <storage>/<study>
    can_restore: bool
    optuna_url: str
    optuna_name: str


def trial_seeds(opts: StudyOptions, searcher: str | None) -> int:
    """Seeds each trial runs itself: a search's `--seeds` (the objective is their mean);
    a grid's seeds are trials of their own (one grid axis)."""
    return (opts.seeds or 1) if searcher is not None else 1


def claim_state(name: str, opts: StudyOptions, searcher: str | None) -> TuneState:
    """Check (and with --fresh, discard) the study's earlier state; refuses a rerun of a study
    that has state unless --resume or --fresh says what to do with it. Needs no Ray."""
    from ray import tune

    from fcl.tune import searchers
    storage = opts.storage or os.path.join(os.path.abspath(opts.results), ".tune")
    if "://" not in storage:
        storage = os.path.abspath(storage)
    path = storage.rstrip("/") + "/" + name
    state = TuneState(storage, path, tune.Tuner.can_restore(path),
                      searchers.storage_url(opts.results),
                      searchers.optuna_study_name(name, opts.objective))
    stale_optuna = searcher == "optuna" and searchers.optuna_study_exists(state.optuna_url,
                                                                          state.optuna_name)
    if opts.fresh:
        remove_experiment(path)
        if searcher == "optuna":
            searchers.delete_optuna_study(state.optuna_url, state.optuna_name)
        return TuneState(storage, path, False, state.optuna_url, state.optuna_name)
    if not opts.resume and (state.can_restore or stale_optuna):
        raise ConfigError("--resume", "off", f"study {name} already has state in {path}",
                          "--resume to continue it, or --fresh to discard it")
    if opts.retry_errored and not state.can_restore:
        raise ConfigError("--retry-errored", "on", f"study {name} has no Tune state in {path}",
                          "run the study first")
    return state


def _connected_resources(address: str | None) -> tuple[dict, bool]:
    import ray
    started = cluster.connect(address)
    try:
        return ray.cluster_resources(), cluster.can_autoscale()
    finally:
        if started:
            ray.shutdown()


def fit(plan: StudyPlan, state: TuneState, res: cluster.TrialResources, out: TextIO):
    """Tune's run of the study (the resume policy checked first): (ResultGrid, interrupted)."""
    from fcl.tune import progress
    meta = study_meta(plan)
    check_resume(plan.name, state, plan.opts, meta)
    write_meta(state.path, meta)
    if plan.study.searcher == "optuna":
        from fcl.tune.searchers import dashboard_command
        print(f"optuna: {dashboard_command(plan.opts.results)}", file=out, flush=True)
    tuner = make_tuner(plan, state, res, out)
    with progress.quiet_interrupt() as interrupted:
        grid = tuner.fit()
    return grid, bool(interrupted)


def export_study(plan: StudyPlan, grid, interrupted: bool, wall_s: float, out: TextIO
                 ) -> StudyOutcome:
    """The study's Parquet from the trials' last checkpoints (held back if interrupted)."""
    from fcl.tune import export
    trials, unfinished = export.outcomes(grid, plan.cfg)
    frames = export.study_frames(plan.name, plan.opts.preset, trials, varying_keys(plan.space))
    df = frames["trials"]
    failed = int((df["status"] == "ERROR").sum())
    counts = (len(grid), len(df) - failed, failed, unfinished)
    if interrupted:          # the Parquet files wait for the study to complete (--resume)
        outcome = StudyOutcome(counts[0], (), *counts[1:], wall_s, grid, frames, True)
        print(interrupted_line(outcome, plan.opts), file=sys.stderr)
        return outcome
    paths = export.write_study(frames, os.path.join(plan.opts.results, plan.name))
    print(export.summary_line(df), file=out)
    for p in paths:
        print(f"wrote {p}", file=out)
    if unfinished:
        print(f"{unfinished} trials did not finish; run again with --resume", file=out)
    return StudyOutcome(counts[0], tuple(paths), *counts[1:], wall_s, grid, frames)


def check_resume(name: str, state: TuneState, opts: StudyOptions, meta: dict) -> None:
    if not (opts.resume and state.can_restore):
        return
    old = read_meta(state.path)
    if old is None:
        return
    new = {**meta["base"], "--seeds": meta["trial_seeds"]}
    was = {**old["base"], "--seeds": old.get("trial_seeds", 1)}
    diff = sorted(k for k in new if was.get(k) != new[k])
    if diff:
        raise ConfigError("--resume", ",".join(diff), "differs from the interrupted study's "
                          "config", "the same --preset/--set/--seeds/--cpus-per-trial, or "
                          "--fresh")


def study_meta(plan: StudyPlan) -> dict:
    opts, searcher = plan.opts, plan.study.searcher
    return {"study": plan.name, "preset": opts.preset, "base": plan.cfg.to_flat(),
            "space": {k: describe_value(v) if not spaces.is_grid(v) else
                      [describe_value(x) for x in v["grid_search"]]
                      for k, v in plan.space.items()},
            "num_samples": opts.num_samples, "searcher": searcher, "objective": opts.objective,
            "trial_seeds": trial_seeds(opts, searcher),
            "scheduler": schedulers.describe(plan.scheduler, opts.scheduler.reduction_factor)}


def progress_reporter(space: Space, searcher: str | None):
    """Tune's table with the config keys the study varies (a variant axis's keys read from
    inside it), the Optuna trial number of a search, and the rounds each trial has done."""
    from fcl.tune.progress import Reporter
    from fcl.tune.searchers import TRIAL_NUMBER
    columns = ({TRIAL_NUMBER: "optuna #"} if searcher == "optuna" else {})
    columns.update(spaces.display_columns(space))
    return Reporter(
        parameter_columns=columns,
        metric_columns={"training_iteration": "rounds done", "acc": "ACC", "bytes": "bytes"},
        max_report_frequency=30, max_progress_rows=40, max_column_length=16)


def make_tuner(plan: StudyPlan, state: TuneState, res: cluster.TrialResources, out: TextIO):
    from ray import tune

    from fcl.tune import searchers
    from fcl.tune.trainable import train_trial
    name, cfg, opts, searcher = plan.name, plan.cfg, plan.opts, plan.study.searcher
    trainable = tune.with_resources(
        tune.with_parameters(train_trial, base=cfg, datasets=plan.datasets,
                             checkpoint_every=opts.checkpoint_every or max(1, cfg.rounds // 10),
                             seeds=trial_seeds(opts, searcher)),
        res.as_dict())
    run_config = tune.RunConfig(
        name=name, storage_path=state.storage, verbose=1,
        progress_reporter=progress_reporter(plan.space, searcher),
        callbacks=trackers.callbacks(opts.callbacks, name, opts.results),
        failure_config=tune.FailureConfig(max_failures=opts.max_failures),
        # two: a driver killed between a trial's new checkpoint and its experiment snapshot
        # resumes from the previous one, which must still exist (with one, Tune had already
        # deleted it: "Could not recover from checkpoint", seen here under load)
        checkpoint_config=tune.CheckpointConfig(num_to_keep=2))
    if opts.resume and state.can_restore:
        print(f"resuming study {name} from {state.path}", file=out, flush=True)
        return tune.Tuner.restore(state.path, trainable, resume_unfinished=True,
                                  resume_errored=opts.retry_errored)
    search_alg, param_space = None, spaces.complete_variants(plan.space, cfg)
    if searcher == "optuna":
        search_alg = searchers.optuna_searcher(name, opts.objective, opts.results, cfg.seed,
                                               opts.max_concurrent, plan.space)
        param_space = {}                     # the searcher's define-by-run space holds it all
    tune_config = tune.TuneConfig(num_samples=opts.num_samples, search_alg=search_alg,
                                  scheduler=plan.scheduler,
                                  max_concurrent_trials=opts.max_concurrent, reuse_actors=True)
    return tune.Tuner(trainable, param_space=param_space, tune_config=tune_config,
                      run_config=run_config)


def interrupted_line(outcome: StudyOutcome, opts: StudyOptions) -> str:
    command = opts.command or "the same command"
    resume = command if "--resume" in command.split() else f"{command} --resume"
    return (f"interrupted: {outcome.finished} of {outcome.trials} trials finished "
            f"({outcome.unfinished} to go); continue with: {resume}")
