"""What a study prints while it runs: one progress line (trials done / running / failed / to
go, elapsed, ETA), or Tune's table with `--tune-table`; the best configuration at the end;
and one line on Ctrl-C.

Tune's own SIGINT handler stops the experiment and saves its state (what `--resume` needs);
around it, `quiet_interrupt` notes the interrupt and keeps Ray's warnings about the trials it
stopped (and the last status table) off the terminal, so the study can end in one line.
"""
from __future__ import annotations

import contextlib
import logging
import math
import signal
import statistics
import threading
import time

import pandas as pd
from ray import tune

from fcl.clock import clock
from fcl.intervals import accuracy_interval, t975
from fcl.results_io import ERROR, TERMINATED
from fcl.tune import stop_request, termination, waits
from fcl.tune.ray_private import mute_worker_output, unmute_worker_output
from fcl.tune.report import TUNE_TIME_TOTAL

STOP_MESSAGE = "Stop signal received"


class Reporter(tune.CLIReporter):
    """Tune's CLI table, silent once the study is interrupted. Asked every step of Tune's loop,
    so its first call says the loop runs (`fcl.tune.waits.LOOP_RUNNING`)."""

    def should_report(self, trials, done: bool = False) -> bool:
        waits.LOOP_RUNNING.set()
        return not stop_request.stops() and super().should_report(trials, done)


def study_line(done: int, running: int, failed: int, to_go: int, elapsed: float,
               eta: float | None) -> str:
    left = "ETA unknown" if eta is None else f"ETA {clock(eta)}"
    return (f"trials {done} done, {running} running, {failed} failed, {to_go} to go; "
            f"elapsed {clock(elapsed)} {left}")


def eta_s(remaining: float, concurrent: int, trial_s: list[float], prior_s: float | None
          ) -> float | None:
    """Seconds left: the trials left (a running one counts half) at the mean wall time of the
    finished ones, else at the dry run's estimate (`prior_s`), `concurrent` at a time."""
    per = sum(trial_s) / len(trial_s) if trial_s else prior_s
    return None if per is None else remaining * per / max(1, concurrent)


class LineReporter(Reporter):
    """One line per report instead of Tune's table (`--tune-table` brings that back). The
    elapsed time counts from `start` (`time.perf_counter()` at the driver's start, so Ray's
    start counts too), else from the reporter's creation."""

    def __init__(self, total: int, concurrent: int, prior_s: float | None,
                 start: float | None = None, **kwargs):
        super().__init__(**kwargs)
        self._total, self._concurrent, self._prior = total, concurrent, prior_s
        self._t0 = time.perf_counter() if start is None else start

    def report(self, trials, done: bool, *sys_info: str):
        by = {}
        for t in trials:
            by.setdefault(t.status, []).append(t)
        finished = by.get(TERMINATED, [])
        running, failed = len(by.get("RUNNING", [])), len(by.get(ERROR, []))
        to_go = max(self._total, len(trials)) - len(finished) - running - failed
        wall = [t.last_result[TUNE_TIME_TOTAL] for t in finished
                if TUNE_TIME_TOTAL in (t.last_result or {})]
        eta = eta_s(to_go + running / 2, self._concurrent, wall, self._prior)
        self._print(study_line(len(finished), running, failed, to_go,
                               time.perf_counter() - self._t0, 0.0 if done else eta))


def best_line(trials_df: pd.DataFrame, keys: list[str],
              chance: tuple[float, int] | None = None) -> str:
    """The configuration with the best ACC, its seeds averaged: `best ACC 69.9%: client.lr=0.05,
    server.lr=0.5 (3 seeds)`; "" when no trial finished without diverging. A best is named only
    when it is one: given `chance` (ACC of guessing, test images:
    `fcl.data.federated.chance_accuracy`), one whose 95% interval (`fcl.intervals`) reaches
    chance is not; nor one whose same-seed difference from the runner-up has a 95% t-interval
    that reaches 0 (`separation`): the line then names the settings it cannot be told from."""
    done = trials_df[trials_df["status"] == TERMINATED]
    if "diverged" in done:         # a diverged run's ACC is not a setting's merit
        done = done[~done["diverged"].fillna(False).astype(bool)]
    if done.empty:
        return ""
    keys = [k for k in keys if k in done and k != "seed"]
    if not keys:
        accs = done["acc"].tolist()
        return _chance_problem(accs, "", chance) or \
            f"best ACC {statistics.fmean(accs):.1f}% ({_seeds(len(accs))})"
    groups = list(done.groupby(keys, dropna=False, sort=False))
    means = sorted(((g["acc"].mean(), i) for i, (_, g) in enumerate(groups)), reverse=True)
    top_rows = groups[means[0][1]][1]
    accs, named = top_rows["acc"].tolist(), ": " + _setting(keys, groups[means[0][1]][0])
    problem = _chance_problem(accs, named, chance)
    if problem or len(groups) == 1:
        return problem or f"best ACC {statistics.fmean(accs):.1f}%{named} ({_seeds(len(accs))})"
    tied, runner_up = [], None
    for _, i in means[1:]:
        d, half, n = separation(top_rows, groups[i][1])
        runner_up = runner_up or (d, half, n)
        if not d - half > 0:
            tied.append(_setting(keys, groups[i][0]))
    head = f"{statistics.fmean(accs):.1f}%{named} ({_seeds(len(accs))})"
    d, half, n = runner_up
    gap = (f"same-seed difference to the runner-up {d:+.1f} ± {half:.1f}, {_seeds(n)}"
           if n > 1 else f"{_seeds(n)} shared with the runner-up, too few to pair")
    if not tied:
        return f"best ACC {head}; {gap}"
    shown = "; ".join(tied[:3]) + (f"; and {len(tied) - 3} more" if len(tied) > 3 else "")
    return (f"no best configuration: the highest ACC, {head}, cannot be separated from "
            f"{shown} ({gap})")


def separation(a: pd.DataFrame, b: pd.DataFrame) -> tuple[float, float, int]:
    """(mean, 95% t half-width, seeds) of a's ACC minus b's over the seeds both ran (a seed
    fixes the partition and initialisation of every setting alike); (nan, inf, n) with fewer
    than 2 shared seeds, or no seed column."""
    if "seed" not in a or "seed" not in b:
        return math.nan, math.inf, 0
    d = (a.groupby("seed")["acc"].mean() - b.groupby("seed")["acc"].mean()).dropna()
    n = len(d)
    if n < 2:
        return (float(d.mean()) if n else math.nan), math.inf, n
    return float(d.mean()), t975(n - 1) * float(d.std()) / math.sqrt(n), n


def _chance_problem(accs: list[float], named: str, chance: tuple[float, int] | None) -> str:
    if chance is None:
        return ""
    mean, half = accuracy_interval(accs, chance[1])
    if mean - half <= chance[0]:
        return (f"no best configuration: the highest ACC, {mean:.1f}%{named} "
                f"({_seeds(len(accs))}), is within its 95% interval (± {half:.1f}) of chance "
                f"({chance[0]:.1f}%)")
    return ""


def _setting(keys: list[str], values) -> str:
    values = values if isinstance(values, tuple) else (values,)
    return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                     for k, v in zip(keys, values))


def _seeds(n: int) -> str:
    return f"{n} seed{'s' * (n != 1)}"


class _AfterInterrupt(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if STOP_MESSAGE in record.getMessage():
            stop_request.note_tune_stopping()
            mute_worker_output()        # the trials' own shutdown noise too
        return not stop_request.stops() or record.levelno >= logging.ERROR


@contextlib.contextmanager
def filtered_ray_logs(log_filter: logging.Filter):
    """`log_filter` on the handlers of the root and Ray's loggers while the block runs."""
    handlers = {h for name in ("", "ray", "ray.tune", "ray.train")
                for h in logging.getLogger(name).handlers}
    for h in handlers:
        h.addFilter(log_filter)
    try:
        yield
    finally:
        for h in handlers:
            h.removeFilter(log_filter)


@contextlib.contextmanager
def sigterm_as_ctrl_c():
    """SIGTERM (what SLURM, Kubernetes and `timeout` send to stop a job) stops the study as
    Ctrl-C does (`stop_request.request_stop`). Entered once Ray is up, because Ray's core worker
    installs a failure handler for SIGTERM that dumps its C++ stack and aborts the driver. Only
    the main thread can take signals; elsewhere SIGTERM keeps its handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _sigterm_in_loop)
    try:
        yield
    finally:      # a handler installed outside Python (Ray's) reads back as None
        signal.signal(signal.SIGTERM, termination.outer() if previous is None else previous)


def _sigterm_in_loop(signum, frame) -> None:
    """Ctrl-C's stop where Tune's SIGINT handler is in place. Where it is not (the block's first
    instants, before `tuner.fit` sets it; after Tune's loop; after a first stop, which puts the
    old one back) a SIGINT would be Python's KeyboardInterrupt, and the driver would end as an
    interrupted one (exit 130): it ends as a terminated one instead (`termination.Terminated`,
    exit 143 and its line), Tune's last snapshot skipped as after a second Ctrl-C."""
    if signal.getsignal(signal.SIGINT) in (signal.default_int_handler, signal.SIG_DFL,
                                           signal.SIG_IGN, None):
        raise termination.Terminated()
    stop_request.request_stop(stop_request.SIGTERM)


@contextlib.contextmanager
def deferred_sigterm():
    """SIGTERM (or several) during the block is held until it ends: the export writes the
    study's files, manifest last, and a kill half-way would leave it to the next `--resume`.
    Yields a function that says whether one came. Main thread only (elsewhere: never)."""
    got = []
    if threading.current_thread() is not threading.main_thread():
        yield lambda: False
        return
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))
    try:
        yield lambda: bool(got)
    finally:
        signal.signal(signal.SIGTERM, termination.outer() if previous is None else previous)


@contextlib.contextmanager
def quiet_interrupt():
    """Starts the study's record of stops (`fcl.tune.stop_request`); once Tune received a stop
    signal (Ctrl-C, SIGTERM, or fcl's own), Ray's warnings are dropped until the block ends,
    and the workers' output until the next study starts: stopped trials go on dying after the
    block (an "Exception ignored" traceback from a trial's SIGTERM), which would print after
    the study's last line."""
    stop_request.clear()
    unmute_worker_output()              # a study interrupted earlier in this process
    try:
        with filtered_ray_logs(_AfterInterrupt()):
            yield
    finally:
        if not stop_request.stops():
            unmute_worker_output()
