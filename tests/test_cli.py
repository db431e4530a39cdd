"""The command line: JSON summary, Parquet output, and one-line errors with exit code 2."""
import contextlib
import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest
import torch

from fcl.config import ConfigError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from fcl.manifest import read_manifest, verify
from tmpfs import tmpfs

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
    assert re.search(r"round    5/5 .* elapsed \d+:\d\d ETA 0:00\n", p.stderr)
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
    (["--set", "data.alpha=-1"], "error: data.alpha=-1.0: out of range; allowed: 0 < alpha <= 1e6"),
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


# --- outputs and the device are checked before any work (in-process: `main(argv)`) ---

def in_process(capsys, *argv):
    from fcl.cli import main
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def no_run(monkeypatch):
    """`fcl run` refused before the run: the engine is never called (`fcl.cli` imports it when
    the command runs, so the engine's own attribute is the one to patch)."""
    import fcl.engine

    def refuse(*_, **__):
        raise AssertionError("the run started")
    monkeypatch.setattr(fcl.engine, "run", refuse)


def fill(folder):
    with open(os.path.join(folder, "fill"), "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass


@pytest.mark.parametrize("where,fragment", [
    ("file", "an existing file, not a folder"),
    ("under-file", "is a file, not a folder"),
    ("read-only", "(Read-only file system)"),
    ("full", "(No space left on device)"),
    ("almost-full", "MB free in"),
    ("empty", "--out=: empty"),
])
def test_unwritable_out_is_refused_before_the_run(where, fragment, tmp_path, capsys, no_run):
    (tmp_path / "a-file").write_text("x")
    out = {"file": tmp_path / "a-file", "under-file": tmp_path / "a-file" / "run",
           "read-only": tmp_path / "mnt" / "run", "full": tmp_path / "mnt" / "run",
           "almost-full": tmp_path / "mnt" / "run", "empty": ""}[where]
    mount = {"read-only": "ro,size=1m", "full": "size=1m", "almost-full": "size=512k"}
    os.makedirs(tmp_path / "mnt")
    with tmpfs(tmp_path / "mnt", mount[where]) if where in mount else contextlib.nullcontext():
        if where == "full":
            fill(tmp_path / "mnt")
        code, stdout, err = in_process(capsys, "run", "--preset", "smoke", "--set", *FAST,
                                       "--out", str(out))
        assert os.listdir(tmp_path / "mnt") in ([], ["fill"])        # the probe left nothing
    assert (code, stdout) == (2, "") and err.count("\n") == 1 and err.startswith("error: --out=")
    assert fragment in err


def test_out_that_fails_after_the_run_prints_the_summary_then_one_line(tmp_path, capsys,
                                                                         monkeypatch):
    import errno

    import fcl.manifest

    def disk_full(*_, **__):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(fcl.manifest, "write_run_files", disk_full)
    code, stdout, err = in_process(capsys, "run", "--preset", "smoke", "--set", *FAST,
                                   "--quiet", "--out", str(tmp_path / "run"))
    assert code == 1 and stdout.startswith("ACC ") and stdout.count("\n") == 1
    assert err == (f"error: --out={tmp_path / 'run'}: writing failed after the work (No space "
                   "left on device); what it holds is incomplete, the summary above is not\n")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_without_a_gpu_is_refused_before_the_run(capsys, no_run):
    code, _, err = in_process(capsys, "run", "--preset", "smoke", "--set", "run.device=cuda")
    assert (code, err) == (2, ("error: run.device=cuda: no CUDA device on this machine; "
                               "allowed: auto, cpu\n"))


def test_a_key_set_twice_is_refused(capsys):
    from fcl.cli_args import parse_sets
    with pytest.raises(ConfigError, match=r"^server.lr=0.2: given twice \(also server.lr=0.1\)"):
        parse_sets(["server.lr=0.1", "rounds=5", " server.lr =0.2"])
    assert parse_sets(["server.lr=0.1", "client.lr=0.1"]) == {"server.lr": "0.1",
                                                              "client.lr": "0.1"}
    code, out, err = in_process(capsys, "params", "--set", "rounds=5", "--set", "rounds=10")
    assert (code, out) == (2, "") and err == ("error: rounds=10: given twice (also rounds=5); "
                                              "allowed: each key once\n")


FAST_REFUSAL = """
import sys, time
t0 = time.perf_counter()
from fcl.cli import main
rc = main(sys.argv[1:])
print(rc, "torch" in sys.modules, "ray" in sys.modules, round(time.perf_counter() - t0, 3))
"""


@pytest.mark.parametrize("argv, says", [
    (["run", "--preset", "smoke", "--set", "client.lrr=0.1"],
     "error: client.lrr=0.1: unknown key; allowed: did you mean client.lr? see `fcl run --help` "
     "for every key"),
    (["params", "--set", "model.lora_rnk=4"], "did you mean model.lora_rank or "),
    (["run", "--set", "rounds=abc"], "error: rounds=abc: "),
    (["run", "--set", "model.fedweit_past=trained"], "read only by model.adapter=fedweit"),
    # a study's --set, key by key, before its studies import Tune
    (["study", "optimizers", "--preset", "smoke", "--set", "client.lrr=0.1"],
     "error: client.lrr=0.1: unknown key; allowed: did you mean client.lr? "),
    (["study", "noniid", "--set", "server.optimizer=fedadma", "--seeds", "2"],
     "error: server.optimizer=fedadma: unknown value; allowed: did you mean fedadam? "),
    (["study", "optimizers", "--set", "client.lr=-1"], "error: client.lr=-1.0: out of range"),
])
def test_a_bad_key_or_value_is_refused_before_torch_is_imported(argv, says):
    """A typo in --set is one line with the close keys, exit 2, from the config alone: neither
    torch nor Ray is imported first (they took 2-15 s to load before a bad key was seen)."""
    done = subprocess.run([sys.executable, "-c", FAST_REFUSAL, *argv], capture_output=True,
                          text=True, timeout=120, cwd=REPO)
    rc, torch_loaded, ray_loaded, _ = done.stdout.split()
    assert (rc, torch_loaded, ray_loaded) == ("2", "False", "False")
    assert done.stderr.count("\n") == 1 and says in done.stderr


@pytest.mark.parametrize("argv, rc", [(["ls", "{empty}"], "0"), (["--help"], "0"),
                                      (["lss"], "2")])
def test_commands_that_train_nothing_do_not_import_torch(argv, rc, tmp_path):
    """`fcl ls`, `fcl --help` and a mistyped command build only the command on the line: the
    other commands' arguments import torch (about 2 s)."""
    argv = [a.format(empty=tmp_path) for a in argv]
    code = FAST_REFUSAL.replace("rc = main(sys.argv[1:])",
                                "try:\n    rc = main(sys.argv[1:])\nexcept SystemExit as e:\n"
                                "    rc = e.code")
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          timeout=120, cwd=REPO)
    assert done.stdout.split()[-4:-1] == [rc, "False", "False"], done.stdout + done.stderr


def test_help_of_a_command_still_lists_every_command():
    from fcl.cli import COMMANDS, build_parser
    text = build_parser(["ls", "--help"]).format_help()
    assert all(name in text for name in COMMANDS)


def test_a_key_far_from_every_known_one_gets_no_guess():
    from fcl.config import did_you_mean, field_types
    assert did_you_mean("zzzz.qqqq", field_types()) == ""
    assert did_you_mean("server.optimiser", field_types()) == "did you mean server.optimizer? "
