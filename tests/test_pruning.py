"""Magnitude pruning (`compression.prune`, FLoCoRA's prune.py): the global threshold and the
sparse message's bytes worked by hand, plain FedAvg of the zero-filled uploads, a pruned run that
learns, and the same numbers for the same seed."""
import pytest
import torch

from fcl.config import ConfigError, RunConfig, with_overrides
from fcl.federated.compression import Codec, decode, encode_pruned
from fcl.federated.pruning import magnitude_threshold, prune, sparse_nbytes, values_nbytes

# |values| sorted: 0.0625 0.125 0.25 0.375 0.4375 0.5 0.75 (N = 7, exact in float32)
SMALL = {"a": torch.tensor([0.5, -0.125, 0.375]),
         "b": torch.tensor([[-0.4375, 0.25], [0.0625, -0.75]])}


def test_global_threshold_over_all_tensors_worked_by_hand():
    # rate 0.5: floor(7 * 0.5) = 3 -> sorted[3] = 0.375; |v| < 0.375 become 0, 0.375 is kept
    assert magnitude_threshold(list(SMALL.values()), 0.5) == 0.375
    out = prune(SMALL, 0.5)
    assert torch.equal(out["a"], torch.tensor([0.5, 0.0, 0.375]))
    assert torch.equal(out["b"], torch.tensor([[-0.4375, 0.0], [0.0, -0.75]]))
    # rate 0.8: floor(5.6) = 5 -> sorted[5] = 0.5: only 0.5 and -0.75 survive, one per tensor
    out = prune(SMALL, 0.8)
    assert torch.equal(out["a"], torch.tensor([0.5, 0.0, 0.0]))
    assert torch.equal(out["b"], torch.tensor([[0.0, 0.0], [0.0, -0.75]]))
    # one threshold for all tensors, not one per tensor: a tensor of small values can lose
    # all of them (per tensor, rate 0.5 would keep 4 and -0.25)
    out = prune({"big": torch.tensor([4.0, -3.0]), "small": torch.tensor([0.125, -0.25])}, 0.5)
    assert torch.equal(out["big"], torch.tensor([4.0, -3.0]))
    assert torch.equal(out["small"], torch.zeros(2))


def test_ties_at_the_threshold_are_kept_as_the_code_does():
    # the code zeroes |v| < threshold: four equal magnitudes at rate 0.5 all survive
    out = prune({"w": torch.tensor([1.0, -1.0, 1.0, -1.0])}, 0.5)
    assert torch.equal(out["w"], torch.tensor([1.0, -1.0, 1.0, -1.0]))


def test_norm_statistics_are_left_out_of_the_threshold():
    params = {**SMALL, "bn.running_var": torch.tensor([1e-4, 2e-4])}
    out = prune(params, 0.5, dense=("bn.running_var",))
    assert torch.equal(out["bn.running_var"], params["bn.running_var"])
    assert torch.equal(out["a"], torch.tensor([0.5, 0.0, 0.375]))    # the same 0.375 as above


def test_sparse_tensor_bytes_in_each_encoding_by_hand():
    # 4 B count + 4 B per kept value + the cheaper of ceil(n / 8) bitmap bytes and 4 B indices
    assert sparse_nbytes(10, 3) == 4 + 12 + 2 == 18          # bitmap 2 B < indices 12 B
    assert sparse_nbytes(1000, 5) == 4 + 20 + 20 == 44       # indices 20 B < bitmap 125 B
    assert sparse_nbytes(1000, 32) == 4 + 128 + 125 == 257   # bitmap 125 B < indices 128 B
    assert sparse_nbytes(1000, 31) == 4 + 124 + 124 == 252   # indices 124 B < bitmap 125 B
    assert sparse_nbytes(8, 0) == 4                          # an all-zero tensor: its count
    assert values_nbytes(5) == 20


def test_pruned_message_bytes_and_values_only_by_hand():
    # w1: 3 of 10 values non-zero; w2: 5 of 1000; 1002 zeros, so at rate 0.9 the threshold is
    # sorted[909] = 0 and nothing more is zeroed: a sparse w1 (bitmap) and w2 (indices), and
    # norm statistics (3 values) in float32
    w1 = torch.zeros(10)
    w1[[1, 4, 7]] = torch.tensor([0.5, -2.0, 1.5])
    w2 = torch.zeros(1000)
    w2[[0, 10, 500, 998, 999]] = torch.tensor([3.0, -1.0, 2.0, 0.25, -0.5])
    stats = torch.tensor([0.1, 0.2, 0.3])
    msg = encode_pruned({"w1": w1, "w2": w2, "bn.running_mean": stats}, 0.9,
                        dense=("bn.running_mean",))
    assert msg.nbytes == 18 + 44 + 12 == 74
    assert msg.values_nbytes == 12 + 20 + 12 == 44           # kept values + the dense tensor
    assert torch.equal(decode(msg)["w2"], w2) and torch.equal(decode(msg)["w1"], w1)
    # the small hand tensors at rate 0.5: a keeps 2 of 3, b 2 of 4; 1-byte bitmaps
    small = encode_pruned(SMALL, 0.5)
    assert small.nbytes == (4 + 8 + 1) + (4 + 8 + 1) == 26 and small.values_nbytes == 16


def test_codec_prunes_the_uplink_and_the_downlink_only_with_prune_server():
    up_only = Codec.from_config(32, "values", prune=0.8)
    both = Codec.from_config(32, "values", prune=0.8, prune_server=True)
    dense_bytes = 4 * 7
    assert up_only.send(SMALL)[1] == both.send(SMALL)[1] == (4 + 4 + 1) * 2 == 18
    assert up_only.send(SMALL, down=True)[1] == dense_bytes
    got, nbytes = both.send(SMALL, down=True)
    assert nbytes == 18 and torch.equal(got["a"], torch.tensor([0.5, 0.0, 0.0]))
    # evaluation sees the dense server state, as the code's server evaluates its aggregate
    assert both.served(SMALL) is SMALL


@pytest.mark.parametrize("overrides,line", [
    ({"compression.prune": "1"}, "compression.prune=1.0: out of range; allowed: 0 (off), 0.5, "
                                 "0.8, 0.9, 0.95 (the paper's rates) or any rate 0 <= rate < 1"),
    ({"compression.prune": "-0.5"}, "compression.prune=-0.5: out of range; allowed: 0 (off), "
                                    "0.5, 0.8, 0.9, 0.95 (the paper's rates) or any rate "
                                    "0 <= rate < 1"),
    ({"compression.prune": "0.9", "compression.bits": "8"},
     "compression.prune=0.9: pruning sends float32 values, not compression.bits=8; "
     "allowed: 0 unless compression.bits=32"),
    ({"compression.prune_server": "true"},
     "compression.prune_server=true: nothing to prune at compression.prune=0; "
     "allowed: false, or set compression.prune > 0"),
])
def test_bad_pruning_settings_are_one_line_errors(overrides, line):
    with pytest.raises(ConfigError) as e:
        with_overrides(RunConfig(), overrides)
    assert str(e.value) == line


def test_pruning_off_keeps_the_trial_id():
    from fcl.results_io import config_hash
    cfg = RunConfig()
    assert config_hash(with_overrides(cfg, {"compression.prune": "0",
                                            "compression.prune_server": "false"})) == \
        config_hash(cfg)
    assert config_hash(with_overrides(cfg, {"compression.prune": "0.5"})) != config_hash(cfg)


FAST = {"rounds": 10, "data.num_tasks": 1, "data.train_per_class": 40,
        "data.test_per_class": 20, "model.adapter": "full", "model.width": 8,
        "client.local_epochs": 2, "eval.every": 5, "run.threads": 1}


def test_server_state_is_the_plain_mean_of_the_zero_filled_uploads(monkeypatch):
    """A hand-built round: two clients upload pruned values; FedAvg (fedsgd, lr 1) makes the new
    state their sample-weighted mean, zeros included; each client started from the pruned
    broadcast (prune_server)."""
    import fcl.engine as engine
    from fcl.federated.client import ClientUpdate
    from fcl.presets import preset
    cfg = preset("smoke", {**FAST, "rounds": 1, "data.num_clients": 2,
                           "compression.prune": 0.8, "compression.prune_server": True})
    sent, received, weights = {}, {}, {0: 30, 1: 10}

    def fake_train(trainer, t, c, start, names, *args, **kwargs):
        received[c] = {n: start[n] for n in names.trainable}
        g = torch.Generator().manual_seed(c)
        sent[c] = {n: start[n] + 0.1 * torch.randn(start[n].shape, generator=g)
                   for n in names.trainable}
        return ClientUpdate(c, t, sent[c], weights[c], torch.zeros(()), torch.zeros(()))

    monkeypatch.setattr(engine, "local_train", fake_train)
    data = engine.prepare_data(cfg)
    _, state0 = engine.start(cfg, data)
    broadcast = prune(state0.tasks[0].params, 0.8)
    states = []
    res = engine.run(cfg, data=data, on_round=lambda rec, st: states.append(st))
    for c in (0, 1):
        assert all(torch.equal(received[c][n], broadcast[n]) for n in broadcast)
    uploads = {c: prune(v, 0.8) for c, v in sent.items()}
    kept = sum(int(torch.count_nonzero(t)) for t in uploads[0].values())
    total = sum(t.numel() for t in uploads[0].values())
    assert kept == pytest.approx(0.2 * total, abs=2)        # ties aside, floor(0.8 N) zeroed
    server = states[-1].tasks[0].params
    for n, w in server.items():
        want = (30 * uploads[0][n] + 10 * uploads[1][n]) / 40
        torch.testing.assert_close(w, want, atol=1e-7, rtol=2e-7)
    # bytes: both links carry the pruned messages, counted by the sparse encoding
    up = sum(encode_pruned(uploads[c], 0.8).nbytes for c in (0, 1))
    down = 2 * encode_pruned(state0.tasks[0].params, 0.8).nbytes
    assert (res.records[0]["bytes_up"], res.records[0]["bytes_down"]) == (up, down)
    assert up < 4 * 2 * total * 0.5                           # well under the dense size


def test_pruned_fedavg_learns_above_chance_and_repeats_itself():
    """Full-model FedAvg on the bundled set (one task of 10 classes: chance 10%), every message
    pruned at 0.5 both ways: it learns, sends about half the dense bytes, and the same seed
    gives the same numbers."""
    from fcl.engine import run
    from fcl.presets import preset
    cfg = preset("smoke", {**FAST, "compression.prune": 0.5, "compression.prune_server": True})
    dense = run(preset("smoke", FAST)).summary
    a, b = run(cfg), run(cfg)
    assert a.summary["acc"] > 25.0                           # 2.5x chance
    assert a.summary["tcc_bytes"] < 0.6 * dense["tcc_bytes"]
    assert a.summary["compression_ratio"] > 1.6
    def numbers(res):          # as text: NaN (rounds not evaluated) equals itself there
        return repr([[(k, v) for k, v in r.row().items() if k != "wall_s"] for r in res.records]
                    + [res.accuracy.tolist()])

    assert numbers(a) == numbers(b)


def test_params_report_gives_the_pruned_message_and_its_values_only_size():
    """Full-model ResNet-8 (1,227,594 values, 4,910,376 B dense) at rate 0.9 both ways: the
    kaiming-normal weights have no ties at the threshold, so exactly floor(0.9 N) = 1,104,834
    values are zeroed and 122,760 kept: 491,040 B of values. The sparse message adds a 4 B count
    per tensor and at most a bitmap of every tensor (ceil(n / 8) each)."""
    from fcl.communication import format_report, params_report
    from fcl.presets import preset
    cfg = preset("flocora", {"model.adapter": "full", "compression.prune": 0.9,
                             "compression.prune_server": True})
    rep = params_report(cfg)
    pruned = rep["messages"][-1]
    assert pruned["prune"] == 0.9
    assert pruned["values_bytes_up"] == pruned["values_bytes_down"] == 4 * 122_760 == 491_040
    from fcl.models.factory import build_model
    task = build_model(cfg.model, (3, 32, 32), [10], cfg.seed).tasks[0]
    sizes = [p.numel() for p in task.parameters()]
    most = 491_040 + 4 * len(sizes) + sum(-(-n // 8) for n in sizes)
    assert 491_040 + 4 * len(sizes) < pruned["bytes_up"] == pruned["bytes_down"] <= most
    assert rep["tcc_bytes"] == 100 * 10 * 2 * pruned["bytes_up"]      # the run's TCC: pruned
    text = format_report(rep, cfg)
    assert " p0.9 " in text and "values only: down 491,040 B, up 491,040 B" in text
