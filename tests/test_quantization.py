"""FLoCoRA's affine quantization: error bounds, exact grids, byte counts worked by hand, and the
engine using it on both links while the server state stays float32."""
import pytest
import torch

from fcl.federated.compression import (decode, dequantize, encode, encoder, pack, quantize,
                                       unpack)

BITS = (8, 4, 2)


@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("shape", [(6, 5, 3, 3), (4, 7), (3, 1)])
def test_error_per_element_at_most_half_a_step(bits, shape):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(bits)) * 3
    q = quantize(x, bits)
    err = (dequantize(q) - x).abs().reshape(shape[0], -1)
    # scale / 2, plus float32 rounding of lo + code * scale (a few ulps of the largest |x|)
    bound = q.scale[:, None] / 2 + 4 * torch.finfo(torch.float32).eps * x.abs().max()
    assert (err <= bound).all()
    assert q.scale.shape == (shape[0],) and q.lo.dtype == torch.float32


@pytest.mark.parametrize("bits", BITS)
def test_values_on_the_grid_come_back_exactly(bits):
    # lo = -1, scale = 0.25: every grid value lo + k * scale is exact in float32
    levels = 2 ** bits - 1
    k = torch.arange(levels + 1, dtype=torch.float32)
    rows = torch.stack([-1 + 0.25 * k, -1 + 0.25 * k.flip(0)])   # both ends in each row
    q = quantize(rows, bits)
    assert torch.equal(q.scale, torch.full((2,), 0.25))
    assert torch.equal(dequantize(q), rows)


def test_constant_channel_gives_no_nan_and_comes_back_exactly():
    x = torch.tensor([[0.3] * 9, [-2.0] * 9, [0.0] * 9]).view(3, 1, 3, 3)
    for bits in BITS:
        y = dequantize(quantize(x, bits))
        assert not y.isnan().any() and torch.equal(y, x)


@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("n", [1, 3, 4, 5, 17])
def test_pack_unpack_round_trip_and_packed_size(bits, n):
    codes = torch.randint(0, 2 ** bits, (n,), dtype=torch.uint8,
                          generator=torch.Generator().manual_seed(n))
    packed = pack(codes, bits)
    assert packed.numel() == -(-n * bits // 8)          # ceil(n * bits / 8)
    assert torch.equal(unpack(packed, bits, n), codes)


def test_message_bytes_worked_by_hand():
    # a 3 x 5 weight (15 values, 3 output channels) and a bias of 3
    params = {"w": torch.randn(3, 5), "b": torch.randn(3)}
    # 32 bits: 18 float32 values
    assert encode(params).nbytes == 18 * 4 == encoder(32)(params).nbytes
    # b bits: ceil(15 b / 8) payload bytes + 3 x (scale + zero point) x 4 B + the bias 3 x 4 B
    assert encoder(8)(params).nbytes == 15 + 24 + 12 == 51
    assert encoder(4)(params).nbytes == 8 + 24 + 12 == 44
    assert encoder(2)(params).nbytes == 4 + 24 + 12 == 40


def test_one_dimensional_tensors_travel_unquantized():
    params = {"w": torch.randn(4, 2, 3, 3), "norm.weight": torch.randn(4) * 1e-3}
    out = decode(encoder(2)(params))
    assert torch.equal(out["norm.weight"], params["norm.weight"])
    assert not torch.equal(out["w"], params["w"])
    assert out["w"].dtype == torch.float32 and out["w"].shape == params["w"].shape


FAST = {"rounds": 5, "data.train_per_class": 40, "data.test_per_class": 10,
        "model.adapter": "lora", "model.lora_rank": 4, "model.lora_alpha": 64}


def test_values_payload_server_state_is_the_mean_of_dequantized_values(monkeypatch):
    """A hand-built round: two clients send trained values; FedAvg's new state is the sample-
    weighted mean of what the server decodes, and evaluation sees the dequantized broadcast."""
    import fcl.engine as engine
    from fcl.federated.client import ClientUpdate
    from fcl.models.factory import build_model
    from fcl.models.task_state import read_state
    from fcl.presets import preset
    cfg = preset("smoke", {**FAST, "rounds": 1, "data.num_tasks": 1, "data.num_clients": 2,
                           "compression.bits": 4, "server.optimizer": "fedsgd",
                           "server.lr": 1.0, "compression.payload": "values"})
    sent, weights = {}, {0: 30, 1: 10}

    def fake_train(trainer, t, c, received, names, *args, **kwargs):
        g = torch.Generator().manual_seed(c)
        sent[c] = {n: received[n] + 0.1 * torch.randn(received[n].shape, generator=g)
                   for n in names.trainable}
        return ClientUpdate(c, t, sent[c], weights[c], torch.zeros(()), torch.zeros(()))

    monkeypatch.setattr(engine, "local_train", fake_train)
    data = engine.prepare_data(cfg)
    model = build_model(cfg.model, data.image_shape, data.classes_per_task(), cfg.seed)
    states = []
    engine.run(cfg, data=data, model=model, on_round=lambda rec, st: states.append(st))
    decoded = {c: decode(encoder(4)(v)) for c, v in sent.items()}
    server = states[-1].tasks[0].params
    for n, w in server.items():
        want = (30 * decoded[0][n] + 10 * decoded[1][n]) / 40
        # old + (mean - old) in float32: within 1e-7 plus one rounding of |w| <= 1.2
        torch.testing.assert_close(w, want, atol=1e-7, rtol=1.2e-7)
    evaluated = read_state(model.tasks[0], list(server))
    broadcast = decode(encoder(4)(server))
    assert all(torch.equal(evaluated[n], broadcast[n]) for n in server)
    assert any(not torch.equal(evaluated[n], server[n]) for n in server)   # 4 bits: off-grid


def test_engine_quantizes_both_links_and_keeps_server_state_float32():
    """payload=delta: the float32 server state moves by dequantized deltas, off any grid."""
    from fcl.engine import build_plan, initial_state, prepare_data, run
    from fcl.models.factory import build_model
    from fcl.presets import preset
    cfg = preset("smoke", {**FAST, "compression.bits": 8, "server.optimizer": "fedsgd",
                           "server.lr": 1.0, "schedule.order": "fmtl", "rounds": 10,
                           "compression.payload": "delta"})
    data = prepare_data(cfg)
    states = []
    res = run(cfg, data=data, on_round=lambda rec, st: states.append(st))
    model = build_model(cfg.model, data.image_shape, data.classes_per_task(), cfg.seed)
    task0 = initial_state(build_plan(cfg, model, data)).tasks[0]
    one = encoder(8)({**task0.params, **task0.buffers}).nbytes
    first = res.records[0]
    # smoke: 3 clients, all report, group norm (no buffers), every task the same shapes
    assert first["bytes_down"] == first["bytes_up"] == 3 * one
    assert one < 4 * sum(t.numel() for t in task0.params.values())
    assert all(t.dtype == torch.float32 for st in states for ts in st.tasks
               for t in ts.params.values())
    # the server state is not snapped to the 8-bit grid: the float32 step moved it off-grid
    w = states[-1].tasks[0].params["adapters.blocks_0_conv1.down"]
    assert not torch.equal(dequantize(quantize(w, 8)), w)
    s = res.summary
    assert s["tcc_bytes"] == s["bytes_up"] + s["bytes_down"] == res.records[-1]["tcc_bytes"]
    assert s["compression_ratio"] == pytest.approx(s["full_fedavg_bytes"] / s["tcc_bytes"])
    assert s["acc"] > 65.0                       # binary tasks (chance 50%): 8 bits still learn
