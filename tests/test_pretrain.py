"""`fcl pretrain` writes a backbone checkpoint that `model.weights` loads back bit-identical,
the same bytes from the same command, and, with --skip-per-class, from images no FCL run of
that size uses; data-set errors on the command line are one line and exit 2."""
import contextlib
import hashlib

import pytest
import torch

from fcl.cli import main
from fcl.config import DataConfig, RunConfig, iter_fields
from fcl.data.datasets import LOADERS, DataError, from_arrays, load_dataset
from fcl.data.federated import build_federated_data
from fcl.engine import run
from fcl.models.factory import build_model
from fcl.presets import preset

TINY = ["data.train_per_class=20", "data.test_per_class=5", "run.threads=1"]


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("FCL_OFFLINE", "1")


def fcl(capsys, *args):
    """`python -m fcl ARGS` in this process (same code path, no second torch import)."""
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_pretrain_checkpoint_loads_back_bit_identical_and_runs(tmp_path, capsys):
    out = tmp_path / "ckpt" / "backbone.pt"
    code, stdout, stderr = fcl(capsys, "pretrain", "--preset", "smoke", "--set", *TINY,
                               "data.augment=true", "eval.batch_size=auto", "--epochs", "1",
                               "--batch-size", "50", "--out", str(out))
    assert code == 0, stderr
    assert "test accuracy" in stdout and "epoch   1/1" in stderr
    blob = torch.load(out, weights_only=True)
    assert blob["architecture"] == {"backbone": "resnet_tiny", "stem": "cifar", "norm": "group",
                                    "width": 16, "norm_groups": 2, "in_channels": 1}
    assert blob["meta"]["epochs"] == 1 and blob["meta"]["train_images"] == 200
    cfg = preset("smoke", {"rounds": 5, "data.train_per_class": 10, "data.test_per_class": 4,
                           "model.weights": str(out)})
    model = build_model(cfg.model, (1, 28, 28), [2] * 5, cfg.seed)
    loaded = model.backbone.state_dict()
    assert loaded.keys() == blob["state_dict"].keys()
    assert all(torch.equal(loaded[k], blob["state_dict"][k]) for k in loaded)
    init = build_model(preset("smoke").model, (1, 28, 28), [2] * 5, cfg.seed).backbone
    assert not torch.equal(init.state_dict()["stem.0.weight"], loaded["stem.0.weight"])
    res = run(cfg, model=model)
    after = model.backbone.state_dict()
    assert all(torch.equal(after[k], blob["state_dict"][k]) for k in after)   # stays frozen
    assert res.summary["rounds"] == 5 and 0.0 <= res.summary["acc"] <= 100.0


def test_same_command_same_bytes_and_the_skip_is_recorded(tmp_path, capsys):
    shas = []
    for name in ("a.pt", "b.pt"):
        code, stdout, stderr = fcl(capsys, "pretrain", "--preset", "smoke", "--set", *TINY,
                                   "--epochs", "1", "--batch-size", "50", "--skip-per-class",
                                   "7", "--out", str(tmp_path / name))
        assert code == 0, stderr
        shas.append(hashlib.sha256((tmp_path / name).read_bytes()).hexdigest())
        assert f"sha256={shas[-1][:16]}" in stdout
    assert shas[0] == shas[1]
    meta = torch.load(tmp_path / "a.pt", weights_only=True)["meta"]
    assert meta["skip_per_class"] == 7 and "wall_s" not in meta


def id_images(labels_train, labels_test):
    """A data set whose every image is its own index (base-256 digits in 3 channels)."""
    import numpy as np

    def images(n, offset):
        ids = np.arange(offset, offset + n)
        x = np.stack([ids % 256, ids // 256 % 256, ids // 65536], axis=1).astype(np.uint8)
        return np.broadcast_to(x[:, :, None, None], (n, 3, 2, 2)).copy()
    return from_arrays("ids", images(len(labels_train), 0), labels_train,
                       images(len(labels_test), len(labels_train)), labels_test,
                       tuple(f"c{c}" for c in range(10)))


def image_ids(x):
    x = x[:, :, 0, 0].long()
    return set((x[:, 0] + 256 * x[:, 1] + 65536 * x[:, 2]).tolist())


def test_skip_per_class_leaves_out_exactly_the_images_of_the_fcl_tasks():
    """cifar10-local's sizes (300 / 100 per class) on shuffled labels: the pretraining images
    and the FCL tasks' images (all tasks, all client shards, both splits) are disjoint by index;
    the training images of the two together are the whole training set."""
    import numpy as np
    from fcl.pretrain import without_first_per_class
    rng = np.random.default_rng(0)
    ds = id_images(rng.permutation(np.repeat(np.arange(10), 340)),
                   rng.permutation(np.repeat(np.arange(10), 330)))
    data = build_federated_data(ds, preset("cifar10-local").data, seed=0)
    fcl_train = set().union(*(image_ids(t.train_x[torch.cat(t.shards)]) for t in data.tasks))
    fcl_test = set().union(*(image_ids(t.test_x) for t in data.tasks))
    assert (len(fcl_train), len(fcl_test)) == (3000, 1000)
    rest = without_first_per_class(ds, 300)
    assert (len(rest.train_y), len(rest.test_y)) == (400, 300)
    assert torch.equal(torch.bincount(rest.train_y), torch.full((10,), 40))
    pre_train, pre_test = image_ids(rest.train_x), image_ids(rest.test_x)
    assert not pre_train & (fcl_train | fcl_test) and not pre_test & (fcl_train | fcl_test)
    assert pre_train | fcl_train == image_ids(ds.train_x)
    assert pre_test | fcl_test < image_ids(ds.test_x)         # test images 100-299 unused
    assert without_first_per_class(ds, 0) is ds


def test_pretrain_rejects_bad_flags_and_wrong_architecture(tmp_path, capsys):
    code, _, err = fcl(capsys, "pretrain", "--preset", "smoke", "--epochs", "0",
                       "--out", str(tmp_path / "x.pt"))
    assert code == 2 and "error: --epochs=0: out of range" in err
    code, _, err = fcl(capsys, "pretrain", "--preset", "smoke", "--skip-per-class", "-1",
                       "--out", str(tmp_path / "x.pt"))
    assert code == 2 and err.count("\n") == 1 and "error: --skip-per-class=-1: out of range" in err
    torch.save({"conv1.weight": torch.zeros(1)}, tmp_path / "half.pt")
    code, _, err = fcl(capsys, "run", "--preset", "smoke", "--set",
                       f"model.weights={tmp_path / 'half.pt'}")
    assert code == 2 and err.count("\n") == 1
    assert "neither an fcl backbone checkpoint nor a torchvision resnet18" in err


@pytest.mark.parametrize("name", ["cifar100", "cifar10", "miniimagenet", "decathlon"])
def test_missing_real_data_set_is_one_line_exit_2(tmp_path, name, capsys):
    code, _, err = fcl(capsys, "run", "--preset", "smoke", "--set", f"data.name={name}",
                       f"data.root={tmp_path / 'absent'}", "data.domains=svhn",
                       "data.num_tasks=1", "rounds=5")
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith("error: ") and str(tmp_path / "absent") in err and "expected" in err


def test_every_data_name_has_a_loader_and_paper_presets_follow_table_2():
    with pytest.raises(DataError):
        load_dataset("no-such-set")                           # imports every loader module
    choices = {k: m for k, _, m, _ in iter_fields(RunConfig())}["data.name"]["choices"]
    assert set(choices) == set(LOADERS)
    for name, data in (("paper-cifar100", "cifar100"), ("paper-miniimagenet", "miniimagenet"),
                       ("paper-decathlon", "decathlon"), ("paper", "cifar100")):
        cfg = preset(name)
        assert (cfg.data.name, cfg.data.num_tasks, cfg.data.num_clients, cfg.rounds,
                cfg.rounds_per_phase, cfg.client.local_epochs, cfg.client.lr,
                cfg.server.optimizer, cfg.server.lr, cfg.model.backbone,
                cfg.model.pretrained) == (data, 10, 5, 300, 30, 2, 0.05, "fedadam", 0.5,
                                          "resnet18", "imagenet")
    assert DataConfig().augment is False


@pytest.mark.parametrize("where", ["read-only", "under-file", "folder"])
def test_unwritable_out_is_refused_before_the_training(where, tmp_path, capsys, monkeypatch):
    from tmpfs import tmpfs

    def refuse(*_, **__):
        raise AssertionError("the training started")
    monkeypatch.setattr("fcl.pretrain.pretrain", refuse)
    (tmp_path / "a-file").write_text("x")
    out = {"read-only": tmp_path / "mnt" / "b.pt", "under-file": tmp_path / "a-file" / "b.pt",
           "folder": tmp_path}[where]
    with tmpfs(tmp_path / "mnt") if where == "read-only" else contextlib.nullcontext():
        code, stdout, err = fcl(capsys, "pretrain", "--preset", "smoke", "--out", str(out))
    assert (code, stdout) == (2, "") and err.count("\n") == 1
    assert err.startswith(f"error: --out={out}: ")


def test_checkpoint_that_fails_after_the_training_is_one_line_after_the_result(tmp_path, capsys,
                                                                               monkeypatch):
    import errno

    def disk_full(*_, **__):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr("fcl.pretrain.save_checkpoint", disk_full)
    code, stdout, err = fcl(capsys, "pretrain", "--preset", "smoke", "--set", *TINY,
                            "--epochs", "1", "--out", str(tmp_path / "b.pt"))
    assert code == 1 and stdout.startswith("test accuracy ") and stdout.count("\n") == 1
    assert err.splitlines()[-1].startswith(f"error: --out={tmp_path / 'b.pt'}: writing failed "
                                           "after the work (No space left on device)")
    assert err.splitlines()[:-1] == ["epoch   1/1" + err.splitlines()[0][11:]]   # no traceback


def test_checkpoint_bytes_is_the_float32_state_of_the_backbone():
    from fcl.pretrain import checkpoint_bytes
    cfg = preset("smoke")
    net = build_model(cfg.model, (3, 32, 32), [2], cfg.seed).backbone
    assert checkpoint_bytes(cfg) == 4 * sum(t.numel() for t in net.state_dict().values()) + 65536
