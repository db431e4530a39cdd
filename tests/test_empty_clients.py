"""Clients that hold no sample of their task (issue 21, item 5): the config the issue found,
`data.partition=dirichlet data.alpha=0.01 data.num_clients=100 data.min_client_samples=0`
(about 90 of 100 clients empty per task), at a size that runs in about a second.

What the engine does (fcl.engine.holding_data): such a client is like a straggler. It was
sampled and received the broadcast (counted in bytes_down); it trains nothing and sends
nothing (no report, no bytes_up, no drift, no loss); a task none of whose sampled clients hold
data gets no server update that round (its state, optimizer moments included, unchanged).
"""
import pytest
import torch

from fcl.engine import prepare_data, run
from fcl.federated.aggregate import mean_of_deltas, weighted_mean
from fcl.federated.participation import participation
from fcl.federated.task_schedule import task_schedule
from fcl.presets import preset

ISSUE = {"data.partition": "dirichlet", "data.alpha": 0.01, "data.num_clients": 100,
         "data.min_client_samples": 0}
SMALL = {"rounds": 5, "data.train_per_class": 60, "data.test_per_class": 10, "model.width": 8,
         "client.local_epochs": 1, "participation.fraction": 0.2, "server.optimizer": "fedadam",
         "run.threads": 1}


@pytest.fixture(scope="module")
def data():
    return prepare_data(preset("smoke", {**ISSUE, **SMALL}))


def who_has_data(cfg, data, r):
    """Per task: (sampled clients, the reporting ones that hold samples of it) in round r."""
    part = participation(r, 100, cfg.participation, cfg.seed)
    tasks_of = task_schedule(cfg.schedule.order, 5, 100, cfg.rounds, cfg.seed)[r].tolist()
    out = {}
    for c in part.sampled:
        sampled, holding = out.setdefault(tasks_of[c], ([], []))
        sampled.append(c)
        if c in part.reporting and len(data.tasks[tasks_of[c]].shards[c]):
            holding.append(c)
    return out


def flat(ts):
    """A task's server state as a list: params, buffers, FedAdam's moments and step count."""
    return [*ts.params.values(), *ts.buffers.values(), *ts.opt.m.values(), *ts.opt.v.values(),
            torch.tensor(ts.opt.steps)]


@pytest.mark.parametrize("batching", [False, True])
def test_issue_config_finishes_and_tasks_without_data_keep_their_state(data, batching):
    cfg = preset("smoke", {**ISSUE, **SMALL, "run.client_batching": batching})
    assert min(sum(len(s) == 0 for s in td.shards) for td in data.tasks) >= 80
    states = []
    res = run(cfg, data=data, on_round=lambda rec, st: states.append(st))     # used to raise
    per_param = 4 * res.summary["trainable_params_per_task"]    # float32, group norm: no buffers
    skipped = mixed = 0
    for r, rec in enumerate(res.records):
        tasks = who_has_data(cfg, data, r)
        reporting = sum(len(h) for _, h in tasks.values())
        assert rec["clients_sampled"] == sum(len(s) for s, _ in tasks.values())
        assert rec["clients_reporting"] == reporting
        assert rec["tasks_trained"] == tuple(sorted(t for t, (_, h) in tasks.items() if h))
        assert rec["bytes_down"] == rec["clients_sampled"] * per_param
        assert rec["bytes_up"] == reporting * per_param           # empty clients sent nothing
        assert (rec["drift"] == rec["drift"]) == (reporting > 0)  # NaN: nobody reported
        for t in range(5):
            sampled, holding = tasks.get(t, ([], []))
            assert res.records[r].tasks[t].reports == len(holding)
            if sampled and not holding:
                skipped += 1
                before = flat(states[r - 1].tasks[t]) if r else None
                if before is not None:
                    assert all(torch.equal(a, b) for a, b in zip(before, flat(states[r].tasks[t])))
            mixed += bool(holding) and len(holding) < len(sampled)
    assert skipped >= 3 and mixed >= 3           # both cases happen at this config
    assert res.summary["rounds"] == 5 and res.summary["samples"] > 0


def test_the_mean_of_reports_without_samples_is_an_error_not_a_division_by_zero():
    deltas = [{"w": torch.ones(2)}, {"w": torch.zeros(2)}]
    assert torch.equal(mean_of_deltas(deltas, [3, 1])["w"], torch.full((2,), 0.75))
    for f in (mean_of_deltas, weighted_mean):
        with pytest.raises(ValueError, match="no samples"):
            f(deltas, [0, 0])
