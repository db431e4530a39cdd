"""One driver per study (`hold`): the lock `<results>/.<study>.lock`, in the results folder rather
than Tune's storage because that is what every driver of the study writes into and, shared, what
two machines both see (an s3:// storage has no locks). It is an `flock` on that file, which the
kernel (or, on NFS, the lock manager) drops when its holder dies however it dies, so a holder
killed with `kill -9` leaves only a stale file naming it, taken over by the next driver with no
race; the file names the holder (host, pid, since) for the driver that is refused. A driver
takes it before anything else and `--fresh` only discards state under it, so `--fresh` refuses
while another driver holds the study. Released (the file removed) on every exit of `hold`.
`fcl.tune.state.hold_storage` takes the same lock on a `--storage` folder of its own.
"""
from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator

from fcl.config import ConfigError


def lock_path(results: str, name: str) -> str:
    return os.path.join(os.path.abspath(results), f".{name}.lock")


@contextlib.contextmanager
def hold(results: str, name: str, command: str = "", flag: str = "--results"
         ) -> Iterator[dict | None]:
    """The study's lock for the block (see the module's doc); yields the holder it took over
    (a driver that died holding it: its host, pid, since) or None. Refuses, in one line naming
    the holder, a study another live driver holds. `flag`: the option that named the folder."""
    path = lock_path(results, name)
    fd, stale = acquire(path, name, flag)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"host": socket.gethostname(), "pid": os.getpid(),
                                  "since": now(), "command": command}).encode(), 0)
        yield stale
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)          # while still held: a waiting driver's inode check retries
        os.close(fd)


def acquire(path: str, name: str, flag: str = "--results") -> tuple[int, dict | None]:
    """An open, flock-ed descriptor of `path` that is still the file at `path` (a releasing
    holder unlinks it: a descriptor of the unlinked file would be a lock nobody else sees)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    for _ in range(50):
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ConfigError(flag, os.path.dirname(path), f"study {name} is held by "
                              f"another driver: {holder_line(read_holder(path))} ({path})",
                              "wait for it to finish, or stop that driver") from None
        except OSError as e:
            os.close(fd)
            raise ConfigError(flag, os.path.dirname(path), f"cannot lock {path} "
                              f"({e.strerror})", "a filesystem with file locks") from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            try:
                return fd, json.loads(os.pread(fd, 1 << 16, 0) or b"null")
            except ValueError:
                return fd, None
        os.close(fd)
    raise ConfigError(flag, os.path.dirname(path), f"could not take {path}",
                      "try again")


def read_holder(path: str) -> dict:
    """What the lock file says of its holder ({} while it is being written, or unreadable)."""
    for _ in range(5):
        try:
            with open(path) as f:
                text = f.read()
            if text:
                return json.loads(text)
        except (OSError, ValueError):
            pass
        time.sleep(0.02)
    return {}


def holder_line(holder: dict) -> str:
    if not holder:
        return "holder unknown"
    return (f"host {holder.get('host', '?')}, pid {holder.get('pid', '?')}, since "
            f"{holder.get('since', '?')}")


def now() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")
