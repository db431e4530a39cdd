"""Every exception fcl defines survives pickling, the trip Ray makes with a trial's error to the
driver: the failure line and the `error` column of trials.parquet carry its true message (a
study's trial that raises a ConfigError, through a local Ray, checks both)."""
from __future__ import annotations

import importlib
import os
import pickle
import pkgutil
import subprocess
import sys

import pandas as pd
import pytest

import fcl
from fcl.config import ConfigError
from fcl.data.cache import CorruptCache
from fcl.data.image_dataset import DataError
from fcl.manifest import ManifestError
from fcl.saved_model import SavedModelError
from fcl.tune.termination import Terminated

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

EXAMPLES = [ConfigError("model.weights", "/no/such.pt", "no such file", "a checkpoint file"),
            DataError("data/cifar-10-batches-py: missing; torchvision downloads it"),
            ManifestError("results/x/study.json: missing"),
            CorruptCache("bad digest"),
            SavedModelError("runs/m: task 1's weights in model.pt are not those the run saved"),
            Terminated()]


def fcl_exceptions() -> set[type]:
    """Every Exception subclass defined in an fcl module."""
    found = set()
    for info in pkgutil.walk_packages(fcl.__path__, "fcl."):
        if info.name.endswith("__main__") or info.name.startswith("fcl.data.make_bundled"):
            continue
        module = importlib.import_module(info.name)
        found |= {v for v in vars(module).values() if isinstance(v, type)
                  and issubclass(v, BaseException) and v.__module__ == info.name}
    return found


def test_the_examples_cover_every_fcl_exception():
    assert fcl_exceptions() == {type(e) for e in EXAMPLES}


@pytest.mark.parametrize("error", EXAMPLES, ids=lambda e: type(e).__name__)
def test_pickle_keeps_type_message_and_fields(error):
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error) and str(back) == str(error)
    assert vars(back) == vars(error)


def test_a_config_error_raised_in_ray_reaches_the_driver_whole(local_ray):
    import ray

    @ray.remote
    def trial():
        raise EXAMPLES[0]

    with pytest.raises(ConfigError) as caught:
        ray.get(trial.remote(), timeout=300)
    assert "model.weights=/no/such.pt: no such file; allowed: a checkpoint file" in str(caught.value)


WEIGHTS_STUDY = """
from fcl.tune import Study, grid, main
if __name__ == "__main__":
    main(Study("weights", {"client.lr": grid(0.1)}))
"""


def test_a_config_error_in_a_trial_reaches_its_row_and_the_failure_line(local_ray, tmp_path):
    """model.weights is read in the trial (it may be a file only the nodes have): a missing
    one fails the trial with a ConfigError, whose line the driver prints and the row keeps."""
    script = tmp_path / "weights.py"
    script.write_text(WEIGHTS_STUDY)
    missing = tmp_path / "no" / "such.pt"
    p = subprocess.run(
        [sys.executable, str(script), "--preset", "smoke", "--seeds", "1", "--results",
         str(tmp_path / "results"), "--address", local_ray, "--set", f"model.weights={missing}",
         "rounds=2", "data.num_tasks=2", "data.train_per_class=20", "data.test_per_class=10"],
        env={**os.environ, "PYTHONPATH": REPO, "RAY_ADDRESS": ""}, cwd=REPO,
        capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, p.stderr[-3000:]
    want = f"ConfigError: model.weights={missing}: no such file; allowed: "
    trials = pd.read_parquet(tmp_path / "results" / "weights" / "trials.parquet")
    assert list(trials["status"]) == ["ERROR"]
    assert trials["error"][0].startswith(want), trials["error"][0]
    failed = [line for line in p.stderr.splitlines() if line.startswith("failed: trial ")]
    assert len(failed) == 1 and f": {want}" in failed[0], p.stderr[-3000:]
    assert "missing 3 required positional arguments" not in p.stderr + p.stdout
