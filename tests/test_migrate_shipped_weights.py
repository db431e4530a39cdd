"""studies/migrate/shipped_weights_names.py on a stored run whose `model.weights` is a checkout's
absolute path to a shipped backbone: the column and the manifest's base name it `fcl:NAME`, every
table's trial id becomes the hash of that config (what a study planned today computes), every
other value stays, and a folder already migrated is left alone."""
import runpy
from pathlib import Path

import pandas as pd

from fcl.config import with_overrides
from fcl.engine import run
from fcl.manifest import read_manifest, verify, write_run_files
from fcl.presets import preset
from fcl.results_io import FILES, config_hash
from fcl.shipped_weights import FOLDER

REPO = Path(__file__).resolve().parent.parent
MIGRATE = runpy.run_path(str(REPO / "studies" / "migrate" / "shipped_weights_names.py"))
NAME = "resnet_tiny-fashion_mnist.pt"
TINY = {"rounds": 2, "data.num_tasks": 2, "data.train_per_class": 10, "data.test_per_class": 5,
        "run.threads": 1}


def test_absolute_shipped_paths_become_names_and_ids_follow(tmp_path):
    absolute = preset("smoke", {**TINY, "model.weights": str(FOLDER / NAME)})
    folder = tmp_path / "results" / "run"
    write_run_files(run(absolute), str(folder), "smoke")
    before = {n: pd.read_parquet(folder / f"{n}.parquet") for n in FILES}

    assert MIGRATE["migrate"](folder) is True
    after = {n: pd.read_parquet(folder / f"{n}.parquet") for n in FILES}
    named = with_overrides(absolute, {"model.weights": f"fcl:{NAME}"})
    assert config_hash(named) != config_hash(absolute)
    for n in FILES:
        assert set(after[n]["trial_id"]) == {config_hash(named)}, n
        rest = [c for c in before[n].columns if c not in ("trial_id", "model.weights")]
        pd.testing.assert_frame_equal(after[n][rest], before[n][rest], check_dtype=False)
    assert list(after["trials"]["model.weights"]) == [f"fcl:{NAME}"]
    manifest = read_manifest(folder)
    assert manifest.base["model.weights"] == f"fcl:{NAME}" and verify(folder, manifest) == []
    assert MIGRATE["migrate"](folder) is False             # nothing left to rename
    assert MIGRATE["portable"]("/elsewhere/mine/resnet_tiny-fashion_mnist.pt") == \
        "/elsewhere/mine/resnet_tiny-fashion_mnist.pt"     # not a checkout's fcl/weights
