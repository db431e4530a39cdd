"""Trial schedulers: `fifo` (every trial runs to its last round) or `asha` (Ray Tune's
ASHAScheduler: asynchronous successive halving, Li et al. 2020).

ASHA compares trials on `acc` (the mean accuracy of all tasks at the latest evaluated round) at
rungs of the round index (the time attribute is `round`, 0-based as in rounds.parquet):
grace, grace * rf, grace * rf^2, ... A trial that reaches a rung below the top 1/rf of the
trials already recorded there is stopped. A trial is never stopped before round `grace`; its
default is Q, the first round of the second phase, so every trial has been evaluated at the end
of its first task. Accuracy before the first evaluation is NaN, which never stops a trial.

Use it for searches over many configurations (studies/search.py), where the bad ones are clear
after a phase or two. Grids that feed figures (heatmaps, tables, curves) need every trial's
final value and refuse it: those studies leave `Study.early_stopping` False.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ray.tune.schedulers import ASHAScheduler

from fcl.config import ConfigError
from fcl.tune.report import METRIC, TIME_ATTR

SCHEDULERS = ("fifo", "asha")


@dataclass(frozen=True)
class SchedulerOptions:
    name: str = "fifo"
    grace_rounds: int | None = None       # None: Q of the study's base config
    reduction_factor: float | None = None   # None: 4, Tune's default


def check(opts: SchedulerOptions, study: str, early_stopping: bool) -> None:
    """One ConfigError line for a scheduler this study cannot use, before any trial."""
    if opts.name not in SCHEDULERS:
        raise ConfigError("--scheduler", opts.name, "unknown scheduler", ", ".join(SCHEDULERS))
    if opts.name == "fifo":
        for flag, value in (("--grace-rounds", opts.grace_rounds),
                            ("--reduction-factor", opts.reduction_factor)):
            if value is not None:
                raise ConfigError(flag, value, "only with --scheduler asha",
                                  "leave it out, or add --scheduler asha")
        return
    if not early_stopping:
        raise ConfigError("--scheduler", opts.name, f"study {study} is a grid whose figure "
                          "needs every trial's final value", "fifo (ASHA is for searches, "
                          "e.g. studies/search.py)")
    # --grace-rounds >= 1 is argparse's check (fcl.tune.cli); its upper bound, the longest
    # trial, is make_scheduler's
    if opts.reduction_factor is not None and not opts.reduction_factor > 1:
        raise ConfigError("--reduction-factor", opts.reduction_factor, "out of range", "> 1")


def make_scheduler(opts: SchedulerOptions, rounds_per_phase: int, max_rounds: int):
    """None for fifo (Tune's default); the ASHA scheduler otherwise. `max_rounds`: the longest
    trial's R. Tune stops a trial whose time attribute reaches max_t, so max_t is R itself, one
    past the last round index: a trial always ends by finishing, never by that rule."""
    if opts.name == "fifo":
        return None
    grace = opts.grace_rounds if opts.grace_rounds is not None else rounds_per_phase
    if grace >= max_rounds:
        raise ConfigError("--grace-rounds", grace, f"no trial runs past round {max_rounds - 1}",
                          f"1 <= grace < {max_rounds}")
    return ASHAScheduler(time_attr=TIME_ATTR, metric=METRIC, mode="max", max_t=max_rounds,
                         grace_period=grace, reduction_factor=opts.reduction_factor or 4.0)


def rungs(scheduler) -> list[float]:
    """The rounds at which ASHA compares trials, smallest first, read from Ray's own
    `debug_string()` ("Bracket: Iter 8.000: None | Iter 4.000: None | ...")."""
    return sorted(float(m) for m in re.findall(r"Iter ([0-9.]+):", scheduler.debug_string()))


def describe(scheduler, reduction_factor: float | None = None) -> str:
    """One line for the dry run and the study's metadata."""
    if scheduler is None:
        return "fifo"
    at = rungs(scheduler)
    return (f"asha on acc, time attribute round, grace {at[0]:g} rounds, reduction factor "
            f"{reduction_factor or 4.0:g}, rungs at rounds " + ", ".join(f"{m:g}" for m in at))
