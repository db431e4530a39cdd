"""A local Ray ends with the driver that started it, even one killed with `kill -9`.

Ray's raylet and GCS follow a killed driver, but the agents the raylet starts (`ray::
DashboardAgent`, `ray::RuntimeEnvAgent`, about 170 MB together) are left running, orphaned.
Once a driver has started its local Ray, `watch_local_ray` starts a small watcher process with
the driver's descendants (each with its start time, so that a reused PID is never touched).
When the driver is gone, the watcher ends those still alive: SIGTERM, then SIGKILL after a
grace period. It exits by itself once none of them is left, e.g. after `ray.shutdown()`.
Linux only (it reads /proc); elsewhere nothing is watched.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

POLL_S = 1.0
GRACE_S = 5.0


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or None
    when there is no such process or it has ended (a zombie waiting for its parent to reap
    it holds no memory)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] in ("Z", "X") else int(fields[19])


def descendants(pid: int) -> dict[int, int]:
    """{pid: start time} of every process below `pid`."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found: dict[int, int] = {}
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        started = start_time(child)
        if started is not None:
            found[child] = started
            todo += children.get(child, [])
    return found


def alive(watched: dict[int, int]) -> dict[int, int]:
    """The watched processes that still run (same PID, same start time)."""
    return {pid: t for pid, t in watched.items() if start_time(pid) == t}


def watch_local_ray() -> subprocess.Popen | None:
    """Start the watcher for the Ray processes this driver has started (call it right after
    `ray.init` started a local Ray)."""
    if not Path("/proc/self/stat").exists():
        return None
    me = os.getpid()
    watched = descendants(me)
    if not watched:
        return None
    return subprocess.Popen(
        [sys.executable, "-m", "fcl.tune.reaper", str(me), str(start_time(me)),
         json.dumps(watched)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)      # neither Ctrl-C in the terminal nor the driver's end stop it


def reap(driver: int, driver_start: int, watched: dict[int, int]) -> None:
    """Wait for the driver to end, then end what is left of `watched`."""
    while start_time(driver) == driver_start:
        watched = alive(watched)
        if not watched:
            return
        time.sleep(POLL_S)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in alive(watched):
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + GRACE_S
        while alive(watched) and time.monotonic() < deadline:
            time.sleep(0.1)


if __name__ == "__main__":
    reap(int(sys.argv[1]), int(sys.argv[2]),
         {int(pid): t for pid, t in json.loads(sys.argv[3]).items()})
