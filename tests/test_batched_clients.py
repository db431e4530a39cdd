"""Batched clients (run.client_batching) against the sequential reference, `local_train`."""
import dataclasses

import pytest
import torch

from fcl.engine import run
from fcl.federated.batched_clients import StepShape, batched_updates, step_shapes, train_group
from fcl.federated.client import TaskNames, Trainer, local_train
from fcl.federated.client_algorithms import ALGORITHMS
from fcl.models.factory import build_model
from fcl.models.task_state import buffer_names, read_state, trainable_names
from fcl.presets import preset
from fcl.seeding import generator
from synthetic import SMALL, one_thread, synthetic_data  # noqa: F401  (one_thread: a fixture)
from synthetic import adapter as small

pytestmark = pytest.mark.usefixtures("one_thread")

SIZES = [27, 27, 26, 40, 9]            # batch 16: steps per epoch 2, 2, 2, 3, 1


def sequential_and_batched(adapter: str, augment: bool = False):
    cfg = preset("smoke", small(adapter))
    data = dataclasses.replace(synthetic_data(SIZES), augment=augment)
    model = build_model(cfg.model, data.image_shape, data.classes_per_task(), 0)
    trainable, buffers = trainable_names(model.tasks[0]), buffer_names(model.tasks[0])
    start = read_state(model.tasks[0], trainable + buffers)
    with torch.no_grad():       # LoRA's up factor starts at zero: move off it
        for n in trainable:
            start[n] += 0.01 * torch.randn(start[n].shape, generator=torch.Generator()
                                           .manual_seed(1))
    group = [0, 1, 2, 3, 4]            # unequal steps per epoch: 2, 2, 2, 3, 1
    trainer = Trainer(model, data, cfg.client)
    seq = [local_train(trainer, 0, c, start, TaskNames(trainable, buffers),
                       generator(0, "batches", 3, c)) for c in group]
    bat = train_group(trainer, 0, group, [start] * 5, trainable,
                      [generator(0, "batches", 3, c) for c in group])
    return start, seq, bat, model


@pytest.mark.parametrize("adapter,augment", [("nettailor", False), ("lora", False),
                                             ("full", False), ("fedpara", False),
                                             ("nettailor", True)])
def test_batched_clients_give_the_sequential_deltas(adapter, augment):
    start, seq, bat, _ = sequential_and_batched(adapter, augment)
    for s, b in zip(seq, bat):
        assert (s.client, s.task, s.num_samples) == (b.client, b.task, b.num_samples)
        moved = max(float((s.end[n] - start[n]).abs().max()) for n in b.end)
        assert moved > 1e-3                                  # the clients did train
        for n in b.end:
            assert torch.allclose(b.end[n] - start[n], s.end[n] - start[n], atol=1e-5, rtol=0), n
        assert float(b.drift) == pytest.approx(float(s.drift), rel=1e-4)   # sums of 1e5 squares
        assert float(b.loss) == pytest.approx(float(s.loss), rel=1e-4)


def test_batched_fedprox_gives_the_sequential_deltas():
    cfg = preset("smoke", {**SMALL, "client.algorithm": "fedprox", "client.prox_mu": 0.5})
    data = synthetic_data(SIZES)
    model = build_model(cfg.model, data.image_shape, data.classes_per_task(), 0)
    trainable = trainable_names(model.tasks[0])
    start = read_state(model.tasks[0], trainable)
    prox = lambda: ALGORITHMS["fedprox"].correction(cfg.client, [start[n] for n in trainable],  # noqa: E731
                                                    [])
    trainer = Trainer(model, data, cfg.client)
    seq = [local_train(trainer, 0, c, start, TaskNames(trainable, []),
                       generator(0, "batches", 3, c), prox()) for c in (0, 1, 2)]
    bat = train_group(trainer, 0, [0, 1, 2], [start] * 3, trainable,
                      [generator(0, "batches", 3, c) for c in (0, 1, 2)], ALGORITHMS["fedprox"])
    plain = train_group(Trainer(model, data, preset("smoke", SMALL).client), 0, [0, 1, 2],
                        [start] * 3, trainable,
                        [generator(0, "batches", 3, c) for c in (0, 1, 2)])
    for s, b, p in zip(seq, bat, plain):
        for n in trainable:
            assert torch.allclose(b.end[n], s.end[n], atol=1e-5, rtol=0), n
        assert any(not torch.allclose(b.end[n], p.end[n], atol=1e-4) for n in trainable)


def test_steps_run_on_the_prefix_of_clients_still_training():
    # sizes sorted by steps per epoch (batch 16): 3, 2, 2, 2, 1
    assert step_shapes([40, 27, 27, 26, 9], 16) == [
        StepShape(5, 16, (16, 16, 16, 16, 9)),
        StepShape(4, 16, (16, 11, 11, 10)),
        StepShape(1, 8, (8,)),
    ]
    assert step_shapes([9, 7], 64) == [StepShape(2, 9, (9, 7))]


def test_engine_batches_a_task_and_leaves_batchnorm_and_lone_clients_to_local_train():
    data = synthetic_data(SIZES)
    for norm, expected in (("group", {0, 1, 2, 3}), ("batch", set())):
        cfg = preset("smoke", {**SMALL, "data.num_tasks": 1, "model.norm": norm,
                               "run.client_batching": True})
        model = build_model(cfg.model, data.image_shape, data.classes_per_task(), 0)
        names = [TaskNames(trainable_names(m), buffer_names(m)) for m in model.tasks]
        start = read_state(model.tasks[0], names[0].trainable + names[0].buffers)
        ups = batched_updates(Trainer(model, data, cfg.client), ALGORITHMS["sgd"], 0, 0,
                              {0: [0, 1, 2, 3], 1: [4]}, {0: start, 1: start}, names)
        assert set(ups) == expected             # client 4, alone on its task: local_train
    scaffold = batched_updates(Trainer(model, data, cfg.client), ALGORITHMS["scaffold"], 0, 0,
                               {0: [0, 1, 2, 3]}, {0: start}, names)
    assert scaffold == {}                       # per-client control variates: one by one


def test_batched_run_matches_the_sequential_run():
    base = {**SMALL, "data.num_tasks": 1, "rounds": 3, "server.optimizer": "fedsgd",
            "server.lr": 1.0, "eval.every": 3}
    data = synthetic_data([20, 20, 20])
    states, records = {}, {}
    for batching in (False, True):
        cfg = preset("smoke", {**base, "run.client_batching": batching})
        res = run(cfg, data=data, on_round=lambda rec, st, b=batching: states.__setitem__(b, st))
        records[batching] = res.records
    for a, b in zip(records[False], records[True]):
        assert b["train_loss"] == pytest.approx(a["train_loss"], rel=1e-4)
        assert b["drift"] == pytest.approx(a["drift"], rel=1e-4)
        assert b["bytes_up"] == a["bytes_up"]
    for n, v in states[False].tasks[0].params.items():
        assert torch.allclose(states[True].tasks[0].params[n], v, atol=1e-5), n


@pytest.mark.parametrize("adapter", ["nettailor", "lora", "full"])
def test_frozen_parameters_never_get_a_grad(adapter):
    data = synthetic_data([20, 20, 20])
    cfg = preset("smoke", {**small(adapter), "data.num_tasks": 1, "rounds": 1})
    model = build_model(cfg.model, data.image_shape, data.classes_per_task(), 0)
    frozen = list(model.backbone.parameters())
    assert frozen and not any(p.requires_grad for p in frozen)
    for batching in (False, True):          # one by one, then the three clients batched
        run(preset("smoke", {**small(adapter), "data.num_tasks": 1,
                             "rounds": 1, "run.client_batching": batching}),
            data=data, model=model)
    assert not any(p.requires_grad for p in frozen)
    assert all(p.grad is None for p in model.parameters())   # autograd.grad, never .backward
