"""Backbone weights: torchvision's ResNet-18 key layout mapped onto ours (tested with a randomly
initialised torchvision model, no download), the stem variants, checkpoint errors."""
import pytest
import torch
import torchvision

from fcl.config import ConfigError, ModelConfig
from fcl.models.backbone import build_backbone
from fcl.models.factory import build_model
from fcl.models.pretrained import load_pretrained_, torchvision_to_fcl


R18 = dict(backbone="resnet18", stem="imagenet", norm="batch")


def random_torchvision_resnet18(seed=0):
    torch.manual_seed(seed)
    net = torchvision.models.resnet18(weights=None)
    with torch.no_grad():                       # non-trivial BatchNorm statistics too
        for m in net.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
    return net.eval()


def torchvision_features(net, x):
    x = net.maxpool(net.relu(net.bn1(net.conv1(x))))
    for layer in (net.layer1, net.layer2, net.layer3, net.layer4):
        x = layer(x)
    return torch.flatten(net.avgpool(x), 1)


def test_mapping_covers_every_key_and_gives_torchvisions_features(tmp_path):
    tv = random_torchvision_resnet18()
    tv_state = tv.state_dict()
    mapped = torchvision_to_fcl(tv_state)
    ours = build_backbone("resnet18", 3, "batch", 16, seed=1, stem="imagenet")
    assert set(mapped) == set(ours.state_dict())                # fc.* dropped, nothing else
    assert mapped["blocks.2.shortcut.0.weight"] is tv_state["layer2.0.downsample.0.weight"]
    assert mapped["blocks.7.bn2.running_var"] is tv_state["layer4.1.bn2.running_var"]
    assert mapped["stem.1.num_batches_tracked"] is tv_state["bn1.num_batches_tracked"]
    path = tmp_path / "resnet18-tv.pth"
    torch.save(tv.state_dict(), path)
    assert load_pretrained_(ours, ModelConfig(**R18, weights=str(path)), 3)
    x = torch.randn(2, 3, 64, 64)
    with torch.no_grad():
        assert torch.allclose(ours.features(x), torchvision_features(tv, x), atol=1e-5)
    assert all(not p.requires_grad for p in ours.parameters())


def test_rgb_weights_on_gray_images_sum_the_stem_filters(tmp_path):
    tv = random_torchvision_resnet18()
    path = tmp_path / "tv.pth"
    torch.save(tv.state_dict(), path)
    gray = build_backbone("resnet18", 1, "batch", 16, 0, stem="imagenet")
    load_pretrained_(gray, ModelConfig(**R18, weights=str(path)), 1)
    x = torch.randn(2, 1, 48, 48)
    with torch.no_grad():
        assert torch.allclose(gray.features(x), torchvision_features(tv, x.repeat(1, 3, 1, 1)),
                              atol=1e-4)


def test_stems_and_input_size_shapes():
    x = torch.zeros(2, 3, 32, 32)
    cifar = build_backbone("resnet18", 3, "group", 16, 0)
    imnet = build_backbone("resnet18", 3, "group", 16, 0, stem="imagenet")
    big = build_backbone("resnet18", 3, "group", 16, 0, stem="imagenet", input_size=72)
    assert cifar.stem(x).shape[-1] == 32 and imnet.stem(x).shape[-1] == 8
    assert big.stem(x).shape[-1] == 18 and big.reduction[0] == 4
    model = build_model(ModelConfig(backbone="resnet18", stem="imagenet", input_size=72),
                        (3, 32, 32), [2, 3], seed=0)
    assert model(x, 1).shape == (2, 3)                          # NetTailor proxies line up


def test_bad_weights_give_one_line_config_errors(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match=r"model.weights=.*nope.pt: no such file"):
        build_model(ModelConfig(weights=str(tmp_path / "nope.pt")), (1, 28, 28), [2], 0)
    (tmp_path / "junk.pt").write_bytes(b"junk")
    with pytest.raises(ConfigError, match="not a readable torch file"):
        build_model(ModelConfig(weights=str(tmp_path / "junk.pt")), (1, 28, 28), [2], 0)
    torch.save(random_torchvision_resnet18().state_dict(), tmp_path / "tv.pth")
    with pytest.raises(ConfigError, match=r"the checkpoint has stem=imagenet but the run has "
                                          r"model.stem=cifar"):
        build_model(ModelConfig(backbone="resnet18", norm="batch",
                                weights=str(tmp_path / "tv.pth")), (3, 32, 32), [2], 0)
    monkeypatch.setenv("FCL_OFFLINE", "1")
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch-home"))
    with pytest.raises(ConfigError, match=r"model.pretrained=imagenet: torchvision's ImageNet "
                                          r"ResNet-18 weights are not available"):
        build_model(ModelConfig(**R18, pretrained="imagenet"), (3, 32, 32), [2], 0)
    with pytest.raises(ConfigError, match=r"model.norm=group: model.pretrained=imagenet needs"):
        ModelConfig(backbone="resnet18", stem="imagenet", pretrained="imagenet")


def test_shipped_backbones_match_their_checksums_and_the_pretrained_preset_loads_one():
    """fcl/weights/: each file is the one its `fcl pretrain` command wrote (README there);
    cifar10-local-pretrained is cifar10-local with one of them as its frozen backbone."""
    import hashlib

    from fcl.presets import CIFAR10_BACKBONE, preset
    from fcl.shipped_weights import FOLDER, SHA256, weights_file
    for name, sha in SHA256.items():
        assert hashlib.sha256((FOLDER / name).read_bytes()).hexdigest() == sha, name
    cfg = preset("cifar10-local-pretrained")
    flat, plain = cfg.to_flat(), preset("cifar10-local").to_flat()
    assert {k for k in flat if flat[k] != plain[k]} == {"model.weights"}
    assert cfg.model.weights == CIFAR10_BACKBONE == "fcl:resnet_tiny-cifar10_rest.pt"
    blob = torch.load(weights_file(cfg.model.weights), weights_only=True)
    assert blob["architecture"]["backbone"] == cfg.model.backbone == "resnet_tiny"
    backbone = build_model(cfg.model, (3, 32, 32), [2] * 5, cfg.seed).backbone
    state = backbone.state_dict()
    stem = blob["state_dict"]["stem.0.weight"]
    want = stem if stem.shape[1] == 3 else stem.repeat(1, 3, 1, 1) / 3     # gray -> RGB
    assert torch.equal(state["stem.0.weight"], want)
    assert all(torch.equal(state[k], v) for k, v in blob["state_dict"].items()
               if k != "stem.0.weight")
    assert not any(p.requires_grad for p in backbone.parameters())


def test_a_shipped_backbone_is_named_not_located():
    """`fcl:NAME` is the package's fcl/weights/NAME wherever fcl is installed, so configs and
    trial ids read the same on every machine; an unknown NAME is one error naming the shipped
    ones; any other value is a path, as given."""
    from fcl.config import ConfigError
    from fcl.shipped_weights import FOLDER, weights_file
    assert weights_file("fcl:resnet_tiny-fashion_mnist.pt") == \
        str(FOLDER / "resnet_tiny-fashion_mnist.pt")
    assert weights_file("my/backbone.pt") == "my/backbone.pt"
    with pytest.raises(ConfigError) as e:
        weights_file("fcl:resnet99.pt")
    assert "fcl:resnet99.pt" in str(e.value) and "fcl:resnet_tiny-cifar10_rest.pt" in str(e.value)
