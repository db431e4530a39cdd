"""A disk that fills up during a study ends it in one line, with Tune's state kept for
`--resume`.

Without this, each trial whose checkpoint hit ENOSPC was retried (`max_failures`) until it
failed for good, printing a traceback each time (1,070 lines of stderr for a smoke study on a
1 MiB tmpfs), then the export died reading a truncated checkpoint: exit 1, and the trials were
ERROR, which `--resume` does not rerun. With this, the first trial that fails with ENOSPC stops
the study the way Ctrl-C does (Tune's SIGINT handler: running trials are stopped, not failed,
and resume from their last checkpoint), the tracebacks of ENOSPC are kept off the terminal, and
`fcl.tune.run` ends with one line instead of exporting.

Tune copies its experiment state onto the storage in place, so a snapshot that lands on the
full disk is truncated and `--resume` would lose trials (seen: a study of 2 trials resumed as 1,
in about half the runs). Two reserve files sit beside Tune's state while a study runs (each an
eighth of the free space, at most 2 MiB): the first is removed the moment the disk is found full
(room for the failed trial's error files and Tune's final snapshot); the trials still running
may eat that room before the snapshot lands, so the second is removed only once Tune has
stopped, when nothing else writes, and the state that Tune keeps on the driver's own disk (its
staging folder, complete) is then copied over the storage's, file by file, atomically.

Even the second reserve can be too small (Tune's experiment state grows with the trials, and a
trial's actor may still write after Tune stopped; seen in CI: a 256 KiB disk, a 40 KiB state,
"1 trials finished" after `--resume`, exit 0). So that copy is first kept on the driver's disk
too (`stash_folder`), and `--resume` repairs the storage's state from it, or refuses in one
line a state that does not read back (`ensure_resumable`, called by `fcl.tune.state`); it
never lets Tune restart the study with the trials it lost.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator

from ray import tune

from fcl.config import ConfigError
from fcl.tune import stop_request
from fcl.tune.progress import filtered_ray_logs

NO_SPACE = ("No space left on device", "[Errno 28]", "errno 28",
            "database or disk is full")          # the last: SQLite's
_RESERVES: list[str] = []             # the reserve files of the study running (per driver)
RESERVES = (".fcl-reserve", ".fcl-reserve-repair")


def says_disk_full(text: str) -> bool:
    return any(s in text for s in NO_SPACE)


def raised_on_full_disk(error: BaseException) -> bool:
    """Whether `error`, or one it was raised from, says the disk is full: Optuna's RDB storage
    raises SQLite's "database or disk is full" as a StorageInternalError that does not repeat
    it."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if says_disk_full(str(error)):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False


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
        if says_disk_full(text) and not stop_request.stops(stop_request.DISK_FULL):
            free_reserves(keep=1)
            stop_request.request_stop(stop_request.DISK_FULL, str(trial), (
                trial.local_experiment_path, trial.remote_experiment_path))


class _NoSpaceTracebacks(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (says_disk_full(record.getMessage()) or
                    (exc is not None and says_disk_full(str(exc))) or
                    (stop_request.stops(stop_request.DISK_FULL) and
                     record.levelno < logging.CRITICAL))


def make_reserves(folder: str) -> None:
    """The reserve files in `folder` (a local one; nothing where it cannot be written)."""
    if "://" in folder:
        return
    os.makedirs(folder, exist_ok=True)
    size = min(2 << 20, shutil.disk_usage(folder).free // 8)
    for name in reversed(RESERVES):              # the last freed is made first
        path = os.path.join(folder, name)
        try:
            with open(path, "wb") as f:
                f.write(b"\0" * size)
                f.flush()
                os.fsync(f.fileno())
            _RESERVES.insert(0, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(path)


def free_reserves(keep: int = 0) -> None:
    while len(_RESERVES) > keep:
        with contextlib.suppress(OSError):
            os.unlink(_RESERVES.pop(0))


def restore_experiment_state(staging: str, storage: str) -> bool:
    """Copy Tune's experiment state files (the top level of its staging folder on the driver:
    experiment_state-*.json, the searcher's and variant generator's state, tuner.pkl) over the
    storage's, each through a temp file and a rename (a temp file that did not fit is removed:
    on a full disk it holds the room the next try needs). True when the storage's experiment
    state then reads back whole."""
    if "://" in storage or not os.path.isdir(staging):
        return False
    names = [n for n in os.listdir(staging) if os.path.isfile(os.path.join(staging, n))]
    try:
        for name in names:
            tmp = os.path.join(storage, f".tmp-{name}")
            try:
                shutil.copyfile(os.path.join(staging, name), tmp)
                os.replace(tmp, os.path.join(storage, name))
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
    except OSError:
        return False
    return all(_reads_back(os.path.join(storage, n)) for n in names
               if n.startswith("experiment_state"))


def stash_folder(storage: str) -> str:
    """Where the driver keeps its copy of a study's Tune experiment state after a full disk:
    on its own temp disk, named by the storage path (the results disk is the one that filled)."""
    key = hashlib.sha256(os.path.abspath(storage).encode()).hexdigest()[:16]
    return os.path.join(tempfile.gettempdir(), "fcl-tune-state", key)


def stash(staging: str, storage: str) -> str | None:
    """Copy the top-level files of Tune's staging folder to `stash_folder(storage)`; its path,
    or None where that did not work (then only the storage's copy is left)."""
    folder = stash_folder(storage)
    try:
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        for name in os.listdir(staging):
            if os.path.isfile(os.path.join(staging, name)):
                shutil.copyfile(os.path.join(staging, name), os.path.join(folder, name))
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)
        return None
    return folder


def newest_state_reads_back(folder: str) -> bool:
    """Whether the experiment state Tune would restore from `folder` (the newest
    experiment_state-*.json, as Tune picks it) is there and reads back as JSON."""
    try:
        names = [n for n in os.listdir(folder)
                 if n.startswith("experiment_state-") and n.endswith(".json")]
    except OSError:
        return False
    return bool(names) and _reads_back(os.path.join(folder, max(names)))


def never_recorded(folder: str) -> bool:
    """Whether Tune's state in `folder` holds no experiment state at all (no
    experiment_state-*.json, not even an empty one): the driver stopped before Tune's first
    snapshot, so no trial is on record and starting over loses nothing. (A full disk leaves
    the file, cut short: that is `ensure_resumable`'s.) An object store: False."""
    if "://" in folder:
        return False
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    return not any(n.startswith("experiment_state-") for n in names)


def ensure_resumable(name: str, path: str) -> None:
    """Before `--resume`: Tune's experiment state in `path` is restored from the driver's copy
    of a full-disk stop where there is one (`stash_folder`: kept only when restoring it at the
    stop failed, so it is the newest whole state), else must read back, or the resume is
    refused: Tune, failing to read it, would log a traceback and restart the study with only
    the trials it still finds, then report success over the rows it lost."""
    if "://" in path:
        return
    kept = stash_folder(path)
    if newest_state_reads_back(kept) and restore_experiment_state(kept, path):
        shutil.rmtree(kept, ignore_errors=True)
        print(f"restored Tune's experiment state of study {name} from {kept} (the copy kept "
              "when its disk filled up)", file=sys.stderr)
        return
    if not newest_state_reads_back(path):
        raise ConfigError("--resume", "on", f"Tune's experiment state of study {name} in "
                          f"{path} does not read back whole (a disk that filled up, or a copy "
                          "cut short) and there is no whole copy to restore it from",
                          "--fresh to run the study again from the start")
    damaged = damaged_search_state(path)
    if damaged:
        raise ConfigError("--resume", "on", f"Tune's state of study {name} in {path} is "
                          f"damaged: {damaged} (a kill while Tune wrote it); resumed, Tune "
                          "would run only the trials it still finds and lose the rest",
                          "--fresh to run the study again from the start")


def damaged_search_state(folder: str) -> str:
    """What of Tune's other state files would make a resume lose trials silently: the newest
    `basic-variant-state-*.json` (the grid's trials still to create; a pickle, whatever its
    name says) empty or cut short, or an empty `tuner.pkl`; "" where neither is."""
    try:
        names = os.listdir(folder)
    except OSError:
        return ""
    variants = sorted(n for n in names
                      if n.startswith("basic-variant-state-") and n.endswith(".json"))
    if variants and not _unpickles(os.path.join(folder, variants[-1])):
        return f"{variants[-1]} is empty or cut short"
    tuner = os.path.join(folder, "tuner.pkl")
    if os.path.isfile(tuner) and os.path.getsize(tuner) == 0:
        return "tuner.pkl is empty"
    return ""


def drop_stash(path: str) -> None:
    """Forget the driver's copy of a study's state (`--fresh` discards the study)."""
    if "://" not in path:
        shutil.rmtree(stash_folder(path), ignore_errors=True)


def _unpickles(path: str) -> bool:
    """Whether Tune's pickle at `path` (its own file, which Tune would load) loads whole."""
    import pickle
    try:
        with open(path, "rb") as f:
            pickle.load(f)
        return True
    except Exception:  # EOFError, UnpicklingError, and whatever a cut-short pickle raises
        return False


def _reads_back(path: str) -> bool:
    try:
        with open(path) as f:
            json.load(f)
        return True
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def watch(folder: str) -> Iterator[None]:
    """Keeps the reserve files in `folder` (Tune's state of the study) while the block runs;
    after a full disk (a DISK_FULL stop, `fcl.tune.stop_request`) restores Tune's experiment
    state there from its staging copy."""
    make_reserves(folder)
    try:
        with filtered_ray_logs(_NoSpaceTracebacks()):
            yield
    finally:
        free_reserves()
        full = stop_request.stops(stop_request.DISK_FULL)
        if full:
            staging, storage = full[0].paths
            kept = stash(staging, storage)
            if restore_experiment_state(staging, storage):
                if kept:
                    shutil.rmtree(kept, ignore_errors=True)
            elif kept:
                print(f"warning: Tune's experiment state in {storage} did not fit on the full "
                      f"disk; a whole copy is kept in {kept}, from which --resume restores it",
                      file=sys.stderr)
            else:
                print(f"warning: Tune's experiment state in {storage} could not be restored "
                      "whole, nor a copy kept; --resume will refuse it", file=sys.stderr)
