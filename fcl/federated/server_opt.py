"""Server optimizers of the FedOpt family (Reddi et al. 2021; FCL paper Eqs. 7-9, Table 1).

Sign convention: the pseudo-gradient `g` is the aggregated client delta
(client end state - server start state), so the server moves *along* it:

    fedsgd:  x <- x + eta * g                      (eta = 1 and momentum 0: exactly FedAvg)
    adaptive: m <- beta1 m + (1 - beta1) g
              v <- second_moment(v, g^2)            (Table 1; v starts at 0)
              x <- x + eta * m / (sqrt(v) + tau)

With `bias_correction`, m is divided by (1 - beta1^s) and v (Adam, Yogi) by (1 - beta2^s),
s = the number of updates this task has received. `server_optimizer(cfg)` resolves the keys
once per run into pure functions `init(params) -> state` and `step(params, grad, state) ->
(params, state)`; the state holds m, v and s of one task.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Callable

import torch

from fcl.models.task_state import Params

if TYPE_CHECKING:
    from fcl.config import ServerConfig


@dataclass(frozen=True)
class OptState:
    m: Params            # first moment (fedsgd: momentum buffer, only used if momentum > 0)
    v: Params            # second moment (empty for fedsgd)
    steps: int = 0


def adam_v(v: torch.Tensor, g2: torch.Tensor, beta2: float) -> torch.Tensor:
    return beta2 * v + (1 - beta2) * g2


def adagrad_v(v: torch.Tensor, g2: torch.Tensor, beta2: float) -> torch.Tensor:
    return v + g2


def yogi_v(v: torch.Tensor, g2: torch.Tensor, beta2: float) -> torch.Tensor:
    return v - (1 - beta2) * g2 * torch.sign(v - g2)


SECOND_MOMENTS: dict[str, Callable] = {"fedadam": adam_v, "fedadagrad": adagrad_v,
                                       "fedyogi": yogi_v}
OPTIMIZERS = ("fedsgd", *SECOND_MOMENTS)
_DECAYS_V = {"fedadam", "fedyogi"}   # v is an exponential average only for these


@dataclass(frozen=True)
class ServerOptimizer:
    """`server.*` resolved once per run: `init(params)` and `step(params, grad, state)`."""
    init: Callable[[Params], OptState]
    step: Callable[[Params, Params, OptState], tuple[Params, OptState]]


def server_optimizer(cfg: ServerConfig) -> ServerOptimizer:
    if cfg.optimizer == "fedsgd":
        return ServerOptimizer(partial(_sgd_init, momentum=cfg.momentum),
                               partial(_sgd_step, lr=cfg.lr, momentum=cfg.momentum))
    return ServerOptimizer(_adaptive_init, partial(
        _adaptive_step, second_moment=SECOND_MOMENTS[cfg.optimizer], lr=cfg.lr,
        beta1=cfg.beta1, beta2=cfg.beta2, tau=cfg.tau, bias_correction=cfg.bias_correction,
        decays_v=cfg.optimizer in _DECAYS_V))


def init(params: Params, cfg: ServerConfig) -> OptState:
    return server_optimizer(cfg).init(params)


def step(params: Params, grad: Params, state: OptState, cfg: ServerConfig
         ) -> tuple[Params, OptState]:
    return server_optimizer(cfg).step(params, grad, state)


def _sgd_init(params: Params, momentum: float) -> OptState:
    return OptState(m={n: torch.zeros_like(p) for n, p in params.items()} if momentum > 0
                    else {}, v={})


def _sgd_step(params: Params, grad: Params, state: OptState, lr: float, momentum: float
              ) -> tuple[Params, OptState]:
    s = state.steps + 1
    if momentum > 0:
        m = {n: momentum * state.m[n] + grad[n] for n in params}
        return {n: params[n] + lr * m[n] for n in params}, OptState(m, {}, s)
    return {n: params[n] + lr * grad[n] for n in params}, OptState({}, {}, s)


def _adaptive_init(params: Params) -> OptState:
    return OptState(m={n: torch.zeros_like(p) for n, p in params.items()},
                    v={n: torch.zeros_like(p) for n, p in params.items()})


def _adaptive_step(params: Params, grad: Params, state: OptState, second_moment: Callable,
                   lr: float, beta1: float, beta2: float, tau: float, bias_correction: bool,
                   decays_v: bool) -> tuple[Params, OptState]:
    s = state.steps + 1
    m = {n: beta1 * state.m[n] + (1 - beta1) * grad[n] for n in params}
    v = {n: second_moment(state.v[n], grad[n] * grad[n], beta2) for n in params}
    m_scale, v_scale = 1.0, 1.0
    if bias_correction:
        m_scale = 1.0 / (1 - beta1 ** s)
        if decays_v:
            v_scale = 1.0 / (1 - beta2 ** s)
    new = {n: params[n] + lr * (m[n] * m_scale) / ((v[n] * v_scale).clamp_min(0).sqrt() + tau)
           for n in params}
    return new, OptState(m, v, s)
