"""FedPara (`model.adapter=fedpara`): the rank rule and a conv's parameter count worked by hand,
the composed weights as Hadamard products of low-rank products, FedAvg of the factors, message
bytes of 4 B per factor value, and a smoke run that learns and repeats itself."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from fcl.config import ConfigError, RunConfig, with_overrides
from fcl.methods.fedpara.model import FedParaConv2d, FedParaLinear, conv_rank, linear_rank


def fedpara_values(out_ch: int, in_ch: int, kernel: int, rank: int) -> int:
    """2 (R^2 k^2 + R (O + I)): two cores R x R x k x k, two X (R x O), two Y (R x I)."""
    return 2 * (rank ** 2 * kernel ** 2 + rank * (out_ch + in_ch))


def test_rank_and_parameter_count_of_a_conv_by_hand():
    # ResNet-8's 64 -> 128 3x3 conv (73,728 dense values).
    # r_min = min(ceil(sqrt 128), ceil(sqrt 64)) = min(12, 8) = 8
    # r_max: 9 R^2 + 192 R - 36,864 = 0 -> R = (-192 + sqrt(36,864 + 1,327,104)) / 18
    #        = (-192 + 1,167.89) / 18 = 54.22 -> 54 (R = 55 would be 75,570 > 73,728 values)
    # gamma 0.1: ceil(0.9 x 8 + 0.1 x 54) = ceil(12.6) = 13 -> 2 (169 x 9 + 13 x 192) = 8,034
    # gamma 0.5: ceil(4 + 27) = 31                     -> 2 (961 x 9 + 31 x 192) = 29,202
    # gamma 1:   54                                    -> 2 (2,916 x 9 + 54 x 192) = 73,224
    conv = nn.Conv2d(64, 128, 3, padding=1, bias=False)
    for gamma, rank, values in ((0.1, 13, 8_034), (0.5, 31, 29_202), (1.0, 54, 73_224)):
        assert conv_rank(128, 64, 3, gamma) == rank
        layer = FedParaConv2d(conv, gamma)
        assert layer.rank == rank and fedpara_values(128, 64, 3, rank) == values
        assert sum(p.numel() for p in layer.parameters()) == values
        assert layer.weight().shape == conv.weight.shape
    # a small 1x1 conv 8 -> 8: r_max = floor((-16 + sqrt(256 + 128)) / 2) = 1 < r_min = 3, so
    # the rule gives R between them (3 at gamma 0.1: 114 values > 64 dense), as the baseline's
    assert conv_rank(8, 8, 1, 0.1) == 3 and conv_rank(8, 8, 1, 0.5) == 2
    # a 2-class head on 128 features: r_max = floor(256 / 260) = 0; R stays at least 1
    assert linear_rank(2, 128, 0.1) == 2 and linear_rank(2, 128, 1.0) == 1


def set_(param: torch.Tensor, values) -> None:
    with torch.no_grad():
        param.copy_(torch.tensor(values, dtype=torch.float32).view_as(param))


def test_conv_weight_is_the_hadamard_product_of_two_tucker_products_by_hand():
    # 1x1 conv 2 -> 2: r_min 2, r_max 0, R = ceil(1.8) = 2. With W[o, i] = (X^T T Y)[o, i]:
    # W1 = I [[1, 0], [0, 2]] [[1, 1], [0, 1]] = [[1, 1], [0, 2]]
    # W2 = [[1, 0], [2, 1]] [[0, 1], [1, 0]] [[3, 0], [1, -1]] = [[1, -1], [5, -2]]
    # W1 * W2 = [[1, -1], [0, -4]]; on x = (1, 2): (1 - 2, 0 - 8) = (-1, -8)
    layer = FedParaConv2d(nn.Conv2d(2, 2, 1, bias=False), 0.1)
    assert layer.rank == 2
    set_(layer.w1.t, [[1, 0], [0, 2]]), set_(layer.w1.x, [[1, 0], [0, 1]])
    set_(layer.w1.y, [[1, 1], [0, 1]])
    set_(layer.w2.t, [[0, 1], [1, 0]]), set_(layer.w2.x, [[1, 2], [0, 1]])
    set_(layer.w2.y, [[3, 0], [1, -1]])
    assert torch.equal(layer.w1()[:, :, 0, 0], torch.tensor([[1.0, 1], [0, 2]]))
    assert torch.equal(layer.w2()[:, :, 0, 0], torch.tensor([[1.0, -1], [5, -2]]))
    assert torch.equal(layer.weight()[:, :, 0, 0], torch.tensor([[1.0, -1], [0, -4]]))
    out = layer(torch.tensor([1.0, 2.0]).view(1, 2, 1, 1))
    assert torch.equal(out.flatten(), torch.tensor([-1.0, -8.0]))


def test_linear_weight_is_the_hadamard_product_of_two_low_rank_products_by_hand():
    # Linear 2 -> 2, R = 2: X1 Y1^T = I [[1, 3], [2, 4]] = [[1, 3], [2, 4]]
    # X2 Y2^T = [[1, 1], [0, 1]] [[1, 0], [0, -1]] = [[1, -1], [0, -1]]
    # W = [[1, -3], [0, -4]]; on x = (1, 1), bias 0: (-2, -4)
    layer = FedParaLinear(2, 2, 0.1)
    assert layer.rank == 2
    set_(layer.x1, [[1, 0], [0, 1]]), set_(layer.y1, [[1, 2], [3, 4]])
    set_(layer.x2, [[1, 1], [0, 1]]), set_(layer.y2, [[1, 0], [0, -1]])
    assert torch.equal(layer.weight(), torch.tensor([[1.0, -3], [0, -4]]))
    assert torch.equal(layer(torch.ones(1, 2)), torch.tensor([[-2.0, -4.0]]))


def test_a_strided_conv_runs_its_composed_kernel_with_the_replaced_conv_geometry():
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 5, 3, stride=2, padding=1, bias=False)
    layer = FedParaConv2d(conv, 0.5)

    def tucker(k):             # W[:, :, u, v] = X^T T[:, :, u, v] Y, one tap at a time
        return torch.stack([torch.stack([k.x.T @ k.t[:, :, u, v] @ k.y for v in range(3)], -1)
                            for u in range(3)], -2)

    want = tucker(layer.w1) * tucker(layer.w2)
    torch.testing.assert_close(layer.weight(), want)
    x = torch.randn(2, 3, 9, 9)
    torch.testing.assert_close(layer(x), F.conv2d(x, want, stride=2, padding=1))
    assert layer(x).shape == conv(x).shape == (2, 5, 5, 5)


# ResNet-8 (CIFAR-10) at gamma 0.1: every conv (out, in, k, R). Three ranks by hand:
# stem 3 -> 64: r_min = min(8, 2) = 2, r_max = floor((-67 + sqrt(67^2 + 31,104)) / 18) = 6,
#   R = ceil(1.8 + 0.6) = 3; shortcut 64 -> 128 1x1: r_min 8, r_max = floor((-192 +
#   sqrt(36,864 + 16,384)) / 2) = 19, R = ceil(7.2 + 1.9) = 10; 256 -> 256: r_min 16, r_max =
#   floor((-512 + sqrt(262,144 + 10,616,832)) / 18) = 154, R = ceil(14.4 + 15.4) = 30.
RESNET8_CONVS = [(64, 3, 3, 3), (64, 64, 3, 11), (64, 64, 3, 11), (128, 64, 3, 13),
                 (128, 128, 3, 19), (128, 64, 1, 10), (256, 128, 3, 22), (256, 256, 3, 30),
                 (256, 128, 1, 15)]


def test_resnet8_message_is_4_bytes_per_factor_norm_and_head_value():
    """Factors 564 + 2 x 4,994 + 8,034 + 16,226 + 4,040 + 25,608 + 46,920 + 11,970 = 123,350;
    GroupNorm weights and biases 2 x (3 x 64 + 3 x 128 + 3 x 256) = 2,688; dense FC 2,570:
    128,608 values = 514,432 B a message at float32, both links (full FedAvg: 4,910,376 B)."""
    from fcl.communication import format_report, params_report
    from fcl.presets import preset
    factors = sum(fedpara_values(*layer) for layer in RESNET8_CONVS)
    assert factors == 123_350
    cfg = preset("flocora", {"model.adapter": "fedpara"})
    rep = params_report(cfg)
    assert rep["layer_ranks"] == [r for *_, r in RESNET8_CONVS]
    assert rep["trainable_by_part"] == {"net": factors + 2_688, "head": 2_570}
    assert rep["trainable_params"] == 128_608 and rep["buffer_values"] == 0
    m32 = rep["messages"][0]
    assert m32["bits"] == 32 and m32["bytes_down"] == m32["bytes_up"] == 4 * 128_608 == 514_432
    assert m32["ratio_vs_full"] == pytest.approx(4_910_376 / 514_432)
    assert "ranks       R per FedPara layer, in module order: 3, 11, 11, 13" in \
        format_report(rep, cfg)
    # the FC parameterised too: 10 x 256 at gamma 0.1, r_min 4, r_max floor(2,560 / 532) = 4,
    # R = 4: 2 x 4 x (10 + 256) = 2,128 factor values + a bias of 10 instead of 2,570
    on_head = params_report(preset("flocora", {"model.adapter": "fedpara",
                                               "model.fedpara_on_head": True}))
    assert on_head["trainable_by_part"]["head"] == 2_138
    assert on_head["layer_ranks"][-1] == 4


@pytest.mark.parametrize("overrides,line", [
    ({"model.fedpara_gamma": "0"}, "model.fedpara_gamma=0.0: out of range; "
                                   "allowed: 0 < gamma <= 1"),
    ({"model.fedpara_gamma": "1.5"}, "model.fedpara_gamma=1.5: out of range; "
                                     "allowed: 0 < gamma <= 1"),
    ({"model.adapter": "fedpara", "model.weights": "backbone.pt"},
     "model.weights=backbone.pt: model.adapter=fedpara starts every conv from random factors, "
     "so a loaded backbone's conv weights would go unused; allowed: empty"),
])
def test_bad_fedpara_settings_are_one_line_errors(overrides, line):
    with pytest.raises(ConfigError) as e:
        with_overrides(RunConfig(), overrides)
    assert str(e.value) == line


def test_fedpara_keys_at_their_defaults_keep_the_trial_id():
    from fcl.results_io import config_hash
    cfg = RunConfig()
    assert config_hash(with_overrides(cfg, {"model.fedpara_gamma": "0.1",
                                            "model.fedpara_on_head": "false"})) == \
        config_hash(cfg)
    assert config_hash(with_overrides(cfg, {"model.fedpara_gamma": "0.4"})) != config_hash(cfg)


FAST = {"rounds": 10, "data.num_tasks": 1, "data.train_per_class": 40,
        "data.test_per_class": 20, "model.adapter": "fedpara", "model.width": 8,
        "client.local_epochs": 2, "eval.every": 5, "run.threads": 1}


def test_the_server_averages_the_factors(monkeypatch):
    """A hand-built round of FedAvg (fedsgd, lr 1): the new state is the sample-weighted mean of
    the uploaded cores and factors, not of the composed kernels, and they are what is sent."""
    import fcl.engine as engine
    from fcl.federated.client import ClientUpdate
    from fcl.presets import preset
    cfg = preset("smoke", {**FAST, "rounds": 1, "data.num_clients": 2})
    sent, weights = {}, {0: 30, 1: 10}

    def fake_train(trainer, t, c, start, names, *args, **kwargs):
        g = torch.Generator().manual_seed(c)
        sent[c] = {n: start[n] + 0.1 * torch.randn(start[n].shape, generator=g)
                   for n in names.trainable}
        return ClientUpdate(c, t, sent[c], weights[c], torch.zeros(()), torch.zeros(()))

    monkeypatch.setattr(engine, "local_train", fake_train)
    states = []
    res = engine.run(cfg, on_round=lambda rec, st: states.append(st))
    server = states[-1].tasks[0].params
    assert "net.blocks.0.conv1.w1.t" in server and "net.blocks.0.conv1.weight" not in server
    for n, w in server.items():
        torch.testing.assert_close(w, (30 * sent[0][n] + 10 * sent[1][n]) / 40)
    values = sum(t.numel() for t in server.values())
    assert res.records[0]["bytes_up"] == res.records[0]["bytes_down"] == 2 * 4 * values


def test_fedpara_learns_above_chance_and_repeats_itself():
    """resnet_tiny at width 8 on the bundled set (one task of 10 classes: chance 10%), FedAvg of
    the factors at gamma 0.1: it learns, each message is 4 B per trained value (6,598 values,
    under a third of full FedAvg's), and the same seed gives the same numbers."""
    from fcl.engine import run
    from fcl.presets import preset
    a, b = run(preset("smoke", FAST)), run(preset("smoke", FAST))
    assert a.summary["acc"] > 20.0                           # 2x chance
    # 10 rounds x 3 clients x (one message down + one up) of 6,598 float32 values
    assert a.summary["tcc_bytes"] == 10 * 3 * 2 * 4 * 6_598
    assert a.summary["compression_ratio"] > 3.0

    def numbers(res):          # as text: NaN (rounds not evaluated) equals itself there
        return repr([[(k, v) for k, v in r.row().items() if k != "wall_s"] for r in res.records]
                    + [res.accuracy.tolist()])

    assert numbers(a) == numbers(b)
