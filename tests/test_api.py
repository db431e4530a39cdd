"""fcl from Python: `fcl.run`, fcl's trainable in a user's own `tune.Tuner`, `fcl --version`."""
import subprocess
import sys

import pytest
import torch

import fcl

TINY = {"rounds": 5, "data.num_tasks": 5, "data.num_clients": 3, "data.train_per_class": 20,
        "data.test_per_class": 10, "model.width": 8, "run.threads": 1}


def test_import_fcl_loads_neither_torch_nor_ray():
    code = "import sys, fcl; print('torch' in sys.modules, 'ray' in sys.modules, fcl.__version__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", fcl.__version__]


def test_fcl_version():
    out = subprocess.run([sys.executable, "-m", "fcl", "--version"], capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == f"fcl {fcl.__version__}"


def test_fcl_version_imports_neither_torch_nor_ray():
    # the entry point `fcl.cli:main` as the `fcl` script calls it; --version abbreviated too
    code = ("import sys; from fcl.cli import main; sys.argv = ['fcl', sys.argv[1]]; rc = main(); "
            "print(rc, 'torch' in sys.modules, 'ray' in sys.modules)")
    for flag in ("--version", "--vers"):
        out = subprocess.run([sys.executable, "-c", code, flag], capture_output=True, text=True,
                             check=True)
        assert out.stdout.split() == ["fcl", fcl.__version__, "0", "False", "False"]
    # `python -m fcl --version`: -X importtime lists every module imported, on stderr
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "fcl", "--version"],
                         capture_output=True, text=True, check=True)
    imported = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines()}
    assert "fcl.cli" in imported and not {"torch", "ray"} & imported


def test_run_by_preset_equals_run_of_its_config():
    a = fcl.run("smoke", TINY)
    b = fcl.run(fcl.configure("smoke", TINY), {"seed": 0})
    assert a.config == fcl.configure("smoke", {**TINY, "seed": 0}) == b.config
    assert a.accuracy.shape == (5, 5) and len(a.records) == 5
    assert torch.equal(a.accuracy, b.accuracy)
    assert a.summary.acc == b.summary.acc and 0 <= a.summary.acc <= 100


def test_run_prints_a_line_per_round_by_default_and_none_when_asked(capsys):
    """From Python as from `fcl run`: one progress line per round on stderr, so a long run is
    not silent; `progress=False` is quiet, a stream of one's own gets the lines, and an
    `on_round` of one's own is still called."""
    import io
    seen = []
    fcl.run("smoke", TINY, on_round=lambda rec, _: seen.append(rec.round))
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 5 and lines[0].startswith("round    1/5 ") and "ETA" in lines[-1]
    assert seen == [0, 1, 2, 3, 4]
    fcl.run("smoke", TINY, progress=False)
    assert capsys.readouterr().err == ""
    mine = io.StringIO()
    fcl.run("smoke", TINY, progress=mine)
    assert mine.getvalue().count("\n") == 5 and capsys.readouterr().err == ""


def test_run_refuses_an_unknown_key():
    from fcl.config import ConfigError
    with pytest.raises(ConfigError, match="no.such"):
        fcl.run("smoke", {"no.such": 1})


def test_own_tuner_over_a_grid_gives_the_rows_of_direct_runs(local_ray, tmp_path):
    from ray import tune

    import fcl.tune
    base = fcl.configure("smoke", TINY)
    tuner = tune.Tuner(fcl.tune.trainable(base, checkpoint_every=2),
                       param_space={"client.lr": tune.grid_search([0.01, 0.05])},
                       run_config=tune.RunConfig(storage_path=str(tmp_path), name="mine",
                                                 verbose=0))
    frames = fcl.tune.results_frames(tuner.fit(), base, study="mine")
    trials, rounds, tasks = frames["trials"], frames["rounds"], frames["tasks"]
    assert list(trials["client.lr"]) == [0.01, 0.05]          # sorted by the key varied
    assert (trials["status"] == "TERMINATED").all() and (trials["study"] == "mine").all()
    assert len(rounds) == 2 * 5 and len(tasks) == 2 * 5 * 5
    for _, row in trials.iterrows():
        direct = fcl.run(base, {"client.lr": row["client.lr"]})
        assert row["acc"] == direct.summary.acc and row["bwt_f"] == direct.summary.bwt_f
        assert row["tcc_bytes"] == direct.summary.tcc_bytes
        mine = tasks[tasks["trial_id"] == row["trial_id"]]
        last = mine[mine["round"] == 4].sort_values("task")["accuracy"].tolist()
        assert last == direct.accuracy[:, -1].tolist()
