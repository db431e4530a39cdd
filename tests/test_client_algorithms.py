"""Client-side drift correction: FedProx and SCAFFOLD by hand on tiny problems, and their
invariants in the engine (FedProx mu = 0 is SGD bit for bit; SCAFFOLD's first round is FedAvg's;
c stays the mean of the c_i; stragglers keep their c_i; control-variate bytes are counted)."""
from dataclasses import fields

import pytest
import torch

from fcl.config import ClientConfig, ServerConfig
from fcl.engine import run
from fcl.federated import server_opt
from fcl.federated.aggregate import pseudo_gradient
from fcl.federated.client import epoch_batches, sgd_step_
from fcl.federated.client_algorithms import (ALGORITHMS, control_change, control_shift,
                                             local_steps, proximal, server_control)
from fcl.federated.compression import encoder, float32_nbytes
from fcl.federated.participation import participation
from fcl.presets import preset

FAST = {"rounds": 5, "data.train_per_class": 40, "data.test_per_class": 10, "model.width": 8,
        "client.batch_size": 16}


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models: one torch thread is faster than two on a shared 2-core machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_registry_matches_the_config_choices():
    choices = {f.name: f.metadata["choices"] for f in fields(ClientConfig)}["algorithm"]
    assert set(ALGORITHMS) == set(choices)
    assert [n for n, a in ALGORITHMS.items() if a.control_variates] == ["scaffold"]


def test_fedprox_gradient_by_hand():
    # g = [1, -2], w = [0.5, 0.5], w_server = [0.25, 1.0], mu = 0.1:
    # g + mu (w - w_server) = [1 + 0.025, -2 - 0.05]
    correct = proximal(0.1, [torch.tensor([0.25, 1.0])])
    out = correct([torch.tensor([1.0, -2.0])], [torch.tensor([0.5, 0.5])])
    assert torch.allclose(out[0], torch.tensor([1.025, -2.05]))


def scaffold_client(grad_fn, w0: float, c: float, c_i: float, steps: int, lr: float):
    """SCAFFOLD's local loop with the module's pieces, on a scalar parameter."""
    cfg = ClientConfig(lr=lr)
    w = [torch.tensor([w0], dtype=torch.float64)]
    correct = control_shift([torch.tensor([c - c_i], dtype=torch.float64)])
    for _ in range(steps):
        sgd_step_(w, correct([grad_fn(w[0])], w), [], cfg)
    start = {"w": torch.tensor([w0], dtype=torch.float64)}
    change = control_change(start, {"w": w[0]}, {"w": torch.tensor([c], dtype=torch.float64)},
                            steps, lr)
    return w[0] - w0, change["w"]


def test_one_scaffold_round_on_a_quadratic_by_hand():
    """f_1 = (w - 1)^2 / 2 (g = w - 1), f_2 = (w + 1)^2 (g = 2 (w + 1)); x = 0, eta = 0.1, K = 2,
    c_1 = 0.2, c_2 = -0.4, c = -0.1 (their mean), N = 2, FedAvg on the server.
    Client 1, shift c - c_1 = -0.3: w = 0 - 0.1 (-1 - 0.3) = 0.13;
        w = 0.13 - 0.1 (-0.87 - 0.3) = 0.247.   c_1+ = 0.2 + 0.1 - 0.247 / 0.2 = -0.935
        (the mean raw gradient (-1 - 0.87) / 2), so Delta c_1 = -1.135.
    Client 2, shift 0.3: w = -0.1 (2 + 0.3) = -0.23; w = -0.23 - 0.1 (1.54 + 0.3) = -0.414.
        c_2+ = (2 + 1.54) / 2 = 1.77, Delta c_2 = 2.17.
    Server: x = (0.247 - 0.414) / 2 = -0.0835; c = -0.1 + (-1.135 + 2.17) / 2 = 0.4175 =
    the mean of c_1+ and c_2+."""
    dy1, dc1 = scaffold_client(lambda w: w - 1, 0.0, -0.1, 0.2, 2, 0.1)
    dy2, dc2 = scaffold_client(lambda w: 2 * (w + 1), 0.0, -0.1, -0.4, 2, 0.1)
    assert dy1.item() == pytest.approx(0.247) and dc1.item() == pytest.approx(-1.135)
    assert dy2.item() == pytest.approx(-0.414) and dc2.item() == pytest.approx(2.17)
    grad = pseudo_gradient([{"w": dy1}, {"w": dy2}], [1, 1], "mean")
    cfg = ServerConfig(optimizer="fedsgd", lr=1.0)
    x0 = {"w": torch.zeros(1, dtype=torch.float64)}
    x, _ = server_opt.step(x0, grad, server_opt.init(x0, cfg), cfg)
    c = server_control({"w": torch.tensor([-0.1], dtype=torch.float64)},
                       [{"w": dc1}, {"w": dc2}], num_clients=2)
    assert x["w"].item() == pytest.approx(-0.0835)
    assert c["w"].item() == pytest.approx(0.4175)
    # client 2 straggles: its c_2 stays -0.4, and c still divides by N = 2, not by 1
    c = server_control({"w": torch.tensor([-0.1], dtype=torch.float64)}, [{"w": dc1}], 2)
    assert c["w"].item() == pytest.approx(-0.1 - 1.135 / 2)
    assert c["w"].item() == pytest.approx((-0.935 + -0.4) / 2)


def test_local_steps_counts_the_batches_local_train_takes():
    cfg = ClientConfig(batch_size=8, local_epochs=3)
    shard = torch.arange(27)
    batches = len(epoch_batches(shard, cfg.batch_size, torch.Generator().manual_seed(0)))
    assert local_steps(len(shard), cfg) == cfg.local_epochs * batches == 12


def run_states(overrides):
    states = []
    res = run(preset("smoke", {**FAST, **overrides}), on_round=lambda rec, st: states.append(st))
    return res, states


@pytest.fixture(scope="module")
def sgd_run():
    return run_states({"client.algorithm": "sgd"})


def same_params(a, b) -> bool:
    return all(torch.equal(x.params[n], y.params[n]) for x, y in zip(a.tasks, b.tasks)
               for n in x.params)


def test_fedprox_mu_zero_is_sgd_bit_for_bit(sgd_run):
    sgd, sgd_states = sgd_run
    prox, prox_states = run_states({"client.algorithm": "fedprox", "client.prox_mu": 0.0})
    assert all(same_params(a, b) for a, b in zip(sgd_states, prox_states))
    assert torch.equal(sgd.accuracy.nan_to_num(-1), prox.accuracy.nan_to_num(-1))
    strong, strong_states = run_states({"client.algorithm": "fedprox", "client.prox_mu": 5.0})
    assert not same_params(sgd_states[0], strong_states[0])
    # the proximal term pulls the client towards the server state: less drift in round 0
    assert strong.records[0]["drift"] < sgd.records[0]["drift"]


@pytest.fixture(scope="module")
def scaffold_run():
    return run_states({"client.algorithm": "scaffold"})


def test_scaffold_first_round_is_fedavg_and_bytes_double(sgd_run, scaffold_run):
    sgd, sgd_states = sgd_run
    scaf, scaf_states = scaffold_run
    assert same_params(sgd_states[0], scaf_states[0])        # c = c_i = 0 in round 0
    assert not same_params(sgd_states[1], scaf_states[1])    # c != 0 from round 1 on
    assert scaf.accuracy[:, 0].tolist() == sgd.accuracy[:, 0].tolist()
    # group norm, no buffers: Delta c_i has the delta's shapes, c the state's
    for a, b in zip(scaf.records, sgd.records):
        assert a["bytes_up"] == 2 * b["bytes_up"] and a["bytes_down"] == 2 * b["bytes_down"]
    assert scaf.summary["tcc_bytes"] == 2 * sgd.summary["tcc_bytes"]
    assert any(v.abs().sum() > 0 for cc in scaf_states[0].algorithm.clients.values()
               for v in cc.values())


def test_scaffold_c_is_the_mean_of_all_c_i_and_stragglers_keep_theirs():
    overrides = {"client.algorithm": "scaffold", "participation.straggler_prob": 0.4,
                 "server.optimizer": "fedadam"}
    cfg = preset("smoke", {**FAST, **overrides})
    res, states = run_states(overrides)
    N = cfg.data.num_clients
    silent = 0
    for r, st in enumerate(states):
        part = participation(r, N, cfg.participation, cfg.seed)
        before = states[r - 1].algorithm.clients if r else {}
        for (client, task), c_i in st.algorithm.clients.items():
            if client not in part.reporting:               # did not train this round
                silent += 1
                assert all(torch.equal(c_i[n], before[(client, task)][n]) for n in c_i)
        for t, control in enumerate(st.algorithm.server):
            mean = {n: sum((st.algorithm.clients[(i, t)][n] for i in range(N)
                            if (i, t) in st.algorithm.clients), torch.zeros_like(v)) / N
                    for n, v in control.items()}
            for n in control:
                assert torch.allclose(control[n], mean[n], atol=1e-6), (r, t, n)
    assert silent > 0
    assert any(r["clients_reporting"] < r["clients_sampled"] for r in res.records)


def test_scaffold_resumes_exactly_from_a_snapshot(scaffold_run):
    full, states = scaffold_run
    cfg = preset("smoke", {**FAST, "client.algorithm": "scaffold"})
    last = []
    resumed = run(cfg, resume=states[1], on_round=lambda rec, st: last.append(st))
    assert torch.equal(resumed.accuracy.nan_to_num(-1), full.accuracy.nan_to_num(-1))
    end = states[-1]
    assert same_params(last[-1], end)
    assert all(torch.equal(a[n], b[n]) for a, b in zip(last[-1].algorithm.server,
                                                       end.algorithm.server) for n in a)
    assert set(last[-1].algorithm.clients) == set(end.algorithm.clients)
    for key, c_i in end.algorithm.clients.items():
        assert all(torch.equal(c_i[n], last[-1].algorithm.clients[key][n]) for n in c_i)


def test_scaffold_control_change_is_quantized_like_the_delta():
    scaf, states = run_states({"client.algorithm": "scaffold", "compression.bits": 2})
    # smoke: 3 clients, binary tasks (one module shape), all report: each sends the 2-bit delta
    # and the 2-bit Delta c_i, each as large as the 2-bit state
    module = encoder(2)(states[0].tasks[0].params).nbytes
    assert scaf.records[0]["bytes_up"] == 3 * 2 * module == scaf.records[0]["bytes_down"]
    assert module < float32_nbytes(states[0].tasks[0].params) / 2        # quantized
    # after round 0, c_i = 0 + the decoded 2-bit change: at most 4 values per output channel
    quantized = [t for c_i in states[0].algorithm.clients.values() for t in c_i.values()
                 if t.dim() >= 2]
    assert quantized
    for t in quantized:
        assert max(len(row.unique()) for row in t.reshape(t.shape[0], -1)) <= 4
