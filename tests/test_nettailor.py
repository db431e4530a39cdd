"""NetTailor's node (ReLU after the gated sum), its proxies' overlapping max-pools, and the
pooled copies shared between proxies."""
import math

import pytest
import torch

from fcl.config import ModelConfig
from fcl.models.factory import build_model
from fcl.methods.nettailor.model import NodePyramid, proxy_pool


def test_a_stride_4_proxy_sees_a_5x5_window():
    seen = set()
    for u in range(16):
        for v in range(16):
            x = torch.zeros(1, 1, 16, 16)
            x[0, 0, u, v] = 1.0                       # one bright pixel
            if proxy_pool(x, 4)[0, 0, 1, 1] == 1.0:
                seen.add((u, v))
    assert seen == {(u, v) for u in range(2, 7) for v in range(2, 7)}   # rows/cols 4i-2..4i+2


@pytest.mark.parametrize("size", [7, 13, 28, 32])
@pytest.mark.parametrize("stride", [2, 4, 8])
def test_pooled_size_matches_stride_2_convs(size, stride):
    conv_size = size
    for _ in range(int(math.log2(stride))):
        conv_size = (conv_size + 2 - 3) // 2 + 1      # 3x3 conv, stride 2, padding 1
    assert proxy_pool(torch.randn(1, 1, size, size), stride).shape[-1] == conv_size


def test_pooled_copies_are_made_once_per_node_and_stride():
    x = torch.randn(1, 2, 16, 16)
    pyramid = NodePyramid([x])
    p4 = pyramid.pooled(0, 4)
    assert torch.equal(p4, proxy_pool(x, 4)) and pyramid.pooled(0, 4) is p4
    assert pyramid.pooled(0, 1) is x and set(pyramid._pooled) == {(0, 4)}


def _model(node_relu: str):
    cfg = ModelConfig(backbone="resnet_tiny", width=8, node_relu=node_relu)
    model = build_model(cfg, (1, 28, 28), [3], seed=0).eval()
    with torch.no_grad():
        for block_proxies in model.tasks[0].proxies:
            for proxy in block_proxies:           # every proxy outputs -10 everywhere
                proxy.norm.weight.zero_()
                proxy.norm.bias.fill_(-10.0)
        for gate in model.tasks[0].gates:         # and carries most of the gate mass
            gate.copy_(torch.tensor([-3.0] + [3.0] * (len(gate) - 1)))
    return model


def test_node_relu_after_the_gated_sum_keeps_nodes_non_negative():
    x = torch.randn(4, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        after = _model("after_sum").nodes(x, 0)
        literal = _model("in_block").nodes(x, 0)
    assert all(bool((n >= 0).all()) for n in after[1:])
    assert all(bool((n < 0).any()) for n in literal[1:])     # Eq. 4 read literally


@pytest.mark.parametrize("node_relu", ["after_sum", "in_block"])
def test_with_all_gate_mass_on_the_frozen_path_nodes_are_the_backbone(node_relu):
    model = build_model(ModelConfig(backbone="resnet_tiny", width=8, node_relu=node_relu),
                        (1, 28, 28), [3], seed=0).eval()
    with torch.no_grad():
        for gate in model.tasks[0].gates:
            gate.copy_(torch.tensor([1e4] + [-1e4] * (len(gate) - 1)))
        x = torch.randn(2, 1, 28, 28)
        nodes, plain = model.nodes(x, 0), model.backbone.stem(x)
        for block, node in zip(model.backbone.blocks, nodes[1:]):
            plain = block(plain)
            torch.testing.assert_close(node, plain)
