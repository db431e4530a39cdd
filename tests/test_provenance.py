"""The commit a result records (`fcl_git`): the checkout's, or, where fcl runs from a copy without
`.git` (the package shipped to a cluster, a `ray job submit` working dir), the one the driver
passed in FCL_GIT."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fcl
from fcl.provenance import COMMIT_ENV, fcl_git

PACKAGE = Path(fcl.__file__).resolve().parent
PRINT_COMMIT = "from fcl.provenance import fcl_git; print(repr(fcl_git()))"


def _commit_seen(python_path: Path, cwd: Path, commit: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != COMMIT_ENV}
    env["PYTHONPATH"] = str(python_path)
    if commit is not None:
        env[COMMIT_ENV] = commit
    done = subprocess.run([sys.executable, "-c", PRINT_COMMIT], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return eval(done.stdout.strip().splitlines()[-1])


def _copy_without_git(tmp_path: Path) -> Path:
    copy = tmp_path / "copy"
    shutil.copytree(PACKAGE, copy / "fcl", ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def test_a_copy_without_git_records_the_commit_the_driver_passed(tmp_path):
    copy = _copy_without_git(tmp_path)
    assert _commit_seen(copy, tmp_path, "abc1234-dirty") == "abc1234-dirty"


def test_a_copy_without_git_and_no_commit_passed_records_nothing(tmp_path):
    copy = _copy_without_git(tmp_path)
    assert _commit_seen(copy, tmp_path, None) == ""


def test_a_checkout_records_its_own_commit_over_a_passed_one(tmp_path):
    own = fcl_git()
    if not own:
        pytest.skip("fcl runs from an installed package, not a git checkout")
    assert _commit_seen(PACKAGE.parent, tmp_path, "not-this-one") == own


def test_the_package_shipped_to_a_cluster_carries_the_commit():
    from fcl.tune.cluster import ship_fcl
    assert ship_fcl()["env_vars"].get(COMMIT_ENV) == (fcl_git() or None)
