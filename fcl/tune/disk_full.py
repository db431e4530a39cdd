"""A disk that fills up during a study ends it in one line, with Tune's state kept for
`--resume`.

Without this, each trial whose checkpoint hit ENOSPC was retried (`max_failures`) until it
failed for good, printing a traceback each time (1,070 lines of stderr for a smoke study on a
1 MiB tmpfs), then the export died reading a truncated checkpoint: exit 1, and the trials were
ERROR, which `--resume` does not rerun. Here the first trial that fails with ENOSPC stops the
study the way Ctrl-C does (Tune's SIGINT handler: running trials are stopped, not failed, and
resume from their last checkpoint), the tracebacks of ENOSPC are kept off the terminal, and
`fcl.tune.run` ends with one line instead of exporting.

Tune rewrites its experiment state in place, so a snapshot taken on a full disk is truncated
and `--resume` would start over (seen: a study of 2 trials resumed as 1 with no config). So
while a study runs a reserve file (`RESERVE`: a quarter of the free space, at most 4 MiB) sits
beside Tune's state, and is removed the moment the disk is found full: Tune's final snapshot
(taken as it stops) then has room.
"""
from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
from collections.abc import Iterator

from ray import tune

from fcl.tune.progress import filtered_ray_logs

NO_SPACE = ("No space left on device", "[Errno 28]", "errno 28")
_FULL: list[str] = []                 # the trials that hit a full disk (per driver)
_RESERVES: list[str] = []             # the reserve file of the study running (per driver)
RESERVE = ".fcl-reserve"


def says_disk_full(text: str) -> bool:
    return any(s in text for s in NO_SPACE)


class StopOnDiskFull(tune.Callback):
    """Driver side: on a trial's first ENOSPC failure, stop the study as a Ctrl-C does."""

    def on_trial_recover(self, iteration, trials, trial, **info):
        self._check(trial)

    def on_trial_error(self, iteration, trials, trial, **info):
        self._check(trial)

    def _check(self, trial) -> None:
        try:
            with open(trial.error_file or "") as f:
                text = f.read()
        except OSError:
            text = ""
        if says_disk_full(text) and not _FULL:
            _FULL.append(str(trial))
            free_reserve()
            os.kill(os.getpid(), signal.SIGINT)      # Tune's handler: stop, keep the state


class _NoSpaceTracebacks(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (says_disk_full(record.getMessage()) or
                    (exc is not None and says_disk_full(str(exc))) or
                    (_FULL and record.levelno < logging.CRITICAL))


def make_reserve(folder: str) -> None:
    """The reserve file in `folder` (a local one; nothing where it cannot be written)."""
    if "://" in folder:
        return
    path = os.path.join(folder, RESERVE)
    try:
        os.makedirs(folder, exist_ok=True)
        size = min(4 << 20, shutil.disk_usage(folder).free // 4)
        with open(path, "wb") as f:
            f.write(b"\0" * size)
            f.flush()
            os.fsync(f.fileno())
        _RESERVES.append(path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(path)


def free_reserve() -> None:
    while _RESERVES:
        with contextlib.suppress(OSError):
            os.unlink(_RESERVES.pop())


@contextlib.contextmanager
def watch(folder: str) -> Iterator[list[str]]:
    """Yields a list that is non-empty once a trial hit a full disk (Tune then stops); keeps
    the reserve file in `folder` (Tune's state of the study) meanwhile."""
    _FULL.clear()
    make_reserve(folder)
    try:
        with filtered_ray_logs(_NoSpaceTracebacks()):
            yield _FULL
    finally:
        free_reserve()
