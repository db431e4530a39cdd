"""Every exception fcl defines survives pickling, the trip Ray makes with a trial's error to the
driver: the failure line and the `error` column of trials.parquet carry its true message."""
from __future__ import annotations

import importlib
import pickle
import pkgutil

import pytest

import fcl
from fcl.config import ConfigError
from fcl.data.cache import CorruptCache
from fcl.data.image_dataset import DataError
from fcl.manifest import ManifestError
from fcl.saved_model import SavedModelError

EXAMPLES = [ConfigError("model.weights", "/no/such.pt", "no such file", "a checkpoint file"),
            DataError("data/cifar-10-batches-py: missing; torchvision downloads it"),
            ManifestError("results/x/study.json: missing"),
            CorruptCache("bad digest"),
            SavedModelError("runs/m: task 1's weights in model.pt are not those the run saved")]


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
