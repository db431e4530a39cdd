"""The command line: JSON summary, Parquet output, and one-line errors with exit code 2."""
import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from fcl.manifest import read_manifest, verify

FAST = ["rounds=5", "data.train_per_class=40", "data.test_per_class=10"]


def fcl(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "fcl", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


def test_run_json_and_parquet(tmp_path):
    out = tmp_path / "run"
    p = fcl("run", "--preset", "smoke", "--set", *FAST, "server.optimizer=fedadam",
            "server.lr=0.5", "schedule.order=async", "--json", "--out", str(out))
    assert p.returncode == 0, p.stderr
    summary = json.loads(p.stdout)
    for key in ("acc", "bwt_f", "bytes_up", "bytes_down", "rounds", "wall_s"):
        assert key in summary
    assert summary["rounds"] == 5 and summary["config"]["server.optimizer"] == "fedadam"
    assert "round    5/5" in p.stderr                       # progress goes to stderr with --json
    rounds = pd.read_parquet(out / "rounds.parquet")
    tasks = pd.read_parquet(out / "tasks.parquet")
    one = pd.read_parquet(out / "trials.parquet")             # the study schema, one trial
    assert len(rounds) == 5 and len(tasks) == 25 and len(one) == 1
    assert one["server.lr"].iloc[0] == 0.5 and one["acc"].iloc[0] == pytest.approx(summary["acc"])
    assert (rounds["trial_id"] == one["trial_id"].iloc[0]).all()
    assert (rounds["schema_version"] == 2).all() and rounds["tcc_bytes"].is_monotonic_increasing
    assert not [f for f in os.listdir(out) if f.startswith(".tmp-")]
    manifest = read_manifest(out)                             # study `run`, nothing varied
    assert (manifest.study, manifest.preset, manifest.varying, manifest.seeds) == (
        "run", "smoke", (), (0,))
    assert manifest.base["server.lr"] == 0.5 and manifest.command.startswith("fcl run")
    assert verify(out, manifest) == [] and manifest.files["tasks"]["rows"] == 25


@pytest.mark.parametrize("args,fragment", [
    (["--set", "data.alpha=-1"], "error: data.alpha=-1.0: out of range; allowed: > 0"),
    (["--set", "rounds=7"], "error: rounds=7: not a multiple of data.num_tasks=5"),
    (["--set", "bogus=1"], "error: bogus=1: unknown key"),
    (["--set", "participation.fraction=0"], "allowed: 0 < fraction <= 1"),
    (["--set", "data.name=npz", "data.root=/nonexistent.npz"], "error: /nonexistent.npz: no such"),
])
def test_bad_config_exits_2_with_one_line(args, fragment, tmp_path):
    p = fcl("run", "--preset", "smoke", *args, "--out", str(tmp_path / "x"))
    assert p.returncode == 2
    assert p.stderr.strip().count("\n") == 0 and fragment in p.stderr
    assert not (tmp_path / "x").exists()


def test_help_lists_every_key_with_default():
    p = fcl("run", "--help")
    assert p.returncode == 0
    from fcl.config import RunConfig
    for key in RunConfig().to_flat():
        assert key in p.stdout
    assert "default 'fedadam'" in p.stdout and "fedsgd, fedadam, fedadagrad, fedyogi" in p.stdout
