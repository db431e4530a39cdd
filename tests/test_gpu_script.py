"""studies/gpu/run.sh, the one call a GPU machine gets, on CPU at smoke: each study it runs
lands in $OUT/results.tgz as soon as it finishes, with the machine's description beside it."""
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

pytest.importorskip("ray")
REPO = Path(__file__).resolve().parent.parent


def test_gpu_script_packs_each_finished_study(tmp_path):
    python = tmp_path / "bin"
    python.mkdir()
    (python / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (python / "python3").chmod(0o755)                      # the script calls python3
    env = {**os.environ, "OUT": str(tmp_path / "out"), "FCL_PRESET": "smoke",
           "FCL_STUDIES": "stragglers", "FCL_TRIAL": "--cpus-per-trial 1 --seeds 1",
           "PATH": f"{python}:{os.environ['PATH']}", "FCL_WORK": str(tmp_path / "work"),
           "FCL_BUNDLE": str(tmp_path / "no-bundle")}       # this environment as it is
    done = subprocess.run(["bash", "studies/gpu/run.sh"], cwd=REPO, env=env, timeout=600,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    with tarfile.open(tmp_path / "out" / "results.tgz") as tar:
        names = {n.lstrip("./") for n in tar.getnames()}
    assert {f"stragglers/{t}.parquet" for t in ("trials", "rounds", "tasks")} <= names
    machine = (tmp_path / "out" / "machine.txt").read_text()
    assert "preset smoke" in machine and "stragglers exit 0" in machine
