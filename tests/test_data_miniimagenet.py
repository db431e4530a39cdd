"""MiniImageNet from a tiny Ravi & Larochelle CSV + JPEG folder, through the real loader."""
import pytest
import torch

from fcl.config import DataConfig
from fcl.data import miniimagenet
from fcl.data.datasets import DataError, load_dataset
from fcl.data.federated import build_federated_data
from real_formats import write_miniimagenet

WNIDS = ["n03000134", "n01532829", "n02110063", "n04596742"]   # CSV order is not sorted order


@pytest.fixture(autouse=True)
def offline(monkeypatch, tmp_path):
    monkeypatch.setenv("FCL_OFFLINE", "1")
    monkeypatch.setenv("FCL_CACHE_DIR", str(tmp_path / "fallback-cache"))


def which(img: torch.Tensor) -> tuple[int, int]:
    """(label, index) of a solid-colour image written by `colour`."""
    r, g, _ = img.float().mean(dim=(1, 2)).round().tolist()
    return round((r - 20) / 40), round((g - 10) / 20)


def test_merged_classes_seeded_split_and_pixels(tmp_path):
    files = write_miniimagenet(tmp_path, WNIDS, per_class=12)
    ds = load_dataset("miniimagenet", str(tmp_path))
    assert ds.classes == tuple(sorted(WNIDS)) and ds.num_classes == 4
    assert ds.train_x.shape == (40, 3, 84, 84) and ds.test_x.shape == (8, 3, 84, 84)
    assert torch.equal(torch.bincount(ds.test_y), torch.full((4,), 2))      # 12 // 6 per class
    for x, y in ((ds.train_x, ds.train_y), (ds.test_x, ds.test_y)):
        for img, label in zip(x, y):
            assert which(img)[0] == int(label)                    # every image with its label
    # the documented rule decides which files are test images, independent of the run
    for wnid in WNIDS:
        label = sorted(WNIDS).index(wnid)
        names = [n for n, (w, _, _) in files.items() if w == wnid]
        _, test_names = miniimagenet.split_class(wnid, names)
        want = sorted(files[n][2] for n in test_names)
        got = sorted(which(img)[1] for img, y in zip(ds.test_x, ds.test_y) if int(y) == label)
        assert got == want
    fd = build_federated_data(ds, DataConfig(name="miniimagenet", num_tasks=2, num_clients=2), 0)
    assert fd.classes_per_task() == [2, 2] and len(fd.tasks[0].train_y) == 20


def test_split_rule_is_fixed_and_five_to_one():
    names = [f"n01532829{i:08d}.jpg" for i in range(1, 601)]
    train, test = miniimagenet.split_class("n01532829", names[::-1])     # input order is moot
    assert len(train) == 500 and len(test) == 100 and not set(train) & set(test)
    assert (train, test) == miniimagenet.split_class("n01532829", names)
    assert test != miniimagenet.split_class("n02110063", names)[1]       # per-class seed


def test_larger_images_are_resized_and_cache_is_reused(tmp_path, monkeypatch):
    write_miniimagenet(tmp_path, WNIDS[:2], per_class=6, size=(120, 100))
    ds = load_dataset("miniimagenet", str(tmp_path))
    assert ds.train_x.shape[1:] == (3, 84, 84)
    assert which(ds.train_x[0])[0] == int(ds.train_y[0])
    assert len(list(tmp_path.glob("miniimagenet.*.fclcache.pt"))) == 1
    monkeypatch.setattr(miniimagenet, "decode", lambda *a: pytest.fail("decoded again"))
    assert torch.equal(load_dataset("miniimagenet", str(tmp_path)).test_x, ds.test_x)


def test_missing_csv_image_or_corrupt_jpeg_name_the_path(tmp_path):
    with pytest.raises(DataError, match=r"train.csv: missing; expected the Ravi & Larochelle"):
        load_dataset("miniimagenet", str(tmp_path))
    files = write_miniimagenet(tmp_path, WNIDS[:2], per_class=6)
    victim = sorted(files)[0]
    (tmp_path / "images" / victim).write_bytes(b"\xff\xd8garbage")
    with pytest.raises(DataError, match=rf"{victim}: not a readable image"):
        load_dataset("miniimagenet", str(tmp_path))
    (tmp_path / "images" / victim).unlink()
    with pytest.raises(DataError, match=rf"{victim}: image missing"):
        load_dataset("miniimagenet", str(tmp_path))
    (tmp_path / "val.csv").write_text("name,wnid\nx.jpg,n0\n")
    with pytest.raises(DataError, match="expected filename,label"):
        load_dataset("miniimagenet", str(tmp_path))
