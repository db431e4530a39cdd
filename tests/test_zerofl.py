"""ZeroFL (model.adapter=zerofl: model.zerofl_sparsity, model.zerofl_mask_ratio;
fcl/methods/zerofl/): SWAT's sparse forward and backward worked by hand, regrowth of the dense weights, the upload's density and
exact bytes, a smoke run that learns and repeats itself."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.grad import conv2d_input, conv2d_weight

from fcl.config import ConfigError, RunConfig, with_overrides
from fcl.federated.compression import Codec
from fcl.federated.pruning import top_k, top_k_count
from fcl.methods.zerofl import upload_density
from fcl.methods.zerofl.model import ZeroFLConv2d, ZeroFLLinear, sparsify_


def tiny_net(sparsity: float) -> nn.Module:
    """conv 1 -> 2 channels (2x2 kernel, no bias), flatten, linear 2 -> 1 (no bias)."""
    net = nn.Sequential(nn.Conv2d(1, 2, 2, bias=False), nn.Flatten(), nn.Linear(2, 1, bias=False))
    with torch.no_grad():
        net[0].weight.copy_(torch.tensor([1., -2., 3., -4., 5., -6., 7., -8.]).view(2, 1, 2, 2))
        net[2].weight.copy_(torch.tensor([[0.5, 3.]]))
    return sparsify_(net, sparsity)


def test_top_k_keeps_the_k_largest_magnitudes_and_ties():
    t = torch.tensor([0.125, -0.5, 0.375, -0.25, 0.4375])
    assert top_k_count(5, 0.4) == 2 and top_k_count(10, 0.3) == 3    # not 4 (0.3 x 10 > 3)
    assert top_k(t, 0.4).tolist() == [0., -0.5, 0., 0., 0.4375]
    tied = torch.tensor([1., -1., 1., 0.5])
    assert top_k(tied, 0.5).tolist() == [1., -1., 1., 0.]            # ties at the K-th kept
    assert top_k(t, 1.0) is t


def test_forward_equals_a_dense_forward_with_the_top_k_weights_by_hand():
    """s = 0.5: the conv keeps its 4 largest |w| (5, -6, 7, -8: filter 1 whole, filter 0
    gone), the linear its larger one (3). x = ones: conv -> (0, 5 - 6 + 7 - 8) = (0, -2),
    linear -> 3 x -2 = -6 (the dense net: (-2, -2) -> 0.5 x -2 + 3 x -2 = -7)."""
    x = torch.ones(1, 1, 2, 2)
    net = tiny_net(0.5)
    assert isinstance(net[0], ZeroFLConv2d) and isinstance(net[2], ZeroFLLinear)
    assert net(x).item() == -6.0
    conv = F.conv2d(x, torch.tensor([0., 0., 0., 0., 5., -6., 7., -8.]).view(2, 1, 2, 2))
    assert conv.flatten().tolist() == [0.0, -2.0]
    assert F.linear(conv.flatten(1), torch.tensor([[0., 3.]])).item() == -6.0
    dense = tiny_net(0.0)               # s = 0: every weight kept, the dense forward
    assert dense(x).item() == -7.0
    # the dense weights themselves are untouched by the forward
    assert net[0].weight.flatten().tolist() == [1., -2., 3., -4., 5., -6., 7., -8.]


def test_linear_weight_gradient_uses_only_the_top_k_input_activations_by_hand():
    """W = (4, 3, 2, 1), x = (1, -4, 2, 0.5), s = 0.5, loss = y: the forward uses (4, 3, 0, 0),
    y = 4 - 12 = -8; dL/dW = top_k(x) = (0, -4, 2, 0): W[0] is used but its input is dropped
    (0), the pruned W[2] gets its input's gradient (2); dL/dx = top_k(W) = (4, 3, 0, 0)."""
    lin = sparsify_(nn.Linear(4, 1, bias=True), 0.5)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[4., 3., 2., 1.]]))
        lin.bias.zero_()
    x = torch.tensor([[1., -4., 2., 0.5]], requires_grad=True)
    y = lin(x)
    assert y.item() == -8.0
    y.sum().backward()
    assert lin.weight.grad.tolist() == [[0., -4., 2., 0.]]
    assert x.grad.tolist() == [[4., 3., 0., 0.]]
    assert lin.bias.grad.tolist() == [1.0]


def test_a_pruned_weight_regrows_from_its_dense_update():
    """The same layer, loss = -y, one SGD step at lr 1: W = (4, 3, 2, 1) - (0, 4, -2, 0) =
    (4, -1, 4, 1). The dense W moved where the forward had a zero (W[2]: 2 -> 4), so the next
    forward's top 2 are W[0] and W[2]: W[2] is back, W[1] out."""
    lin = sparsify_(nn.Linear(4, 1, bias=False), 0.5)
    with torch.no_grad():
        lin.weight.copy_(torch.tensor([[4., 3., 2., 1.]]))
    opt = torch.optim.SGD(lin.parameters(), lr=1.0)
    (-lin(torch.tensor([[1., -4., 2., 0.5]])).sum()).backward()
    opt.step()
    assert lin.weight.tolist() == [[4., -1., 4., 1.]]
    assert lin(torch.tensor([[1., 1., 1., 1.]])).item() == 8.0     # 4 + 4: W[2] in, W[1] out


def test_conv_gradients_are_swats():
    """dL/dx through the top-K weights, dL/dW from the top-K input activations (the whole input
    tensor, batch included), dL/db the sum of the output gradient."""
    g = torch.Generator().manual_seed(0)
    conv = nn.Conv2d(3, 4, 3, padding=1, stride=2)
    conv = sparsify_(conv, 0.7)
    x = torch.randn(2, 3, 6, 6, generator=g, requires_grad=True)
    grad_out = torch.randn(2, 4, 3, 3, generator=g)
    conv(x).backward(grad_out)
    w, xs = top_k(conv.weight.detach(), 0.3), top_k(x.detach(), 0.3)
    assert int((xs != 0).sum()) == 65                     # ceil(0.3 x 216)
    geo = (conv.stride, conv.padding, conv.dilation, conv.groups)
    torch.testing.assert_close(x.grad, conv2d_input(x.shape, w, grad_out, *geo))
    torch.testing.assert_close(conv.weight.grad, conv2d_weight(xs, w.shape, grad_out, *geo))
    torch.testing.assert_close(conv.bias.grad, grad_out.sum(dim=(0, 2, 3)))
    assert int((conv.weight.grad != 0).sum()) > int((w != 0).sum())    # dense W updated


def test_upload_density_and_its_exact_bytes_by_hand():
    """s = 0.6, r = 0.1: each conv kernel at density 0.5. A 2x1x2x2 kernel keeps 4 of 8
    values: 4 B count + 16 B values + a 1 B bitmap (cheaper than 16 B of indices) = 21 B; a
    1x1x10x10 kernel at 0.02 would keep 2 of 100: indices (8 B) beat the bitmap (13 B). The
    norm weight (2 values), the head (2x2) and a norm statistic go dense: 8 + 16 + 8 B.
    Values only: 4 x 4 + 8 + 16 + 8 = 48 B. The downlink is dense: 4 B x 16 values."""
    assert upload_density(0.6, 0.1) == 0.5 and upload_density(0.0, 0.0) == 0.0
    assert upload_density(0.9, 0.2) == pytest.approx(0.3)
    params = {"conv.weight": torch.tensor([1., -2., 3., -4., 5., -6., 7., -8.]).view(2, 1, 2, 2),
              "norm.weight": torch.tensor([0.1, 0.2]),
              "head.weight": torch.tensor([[0.01, 0.02], [0.03, 0.04]]),
              "norm.running_var": torch.tensor([0.5, 0.5])}
    codec = Codec.from_config(32, "values", top_k=upload_density(0.6, 0.1))
    msg = codec.message(params, dense=["norm.running_var"])
    assert msg.tensors["conv.weight"].flatten().tolist() == [0, 0, 0, 0, 5, -6, 7, -8]
    assert msg.tensors["head.weight"].tolist() == params["head.weight"].tolist()  # dense FC
    assert msg.nbytes == 21 + 8 + 16 + 8
    assert msg.values_nbytes == 16 + 8 + 16 + 8
    assert codec.message(params, dense=["norm.running_var"], down=True).nbytes == 4 * 16
    big = {"conv.weight": torch.arange(1., 101.).view(1, 1, 10, 10)}
    sparse = Codec.from_config(32, "values", top_k=0.02).message(big)
    assert sparse.nbytes == 4 + 8 + 8 and sparse.tensors["conv.weight"].count_nonzero() == 2


@pytest.mark.parametrize("overrides,line", [
    ({"model.adapter": "full", "model.zerofl_sparsity": "0.9"},
     "model.adapter=full: with these settings it is zerofl, now a method of its own; "
     "allowed: zerofl"),
    ({"model.adapter": "zerofl"},
     "model.zerofl_sparsity=0.0: model.adapter=zerofl trains sparse (at s = 0 it is "
     "model.adapter=full); allowed: 0 < s < 1, the paper's 0.9"),
    ({"model.adapter": "zerofl", "model.zerofl_sparsity": "1"},
     "model.zerofl_sparsity=1.0: out of range; allowed: 0.9 (the paper's) or any 0 < s < 1 "
     "for zerofl"),
    ({"model.adapter": "zerofl", "model.zerofl_sparsity": "0.1",
      "model.zerofl_mask_ratio": "0.2"},
     "model.zerofl_mask_ratio=0.2: the upload density (1 - s) + r would pass 1 at "
     "model.zerofl_sparsity=0.1; allowed: 0 <= r <= 0.1"),
    ({"model.adapter": "zerofl", "model.zerofl_sparsity": "0.9", "compression.bits": "8"},
     "compression.bits=8: model.adapter=zerofl sends each conv kernel's top-K trained "
     "values in float32; allowed: 32"),
])
def test_bad_zerofl_settings_are_one_line_errors(overrides, line):
    with pytest.raises(ConfigError) as e:
        with_overrides(RunConfig(), overrides)
    assert str(e.value) == line


def test_a_zerofl_key_given_to_another_method_is_refused_by_name():
    from fcl.config import check_read
    given = {"model.zerofl_mask_ratio": "0.1"}
    with pytest.raises(ConfigError, match="read only by model.adapter=zerofl; this run has "
                                          "model.adapter=full"):
        check_read(with_overrides(RunConfig(), {"model.adapter": "full", **given}), given)


def test_zerofl_keeps_the_trial_ids_it_had_as_full():
    """ZeroFL's trials were stored as model.adapter=full with a sparsity: as zerofl they hash
    to the same ids, and stored rows read as zerofl (`as_today`)."""
    import hashlib
    import json

    import pandas as pd

    from fcl.results_io import DEFAULTS, added_keys, as_today, config_hash
    cfg = with_overrides(RunConfig(), {"model.adapter": "zerofl", "model.zerofl_sparsity": "0.9",
                                       "run.client_batching": "false",
                                       "run.channels_last": "false"})
    flat = {k: v for k, v in cfg.to_flat().items()
            if k not in added_keys() or v != DEFAULTS[k]}
    flat.update({"model.adapter": "full", "run.client_batching": False,
                 "run.channels_last": False})
    old = hashlib.blake2b(json.dumps(flat, sort_keys=True, default=str).encode(),
                          digest_size=6).hexdigest()
    assert config_hash(cfg) == old
    full = with_overrides(cfg, {"model.adapter": "full", "model.zerofl_sparsity": "0"})
    assert config_hash(full) != old
    stored = pd.DataFrame({"model.adapter": ["full", "full", "lora"],
                           "model.zerofl_sparsity": [0.9, 0.0, 0.0]})
    assert as_today(stored)["model.adapter"].tolist() == ["zerofl", "full", "lora"]


SMOKE = {"rounds": 6, "data.num_tasks": 1, "data.train_per_class": 40,
         "data.test_per_class": 20, "model.adapter": "zerofl", "model.width": 8,
         "client.local_epochs": 2, "eval.every": 6, "run.threads": 1,
         "model.zerofl_sparsity": 0.9, "model.zerofl_mask_ratio": 0.1}


def test_the_model_is_fulls_with_swat_convs_and_a_dense_head():
    from fcl.models.factory import build_model
    cfg = with_overrides(RunConfig(), {k: str(v) for k, v in SMOKE.items()})
    zero = build_model(cfg.model, (3, 32, 32), [10], 0).tasks[0]
    full = build_model(with_overrides(cfg, {"model.adapter": "full", "model.zerofl_sparsity": "0",
                                            "model.zerofl_mask_ratio": "0"}).model,
                       (3, 32, 32), [10], 0).tasks[0]
    convs = [m for m in zero.net.modules() if isinstance(m, nn.Conv2d)]
    assert convs and all(isinstance(m, ZeroFLConv2d) and m.sparsity == 0.9 for m in convs)
    assert type(zero.head) is nn.Linear
    a, b = zero.state_dict(), full.state_dict()
    assert list(a) == list(b) and all(torch.equal(a[n], b[n]) for n in a)   # same names, start


def test_zerofl_learns_above_chance_with_sparse_uploads():
    """resnet_tiny at width 8 on the bundled set (10 classes: chance 10%), s = 0.9, r = 0.1:
    it learns, each upload is smaller than the dense download, which is full FedAvg's."""
    from fcl.engine import run
    from fcl.presets import preset
    res = run(preset("smoke", SMOKE))
    assert res.summary["acc"] > 20.0                               # 2x chance
    first = res.records[0]
    assert first["bytes_up"] < 0.4 * first["bytes_down"]           # kernels at density 0.2
    # the download is full FedAvg's, dense: against full's 2 messages, about 1 + 0.26 of them
    assert 1.5 < res.summary["compression_ratio"] < 1.7


def test_same_seed_same_numbers():
    from fcl.engine import run
    from fcl.presets import preset
    cfg = preset("smoke", {**SMOKE, "rounds": 1, "eval.every": 1})

    def numbers(res):          # as text: NaN (rounds not evaluated) equals itself there
        return repr([[(k, v) for k, v in r.row().items() if k != "wall_s"] for r in res.records]
                    + [res.accuracy.tolist()])

    assert numbers(run(cfg)) == numbers(run(cfg))
