"""Full Fashion-MNIST from IDX files (tiny ones here; Debian's real ones when installed)."""
import os

import numpy as np
import pytest
import torch

from fcl.data import cache
from fcl.data.bundled import load_bundled
from fcl.data.datasets import DataError, load_dataset
from fcl.data.make_bundled import DEFAULT_SOURCE, first_per_class
from real_formats import write_idx


@pytest.fixture(autouse=True)
def offline(monkeypatch, tmp_path):
    monkeypatch.setenv("FCL_OFFLINE", "1")
    monkeypatch.setenv("FCL_CACHE_DIR", str(tmp_path / "fallback-cache"))


def tiny(folder, gz=True, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 256, (30, 28, 28), dtype=np.uint8)
    y = np.arange(30) % 10
    write_idx(folder, "train", x, y, gz)
    write_idx(folder, "t10k", x[:10], y[:10], gz)
    return x, y


@pytest.mark.parametrize("layout", ["flat", "torchvision"])
def test_idx_files_flat_or_torchvision_layout(tmp_path, layout):
    folder = tmp_path if layout == "flat" else tmp_path / "FashionMNIST" / "raw"
    x, y = tiny(folder, gz=layout == "flat")
    ds = load_dataset("fashion_mnist", str(tmp_path))
    assert ds.train_x.shape == (30, 1, 28, 28) and ds.test_x.shape == (10, 1, 28, 28)
    assert np.array_equal(ds.train_x[:, 0].numpy(), x) and ds.train_y.tolist() == y.tolist()
    assert ds.classes[0] == "T-shirt/top" and len(list(folder.glob("*.fclcache.pt"))) == 1


def test_truncated_or_missing_idx_names_the_file(tmp_path):
    with pytest.raises(DataError, match="no Fashion-MNIST IDX files"):
        load_dataset("fashion_mnist", str(tmp_path))
    tiny(tmp_path, gz=False)
    path = tmp_path / "t10k-images-idx3-ubyte"
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(DataError, match=r"t10k-images-idx3-ubyte: IDX payload has"):
        load_dataset("fashion_mnist", str(tmp_path))


@pytest.mark.skipif(not os.path.isdir(DEFAULT_SOURCE), reason="dataset-fashion-mnist not installed")
def test_debian_full_set_contains_the_bundled_subset(tmp_path, monkeypatch):
    # keep the cache out of /usr/share: only this test's folder is written
    monkeypatch.setattr(cache, "cache_paths", lambda name, folder, key: [tmp_path / f"{key}.pt"])
    ds = load_dataset("fashion_mnist", "")
    assert ds.train_x.shape == (60000, 1, 28, 28) and ds.test_x.shape == (10000, 1, 28, 28)
    assert torch.equal(torch.bincount(ds.train_y), torch.full((10,), 6000))
    bundled = load_bundled()
    x, y = first_per_class(ds.train_x.numpy(), ds.train_y.numpy(), 600)
    assert np.array_equal(x, bundled.train_x.numpy()) and np.array_equal(y, bundled.train_y)
