"""`fcl figures|claims|dashboard|paired|provenance|seeds-simulation|report` are the analysis's
commands under the one command line: the same output as `python -m analysis`, their own --help,
and listed in `fcl --help`."""
import os
import subprocess
import sys
from pathlib import Path

from fcl.cli import ANALYSIS

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv], cwd=REPO, capture_output=True, text=True,
                          env=ENV, timeout=600)


def test_fcl_claims_prints_what_python_m_analysis_claims_prints():
    args = ["claims", "--brief", "--results", "results-lowrank"]
    mine, theirs = run("-m", "fcl", *args), run("-m", "analysis", *args)
    assert mine.returncode == theirs.returncode == 0, mine.stderr[-2000:]
    assert mine.stdout == theirs.stdout and mine.stdout.strip()


def test_each_command_is_listed_and_has_its_own_help():
    listing = run("-m", "fcl", "--help")
    assert all(name in listing.stdout for name in ANALYSIS)
    helped = run("-m", "fcl", "paired", "--help")
    assert helped.returncode == 0 and helped.stdout.startswith("usage: fcl paired")
