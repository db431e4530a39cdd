"""The command line every study script shares: `python studies/<name>.py [flags]`.

Bad flags, keys, values or spaces print one line `error: ...` and exit 2 before any trial.
"""
from __future__ import annotations

import argparse
import logging
import os
import shlex
import sys

from fcl.cli_args import EXIT_USAGE, OneLineParser, parse_sets
from fcl.config import ConfigError, one_line
from fcl.data.errors import DataError
from fcl.presets import STUDY_PRESETS
from fcl.tune import termination
from fcl.tune.auto_seeds import AutoSeeds, parse_auto, run_auto
from fcl.tune.resume_lines import resume_command
from fcl.tune.run import run_study
from fcl.tune.schedulers import SCHEDULERS, SchedulerOptions
from fcl.tune.study import Study, StudyOptions
from fcl.tune.waits import DEADLINE_S
from fcl.tune.trackers import TRACKERS


def positive(kind, most=None):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a {kind.__name__}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text} is not > 0")
        if most is not None and value > most:
            raise argparse.ArgumentTypeError(f"{text} is not in 1..{most}")
        return value
    return parse


def seeds_arg(searcher: str | None):
    """`--seeds N`; a grid's also `auto` or `auto:MOST` (`fcl.tune.auto_seeds`)."""
    count = positive(int, MAX_SEEDS)

    def parse(text: str):
        if searcher is not None or not text.startswith("auto"):
            return count(text)
        try:
            return parse_auto(text, MAX_SEEDS)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not auto or auto:MOST with MOST in 2..{MAX_SEEDS}") from None
    return parse


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return value


def presets_help(family: str | None) -> str:
    """Every study preset (`fcl.presets.STUDY_PRESETS`), with what it is for, or, for a
    family's study, the run preset it starts from there."""
    def one(name, p):
        note = f"runs {p.families[family]}" if family in p.families else p.what
        return name + (f" ({note})" if note else "")
    return ("trial size: " + ", ".join(one(n, p) for n, p in STUDY_PRESETS.items()) +
            "; default: local")


def seeds_default(searcher: str | None) -> str:
    if searcher is not None:
        return "1"
    counts = [p.seeds for p in STUDY_PRESETS.values()]
    usual = max(set(counts), key=counts.count)
    return ", ".join(f"{p.seeds} at {n}" for n, p in STUDY_PRESETS.items()
                     if p.seeds != usual) + f", else {usual}"


MAX_SEEDS = 100
# 1,000,000 samples planned 12,000,000 trials (dry run included): far past any study's budget
MAX_SAMPLES = 100_000


def script_command(study: Study) -> tuple[str, ...]:
    """How a study is run as a script: `python studies/NAME.py` (`fcl study NAME` the same)."""
    return ("python", f"studies/{study.name}.py")


def build_parser(study: Study, command: tuple[str, ...] | None = None
                 ) -> argparse.ArgumentParser:
    searcher = study.searcher
    command = command or script_command(study)
    p = OneLineParser(prog=" ".join(command[1:] if command[0] == "python" else command),
                      description=study.doc,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="local", choices=list(STUDY_PRESETS),
                   metavar="PRESET", help=presets_help(study.family))
    add_placement_args(p)
    p.add_argument("--num-samples", "--trials", type=positive(int, MAX_SAMPLES),
                   default=study.num_samples,
                   help="repeats of the grid, or draws of a search, 1.."
                        f"{MAX_SAMPLES:,} (more plans millions of trials no study runs; "
                        f"default: {study.num_samples})")
    # 1,000,000 seeds built a table of millions of trials and never ended, dry run included
    p.add_argument("--seeds", type=seeds_arg(searcher),
                   help=("seeds per configuration: seed, seed+1, ...; or auto (auto:MOST, "
                         "default MOST 10): 3 seeds of every setting, then 2 more at a time "
                         "only to the settings of comparisons still open, judged by an "
                         "alpha-spending rule valid under peeking (fcl.tune.auto_seeds)"
                         if searcher is None else
                         "seeds each sampled configuration runs at: seed, seed+1, ...; the "
                         "objective (and ASHA's comparison) is their mean") +
                   f" (default: {seeds_default(searcher)})")
    p.add_argument("--max-concurrent", type=positive(int),
                   help="at most this many trials at once (default: what the live nodes hold "
                        "at the start, grid and search alike: per node, its CPUs / "
                        "--cpus-per-trial, and its GPUs / --gpus-per-trial when trials ask for "
                        "GPUs; a search's TPE then draws with Optuna's constant liar)")
    add_state_args(p)
    p.add_argument("--callback", action="append", default=[], choices=tuple(TRACKERS),
                   metavar="{" + ",".join(TRACKERS) + "}",
                   help="log every trial to a tracker too (repeatable): tensorboard (extra "
                        "viz), mlflow ($MLFLOW_TRACKING_URI, default RESULTS/mlflow.db), wandb")
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="override base config keys (see `fcl run --help`)")
    p.add_argument("--save-models", action="store_true",
                   help="keep the trained model of every finished row in "
                        "RESULTS/STUDY/models/TRIAL_ID (read with fcl.load_model)")
    p.add_argument("--tune-table", action="store_true",
                   help="print Tune's trial table every 30 s instead of one progress line")
    p.add_argument("--dry-run", action="store_true",
                   help="print the trial table and the expected cost; run nothing")
    p.add_argument("--wait-deadline", type=positive(float), default=DEADLINE_S, metavar="SECONDS",
                   help="give up, in one line, on a storage that does not answer (an Optuna "
                        "database, Tune's state on a network disk) after this long; a line "
                        f"says what the driver waits for every 30 s before (default: "
                        f"{DEADLINE_S:g})")
    add_search_args(p, searcher)
    return p


def add_state_args(p: argparse.ArgumentParser) -> None:
    """What the study does with what is stored: its Tune state, and other studies' rows."""
    p.add_argument("--resume", action="store_true",
                   help="continue this study from its Tune state (after a crash or a kill)")
    p.add_argument("--fresh", action="store_true",
                   help="discard this study's Tune state (and Optuna study) and start over")
    p.add_argument("--retry-errored", action="store_true",
                   help="with --resume: rerun the trials that failed for good (from their last "
                        "checkpoint)")
    p.add_argument("--copy-from", nargs="+", action="extend", default=[], metavar="STUDY",
                   help="copy the trials these studies in RESULTS already stored with the same "
                        "config and seed (the trial id) instead of running them again; each "
                        "copied row names its study in `copied_from` (fcl.tune.copies); only "
                        "trials computed on the kind of machine the new ones run on (their "
                        "rows' cpu, gpu and torch_version)")
    p.add_argument("--copy-unrecorded-cpu", action="store_true",
                   help="with --copy-from: copy rows stored before rows recorded their machine "
                        "too, where you know they ran on the kind the new trials run on")


def add_placement_args(p: argparse.ArgumentParser) -> None:
    """Where the study runs and what each trial holds."""
    p.add_argument("--address", help="Ray cluster to join (default: $RAY_ADDRESS, else start a "
                                     "quiet local Ray)")
    p.add_argument("--storage", help="where Tune keeps trial state and checkpoints: a path "
                                     "shared by the nodes or s3://... (default: RESULTS/.tune)")
    p.add_argument("--results", default="results",
                   help="folder for RESULTS/<study>/{trials,rounds}.parquet (default: results)")
    p.add_argument("--cpus-per-trial", type=positive(float),
                   help="CPUs per trial, also its torch threads (default: 1)")
    p.add_argument("--gpus-per-trial", type=non_negative_float,
                   help="GPUs per trial (default: the cluster's GPUs / trials that fit at once; "
                        "0 when it has none)")


def add_search_args(p: argparse.ArgumentParser, searcher: str | None) -> None:
    """The scheduler's flags, and a search's objective."""
    p.add_argument("--scheduler", default="fifo", choices=SCHEDULERS,
                   help="fifo: every trial runs all its rounds; asha: stop trials whose ACC "
                        "trails at rounds grace, grace*rf, ... (searches only; a grid that feeds "
                        "a figure refuses it); default: fifo")
    p.add_argument("--grace-rounds", type=positive(int),
                   help="asha: no trial is stopped before this round (default: Q, the first "
                        "round of the second phase)")
    p.add_argument("--reduction-factor", type=float,         # > 1: fcl.tune.schedulers.check
                   help="asha: keep the top 1/rf of the trials at each rung (> 1; default 4)")
    if searcher is not None:
        p.add_argument("--objective", default="acc", choices=("acc", "pareto"),
                       help="acc: maximise ACC; pareto: ACC vs bytes communicated")
        p.add_argument("--optuna-storage", metavar="URL",
                       help="where Optuna keeps the search: an RDB URL (sqlite:///PATH, "
                            "postgresql://USER@HOST/DB, mysql://USER@HOST/DB) or a journal file "
                            "(journal:///ABS/PATH/optuna.journal), which several drivers, or a "
                            "driver that moves, can share; --resume reopens the one the study "
                            "started on (default: sqlite:///RESULTS/optuna.db, one driver)")


def run_study_cli(study: Study, argv: list[str] | None = None, script: bool = False,
                  command: tuple[str, ...] | None = None) -> int:
    """Parse the shared flags and run `study`. Returns the exit code. `script`: the process
    ends after it (`main`), so the SIGTERM handler stays for its last instants. `command`: how
    it was called, as the manifest records it (default `python studies/NAME.py`)."""
    command = command or script_command(study)
    args = build_parser(study, command).parse_args(argv)
    previous = termination.install()
    try:
        return run_parsed(study, args, argv, command)
    finally:
        if not script:
            termination.uninstall(previous)


def run_parsed(study: Study, args: argparse.Namespace, argv: list[str] | None,
               command: tuple[str, ...] = ()) -> int:
    opts = None
    try:
        if args.resume and args.fresh:
            raise ConfigError("--fresh", "on", "contradicts --resume", "one of them")
        if args.retry_errored and args.fresh:
            raise ConfigError("--retry-errored", "on", "contradicts --fresh", "one of them")
        if args.copy_unrecorded_cpu and not args.copy_from:
            raise ConfigError("--copy-unrecorded-cpu", "on", "copies nothing without "
                              "--copy-from", "--copy-from STUDY ...")
        opts = StudyOptions(
            preset=args.preset, sets=parse_sets(args.set),
            seeds=None if isinstance(args.seeds, AutoSeeds) else args.seeds,
            results=args.results, storage=args.storage, address=args.address,
            cpus_per_trial=args.cpus_per_trial, gpus_per_trial=args.gpus_per_trial,
            num_samples=args.num_samples, max_concurrent=args.max_concurrent,
            resume=args.resume or args.retry_errored, fresh=args.fresh, dry_run=args.dry_run,
            retry_errored=args.retry_errored, callbacks=tuple(args.callback),
            save_models=args.save_models, copy_from=tuple(args.copy_from),
            copy_unrecorded_cpu=args.copy_unrecorded_cpu,
            command=shlex.join([*(command or script_command(study)),
                                *(sys.argv[1:] if argv is None else argv)]),
            objective=getattr(args, "objective", "acc"),
            optuna_storage=getattr(args, "optuna_storage", None),
            wait_deadline=args.wait_deadline,
            scheduler=SchedulerOptions(args.scheduler, args.grace_rounds, args.reduction_factor))
        outcome = (run_auto(study, opts, args.seeds, table=args.tune_table)
                   if isinstance(args.seeds, AutoSeeds) else
                   run_study(study, opts, table=args.tune_table))
    except (ConfigError, DataError) as e:
        print(f"error: {one_line(str(e))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:            # a second Ctrl-C, or one outside Tune's loop
        print("interrupted; continue with --resume", file=sys.stderr)
        return 130
    except termination.Terminated:      # outside Tune's loop and the export
        hint = resume_command(opts) if opts is not None else "the same command"
        print(f"terminated (SIGTERM) before the study ended; continue with: {hint}",
              file=sys.stderr)
        return termination.EXIT_SIGTERM
    if outcome.interrupted:          # the shell's codes: 128 + SIGTERM's 15, 128 + SIGINT's 2
        return 143 if outcome.terminated else 130
    # 0 only when every trial finished or its scheduler stopped it (the lines above say
    # which failed or did not finish)
    return 1 if outcome.unfinished or outcome.failed else 0


def main(study: Study, argv: list[str] | None = None,
         command: tuple[str, ...] | None = None) -> None:
    """`if __name__ == "__main__": main(STUDY)` at the end of a study script (and `fcl study
    NAME`, with its `argv` and `command`). The process ends as soon as the study has: Ray is
    shut down and the files written by then, and the interpreter's teardown of torch's and
    Ray's modules (about 2 s) is a window in which a SIGTERM could be answered by no handler
    (Python resets them while it finalizes), killing a driver whose study is whole without a
    word."""
    code = run_study_cli(study, argv, script=True, command=command)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
