"""Tune's `Tuner` for a planned study: the trainable bound to the base config and data sets,
the searcher (Optuna's define-by-run space) or the grid, the scheduler, the trackers and the
live table; or, with `--resume`, the Tuner restored from the study's state."""
from __future__ import annotations

import contextlib
import logging
from collections import Counter
from collections.abc import Iterator
from typing import TextIO

from ray import tune
from ray.tune import ExperimentAnalysis

from fcl.results_io import ERROR, TERMINATED
from fcl.tune import cluster, nodes, trackers
from fcl.tune.cost import cpu_seconds, measured_rate, point_cost
from fcl.tune.disk_full import StopOnDiskFull
from fcl.tune.plan import StudyPlan
from fcl.tune.progress import LineReporter, Reporter
from fcl.tune.report import BYTES, METRIC, TUNE_ITERATION
from fcl.tune.searchers import TRIAL_NUMBER, optuna_searcher
from fcl.tune.space import Space, complete_variants, display_columns, grid_points
from fcl.tune.state import TuneState
from fcl.tune.shipped_methods import shipped
from fcl.tune.trial import train_trial


def make_tuner(plan: StudyPlan, state: TuneState, res: cluster.TrialResources, out: TextIO,
               table: bool = False, callbacks: list | None = None,
               start: float | None = None) -> tune.Tuner:
    """`callbacks`: more Tune callbacks for a new study (a resumed one runs those it had);
    `start`: the driver's start (`time.perf_counter()`), where the progress line's elapsed
    time counts from."""
    name, opts = plan.name, plan.opts
    trainable = bound_trainable(plan, res)
    if opts.resume and state.can_restore:
        print(f"resuming study {name} from {state.path}: "
              f"{resume_plan(state.path, opts.retry_errored)}", file=out, flush=True)
        with unstarted_trials_quiet():
            return tune.Tuner.restore(state.path, trainable, resume_unfinished=True,
                                      resume_errored=opts.retry_errored)
    search_alg, param_space = None, complete_variants(plan.space, plan.cfg)
    if plan.study.searcher == "optuna":
        search_alg = optuna_searcher(name, opts.objective, opts.results, plan.cfg.seed,
                                     slots(res, opts.max_concurrent), plan.space,
                                     opts.optuna_storage)
        param_space = {}                     # the searcher's define-by-run space holds it all
    tune_config = tune.TuneConfig(num_samples=opts.num_samples, search_alg=search_alg,
                                  scheduler=plan.scheduler,
                                  max_concurrent_trials=opts.max_concurrent, reuse_actors=True)
    return tune.Tuner(trainable, param_space=param_space, tune_config=tune_config,
                      run_config=run_config(plan, state, reporter(plan, res, table, start),
                                            callbacks or []))


def slots(res: cluster.TrialResources, max_concurrent: int | None) -> int:
    """How many trials the connected cluster's live nodes run at once (`--max-concurrent`
    caps it): a search's default concurrency too."""
    return nodes.concurrency(nodes.alive_nodes(), res.cpus, res.gpus, max_concurrent)


@contextlib.contextmanager
def unstarted_trials_quiet() -> Iterator[None]:
    """Reading a stopped study's Tune state, Tune warns once per read about every trial that
    has not reported yet ("Failed to fetch metrics for N trial(s)", a line per trial: 148
    lines on resuming a grid with 74 trials to go); those are exactly the trials `--resume`
    runs, which the resume line counts, so the warning is held back while the state is read."""
    log = logging.getLogger("ray.tune.analysis.experiment_analysis")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(level)


def resume_plan(path: str, retry_errored: bool) -> str:
    """What `--resume` will do with the trials in the study's Tune state, by status."""
    try:
        with unstarted_trials_quiet():
            trials = ExperimentAnalysis(path).trials
    except Exception:                # noqa: BLE001  (Tune's restore says what is wrong)
        return "its trials as Tune kept them"
    count = Counter(t.status for t in trials)
    done, failed = count.get(TERMINATED, 0), count.get(ERROR, 0)
    left = len(trials) - done - failed
    again = (f"{failed} failed rerun (--retry-errored)" if retry_errored else
             f"{failed} failed stay failed (add --retry-errored to rerun them)")
    return f"{done} finished kept, {left} unfinished continue, {again}"


def bound_trainable(plan: StudyPlan, res: cluster.TrialResources):
    """`train_trial` with what every trial shares (the base config, the loaded data sets:
    shipped once by Ray's object store) and the resources each asks for."""
    cfg = plan.cfg
    every = plan.opts.checkpoint_every or max(1, cfg.rounds // 10)
    return tune.with_resources(
        tune.with_parameters(train_trial, base=cfg, datasets=plan.datasets,
                             checkpoint_every=every, seeds=plan.trial_seeds,
                             save_models=plan.opts.save_models, methods=shipped()),
        res.as_dict())


def run_config(plan: StudyPlan, state: TuneState, progress: Reporter | None = None,
               extra: list | None = None) -> tune.RunConfig:
    opts = plan.opts
    return tune.RunConfig(
        name=plan.name, storage_path=state.storage, verbose=1,
        progress_reporter=progress or progress_reporter(plan.space, plan.study.searcher),
        callbacks=[*trackers.callbacks(opts.callbacks, plan.name, opts.results, plan.manifest()),
                   StopOnDiskFull(), *(extra or [])],
        failure_config=tune.FailureConfig(max_failures=opts.max_failures),
        # every checkpoint kept while the study runs (`fcl.tune.checkpoints` deletes all but each
        # trial's last after the export). With `num_to_keep`, Tune deletes a trial's older
        # checkpoint the moment a newer one arrives, while the snapshot `--resume` restores
        # may still name it (a driver killed in between resumed with "Could not recover from
        # checkpoint"), and Ray 2.60 forces an experiment snapshot every `num_to_keep`
        # checkpoints of a trial, each writing every trial's state: a cost per trial that grew
        # with the study's size (docs/benchmarks.md). Without it Tune deletes nothing and
        # snapshots at its own period (at most ~5% of the driver's time).
        checkpoint_config=tune.CheckpointConfig(num_to_keep=None))


def reporter(plan: StudyPlan, res: cluster.TrialResources, table: bool,
             start: float | None = None) -> Reporter:
    """Tune's table (`--tune-table`), else one line: trials done / running / failed / to go,
    the elapsed time since `start` and an ETA from the dry run's cost model (`fcl.tune.cost`:
    the base config's training rate measured on the driver at the trials' threads) until
    trials finish, then from their wall times."""
    if table:
        return progress_reporter(plan.space, plan.study.searcher)
    points = grid_points(plan.space)
    total = plan.planned_trials
    prior = None
    if not res.gpus:
        samples = sum(point_cost(p, plan.cfg, plan.datasets)[0] for p in points) / len(points)
        # a shorter look than the dry run's: every study pays it before its trials start
        rate = measured_rate(plan.cfg, plan.datasets, res.threads, seconds=0.5)
        prior = cpu_seconds(samples * plan.trial_seeds, plan.trial_seeds, rate)
    concurrent = slots(res, plan.opts.max_concurrent)
    return LineReporter(total, concurrent, prior, start, max_report_frequency=30)


def progress_reporter(space: Space, searcher: str | None) -> Reporter:
    """Tune's table with the config keys the study varies (a variant axis's keys read from
    inside it), the Optuna trial number of a search, and the rounds each trial has done."""
    columns = ({TRIAL_NUMBER: "optuna #"} if searcher == "optuna" else {})
    columns.update(display_columns(space))
    return Reporter(
        parameter_columns=columns,
        metric_columns={TUNE_ITERATION: "rounds done", METRIC: "ACC", BYTES: "bytes"},
        max_report_frequency=30, max_progress_rows=40, max_column_length=16)
