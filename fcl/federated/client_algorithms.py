"""Client-side drift correction: how a client's local step departs from plain SGD.

Each algorithm is a gradient correction that `fcl.federated.client.local_train` applies after
autograd and before its SGD step (so weight decay and momentum act on the corrected gradient, as
they would on a loss that held the extra term):

    sgd       g                        FedAvg's client
    fedprox   g + mu (w - w_server)    the gradient of loss + mu/2 ||w - w_server||^2 (Li et al.
                                       2020) over the trainable tensors of the task module the
                                       client trains (its head included); w_server is the state
                                       the client received. The recorded train loss stays the
                                       task loss, comparable across algorithms.
    scaffold  g - c_i + c              Karimireddy et al. 2020, Algorithm 1

SCAFFOLD's control variates are kept per task: c_t with the task's server state, c_{i,t} per
client and task (`RunState.client_control`; missing means zero, the initial value). After K
local steps at learning rate eta (K = the minibatch steps the client took over all its epochs),
option II of the paper:

    c_i+ = c_i - c + (x - y_i) / (K eta),   so   Delta c_i = c_i+ - c_i = -c - Delta y_i / (K eta)

with x the state the client received and Delta y_i = y_i - x its delta. The client sends Delta c_i
with its delta; the server adds the mean change over all N clients, c <- c + (1/N) sum_i Delta c_i
(clients that trained another task this round, and stragglers, contribute no change and keep their
c_i), so c stays the mean of the c_i. Delta c_i goes through the codec of the delta (quantized when
`compression.bits` < 32) and the client applies the decoded change to its own c_i, so client and
server agree exactly. The server sends c with the state (the downlink is (x, c)); both directions
are counted in the bytes. Under plain SGD, (x - y_i) / (K eta) is the mean corrected gradient, so
c_i+ is the mean of the client's raw minibatch gradients over the round.

The server optimizer sees the same pseudo-gradient (the mean delta) whatever the client does, so
any algorithm composes with any server optimizer, task order and adapter.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from fcl.config import ClientConfig
from fcl.models.task_state import Params

# (grads, live params) -> corrected grads; all lists in the order of the trainable names
Correction = Callable[[list[torch.Tensor], list[torch.Tensor]], list[torch.Tensor]]


def proximal(mu: float, start: list[torch.Tensor]) -> Correction:
    """FedProx: g + mu (w - w_server). Applied as written even at mu = 0 (adds exact zeros)."""
    @torch.no_grad()
    def correct(grads, params):
        return torch._foreach_add(grads, torch._foreach_sub(params, start), alpha=mu)
    return correct


def control_shift(c_minus_ci: list[torch.Tensor]) -> Correction:
    """SCAFFOLD: g + (c - c_i), the shift fixed for the whole round."""
    @torch.no_grad()
    def correct(grads, params):
        return torch._foreach_add(grads, c_minus_ci)
    return correct


@dataclass(frozen=True)
class ClientAlgorithm:
    control_variates: bool          # SCAFFOLD: c and c_i kept per task, Delta c_i sent up
    correction: Callable[[ClientConfig, list[torch.Tensor], list[torch.Tensor]],
                         Correction | None]   # (cfg, start params, c - c_i) -> correction


ALGORITHMS: dict[str, ClientAlgorithm] = {
    "sgd": ClientAlgorithm(False, lambda cfg, start, shift: None),
    "fedprox": ClientAlgorithm(False, lambda cfg, start, shift: proximal(cfg.prox_mu, start)),
    "scaffold": ClientAlgorithm(True, lambda cfg, start, shift: control_shift(shift)),
}


def local_steps(num_samples: int, cfg: ClientConfig) -> int:
    """K of option II: the minibatch steps of `local_train` (ceil(|D_c| / B) per epoch)."""
    return cfg.local_epochs * math.ceil(num_samples / cfg.batch_size)


def zeros_like(params: Params) -> Params:
    return {n: torch.zeros_like(p) for n, p in params.items()}


def control_change(start: Params, end: Params, c: Params, steps: int, lr: float) -> Params:
    """Delta c_i = -c + (x - y_i) / (K eta) (option II), over the names of `c`."""
    scale = 1.0 / (steps * lr)
    return {n: (start[n] - end[n]) * scale - c[n] for n in c}


def server_control(c: Params, changes: list[Params], num_clients: int) -> Params:
    """c + (1/N) sum of the reported changes: the mean over all N clients, not the reporters."""
    out = {n: t.clone() for n, t in c.items()}
    for change in changes:
        for n, t in change.items():
            out[n].add_(t, alpha=1.0 / num_clients)
    return out
