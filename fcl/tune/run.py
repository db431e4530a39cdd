"""`run_study`: the one orchestration loop every study script shares.

    check_outputs (writable folders) -> hold (the study's lock: one driver per study) ->
    plan_study (no Ray: every check, exit 2 before any trial) -> claim_state (the resume
    policy, and the results it may not replace) -> fit (Ray Tune: one engine run per trial,
    reported every round, checkpointed) -> export: results/<study>/{trials,rounds,tasks}.parquet,
    then study.json (the manifest, their commit marker), written by the driver from the trials'
    last checkpoints -> prune: the exported trials' older checkpoints deleted
    (`fcl.tune.checkpoints`)

Tune keeps its state under `--storage` (default `<results>/.tune/<study>`, `fcl.tune.state`);
`--resume` continues a study whose driver stopped, from that state and the trials' checkpoints.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import replace
from typing import TextIO

import ray

from fcl.clock import clock
from fcl.config import ConfigError, with_overrides
from fcl.data.federated import chance_accuracy
from fcl.manifest import Manifest, replace_study_files
from fcl.results_io import ERROR, TERMINATED
from fcl.tune import (checkpoints, cluster, copies, disk_full, export, extend, locations, nodes,
                      progress, state as states, stop_request, termination, waits)
from fcl.tune.cost import dry_run
from fcl.tune.left_to_run import left_to_run
from fcl.tune.node_kinds import study_kinds
from fcl.tune.plan import StudyPlan, check_sets, plan_study
from fcl.tune.optuna_storage import FLAG as OPTUNA_FLAG, dashboard_command, reconciled_line
from fcl.tune.data_sharing import dataset_key
from fcl.tune.space import varying_keys
from fcl.tune.storage_probe import check_storage
from fcl.tune.resume_lines import interrupted_line, rerun_lines, resume_command
from fcl.tune.study import Study, StudyOptions, StudyOutcome
from fcl.tune.trial_models import export_models
from fcl.tune.tuner import make_tuner


def run_study(study: Study, opts: StudyOptions = StudyOptions(), out: TextIO | None = None,
              table: bool = False) -> StudyOutcome:
    """Run (or `--resume`, or `--dry-run`) `study` and export its Parquet and manifest. Returns
    the counts, the exported frames and Tune's `ResultGrid` (`StudyOutcome`). `table`: Tune's
    trial table while it runs instead of one progress line."""
    t0 = time.perf_counter()
    out = out or sys.stdout
    locations.check_locations(opts)
    check_sets(study.space_for(opts.preset), opts)    # before the results folder is made
    if opts.dry_run:
        return dry_run(plan_study(study, opts), out)
    cluster.check_job_paths(opts.results, opts.storage)
    locations.check_outputs(study.name, opts)
    with states.hold(opts.results, study.name, opts.command) as stale, \
            states.hold_storage(opts, study.name):
        if stale:
            print(f"took over the lock of a driver that is gone: {states.holder_line(stale)}",
                  file=sys.stderr)
        opts = states.resolve_optuna_storage(study.name, study.searcher, opts)
        plan = plan_study(study, opts)
        copies.check_sources(opts.results, opts.copy_from, study.name, study.searcher,
                             opts.num_samples)
        if plan.address is None and not ray.is_initialized():   # before a local Ray starts
            plan.resources(cluster.local_resources(), False)
        # a cluster is joined, and checked, before the state is claimed (--fresh discards it)
        started = cluster.connect(plan.address) if plan.address is not None else False
        try:
            if plan.address is not None:
                check_cluster(plan)
            with waits.announced(waits.storage_wait(study.name, states.storage_of(opts),
                                                    opts.optuna_storage), opts.wait_deadline,
                                 "check that the storage answers, then run the same command "
                                 "again"):
                state = states.claim_state(study.name, opts, study.searcher, plan.manifest())
            outcome = run_claimed(plan, state, t0, out, table)
        finally:
            if started:
                ray.shutdown()
    # Ray has stopped (a local one in run_claimed): the study's time from the driver's start
    outcome = replace(outcome, wall_s=time.perf_counter() - t0)
    if not outcome.interrupted:          # an interrupted study ends in its one line
        print(f"elapsed {clock(outcome.wall_s)} in all", file=out)
    return outcome


def check_cluster(plan: StudyPlan) -> None:
    """What the joined cluster must offer before any state is touched: a node that holds a
    trial (`fcl.tune.nodes`), and, with several nodes, a `--storage` all of them reach."""
    on = nodes.alive_nodes()
    plan.resources(ray.cluster_resources(), cluster.can_autoscale(), on)
    if len(on) > 1:
        check_storage(states.storage_of(plan.opts), on)


def run_claimed(plan: StudyPlan, state: states.TuneState, t0: float, out: TextIO,
                table: bool = False) -> StudyOutcome:
    """The study's Ray part, once its state is claimed: connect (or start a local Ray), fit,
    export."""
    started = cluster.connect(plan.address)
    try:
        autoscales, on = cluster.can_autoscale(), nodes.alive_nodes()
        res = plan.resources(ray.cluster_resources(), autoscales, on)
        print(nodes.placement_line(on, res.cpus, res.gpus, plan.opts.max_concurrent), file=out,
              flush=True)
        if not plan.cfg.run.threads:
            plan = replace(plan, cfg=with_overrides(plan.cfg, {"run.threads": res.threads}))
        # (not under Ray Client: Tune's loop, and so the callback's signal, runs on the head)
        watch = None if autoscales or cluster.is_client() else nodes.InfeasibleWatch(res.cpus,
                                                                                    res.gpus)
        left = left_to_run(plan, plan.cfg, lambda: study_kinds(plan.address, res.cpus, res.gpus,
                                                               on))
        part, copied, tune_plan = left.part, left.copied, replace(plan, space=left.space)
        grid, interrupted = fit(tune_plan, state, res, out, table, watch, t0, plan.manifest())
        if no_node := stop_request.stops(stop_request.NO_NODE):
            raise ConfigError("--cpus-per-trial", f"{res.cpus:g}", no_node[0].detail,
                              f"the same command with --resume once a node fits: "
                              f"{resume_command(plan.opts)}")
        if full := stop_request.stops(stop_request.DISK_FULL):
            raise disk_full_error(plan.opts, state, f"trial {full[0].detail}")
        if optuna_full := stop_request.stops(stop_request.OPTUNA_FULL):
            raise ConfigError(OPTUNA_FLAG, optuna_full[0].detail, "the disk filled up "
                              "(writing the search's Optuna storage: No space left on "
                              f"device); the study stopped, its Tune state kept in "
                              f"{state.path}", "free some space, then continue with: "
                              f"{resume_command(plan.opts)}")
        check_all_ran(tune_plan, state, grid, interrupted)
        try:
            with progress.deferred_sigterm() as terminated:
                outcome = export_study(plan, grid, interrupted, time.perf_counter() - t0, out,
                                       part, copied)
            if outcome.paths:
                termination.exported()
            if terminated() and not outcome.interrupted:
                print("terminated (SIGTERM) during the export, which finished first: "
                      f"{len(outcome.paths)} files written, the study is whole", file=sys.stderr)
                outcome = replace(outcome, interrupted=True, terminated=True)
            return outcome
        except OSError as e:
            if not disk_full.says_disk_full(str(e)):
                raise
            raise disk_full_error(plan.opts, state, "the export") from None
    finally:
        if started:
            ray.shutdown()


def fit(plan: StudyPlan, state: states.TuneState, res: cluster.TrialResources, out: TextIO,
        table: bool = False, watch: nodes.InfeasibleWatch | None = None,
        start: float | None = None, record: Manifest | None = None):
    """Tune's run of the study (the resume policy checked first): (ResultGrid, the signal that
    interrupted it or ""); why it stopped early is in `fcl.tune.stop_request`'s record. `start`:
    the driver's start, for the elapsed time; `record`: the whole study's manifest where Tune
    runs part of it."""
    states.enter(state, plan.opts, record or plan.manifest())
    if plan.study.searcher == "optuna":
        print(f"optuna: {dashboard_command(plan.opts.results, plan.opts.optuna_storage)}",
              file=out, flush=True)
    with waits.loop_start(plan.opts.resume and state.can_restore, state.path,
                          plan.opts.wait_deadline, f"check its storages, then continue with: "
                          f"{resume_command(plan.opts)}", cluster.is_client()):
        tuner = make_tuner(plan, state, res, out, table, [watch] if watch else [], start)
        with progress.quiet_interrupt(), progress.sigterm_as_ctrl_c(), \
                disk_full.watch(state.path), progress.filtered_ray_logs(export.OneLineFailures()):
            try:
                grid = tuner.fit()
            except Exception:        # reading back what the full disk truncated (error.pkl)
                if not stop_request.stops(stop_request.DISK_FULL):
                    raise
                grid = None
    stop = ("SIGTERM" if stop_request.stops(stop_request.SIGTERM) else
            "SIGINT" if stop_request.stops() else "")
    return grid, stop


def check_all_ran(plan: StudyPlan, state: states.TuneState, grid, interrupted: str) -> None:
    """A study that ended without a stop signal holds every planned trial, or it is refused
    before anything is exported: Tune resumed from a state that no longer records them all
    would end "successfully" over fewer rows."""
    if interrupted or grid is None or stop_request.stops():
        return
    planned = plan.planned_trials
    if len(grid) < planned:
        raise ConfigError("--resume" if plan.opts.resume else "--results",
                          "on" if plan.opts.resume else plan.opts.results,
                          f"Tune ran {len(grid)} of the {planned} planned trials of study "
                          f"{plan.name}: its state in {state.path} no longer records the "
                          "others; nothing was exported", "--fresh to run the study again")


def disk_full_error(opts: StudyOptions, state: states.TuneState, who: str) -> ConfigError:
    """The one line a study ends with when its disk filled up (`fcl.tune.disk_full`)."""
    resume = resume_command(opts)
    return ConfigError("--results" if opts.storage is None else "--storage",
                       opts.storage or opts.results, f"the disk filled up ({who}: No space left "
                       f"on device); the study stopped, its Tune state kept in {state.path}",
                       f"free some space, then continue with: {resume}")


def export_study(plan: StudyPlan, grid, interrupted: str, wall_s: float, out: TextIO,
                 part: extend.StoredPart | None = None,
                 copied: copies.Copies | None = None) -> StudyOutcome:
    """The study's Parquet from the trials' last checkpoints, then its manifest (both held
    back if `interrupted` names a signal: they wait for the study to complete, with
    --resume). With a stored `part`, the whole study: its rows and the new trials'; with
    `copied`, the rows copied from other studies among the new ones."""
    trials, unfinished = export.read_outcomes(grid, plan.cfg, plan.trial_seeds)
    keys = varying_keys(plan.space)
    frames = export.study_frames(plan.name, plan.opts.preset, trials, keys)
    manifest = plan.manifest()
    ran = len(frames["trials"])
    if not interrupted:
        frames, manifest = copies.merged(copied, part, frames, manifest, keys, ran, out)
    if part is not None and not interrupted:
        added = len(frames["trials"])
        frames = extend.merged_frames(part, frames, keys)
        manifest = extend.extended_manifest(manifest, part, added)
        print(f"kept the {len(part.frames['trials'])} stored trials of seeds "
              f"{extend.seed_range(part.seeds)}; ran {ran} at seeds "
              f"{extend.seed_range(tuple(manifest.extended[-1]['seeds']))}", file=out)
    df = frames["trials"]
    failed = int((df["status"] == ERROR).sum())
    stored = len(part.frames["trials"]) if part is not None and not interrupted else 0
    stored += copied.trials if copied is not None and not interrupted else 0
    counts = (len(grid) + stored, len(df) - failed, failed, unfinished)
    if interrupted:
        outcome = StudyOutcome(counts[0], (), *counts[1:], wall_s, grid, frames, True,
                               terminated=interrupted == "SIGTERM")
        print(interrupted_line(outcome, plan.opts), file=sys.stderr)
        return outcome
    folder = os.path.join(plan.opts.results, plan.name)
    kept = set(df.loc[df["status"] == TERMINATED, "trial_id"])
    # read only on request: under Ray Client the checkpoints may not be on this machine's disk
    models = export_models([r.checkpoint for r in grid if r.checkpoint is not None]
                           if plan.opts.save_models else [], folder, kept)
    paths = replace_study_files(frames, folder, manifest)
    print(export.summary_line(df), file=out)
    best = progress.best_line(df, varying_keys(plan.space), chance_of(plan))
    if best:
        print(best, file=out)
    for p in paths:
        print(f"wrote {p}", file=out)
    if models:
        print(f"wrote {models} ({len(os.listdir(models))} models)", file=out)
    hints = dict(zip(export.trial_ids(trials), (t.hint for t in trials)))
    for line in export.failed_lines(df, varying_keys(plan.space), hints):
        print(line, file=sys.stderr)
    for line in rerun_lines(plan.opts, failed, unfinished):
        print(line, file=out)
    if plan.study.searcher == "optuna" and (fixed := reconciled_line(plan.opts, plan.name, df)):
        print(fixed, file=out)
    prune(grid, trials, out)
    return StudyOutcome(counts[0], tuple(paths), *counts[1:], wall_s, grid, frames)


def prune(grid, trials: list[export.TrialOutcome], out: TextIO) -> None:
    """Once the study's files are written: each exported trial's older checkpoints deleted,
    its last kept for `--resume` (`fcl.tune.checkpoints`). A failure to delete costs disk
    only, so it is one line, never the study's exit."""
    try:
        pruned = checkpoints.prune_checkpoints(grid, {t.tune.get("tune_trial_dir", "")
                                                      for t in trials})
    except OSError as e:
        print(f"warning: the trials' older checkpoints stay on the storage ({e})",
              file=sys.stderr)
        return
    if pruned.checkpoints:
        print(checkpoints.pruned_line(pruned), file=out)


def chance_of(plan: StudyPlan) -> tuple[float, int] | None:
    """ACC of guessing and the test images of the study's tasks, where every trial shares them
    (None where the study varies its data set or tasks)."""
    if {"data.name", "data.root", "data.num_tasks", "data.domains", "data.test_per_class"} & \
            set(varying_keys(plan.space)):
        return None
    ds = plan.datasets.get(dataset_key(plan.cfg))
    return None if ds is None else chance_accuracy(ds, plan.cfg.data)
