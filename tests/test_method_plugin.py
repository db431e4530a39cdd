"""A new method is one module and one registry line: `tests/toy_method.py` (a linear probe)
registers itself from outside fcl, and then runs end to end, shows in `fcl params` and `fcl run
--help`, runs as a study through Ray Tune (its workers get it shipped) and has its row in a
table drawn from that study."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

import toy_method
from fcl.config import ConfigError, RunConfig, with_overrides
from fcl.engine import run
from fcl.methods.registry import BUILT_IN, method, methods, plugins, register, unregister
from fcl.presets import preset

TESTS = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def probe():
    """The toy method registered for each test of this file only (the registry is global)."""
    register(toy_method.METHOD)
    yield
    unregister("probe")
TINY = {"rounds": 2, "data.num_tasks": 2, "data.num_clients": 2, "data.train_per_class": 20,
        "data.test_per_class": 10, "client.local_epochs": 1, "model.width": 8,
        "run.threads": 1, "model.adapter": "probe"}


def test_the_toy_method_is_registered_beside_fcls_own():
    assert method("probe") is toy_method.METHOD and toy_method.METHOD in plugins()
    with pytest.raises(ValueError, match="model.adapter=lora is one of fcl's own methods"):
        unregister("lora")
    assert set(methods()) == {m.name for m in BUILT_IN} | {"probe"}
    with pytest.raises(ValueError, match="model.adapter=lora is already registered"):
        register(toy_method.METHOD.__class__(**{**toy_method.METHOD.__dict__, "name": "lora"}))
    assert with_overrides(RunConfig(), {"model.adapter": "probe"}).model.adapter == "probe"
    with pytest.raises(ConfigError, match=r"allowed: did you mean probe\? nettailor, .*, probe$"):
        with_overrides(RunConfig(), {"model.adapter": "probes"})


def test_it_runs_end_to_end_and_sends_only_its_heads():
    res = run(preset("smoke", TINY))
    assert bool(torch.isfinite(res.accuracy[:, -1]).all())
    features = 8 * 4                      # resnet_tiny at width 8: 32 channels into the head
    head_bytes = 4 * (features + 1) * 5   # 5 classes per task, float32, no norm statistics
    first = res.records[0]
    assert first["bytes_up"] == first["clients_reporting"] * head_bytes


def _fcl(*args: str) -> str:
    env = {**os.environ, "FCL_METHODS": "toy_method",
           "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)])}
    p = subprocess.run([sys.executable, "-m", "fcl", *args], capture_output=True, text=True,
                       timeout=300, env=env, cwd=TESTS.parent)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout


def test_fcl_params_and_fcl_run_help_find_it_from_the_environment():
    params = _fcl("params", "--preset", "smoke", "--set", "model.adapter=probe")
    assert "probe (a linear head per task, the backbone frozen)" in params
    help_text = " ".join(_fcl("run", "--help").split())
    assert "probe = a linear head per task on the frozen backbone" in help_text
    assert "nettailor, lora, full, fedweit, fedpara, zerofl, probe" in help_text


def test_a_study_runs_it_through_tune_and_a_table_draws_it(local_ray, tmp_path):
    from analysis.figures.fcl_paper_tables import table4
    from analysis.study_tables import load_study
    from fcl.tune import Study, StudyOptions, grid, run_study
    from fcl.tune.plan import base_config
    from fcl.tune.space import resolve
    study = Study("toy_methods", {"method": grid({"model.adapter": "probe"},
                                                 {"model.adapter": "full"})},
                  doc="The toy probe beside FedAvg.")
    opts = StudyOptions(preset="smoke", results=str(tmp_path))
    outcome = run_study(study, opts)
    assert (outcome.finished, outcome.failed) == (2, 0)
    trials = pd.read_parquet(tmp_path / "toy_methods" / "trials.parquet")
    probe = trials[trials["model.adapter"] == "probe"].iloc[0]
    direct = run(resolve(base_config(study, opts), {"model.adapter": "probe", "run.threads": 1,
                                                    "seed": int(probe["seed"])}))
    assert probe["acc"] == direct.summary["acc"]
    out = tmp_path / "figures"
    out.mkdir()
    table4(load_study(tmp_path, "toy_methods"), out)
    table = pd.read_csv(out / "table4.csv").set_index("model.adapter")
    assert sorted(table.index) == ["full", "probe"]
    assert table.loc["probe", "model_mb"] < table.loc["full", "model_mb"]
