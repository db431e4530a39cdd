"""Data sets: the bundled subset, the npz and IDX readers, tasks and shards."""
import gzip
import hashlib
import subprocess
import sys

import numpy as np
import pytest
import torch

from fcl.config import DataConfig
from fcl.data.bundled import BUNDLED_PATH, SHA256, load_bundled
from fcl.data.datasets import DataError, load_dataset
from fcl.data.federated import build_federated_data
from fcl.data.idx import read_idx_pair


def test_bundled_set_checksum_and_shape():
    assert hashlib.sha256(BUNDLED_PATH.read_bytes()).hexdigest() == SHA256
    ds = load_bundled()
    assert ds.train_x.dtype == torch.uint8 and ds.train_x.shape == (6000, 1, 28, 28)
    assert ds.test_x.shape == (1000, 1, 28, 28) and ds.num_classes == 10
    assert torch.equal(torch.bincount(ds.train_y), torch.full((10,), 600))


def test_tasks_have_disjoint_classes_local_labels_and_full_shards():
    ds = load_bundled()
    fd = build_federated_data(ds, DataConfig(num_tasks=5, num_clients=4), seed=0)
    seen = set()
    for t in fd.tasks:
        assert not seen & set(t.classes)
        seen |= set(t.classes)
        assert set(t.train_y.tolist()) == {0, 1} and set(t.test_y.tolist()) == {0, 1}
        assert torch.equal(torch.cat(t.shards).sort().values, torch.arange(len(t.train_y)))
    assert seen == set(range(10))
    assert len(fd.tasks[0].train_y) == 1200 and len(fd.tasks[0].test_y) == 200


def test_npz_loader_any_arrays(tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "d.npz"
    np.savez(path, train_x=rng.integers(0, 255, (40, 8, 8, 3), dtype=np.uint8),
             train_y=np.arange(40) % 4, test_x=rng.integers(0, 255, (12, 8, 8, 3), dtype=np.uint8),
             test_y=np.arange(12) % 4)
    ds = load_dataset("npz", str(path))
    assert ds.train_x.shape == (40, 3, 8, 8) and ds.num_classes == 4     # NHWC -> NCHW
    fd = build_federated_data(ds, DataConfig(num_tasks=2, num_clients=2), seed=0)
    assert fd.classes_per_task() == [2, 2]


def test_npz_loader_missing_array_names_it(tmp_path):
    path = tmp_path / "bad.npz"
    np.savez(path, train_x=np.zeros((2, 4, 4), np.uint8))
    with pytest.raises(DataError, match="missing arrays"):
        load_dataset("npz", str(path))


def write_npz(path, train_y, classes=None):
    rng = np.random.default_rng(0)
    arrays = {"train_x": rng.integers(0, 255, (len(train_y), 8, 8), dtype=np.uint8),
              "train_y": train_y, "test_x": rng.integers(0, 255, (10, 8, 8), dtype=np.uint8),
              "test_y": np.arange(10)}
    np.savez(path, **arrays, **({} if classes is None else {"classes": np.array(classes)}))
    return path


def labels_with(i, value, dtype=np.int64):
    y = (np.arange(40) % 10).astype(dtype)
    y[i] = value
    return y


TEN = [f"c{i}" for i in range(10)]


@pytest.mark.parametrize("train_y, classes, fragment", [
    (labels_with(5, -3), None, r"train_y has label -3 \(at index 5, 1 bad in all\); "
                               r"expected integers >= 0"),
    (labels_with(7, 2.7, float), None, r"train_y has label 2.7 \(at index 7.*integers >= 0"),
    (labels_with(0, np.nan, float), None, r"train_y has label nan"),
    (labels_with(3, 10), TEN, r"train_y has label 10 .*\[0, 10\)"),
    (labels_with(3, -1, np.int8), TEN, r"train_y has label -1 .*\[0, 10\)"),
    (np.array(["a"] * 40), None, r"train_y has dtype <U1; expected integers >= 0"),
    (np.ones(40, bool), None, r"train_y has dtype bool"),
])
def test_npz_labels_outside_0_to_C_are_refused_naming_file_value_and_range(tmp_path, train_y,
                                                                           classes, fragment):
    """Issue 21 item 6: -3 used to become class 7 (negative indexing), 2.7 class 2; exit 0."""
    path = write_npz(tmp_path / "bad.npz", train_y, classes)
    with pytest.raises(DataError, match=f"^{path}: {fragment}"):
        load_dataset("npz", str(path))
    assert not list(tmp_path.glob("*.fclcache.pt"))                  # nothing cached


def test_integral_labels_of_any_numeric_dtype_are_accepted(tmp_path):
    for dtype in (np.uint8, np.int16, np.float32):
        path = write_npz(tmp_path / f"ok-{np.dtype(dtype).name}.npz",
                         (np.arange(40) % 10).astype(dtype))
        ds = load_dataset("npz", str(path))
        assert ds.train_y.dtype == torch.int64 and ds.train_y.tolist() == list(range(10)) * 4


def test_a_bad_label_on_the_command_line_is_one_error_line_and_exit_2(tmp_path):
    path = write_npz(tmp_path / "neg.npz", labels_with(5, -3))
    p = subprocess.run([sys.executable, "-m", "fcl", "run", "--preset", "smoke", "--set",
                        "data.name=npz", f"data.root={path}", "rounds=5", "data.num_clients=2"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and p.stderr == (f"error: {path}: train_y has label -3 (at index 5,"
                                              " 1 bad in all); expected integers >= 0\n")


def test_idx_reader_real_format(tmp_path):
    images = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    header = bytes([0, 0, 8, 3]) + b"".join(d.to_bytes(4, "big") for d in images.shape)
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(header + images.tobytes()))
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(bytes([0, 0, 8, 1]) + (2).to_bytes(4, "big")
                                                       + bytes([7, 3]))
    x, y = read_idx_pair(str(tmp_path), "train")
    assert np.array_equal(x, images) and y.tolist() == [7, 3]
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(bytes([0, 0, 8, 1, 0, 0, 0, 5, 1]))
    with pytest.raises(ValueError, match="payload"):
        read_idx_pair(str(tmp_path), "train")


def test_dirichlet_shards_are_deterministic_and_skewed():
    ds = load_bundled()
    cfg = DataConfig(num_tasks=2, num_clients=5, partition="dirichlet", alpha=0.1)
    a = build_federated_data(ds, cfg, seed=3)
    b = build_federated_data(ds, cfg, seed=3)
    assert all(torch.equal(x, y) for x, y in zip(a.tasks[0].shards, b.tasks[0].shards))
    sizes = [len(s) for s in a.tasks[0].shards]
    assert max(sizes) > 2 * min(sizes)
