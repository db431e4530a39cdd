"""`fcl study NAME` runs the studies fcl ships from anywhere (the package holds them); the
scripts in `studies/` are the same studies, one line each."""
from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path

from fcl.studies import STUDIES

REPO = Path(__file__).resolve().parent.parent


def _fcl(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}     # this tree's fcl, from any folder
    return subprocess.run([sys.executable, "-m", "fcl", *args], capture_output=True, text=True,
                          timeout=600, cwd=cwd, env=env)


def test_every_script_in_studies_is_a_study_of_the_package():
    scripts = {p.stem for p in (REPO / "studies").glob("*.py")} - {"run_all"}
    assert scripts == set(STUDIES)
    for name in scripts:
        assert runpy.run_path(str(REPO / "studies" / f"{name}.py"))["STUDY"] is STUDIES[name]


def test_fcl_study_lists_runs_and_refuses_by_name(tmp_path):
    listed = _fcl("study", cwd=tmp_path)
    assert listed.returncode == 0
    assert [line.split()[0] for line in listed.stdout.splitlines()[1:]] == list(STUDIES)
    bad = _fcl("study", "optimiser", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.startswith(
        "error: study=optimiser: unknown study; allowed: did you mean optimizers? optimizers, ")
    assert len(bad.stderr.strip().splitlines()) == 1
    dry = _fcl("study", "optimizers", "--preset", "smoke", "--seeds", "1", "--dry-run",
               cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert "12 trials;" in dry.stdout
    helped = _fcl("study", "optimizers", "--help", cwd=tmp_path)
    assert helped.stdout.startswith("usage: fcl study optimizers ")
