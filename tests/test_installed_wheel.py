"""fcl as a plain (not editable) install, used outside the clone: the wheel holds the package,
its studies, its analysis, its shipped weights and data; from another folder `fcl study`, `fcl
run`, `fcl params` and `fcl report` work on the installed copy alone."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_the_installed_wheel_runs_outside_the_clone(tmp_path):
    wheels, site, elsewhere = tmp_path / "wheels", tmp_path / "site", tmp_path / "elsewhere"
    source = tmp_path / "source"          # the build writes build/ beside the sources: a copy
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    for name in ("fcl", "analysis"):
        shutil.copytree(REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(wheels), str(source)], check=True,
                   timeout=600, capture_output=True)
    wheel = next(wheels.glob("fcl-*.whl"))
    subprocess.run([*pip, "install", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, timeout=600, capture_output=True)
    elsewhere.mkdir()
    shutil.copytree(REPO / "results-lowrank", elsewhere / "results-lowrank")
    env = {**os.environ, "PYTHONPATH": str(site)}     # the installed copy, not the clone's

    def fcl(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "fcl", *args], cwd=elsewhere, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (args, done.stderr[-2000:])
        return done.stdout

    where = subprocess.run([sys.executable, "-c", "import fcl, analysis; print(fcl.__file__); "
                            "print(analysis.__file__)"], cwd=elsewhere, env=env,
                           capture_output=True, text=True, timeout=120).stdout.split()
    assert all(Path(p).is_relative_to(site) for p in where) and len(where) == 2
    assert "optimizers" in fcl("study")
    assert "ACC" in fcl("run", "--preset", "smoke", "--set", "rounds=5")
    assert "bytes per message" in fcl("params", "--preset", "smoke")
    fcl("report", "results-lowrank", "--out", "report")
    text = (elsewhere / "report" / "report.md").read_text()
    assert "results-lowrank/flocora_quantization" in text and "## Claims" in text
