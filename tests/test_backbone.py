"""The frozen backbones: torchvision's initialisation and GroupNorm(2, C)."""
import math

import pytest
from torch import nn

from fcl.config import ConfigError, ModelConfig, RunConfig, with_overrides
from fcl.models.backbone import build_backbone
from fcl.models.factory import build_model


def test_resnet8_groupnorms_have_two_groups():
    net = build_backbone("resnet8", 3, "group", 16, seed=0)
    norms = [m for m in net.modules() if isinstance(m, nn.GroupNorm)]
    assert len(norms) == 1 + 3 * 2 + 2 and {m.num_groups for m in norms} == {2}


def test_norm_groups_is_a_key():
    net = build_backbone("resnet_tiny", 3, "group", 16, seed=0, norm_groups=4)
    assert {m.num_groups for m in net.modules() if isinstance(m, nn.GroupNorm)} == {4}
    with pytest.raises(ValueError, match="model.norm_groups=3"):
        build_backbone("resnet_tiny", 3, "group", 16, seed=0, norm_groups=3)
    with pytest.raises(ConfigError, match="model.norm_groups=0"):
        with_overrides(RunConfig(), {"model.norm_groups": "0"})


@pytest.mark.parametrize("name", ["resnet8", "resnet18"])
def test_convs_are_kaiming_normal_fan_out(name):
    net = build_backbone(name, 3, "group", 16, seed=0)
    conv = net.blocks[-1].conv2                       # the largest layer: 256 or 512 x 9 taps
    fan_out = conv.weight.shape[0] * conv.weight[0, 0].numel()
    std = float(conv.weight.std())
    assert abs(std / math.sqrt(2.0 / fan_out) - 1) < 0.1
    norms = [m for m in net.modules() if isinstance(m, nn.GroupNorm)]
    assert all(bool((m.weight == 1).all() and (m.bias == 0).all()) for m in norms)


def test_nettailor_proxies_share_the_backbone_init():
    model = build_model(ModelConfig(backbone="resnet8"), (3, 32, 32), [10], seed=0)
    proxy = model.tasks[0].proxies[-1][0]             # 1x1 conv into the 256-channel stage
    fan_out = proxy.conv.weight.shape[0]
    assert abs(float(proxy.conv.weight.detach().std()) / math.sqrt(2.0 / fan_out) - 1) < 0.1
    assert proxy.norm.num_groups == 2
