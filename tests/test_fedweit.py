"""FedWeIT (model.adapter=fedweit): its layers, loss, messages, knowledge base and runs, with
numbers worked out by hand."""
import io
import math

import pytest
import torch

from fcl.config import ConfigError
from fcl.engine import run
from fcl.methods.fedweit.round import Sent, channel_mean
from fcl.methods.fedweit.knowledge_base import (
    index_bytes,
    knowledge_nbytes,
    masked_nbytes,
    positions_nbytes,
    sparse_nbytes,
    stacked,
)
from fcl.federated.server_opt import server_optimizer
from fcl.config import ServerConfig
from fcl.methods.fedweit.layers import (
    FedWeITNet,
    channel_mask,
    decomposed_kernel,
    fedweit_penalty,
    threshold,
)
from fcl.models.backbone import build_backbone
from fcl.presets import preset

# sync order, T = 2 tasks of 5 classes (chance 20%), N = 2 clients, R = 4 (Q = 2)
FAST = {"model.adapter": "fedweit", "rounds": 4, "data.num_tasks": 2, "data.num_clients": 2,
        "data.train_per_class": 40, "data.test_per_class": 20, "client.local_epochs": 1,
        "model.width": 8, "schedule.order": "sync", "client.lr": 3e-3, "run.threads": 1}


def test_kernel_assembly_on_a_tiny_layer_by_hand():
    # 2 output channels of a 1x1 conv over 1 input channel
    base = torch.tensor([2.0, 4.0]).view(2, 1, 1, 1)
    mask = torch.tensor([0.0, math.log(3.0)])            # sigmoid: 0.5, 0.75
    adaptive = torch.tensor([1.0, -1.0]).view(2, 1, 1, 1)
    kb = torch.tensor([[1.0, 0.0], [0.0, 2.0]]).view(2, 2, 1, 1, 1)   # S = 2 slots
    alpha = torch.tensor([0.5, -1.0])
    # channel 0: 2 * .5 + 1 + .5 * 1 - 1 * 0 = 2.5;  channel 1: 4 * .75 - 1 + .5 * 0 - 1 * 2 = 0
    got = decomposed_kernel(base, mask, adaptive, kb, alpha)
    assert torch.allclose(got.flatten(), torch.tensor([2.5, 0.0]), atol=1e-6)
    # no knowledge base (a client's first task): B * sigmoid(m) + A = [2, 2]
    assert torch.allclose(decomposed_kernel(base, mask, adaptive).flatten(),
                          torch.tensor([2.0, 2.0]))


def tiny_model(lambda_l1=1e-3):
    backbone = build_backbone("resnet_tiny", 1, "group", 2, seed=0)
    return FedWeITNet(backbone, [3, 3], lambda_l1)


def test_the_model_starts_at_b_sigmoid_m_plus_b_over_3_and_thresholds_a_when_evaluating():
    model = tiny_model(lambda_l1=0.05)
    n = model.conv_names()[0]
    b, m = model.shared[n], model.tasks[0].masks[n]
    assert torch.equal(model.tasks[0].adaptive[n], b.detach() / 3)     # A_t = B / 3
    with torch.no_grad():
        model.tasks[0].adaptive[n].fill_(0.04)                        # |A| <= lambda_1
    model.train()
    want = b * torch.sigmoid(m).view(-1, 1, 1, 1) + 0.04
    assert torch.allclose(model.kernel(0, n), want)
    model.eval()                                  # inference: A thresholded to 0
    assert torch.allclose(model.kernel(0, n), b * torch.sigmoid(m).view(-1, 1, 1, 1))
    assert not any(p.requires_grad for p in model.backbone.parameters())


def test_top_channels_and_thresholding_by_hand():
    m = torch.tensor([0.1, -0.9, 0.3, 0.05, -0.5, 0.7, 0.2, -0.6, 0.4, 0.8])
    # sorted |m|: .05 .1 .2 .3 .4 .5 .6 .7 .8 .9; floor(0.3 * 10) = 3 -> the cut is .3
    # code: |m| > .3 keeps 6 channels; top: the ceil(.7 * 10) = 7 largest (.3 too)
    code = channel_mask(m, 0.3, "code")
    assert code.nonzero().flatten().tolist() == [1, 4, 5, 7, 8, 9]
    top = channel_mask(m, 0.3, "top")
    assert top.nonzero().flatten().tolist() == [1, 2, 4, 5, 7, 8, 9]
    a = torch.tensor([0.75, -0.25, 0.5, -1.0])       # binary fractions: exact in float32
    assert threshold(a, 0.5).tolist() == [0.75, 0.0, 0.0, -1.0]      # |A| > lambda_1 only


def test_sparse_byte_counts_by_hand():
    assert [index_bytes(n) for n in (256, 257, 65536, 65537)] == [1, 2, 2, 4]
    t = torch.zeros(4, 4)
    t[0, 1], t[2, 2], t[3, 0] = 1.0, -2.0, 3.0
    # 3 float32 values + min(bitmap ceil(16 / 8) = 2, 3 one-byte indices = 3) = 14
    assert sparse_nbytes(t) == 14
    big = torch.zeros(1000)
    big[[5, 50, 500]] = 1.0
    # 3 values + min(bitmap 125, 3 two-byte indices = 6) = 18
    assert sparse_nbytes(big) == 18
    assert positions_nbytes(5, 8) == 1
    # 8 output channels of 4 x 3 x 3, 5 kept: 5 * 36 values * 4 B + a 1-byte bitmap = 721
    assert masked_nbytes(torch.ones(8, 4, 3, 3), torch.arange(8) < 5) == 721


def test_one_round_of_a_tiny_model_costs_what_was_worked_by_hand():
    """resnet_tiny, width 2, one input channel: the convs (O x I x k x k) are the stem 2x1x3x3,
    block 0: 2x2x3x3 twice + shortcut 2x2x1x1, block 1: 4x2x3x3, 4x4x3x3, 4x2x1x1, block 2:
    8x4x3x3, 8x8x3x3, 8x4x1x1: 1214 values of B, 4856 B dense down per sampled client.
    Up, code rule at s = 0.3: O = 2 keeps 1 channel, O = 4 keeps 2, O = 8 keeps 5, and each mask
    costs a 1-byte bitmap: 4 (9 + 18 + 18 + 2) + 4 * 2 (18 + 36 + 2) + 4 * 5 (36 + 72 + 4) +
    10 = 188 + 448 + 2240 + 10 = 2886 B per reporting client. Round 0 ends no task."""
    res = run(preset("smoke", {**FAST, "model.width": 2, "rounds": 4}))
    first = res.records[0]
    assert first["clients_reporting"] == 2
    assert first["bytes_down"] == 2 * 4856
    assert first["bytes_up"] == 2 * 2886


def states_of(cfg):
    states = []
    res = run(preset("smoke", cfg), on_round=lambda rec, st: states.append(st))
    return res, states


def test_the_knowledge_base_appears_only_after_a_task_switch():
    res, states = states_of({**FAST, "model.width": 2})
    fs0, fs1, fs2 = (s.method for s in states[:3])
    # round 0: nobody ended a task; the server holds no slot, no client a knowledge base
    assert fs0.slots == (None, None) and all(not c.knowledge for c in fs0.clients)
    # round 1 ends task 0 (sync, Q = 2): both clients send A_0 thresholded at lambda_1
    assert all(s is not None for s in fs1.slots)
    for c in range(2):
        a = fs1.clients[c].tasks[0]
        for n, sent in fs1.slots[c].items():
            assert torch.equal(sent, threshold(a[f"adaptive.{n}"], 1e-3))
    extra = sum(sparse_nbytes(t) for s in fs1.slots for t in s.values())
    assert res.records[1]["bytes_up"] == 2 * 2886 + extra
    # round 2 starts task 1: each client receives the stack of both slots, once
    assert all(set(c.knowledge) == {1} for c in fs2.clients)
    kb = fs2.clients[0].knowledge[1]
    assert all(torch.equal(kb[n], stacked(fs1.slots, fs1.shared)[n]) for n in kb)
    assert next(iter(kb.values())).shape[0] == 2 and knowledge_nbytes(fs1.slots) > 0
    assert res.records[2]["bytes_down"] == 2 * (4856 + knowledge_nbytes(fs1.slots))
    assert res.records[3]["bytes_down"] == 2 * 4856          # not sent again


def test_the_retroactive_term_and_its_gradient_by_hand():
    model = tiny_model()
    names = model.conv_names()
    with torch.no_grad():
        for n in names:
            model.shared[n].zero_()
            for t in (0, 1):
                model.tasks[t].adaptive[n].zero_()
                model.tasks[t].masks[n].zero_()
        n = names[0]                                  # the stem: 2 x 1 x 3 x 3, 18 entries
        model.shared[n].fill_(2.0)
        model.tasks[0].adaptive[n].fill_(0.5)
    anchors = {0: {k: torch.zeros_like(model.shared[k]) for k in names}}
    anchors[0][n].fill_(1.0)
    # task 1 with past task 0: B sigmoid(m_0) + A_0 - theta_0* = 2 * .5 + .5 - 1 = .5 per entry;
    # lambda_2 / 2 * 18 * .25 = 225 at lambda_2 = 100; lambda_1 |A_0|_1 = 1e-3 * 9 = 0.009
    # d/dB = lambda_2 * .5 * sigmoid(0) = 25; d/dA_0 = lambda_2 * .5 = 50
    loss = fedweit_penalty(model, 1, anchors, wd=0.0, lambda_l1=1e-3, lambda_l2=100.0)
    assert float(loss.detach()) == pytest.approx(225.009)
    gb, ga = torch.autograd.grad(loss, [model.shared[n], model.tasks[0].adaptive[n]])
    assert torch.allclose(gb, torch.full_like(gb, 25.0))
    assert torch.allclose(ga, torch.full_like(ga, 50.0 + 1e-3))   # + lambda_1 sign(A_0)
    # a client's first task (no anchors): weight decay wd/2 ||B||^2, gradient wd B
    first = fedweit_penalty(model, 0, {}, wd=1e-4, lambda_l1=0.0, lambda_l2=100.0)
    assert torch.allclose(torch.autograd.grad(first, model.shared[n])[0],
                          1e-4 * model.shared[n].detach())


def test_per_channel_mean_composed_with_fedsgd_eta_1_and_fedadam():
    server = {"w": torch.zeros(3, 1, 1, 1)}
    sent = [Sent({"w": torch.tensor([1.0, 2.0, 3.0]).view(3, 1, 1, 1)},
                 {"w": torch.tensor([True, True, False])}, 0),
            Sent({"w": torch.tensor([3.0, 4.0, 5.0]).view(3, 1, 1, 1)},
                 {"w": torch.tensor([True, False, False])}, 0)]
    # channel 0: both sent, (1 + 3) / 2 = 2; channel 1: only the first, 2; channel 2: nobody
    grad = channel_mean(server, sent)
    assert grad["w"].flatten().tolist() == [2.0, 2.0, 0.0]
    fedavg = server_optimizer(ServerConfig(optimizer="fedsgd", lr=1.0))
    new, _ = fedavg.step({"w": torch.ones(3, 1, 1, 1)}, channel_mean(
        {"w": torch.ones(3, 1, 1, 1)}, sent), fedavg.init(server))
    assert new["w"].flatten().tolist() == [2.0, 2.0, 1.0]        # the means; unsent kept
    adam = server_optimizer(ServerConfig(optimizer="fedadam", lr=0.1, beta1=0.9, beta2=0.99,
                                         tau=1e-3))
    new, _ = adam.step(server, grad, adam.init(server))
    # m = .1 g = .2, v = .01 g^2 = .04: step .1 * .2 / (.2 + .001) = 0.0995025 on channels 0, 1
    assert new["w"].flatten().tolist() == pytest.approx([0.0995025, 0.0995025, 0.0])


def test_smoke_run_learns_above_chance():
    res = run(preset("smoke", FAST))
    assert res.summary["acc"] > 35.0                # 5 classes per task: chance is 20%
    assert res.summary["bytes_up"] > 0 and res.summary["tcc_bytes"] == (
        res.summary["bytes_up"] + res.summary["bytes_down"])
    assert not math.isnan(res.summary["bwt_f"])


def numbers(res):
    return ([{k: v for k, v in r.items() if k != "wall_s"} for r in res.records],
            res.accuracy.nan_to_num(-1).tolist(),
            {k: v for k, v in res.summary.items() if k not in ("wall_s", "samples_per_s")})


def test_same_seed_same_numbers_other_seed_other_numbers():
    a = run(preset("smoke", {**FAST, "seed": 1}))
    b = run(preset("smoke", {**FAST, "seed": 1}))
    c = run(preset("smoke", {**FAST, "seed": 2}))
    assert numbers(a) == numbers(b)
    assert numbers(a) != numbers(c)


def rows(records):
    """Rows with NaN as None (cos_head is NaN under FedWeIT: its heads are private)."""
    return [{k: None if isinstance(v, float) and math.isnan(v) else v for k, v in t.row().items()}
            for t in records]


@pytest.mark.parametrize("order", ["async", "fmtl"])
def test_killed_and_resumed_from_a_saved_checkpoint_gives_identical_rows(order):
    """The state after round 2, through torch.save / torch.load as a trial's checkpoint, then
    the rest of the run: the same records, accuracy matrix and summary as the run never
    stopped. Async and FMTL: clients switch tasks at different rounds and to other tasks."""
    cfg = preset("smoke", {**FAST, "schedule.order": order, "participation.straggler_prob": 0.3,
                           "model.fedweit_past": "trained"})
    snaps = {}
    full = run(cfg, on_round=lambda rec, st: snaps.setdefault(st.next_round, st))
    buf = io.BytesIO()
    torch.save(snaps[2], buf)
    buf.seek(0)
    resumed = run(cfg, resume=torch.load(buf, weights_only=False))
    assert [r["round"] for r in resumed.records] == [2, 3]
    assert numbers(resumed)[0] == numbers(full)[0][2:]
    assert rows(resumed.task_records) == rows(full.task_records[4:])
    assert numbers(resumed)[1:] == numbers(full)[1:]


def test_every_server_optimizer_moves_b():
    for name in ("fedsgd", "fedadam", "fedadagrad", "fedyogi"):
        states = []
        run(preset("smoke", {**FAST, "rounds": 2, "server.optimizer": name, "server.lr": 0.1}),
            on_round=lambda rec, st: states.append(st))
        before, after = states[0].method.shared, states[1].method.shared
        assert any(not torch.equal(before[n], after[n]) for n in before), name


@pytest.mark.parametrize("key, value", [("compression.bits", "8"),
                                        ("client.algorithm", "scaffold")])
def test_what_fedweit_cannot_combine_with_is_a_one_line_config_error(key, value):
    with pytest.raises(ConfigError) as e:
        preset("smoke", {**FAST, key: value})
    assert str(e.value).startswith(f"{key}={value}:") and "\n" not in str(e.value)


def test_planned_bytes_and_the_model_a_client_stores_by_hand():
    """The width-2 model of the round above, T = 2 tasks of 5 classes, N = 2 clients. Per task:
    masks 2+2+2+2+4+4+4+8+8+8 = 44, A 1214, norms (weight + bias of 10 GroupNorms over 2, 2, 2,
    2, 4, 4, 4, 8, 8, 8 channels) 88, head 8 x 5 + 5 = 45: 1391. Stored: B 1214 + 2 x 1391 + the
    second task's knowledge base, 2 slots x (1214 + an attention weight per conv, 10) = 2448:
    6444 values, 25,776 B."""
    from fcl.communication import params_report
    rep = params_report(preset("smoke", {**FAST, "model.width": 2}))
    assert [(m["bytes_down"], m["bytes_up"]) for m in rep["messages"]] == [(4856, 2886)]
    assert rep["trainable_params"] == 1391
    assert rep["client_model_bytes"] == 4 * 6444
    # without the knowledge base: B and both tasks' modules, 1214 + 2 x 1391 = 3996 values
    assert rep["client_model_bytes_own"] == 4 * 3996
    # the paper's top 70%: O = 2 keeps 2, O = 4 keeps 3, O = 8 keeps 6: 4 (2 * 47 + 3 * 56 +
    # 6 * 112) + 10 = 3746 B up
    top = params_report(preset("smoke", {**FAST, "model.width": 2,
                                         "model.fedweit_channels": "top"}))
    assert top["messages"][0]["bytes_up"] == 3746


def test_the_sgd_client_trains_and_sends_what_the_adam_client_sends():
    """model.fedweit_optimizer=sgd (the other methods' client): the round's messages have the
    same sizes (they depend on shapes only until a task ends), the values differ."""
    states = {}
    runs = {opt: run(preset("smoke", {**FAST, "model.fedweit_optimizer": opt,
                                      "client.lr": 0.01 if opt == "sgd" else 3e-3}),
                     on_round=lambda rec, st, opt=opt: states.setdefault(opt, st))
            for opt in ("sgd", "adam")}
    assert runs["sgd"].records[0]["bytes_up"] == runs["adam"].records[0]["bytes_up"]
    assert not runs["sgd"].summary["diverged"]
    sgd, adam = states["sgd"].method.shared, states["adam"].method.shared
    assert all(torch.isfinite(sgd[n]).all() for n in sgd)
    assert any(not torch.equal(sgd[n], adam[n]) for n in sgd)


def test_the_fedweit_keys_at_their_defaults_keep_every_stored_trial_id():
    """Studies stored before model.fedweit_* existed keep their trial ids; a FedWeIT setting
    away from its default is another trial."""
    from fcl.config import RunConfig, with_overrides
    from fcl.results_io import DEFAULTS, added_keys, config_hash
    cfg = RunConfig()
    fedweit = [k for k in DEFAULTS if k.startswith("model.fedweit_")]
    assert fedweit and set(fedweit) <= set(added_keys())
    old = with_overrides(cfg, {"model.fedweit_lambda_l2": 100.0})     # the default, spelt out
    assert config_hash(old) == config_hash(cfg)
    assert config_hash(with_overrides(cfg, {"model.fedweit_lambda_l2": 10.0})) != config_hash(cfg)


def test_the_fcl_methods_study_runs_fedweit_through_tune_as_a_direct_run(local_ray, tmp_path):
    """The study's three methods at the smoke study preset, through Ray Tune (pickled trials,
    checkpoints): FedWeIT's row holds the numbers of the same config run directly."""
    import importlib.util
    import pathlib

    import pandas as pd

    from fcl.tune import StudyOptions, run_study
    from fcl.tune.plan import base_config
    from fcl.tune.space import resolve
    path = pathlib.Path(__file__).parents[1] / "studies" / "fcl_methods.py"
    spec = importlib.util.spec_from_file_location("fcl_methods", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    opts = StudyOptions(preset="smoke", results=str(tmp_path))
    outcome = run_study(module.STUDY, opts)
    assert (outcome.finished, outcome.failed) == (3, 0)
    trials = pd.read_parquet(tmp_path / "fcl_methods" / "trials.parquet")
    assert sorted(trials["model.adapter"]) == ["fedweit", "nettailor", "nettailor"]
    row = trials[trials["model.adapter"] == "fedweit"].iloc[0]
    cfg = resolve(base_config(module.STUDY, opts), {
        "model.adapter": "fedweit", "server.optimizer": "fedsgd", "server.lr": 1.0,
        "client.lr": 1e-3 / 3, "seed": int(row["seed"]), "run.threads": 1})
    direct = run(cfg)
    assert row["acc"] == direct.summary["acc"]
    assert (row["bytes_up"], row["bytes_down"]) == (direct.summary["bytes_up"],
                                                    direct.summary["bytes_down"])
    # Table 4 over the methods: a row each, the paper's two quoted under them
    from analysis.figures.fcl_paper_tables import table4
    from analysis.study_tables import load_study
    from fcl.communication import params_report
    out = tmp_path / "figures"
    out.mkdir()
    table4(load_study(tmp_path, "fcl_methods"), out)
    table = pd.read_csv(out / "table4.csv").set_index("model.adapter")
    assert len(table) == 3
    weit = table.loc["fedweit"]
    assert weit["c2s_mb_per_round"] == pytest.approx(
        row["bytes_up"] / row["rounds"] / row["data.num_clients"] / 1e6)   # all sampled
    assert weit["model_mb"] == params_report(cfg)["client_model_bytes"] / 1e6
    assert weit["model_mb_own"] == params_report(cfg)["client_model_bytes_own"] / 1e6
    assert weit["model_mb_own"] < weit["model_mb"]
    nettailor = table[table.index == "nettailor"]
    assert (nettailor["model_mb_own"] == nettailor["model_mb"]).all()
    md = (out / "table4.md").read_text()
    assert md.count("(quoted)") == 2 and "| 55.16 |" in md and "18.5 + 53.5" in md
    # the same-seed claim: ACC and bytes of NetTailor + FedAdam against FedWeIT, judged
    from analysis import claims
    claim = next(c for c in claims.CLAIMS if c.study == "fcl_methods")
    _, verdict = claims.judge(claim, tmp_path, {})
    assert verdict in (claims.HOLDS, claims.FAILS, claims.OPEN)
    ours = trials[(trials["model.adapter"] == "nettailor") &
                  (trials["server.optimizer"] == "fedadam")].iloc[0]
    assert claims.compare(trials, claim.fixed, claim.comparisons[1])[:1] == (
        float(ours["tcc_bytes"] - row["tcc_bytes"]),)


def test_save_model_refuses_fedweit_in_one_line(tmp_path, capsys):
    """A FedWeIT run has a model per client, not one to save: refused before it trains."""
    from fcl.cli import main
    folder = tmp_path / "model"
    assert main(["run", "--preset", "smoke", "--set", "model.adapter=fedweit",
                 "--save-model", str(folder)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: --save-model={folder}: model.adapter=fedweit") and \
        "\n" not in err
    assert not folder.exists()


def test_dirichlet_shards_partial_participation_and_stragglers_count_only_who_sent():
    """Dirichlet alpha 0.1 with empty shards allowed, 3 of 6 clients sampled a round, each
    straggling with probability 0.3: the run finishes with finite ACC and BWT_f. Per round,
    bytes down are B to every sampled client plus the knowledge base to each that starts a task
    while a slot is filled; bytes up are the B message of each client that reported and held
    data, plus the thresholded A of each of those whose task ends, the only slots that change."""
    from fcl.engine import holding_data, start
    from fcl.methods.fedweit.round import ends_task
    from fcl.federated.participation import participation
    cfg = preset("smoke", {**FAST, "model.width": 2, "seed": 0, "data.num_clients": 6,
                           "data.partition": "dirichlet", "data.alpha": 0.1,
                           "data.min_client_samples": 0, "participation.fraction": 0.5,
                           "participation.straggler_prob": 0.3})
    plan, initial = start(cfg)
    states = []
    res = run(cfg, on_round=lambda rec, st: states.append(st))
    assert math.isfinite(res.summary["acc"]) and math.isfinite(res.summary["bwt_f"])
    assert not res.summary["diverged"]
    straggled = empty = 0
    before = initial.method
    for r, (rec, st) in enumerate(zip(res.records, states)):
        part = participation(r, 6, cfg.participation, cfg.seed)
        tasks_of = plan.schedule[r].tolist()
        reporting = holding_data(plan, part.reporting, tasks_of)
        straggled += len(part.sampled) - len(part.reporting)
        empty += len(part.reporting) - len(reporting)
        assert (rec["clients_sampled"], rec["clients_reporting"]) == (3, len(reporting))
        fs = st.method
        ended = [c for c in reporting if ends_task(plan, c, r)]
        assert [c for c in range(6) if fs.slots[c] is not before.slots[c]] == ended
        assert rec["bytes_up"] == 2886 * len(reporting) + sum(
            sparse_nbytes(a) for c in ended for a in fs.slots[c].values())
        starting = [c for c in part.sampled if tasks_of[c] not in before.clients[c].tasks]
        kb = knowledge_nbytes(before.slots) if any(s is not None for s in before.slots) else 0
        assert rec["bytes_down"] == 4856 * 3 + kb * len(starting)
        before = fs
    assert straggled > 0 and empty > 0        # both kinds of silent client occurred
    assert any(s is not None for s in before.slots) and any(s is None for s in before.slots)
    assert res.summary["bytes_up"] == sum(r["bytes_up"] for r in res.records)
    assert res.summary["bytes_down"] == sum(r["bytes_down"] for r in res.records)


def test_async_knowledge_base_is_each_clients_thresholded_a_of_its_own_previous_task():
    """Async order, T = 2, N = 2, Q = 2, seed 0: client 0 trains task 0 then 1, client 1 task 1
    then 0. At round 2 each starts its second task and receives the stack of the two slots: slot
    c is client c's own A of the task it trained in rounds 0-1 (its private state, as of round
    1), with every entry of |A| <= lambda_1 set to 0; the sender's own slot included. lambda_1 =
    0.05 (A starts at B / 3), so that the threshold zeroes a share of A, not none."""
    lam = 0.05
    res, states = states_of({**FAST, "model.width": 2, "schedule.order": "async", "seed": 0,
                             "model.fedweit_lambda_l1": lam})
    assert [[c.last for c in s.method.clients] for s in states] == [[0, 1], [0, 1], [1, 0],
                                                                     [1, 0]]
    at1, at2 = states[1].method, states[2].method
    previous = (0, 1)                           # the task each client ended at round 1
    assert [sorted(c.knowledge) for c in at2.clients] == [[1], [0]]
    kb0, kb1 = at2.clients[0].knowledge[1], at2.clients[1].knowledge[0]
    nbytes, kept_total, numel = 0, 0, 0
    for n in at1.shared:
        want = []
        for c in range(2):
            a = at1.clients[c].tasks[previous[c]][f"adaptive.{n}"]
            kept = a.abs() > lam
            kept_total, numel = kept_total + int(kept.sum()), numel + a.numel()
            want.append(torch.where(kept, a, torch.zeros_like(a)))
            nbytes += sparse_nbytes(want[-1])
        want = torch.stack(want)
        assert kb0[n].shape == (2, *at1.shared[n].shape)
        assert torch.equal(kb0[n], want) and torch.equal(kb1[n], want)
    assert 0 < kept_total < numel                  # the threshold cuts some, not all
    # slot 1 holds client 1's A of task 1, the very task client 0 starts, which client 0 never
    # held; the slots are what the server stores (threshold() agrees with the rule above)
    assert 1 not in at1.clients[0].tasks and 0 not in at1.clients[1].tasks
    assert all(torch.equal(at1.slots[c][n], threshold(
        at1.clients[c].tasks[previous[c]][f"adaptive.{n}"], lam)) for c in range(2)
        for n in at1.shared)
    assert res.records[2]["bytes_down"] == 2 * (4856 + nbytes)
