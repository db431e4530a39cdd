"""CIFAR-100 / CIFAR-10 from tiny archives in the real pickled layout, through the real loaders."""
import pickle

import numpy as np
import pytest
import torch

from fcl.config import DataConfig
from fcl.data import cifar
from fcl.data.datasets import DataError, load_dataset
from fcl.data.federated import build_federated_data
from real_formats import write_cifar10, write_cifar100


@pytest.fixture(autouse=True)
def offline(monkeypatch, tmp_path):
    monkeypatch.setenv("FCL_OFFLINE", "1")
    monkeypatch.setenv("FCL_CACHE_DIR", str(tmp_path / "fallback-cache"))


def test_cifar100_shapes_labels_pixels_and_ten_tasks_of_ten(tmp_path):
    written = write_cifar100(tmp_path, train_per_class=3, test_per_class=1)
    ds = load_dataset("cifar100", str(tmp_path))
    assert ds.train_x.shape == (300, 3, 32, 32) and ds.train_x.dtype == torch.uint8
    assert ds.test_x.shape == (100, 3, 32, 32) and ds.num_classes == 100
    assert ds.classes[0] == "fine00" and ds.classes[99] == "fine99"
    x, y = written["train"]
    assert np.array_equal(ds.train_x.numpy(), x) and np.array_equal(ds.train_y.numpy(), y)
    assert np.array_equal(ds.test_x.numpy(), written["test"][0])
    fd = build_federated_data(ds, DataConfig(name="cifar100", num_tasks=10, num_clients=2), 0)
    assert [t.classes for t in fd.tasks] == [tuple(range(10 * t, 10 * t + 10)) for t in range(10)]
    for t, task in enumerate(fd.tasks):
        assert len(task.train_y) == 30 and len(task.test_y) == 10
        assert set(task.train_y.tolist()) == set(range(10))
        # task-local label j of task t is global class 10 t + j: same images as written
        first = int(np.flatnonzero(y == 10 * t + 3)[0])
        j = int(torch.nonzero(task.train_y == 3)[0])
        assert torch.equal(task.train_x[j], torch.from_numpy(x[first]))


def test_cifar100_archive_folder_itself_is_accepted_and_cache_is_reused(tmp_path, monkeypatch):
    write_cifar100(tmp_path)
    folder = tmp_path / "cifar-100-python"
    first = load_dataset("cifar100", str(folder))
    caches = list(folder.glob("cifar100.*.fclcache.pt"))
    assert len(caches) == 1
    monkeypatch.setattr(cifar, "decode", lambda *a: pytest.fail("decoded again"))
    again = load_dataset("cifar100", str(tmp_path))        # torchvision-style root: same cache
    assert torch.equal(again.train_x, first.train_x) and again.classes == first.classes


@pytest.mark.parametrize("bytes_keys", [False, True])
def test_cifar10_five_batches_and_test_batch(tmp_path, bytes_keys):
    written = write_cifar10(tmp_path, per_batch_per_class=2, bytes_keys=bytes_keys)
    ds = load_dataset("cifar10", str(tmp_path))
    assert ds.train_x.shape == (100, 3, 32, 32) and ds.test_x.shape == (20, 3, 32, 32)
    assert np.array_equal(ds.train_x.numpy(), written["train"][0])
    assert torch.equal(torch.bincount(ds.train_y), torch.full((10,), 10))
    assert ds.classes == tuple(f"c{i}" for i in range(10))
    fd = build_federated_data(ds, DataConfig(name="cifar10", num_tasks=5, num_clients=2), 0)
    assert fd.classes_per_task() == [2] * 5


def test_missing_root_offline_names_path_and_source(tmp_path):
    with pytest.raises(DataError) as e:
        load_dataset("cifar100", str(tmp_path / "nowhere"))
    msg = str(e.value)
    assert "nowhere/cifar-100-python: not found" in msg and "cifar-100-python.tar.gz" in msg
    assert "FCL_OFFLINE" in msg and "\n" not in msg
    with pytest.raises(DataError, match="needs data.root=DIR"):
        load_dataset("cifar10", "")


def test_corrupt_or_incomplete_archive_names_the_file(tmp_path):
    write_cifar100(tmp_path)
    (tmp_path / "cifar-100-python" / "test").write_bytes(b"not a pickle")
    with pytest.raises(DataError, match=r"cifar-100-python/test: not a CIFAR python batch"):
        load_dataset("cifar100", str(tmp_path))
    with open(tmp_path / "cifar-100-python" / "test", "wb") as f:
        pickle.dump({"data": np.zeros((2, 100), np.uint8), "fine_labels": [0, 1]}, f)
    with pytest.raises(DataError, match=r"expected uint8 \(n, 3072\)"):
        load_dataset("cifar100", str(tmp_path))
    (tmp_path / "cifar-100-python" / "meta").unlink()
    with pytest.raises(DataError, match=r"cifar-100-python/meta: missing"):
        load_dataset("cifar100", str(tmp_path))
