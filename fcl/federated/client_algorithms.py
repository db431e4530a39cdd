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

SCAFFOLD's control variates are kept per task: c_t beside the task's server state, c_{i,t} per
client and task (`Controls`, the plug-in's state in `RunState.algorithm`; a missing c_i means
zero, the initial value). After K
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
from typing import TYPE_CHECKING, Any, Callable

import torch

from fcl.models.task_state import Params

if TYPE_CHECKING:
    from fcl.config import ClientConfig

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


class ClientAlgorithm:
    """A client algorithm as a plug-in: its gradient correction, and the state and messages it
    keeps beside the server state. This base is plain local SGD (FedAvg's client): no state,
    no extra message, the raw gradient. The engine passes every extra message through the run's
    codec (so it is counted and quantized like the rest) and keeps the state in `RunState`.

        init(task_params)                          -> state
        downlink(state, task)                      -> what the server sends with a task's state
        shift(state, client, task, down)           -> the fixed gradient shift of a client's round
        correction(cfg, start, shift)              -> the per-step correction (None: plain SGD)
        uplink(cfg, state, client, task, start, end, samples, down) -> what the client sends
        client_update(state, client, task, sent)   -> state after the client applied its message
        server_update(state, task, sent, clients)  -> state after the server took the messages
    """
    control_variates = False     # per-client state: its clients cannot be batched

    def init(self, task_params: list[Params]) -> Any:
        return None

    def downlink(self, state: Any, task: int) -> Params:
        return {}

    def shift(self, state: Any, client: int, task: int, down: Params) -> list[torch.Tensor] | None:
        return None

    def correction(self, cfg: ClientConfig, start: list[torch.Tensor],
                   shift: list[torch.Tensor] | None) -> Correction | None:
        return None

    def uplink(self, cfg: ClientConfig, state: Any, client: int, task: int, start: Params,
               end: Params, samples: int, down: Params) -> Params:
        return {}

    def client_update(self, state: Any, client: int, task: int, sent: Params) -> Any:
        return state

    def server_update(self, state: Any, task: int, sent: list[Params], num_clients: int) -> Any:
        return state


class FedProx(ClientAlgorithm):
    def correction(self, cfg, start, shift):
        return proximal(cfg.prox_mu, start)


@dataclass(frozen=True)
class Controls:
    """SCAFFOLD's state: c per task (the server's) and c_i per (client, task) trained so far
    (missing = zero, the initial c_i)."""
    server: tuple[Params, ...]
    clients: dict[tuple[int, int], Params]


class Scaffold(ClientAlgorithm):
    control_variates = True

    def init(self, task_params):
        return Controls(tuple(zeros_like(p) for p in task_params), {})

    def downlink(self, state, task):
        return state.server[task]

    def _own(self, state: Controls, client: int, task: int, down: Params) -> Params:
        return state.clients.get((client, task)) or zeros_like(down)

    def shift(self, state, client, task, down):
        own = self._own(state, client, task, down)
        return [down[n] - own[n] for n in down]                         # c - c_i

    def correction(self, cfg, start, shift):
        return control_shift(shift)

    def uplink(self, cfg, state, client, task, start, end, samples, down):
        return control_change(start, end, down, local_steps(samples, cfg), cfg.lr)

    def client_update(self, state, client, task, sent):
        own = self._own(state, client, task, sent)
        return Controls(state.server, {**state.clients,
                                       (client, task): {n: own[n] + sent[n] for n in sent}})

    def server_update(self, state, task, sent, num_clients):
        server = list(state.server)
        server[task] = server_control(server[task], sent, num_clients)
        return Controls(tuple(server), state.clients)


ALGORITHMS: dict[str, ClientAlgorithm] = {
    "sgd": ClientAlgorithm(),
    "fedprox": FedProx(),
    "scaffold": Scaffold(),
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
