"""What a study prints while it runs: Tune's progress table, and one line on Ctrl-C.

Tune's own SIGINT handler stops the experiment and saves its state (what `--resume` needs);
around it, `quiet_interrupt` notes the interrupt and keeps Ray's warnings about the trials it
stopped (and the last status table) off the terminal, so the study can end in one line.
"""
from __future__ import annotations

import contextlib
import logging

from ray import tune

_INTERRUPTED: list[int] = []          # non-empty once Tune has seen a stop signal (per driver)
STOP_MESSAGE = "Stop signal received"


class Reporter(tune.CLIReporter):
    """Tune's CLI table, silent once the study is interrupted."""

    def should_report(self, trials, done: bool = False) -> bool:
        return not _INTERRUPTED and super().should_report(trials, done)


class _AfterInterrupt(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if STOP_MESSAGE in record.getMessage():
            _INTERRUPTED.append(1)
        return not _INTERRUPTED or record.levelno >= logging.ERROR


@contextlib.contextmanager
def quiet_interrupt():
    """Yields a list that is non-empty once Tune received a stop signal (Ctrl-C, SIGTERM);
    from then on Ray's warnings are dropped until the block ends."""
    _INTERRUPTED.clear()
    quiet = _AfterInterrupt()
    handlers = {h for name in ("", "ray", "ray.tune", "ray.train")
                for h in logging.getLogger(name).handlers}
    for h in handlers:
        h.addFilter(quiet)
    try:
        yield _INTERRUPTED
    finally:
        for h in handlers:
            h.removeFilter(quiet)
