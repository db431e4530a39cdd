"""Visual Decathlon from tiny devkit-style annotations + images: one task per domain."""
import json

import pytest
import torch

from fcl.config import ConfigError, DataConfig, RunConfig, with_overrides
from fcl.data import decathlon
from fcl.data.datasets import DataError, load_dataset
from fcl.data.federated import build_federated_data
from real_formats import write_decathlon

DOMAINS = {
    "aircraft": {"classes": 3, "train": 4, "val": 2, "size": (96, 72), "mode": "RGB",
                 "base": 10000000},
    "omniglot": {"classes": 5, "train": 2, "val": 1, "size": (80, 80), "mode": "L",
                 "base": 70000000},
    "svhn": {"classes": 2, "train": 3, "val": 2, "size": (72, 72), "mode": "RGB",
             "base": 80000000},
}


@pytest.fixture(autouse=True)
def offline(monkeypatch, tmp_path):
    monkeypatch.setenv("FCL_OFFLINE", "1")
    monkeypatch.setenv("FCL_CACHE_DIR", str(tmp_path / "fallback-cache"))


def cfg(domains: str, num_tasks: int, **kw) -> DataConfig:
    return DataConfig(name="decathlon", domains=domains, num_tasks=num_tasks, num_clients=2, **kw)


def test_one_task_per_domain_in_the_given_order_val_as_test(tmp_path):
    write_decathlon(tmp_path, DOMAINS)
    ds = load_dataset("decathlon", str(tmp_path), cfg("svhn,aircraft,omniglot", 3))
    assert ds.train_x.shape == (6 + 12 + 10, 3, 72, 72)
    assert ds.test_x.shape == (4 + 6 + 5, 3, 72, 72)
    assert ds.task_classes == ((0, 1), (2, 3, 4), (5, 6, 7, 8, 9))
    assert ds.classes[0] == "svhn/svhn-class0" and ds.classes[2] == "aircraft/aircraft-class0"
    # label = category id - base - 1 (ids sorted), whatever the file order in the JSON
    reds = ds.train_x[:, 0].float().mean(dim=(1, 2))
    assert torch.equal(((reds - 20) / 40).round().long() + torch.tensor(
        [0] * 6 + [2] * 12 + [5] * 10), ds.train_y)
    gray = ds.train_x[ds.train_y == 7]                               # omniglot: L -> RGB
    assert torch.equal(gray[:, 0], gray[:, 1]) and torch.equal(gray[:, 1], gray[:, 2])
    fd = build_federated_data(ds, cfg("svhn,aircraft,omniglot", 3), seed=0)
    assert fd.classes_per_task() == [2, 3, 5]
    assert [len(t.test_y) for t in fd.tasks] == [4, 6, 5]             # val split of each domain
    assert set(fd.tasks[2].train_y.tolist()) == set(range(5))


def test_wide_images_are_centre_cropped(tmp_path):
    spec = {"dtd": {**DOMAINS["svhn"], "size": (144, 72), "train": 1, "val": 1}}
    write_decathlon(tmp_path, spec)
    from PIL import Image
    path = tmp_path / "data" / "dtd" / "train" / "0000000.jpg"
    im = Image.new("RGB", (144, 72), (255, 0, 0))
    im.paste((0, 0, 255), (36, 0, 108, 72))                            # the centre 72 columns
    im.save(path, quality=95)
    ds = load_dataset("decathlon", str(tmp_path), cfg("dtd", 1))
    centre = ds.train_x[int(torch.nonzero(ds.train_y == 0)[0])].float()
    assert centre[2].mean() > 240 and centre[0].mean() < 15           # only blue remains


def test_seeded_order_permutes_domains_and_num_tasks_must_match(tmp_path):
    write_decathlon(tmp_path, DOMAINS)
    ds = load_dataset("decathlon", str(tmp_path), cfg("aircraft,omniglot,svhn", 3))
    orders = {build_federated_data(ds, cfg("", 3, class_order="seeded"), seed=s)
              .classes_per_task()[0] for s in range(8)}
    assert len(orders) > 1                                              # some seed reorders
    with pytest.raises(DataError, match=r"data.num_tasks=2: decathlon has one task per domain "
                                        r"and holds 3; allowed: 3"):
        build_federated_data(ds, cfg("", 2), seed=0)


def test_per_domain_cache_is_reused(tmp_path, monkeypatch):
    write_decathlon(tmp_path, DOMAINS)
    first = load_dataset("decathlon", str(tmp_path), cfg("aircraft,svhn", 2))
    assert len(list((tmp_path / "annotations").glob("decathlon-*.fclcache.pt"))) == 2
    monkeypatch.setattr(decathlon, "decode_images", lambda *a: pytest.fail("decoded again"))
    again = load_dataset("decathlon", str(tmp_path), cfg("svhn,aircraft", 2))
    assert again.task_classes == ((0, 1), (2, 3, 4))
    assert torch.equal(again.train_x[6:], first.train_x[:12])          # aircraft, now second


def test_missing_domain_bad_json_and_bad_domain_key(tmp_path):
    write_decathlon(tmp_path, {"svhn": DOMAINS["svhn"]})
    with pytest.raises(DataError, match=r"annotations/aircraft_train.json: missing; expected the "
                                        r"Visual Decathlon devkit layout"):
        load_dataset("decathlon", str(tmp_path), cfg("svhn,aircraft", 2))
    (tmp_path / "annotations" / "svhn_val.json").write_text(json.dumps({"images": []}))
    with pytest.raises(DataError, match=r"svhn_val.json: not a Decathlon annotation file"):
        load_dataset("decathlon", str(tmp_path), cfg("svhn", 1))
    with pytest.raises(ConfigError, match=r"data.domains=svhn,mnist: out of range"):
        with_overrides(RunConfig(), {"data.domains": "svhn,mnist"})
    assert decathlon.parse_domains("") == decathlon.DOMAINS and len(decathlon.DOMAINS) == 10
