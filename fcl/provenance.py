"""Where a result came from: the fcl checkout (`git describe`) and the library versions.
Imports no Ray (its version is read from the installed package's metadata)."""
from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import subprocess

# The commit of the driver's checkout, for a process whose fcl is a copy without `.git`: the
# package a driver ships to a cluster (Ray Client reads the rows on the head), or the working
# dir of `ray job submit` (the submitting machine sets it: docs/clusters.md).
COMMIT_ENV = "FCL_GIT"


@functools.cache
def fcl_git() -> str:
    """`git describe --always --dirty` of the fcl checkout; outside git, the commit the driver
    passed in `FCL_GIT`; else ""."""
    return _describe() or os.environ.get(COMMIT_ENV, "").strip()


def _describe() -> str:
    import fcl
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True,
                             text=True, timeout=10, cwd=os.path.dirname(fcl.__file__))
        return out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return ""


def versions() -> dict[str, str]:
    """fcl, torch, Ray and Python versions of this process (a trial's, or the driver's)."""
    import torch

    import fcl
    return {"fcl_version": fcl.__version__, "torch_version": torch.__version__,
            "ray_version": _version("ray"), "python_version": platform.python_version()}
