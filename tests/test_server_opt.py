"""FedOpt steps worked by hand, and the contract over every registered optimizer."""
import math

import pytest
import torch

from fcl.config import ServerConfig
from fcl.federated import server_opt
from fcl.federated.aggregate import pseudo_gradient


def cfg(name, **kw):
    return ServerConfig(optimizer=name, **kw)


def one(v):
    return {"w": torch.tensor([v], dtype=torch.float64)}


def test_fedadam_first_step_by_hand():
    # g = 1, beta1 = .9, beta2 = .99, tau = 1e-3, eta = .1: m = .1, v = .01,
    # step = .1 * .1 / (sqrt(.01) + .001) = .01 / .101 = 0.0990099
    c = cfg("fedadam", lr=0.1, beta1=0.9, beta2=0.99, tau=1e-3)
    params, state = server_opt.step(one(0.0), one(1.0), server_opt.init(one(0.0), c), c)
    assert state.m["w"].item() == pytest.approx(0.1)
    assert state.v["w"].item() == pytest.approx(0.01)
    assert params["w"].item() == pytest.approx(0.01 / 0.101, rel=1e-12)


def test_fedadam_second_step_by_hand():
    # after g = 1 then g = -2: m = .9*.1 - .1*2 = -.11; v = .99*.01 + .01*4 = .0499
    c = cfg("fedadam", lr=0.1, tau=1e-3)
    p, s = server_opt.step(one(0.0), one(1.0), server_opt.init(one(0.0), c), c)
    p, s = server_opt.step(p, one(-2.0), s, c)
    assert s.m["w"].item() == pytest.approx(-0.11)
    assert s.v["w"].item() == pytest.approx(0.0499)
    expected = 0.01 / 0.101 + 0.1 * -0.11 / (math.sqrt(0.0499) + 1e-3)
    assert p["w"].item() == pytest.approx(expected, rel=1e-12)


def test_fedadagrad_accumulates_squares():
    # v = 0 + 1 = 1 then 1 + 4 = 5; m = .1 then -.11 (beta1 = .9)
    c = cfg("fedadagrad", lr=1.0, tau=0.5)
    p, s = server_opt.step(one(0.0), one(1.0), server_opt.init(one(0.0), c), c)
    assert s.v["w"].item() == pytest.approx(1.0)
    assert p["w"].item() == pytest.approx(0.1 / (1.0 + 0.5))
    p2, s = server_opt.step(p, one(-2.0), s, c)
    assert s.v["w"].item() == pytest.approx(5.0)
    assert p2["w"].item() == pytest.approx(p["w"].item() - 0.11 / (math.sqrt(5) + 0.5))


def test_fedyogi_second_moment_by_hand():
    # v1 = 0 - .01 * 1 * sign(0 - 1) = .01; v2 = .01 - .01 * 4 * sign(.01 - 4) = .05
    c = cfg("fedyogi", lr=0.1, beta2=0.99)
    _, s = server_opt.step(one(0.0), one(1.0), server_opt.init(one(0.0), c), c)
    assert s.v["w"].item() == pytest.approx(0.01)
    _, s = server_opt.step(one(0.0), one(-2.0), s, c)
    assert s.v["w"].item() == pytest.approx(0.05)


def test_bias_correction_first_adam_step_is_sign_times_eta():
    # m_hat = g, v_hat = g^2: step = eta * g / (|g| + tau)
    c = cfg("fedadam", lr=0.5, tau=1e-3, bias_correction=True)
    p, _ = server_opt.step(one(0.0), one(0.02), server_opt.init(one(0.0), c), c)
    assert p["w"].item() == pytest.approx(0.5 * 0.02 / (0.02 + 1e-3))


def test_fedsgd_eta_one_is_fedavg_exactly():
    torch.manual_seed(0)
    server = {"a": torch.randn(3, 4), "b": torch.randn(5)}
    clients = [{n: t + torch.randn_like(t) for n, t in server.items()} for _ in range(3)]
    sizes = [10, 30, 60]
    fedavg = {n: sum(c[n] * s for c, s in zip(clients, sizes)) / sum(sizes) for n in server}
    deltas = [{n: c[n] - server[n] for n in server} for c in clients]
    c = cfg("fedsgd", lr=1.0)
    new, _ = server_opt.step(server, pseudo_gradient(deltas, sizes, "mean"),
                             server_opt.init(server, c), c)
    for n in server:
        torch.testing.assert_close(new[n], fedavg[n], rtol=0, atol=1e-6)


def test_sum_aggregation_adds_deltas():
    deltas = [one(1.0), one(2.0)]
    assert pseudo_gradient(deltas, [1, 3], "sum")["w"].item() == 3.0
    assert pseudo_gradient(deltas, [1, 3], "mean")["w"].item() == pytest.approx(1.75)


def test_fedsgd_momentum_by_hand():
    c = cfg("fedsgd", lr=1.0, momentum=0.5)
    p, s = server_opt.step(one(0.0), one(1.0), server_opt.init(one(0.0), c), c)
    p, s = server_opt.step(p, one(1.0), s, c)
    assert p["w"].item() == pytest.approx(1.0 + 1.5)


@pytest.mark.parametrize("name", server_opt.OPTIMIZERS)
@pytest.mark.parametrize("bias_correction", [False, True])
def test_zero_pseudo_gradient_leaves_params_unchanged(name, bias_correction):
    c = cfg(name, bias_correction=bias_correction)
    params = {"w": torch.randn(4, 3), "b": torch.randn(3)}
    state = server_opt.init(params, c)
    zero = {n: torch.zeros_like(t) for n, t in params.items()}
    new, state = server_opt.step(params, zero, state, c)
    for n in params:
        assert torch.equal(new[n], params[n])
    assert state.steps == 1


@pytest.mark.parametrize("name", server_opt.OPTIMIZERS)
def test_step_is_pure(name):
    c = cfg(name)
    params = {"w": torch.randn(3)}
    before = params["w"].clone()
    state = server_opt.init(params, c)
    server_opt.step(params, {"w": torch.ones(3)}, state, c)
    assert torch.equal(params["w"], before)
    assert all(torch.count_nonzero(t) == 0 for t in (*state.m.values(), *state.v.values()))
