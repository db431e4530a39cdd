"""End-to-end properties of one run on the smoke preset."""
import math

import torch

from fcl.engine import run
from fcl.models.factory import build_model
from fcl.presets import preset

FAST = {"rounds": 5, "data.train_per_class": 60, "data.test_per_class": 20}


def test_smoke_run_learns_well_above_chance(smoke_data):
    res = run(preset("smoke"), data=smoke_data)           # the preset's own defaults learn
    assert res.summary["acc"] > 70.0                      # binary tasks: chance is 50%
    assert res.summary["rounds"] == 10 and len(res.records) == 10
    assert not math.isnan(res.summary["bwt_f"])


def numbers(res):
    drop = {"wall_s"}
    return ([{k: v for k, v in r.items() if k not in drop} for r in res.records],
            res.accuracy.nan_to_num(-1).tolist(),
            {k: v for k, v in res.summary.items() if k not in ("wall_s", "samples_per_s")})


def test_same_seed_same_numbers_other_seed_other_numbers():
    a = run(preset("smoke", {**FAST, "seed": 1}))
    b = run(preset("smoke", {**FAST, "seed": 1}))
    c = run(preset("smoke", {**FAST, "seed": 2}))
    assert numbers(a) == numbers(b)
    assert numbers(a) != numbers(c)


def test_backbone_bit_identical_and_only_task_modules_change():
    cfg = preset("smoke", {**FAST, "model.norm": "batch", "schedule.order": "sync"})
    from fcl.engine import prepare_data
    data = prepare_data(cfg)
    model = build_model(cfg.model, data.image_shape, data.classes_per_task(), cfg.seed)
    backbone_before = {k: v.clone() for k, v in model.backbone.state_dict().items()}
    tasks_before = {k: v.clone() for k, v in model.tasks.state_dict().items()}
    assert all(not p.requires_grad for p in model.backbone.parameters())
    changed_after = {}

    def changed_tasks(rec, state):
        after = model.tasks.state_dict()
        changed_after[rec["round"]] = {int(k.split(".")[0]) for k in after
                                       if not torch.equal(after[k], tasks_before[k])}

    run(cfg, data=data, model=model, on_round=changed_tasks)
    for k, v in model.backbone.state_dict().items():
        assert torch.equal(v, backbone_before[k]), k        # BatchNorm statistics included
    assert all(p.grad is None for p in model.backbone.parameters())
    # sync order, Q = 1: round r trains task r, and only trained tasks have moved
    assert changed_after == {r: set(range(r + 1)) for r in range(5)}


def test_straggler_rounds_record_reports_and_silent_rounds_change_nothing():
    cfg = preset("smoke", {**FAST, "participation.straggler_prob": 0.6, "server.optimizer": "fedsgd"})
    states = []
    res = run(cfg, on_round=lambda rec, st: states.append(st))
    reports = [r["clients_reporting"] for r in res.records]
    assert any(n < r["clients_sampled"] for n, r in zip(reports, res.records))
    for r, rec in enumerate(res.records):
        prev = states[r - 1].tasks if r else None
        for t in range(5):
            if t not in rec["tasks_trained"] and prev is not None:
                for n, v in states[r].tasks[t].params.items():
                    assert torch.equal(v, prev[t].params[n])


def test_resume_from_a_snapshot_gives_the_same_run():
    cfg = preset("smoke", {**FAST, "rounds": 10})
    snaps = {}
    full = run(cfg, on_round=lambda rec, st: snaps.setdefault(st.next_round, st))
    resumed = run(cfg, resume=snaps[4])
    # the state holds no history: the resumed call returns the rounds it ran, 4..9
    assert [r["round"] for r in resumed.records] == list(range(4, 10))
    assert numbers(resumed)[0] == numbers(full)[0][4:]
    assert [t.row() for t in resumed.task_records] == [t.row() for t in full.task_records[4 * 5:]]
    assert numbers(resumed)[1:] == numbers(full)[1:]      # accuracy matrix and whole-run summary


def test_bytes_are_float32_payload_of_task_modules():
    res = run(preset("smoke", FAST))
    per_task = res.summary["trainable_params_per_task"]
    first = res.records[0]
    # smoke: group norm (no buffers), 3 clients, all report: each message = 4 bytes/param
    assert first["bytes_down"] == 3 * 4 * per_task
    assert first["bytes_up"] == 3 * 4 * per_task


def test_evaluation_counts_are_the_same_at_every_batch_size_and_layout():
    """The evaluation knobs (eval.batch_size, NHWC batches) change how fast, not the counts:
    a model trained 5 rounds evaluates identically at batch 7 / 64 / 1024, NCHW or NHWC."""
    import contextlib

    from fcl.engine import evaluate, prepare_data
    cfg = preset("smoke", {**FAST, "run.precision": "fp32", "run.device": "cpu"})
    data = prepare_data(cfg)
    model = build_model(cfg.model, data.image_shape, data.classes_per_task(), cfg.seed)
    res = run(cfg, data=data, model=model)
    ref = evaluate(model, data, 1024)
    assert torch.equal(ref, res.accuracy[:, -1])
    assert ref.max() > 70.0                  # trained: not a model at chance
    for batch in (7, 64, 1024):
        for nhwc in (False, True):
            got = evaluate(model, data, batch, contextlib.nullcontext, nhwc)
            assert torch.equal(got, ref), (batch, nhwc)


def test_auto_eval_batch_is_resolved_for_the_device_and_keeps_the_numbers():
    from fcl.compute_mode import eval_batch_size
    from fcl.engine import model_activation_bytes, start
    auto = preset("smoke", {**FAST, "eval.batch_size": "auto", "run.device": "cpu"})
    plan, _ = start(auto)
    per_image = model_activation_bytes(plan.model, plan.data)
    assert auto.eval.batch_size == 0 and plan.eval_batch == eval_batch_size(
        0, torch.device("cpu"), lambda: per_image) < 1024
    assert plan.model.training                      # the measuring pass left the mode as it was
    assert numbers(run(auto)) == numbers(run(preset("smoke", {**FAST, "run.device": "cpu"})))
