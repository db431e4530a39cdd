"""Waits on what lies outside the driver (an Optuna storage's server, Tune's saved state, the
searcher it restores) never pass without a word: a line after `NOTICE_S` naming what the
driver waits for, again every `NOTICE_S`, and at the deadline (`--wait-deadline`) one error
line and exit 2. A database host that drops packets holds a connect for ever, and a resume
once hung for 9 minutes in Tune's restore with nothing printed and Ctrl-C ignored.

The exit is `os._exit`, also under `run_study` called from Python: the wait may be blocked in C
(a socket's connect), where no exception reaches it. A hard exit leaves what a `kill -9` leaves,
which `--resume` recovers from (`tests/test_kill_anywhere.py`).
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator

NOTICE_S = 30.0                  # the first line, and the gap between lines
DEADLINE_S = 600.0               # --wait-deadline's default
EXIT_USAGE = 2                   # the code every one-line error of a study exits with
FLAG = "--wait-deadline"

# set at Tune's first report: its loop runs, so the progress line speaks from then on
LOOP_RUNNING = threading.Event()


@contextlib.contextmanager
def announced(what: str, deadline_s: float, then: str,
              until: threading.Event | None = None) -> Iterator[None]:
    """The block waits for `what` (e.g. "the Optuna storage postgresql://db/x to answer"):
    lines while it waits, the error line naming `then` (what to do) at `deadline_s`. The watch
    ends with the block, or earlier when `until` is set."""
    stop = threading.Event()
    start = time.monotonic()

    def ended() -> bool:
        return stop.is_set() or (until is not None and until.is_set())

    def watch() -> None:
        gap = min(NOTICE_S, deadline_s / 2)
        next_line = start + gap
        while not ended():
            now = time.monotonic()
            if now - start >= deadline_s:
                print(f"error: {FLAG}={deadline_s:g}: waited {now - start:.0f} s for {what}; "
                      f"the driver gave up; {then}",
                      file=sys.stderr, flush=True)
                os._exit(EXIT_USAGE)
            if now >= next_line:
                print(f"waiting for {what}: {now - start:.0f} s so far (the driver gives up "
                      f"at {deadline_s:g} s, {FLAG})", file=sys.stderr, flush=True)
                next_line += gap
            stop.wait(min(1.0, max(0.0, min(next_line, start + deadline_s) - now)))

    thread = threading.Thread(target=watch, name="fcl-wait", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()


def storage_wait(name: str, storage: str, optuna_url: str | None) -> str:
    """What claiming a study's state waits for: its Tune storage, and a search's Optuna's."""
    tune_state = f"Tune's state in {storage.rstrip('/')}/{name}"
    return (f"the study's storage to answer ({tune_state}"
            + (f"; the Optuna storage {optuna_url})" if optuna_url else ")"))


def loop_start(resume: bool, path: str, deadline_s: float, then: str, client: bool):
    """The wait from the Tuner's making (a resume reads Tune's state at `path`, and Tune
    restores the searcher from the Optuna storage) to Tune's first report, after which the
    progress line speaks. Under Ray Client (`client`) Tune's loop runs on the head, where its
    first report cannot be seen, so there is no watch."""
    if client:
        return contextlib.nullcontext()
    LOOP_RUNNING.clear()
    what = f"Tune to restore the study from {path}" if resume else "Tune to start the study's trials"
    return announced(what, deadline_s, then, until=LOOP_RUNNING)
