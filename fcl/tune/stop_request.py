"""Why a running study stops before its end, and the one place fcl stops it: `request_stop`.

Tune's documented way to stop an experiment and keep its state for `Tuner.restore` is its SIGINT
handler: running trials are stopped, not failed, and resume from their last checkpoint (a
`tune.Stopper`'s `stop_all` would end them as finished, so `--resume` would not rerun them). So
a stop that fcl decides (a trial hit a full disk, no live node can hold a trial, a job scheduler
sent SIGTERM) records why and sends the driver's own process SIGINT; a stop that Tune reports
(the user's Ctrl-C included) is recorded too. The driver reads the record once Tune returns.

The record belongs to this module, not to a callback: a resumed Tuner runs the callbacks it
pickled, which are copies, not the driver's objects. One study runs at a time per driver, and
`clear()` starts each.
"""
from __future__ import annotations

import os
import signal
from dataclasses import dataclass

SIGTERM = "SIGTERM"                 # a job scheduler (or `timeout`, `kill`) ended the driver
DISK_FULL = "disk full"             # a trial failed with ENOSPC (fcl.tune.disk_full)
OPTUNA_FULL = "optuna storage full"  # the search's Optuna storage could not be written
#                                     (fcl.tune.searchers): its disk, or SQLite's, is full
NO_NODE = "no node fits"            # no live node can hold a trial (fcl.tune.nodes)
TUNE_STOPPING = "Tune stopping"     # Tune's SIGINT handler ran: any of the above, or Ctrl-C


@dataclass(frozen=True)
class Stop:
    reason: str
    detail: str = ""                # the line to end with, or the trial that hit a full disk
    paths: tuple[str, ...] = ()     # DISK_FULL: (Tune's staging folder, the storage's)


_STOPS: list[Stop] = []             # this driver's study, in the order they came


def request_stop(reason: str, detail: str = "", paths: tuple[str, ...] = ()) -> None:
    """Record why, and stop the study as Ctrl-C does. Only the first of fcl's own requests
    signals (Tune is stopping already after it); each SIGTERM signals, as a second Ctrl-C makes
    Tune skip its last snapshot and end at once."""
    first = not any(s.reason != TUNE_STOPPING for s in _STOPS)
    _STOPS.append(Stop(reason, detail, paths))
    if first or reason == SIGTERM:
        os.kill(os.getpid(), signal.SIGINT)      # Tune's handler: stop, keep the state


def note_tune_stopping() -> None:
    """Tune said it received a stop signal (its log line): recorded, nothing sent."""
    if not stops(TUNE_STOPPING):
        _STOPS.append(Stop(TUNE_STOPPING))


def stops(reason: str | None = None) -> list[Stop]:
    """The stops recorded since `clear()`, all or of one reason."""
    return [s for s in _STOPS if reason is None or s.reason == reason]


def clear() -> None:
    _STOPS.clear()
