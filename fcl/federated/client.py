"""One client's local update (FCL paper Eqs. 5-6): K epochs of SGD on its shard of its current
task, starting from the server state it received. A plain PyTorch loop: batches are cut by
slicing a device-side permutation, and nothing in the loop syncs with the host.

The loop itself (`train_epoch`, `local_epochs`) takes the method's loss and step as hooks, so
every sequential trainer runs it: `local_train` (the task modules' clients), FedWeIT's client
(`fcl.methods.fedweit.round`) and `fcl pretrain`. Clients batched with torch.func
(`fcl.federated.batched_clients`) run the same steps vmapped over clients, with padded batches:
a functional loop of their own, checked against this one (tests/test_batched_clients.py)."""
from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, ContextManager

import torch
import torch.nn.functional as F
from torch import nn

from fcl.data.federated import FederatedData
from fcl.federated.client_algorithms import Correction
from fcl.models.task_state import Params, live_tensors, load_state_, read_state

if TYPE_CHECKING:
    from fcl.config import ClientConfig


@dataclass(frozen=True)
class ClientUpdate:
    client: int
    task: int
    end: Params                 # trainable tensors and buffers after K epochs
    num_samples: int            # |D_c|: the shard size (the aggregation weight)
    drift: torch.Tensor         # sum over epochs k of ||P_k - P_0||^2 (Eq. 2 before 1/(KN))
    loss: torch.Tensor          # mean training loss over all steps


def epoch_batches(shard: torch.Tensor, batch_size: int, gen: torch.Generator):
    """Index batches of one epoch: a fresh permutation of the shard, cut in order."""
    perm = shard[torch.randperm(len(shard), generator=gen).to(shard.device)]
    return perm.split(batch_size)


@torch.no_grad()
def sgd_step_(params: list[torch.Tensor], grads: list[torch.Tensor],
              momentum_bufs: list[torch.Tensor], cfg: ClientConfig) -> None:
    """torch.optim.SGD's update (dampening 0, no Nesterov) with foreach ops. Written out because
    constructing torch.optim.SGD imports torch._dynamo, which costs ~3 s per process; the
    bufs list starts empty and is filled on the first step, as SGD does."""
    if cfg.weight_decay:
        grads = torch._foreach_add(grads, params, alpha=cfg.weight_decay)
    if cfg.momentum:
        if not momentum_bufs:
            momentum_bufs.extend(g.clone() for g in grads)
        else:
            torch._foreach_mul_(momentum_bufs, cfg.momentum)
            torch._foreach_add_(momentum_bufs, grads)
        grads = momentum_bufs
    torch._foreach_add_(params, grads, alpha=-cfg.lr)


@dataclass(frozen=True)
class TaskNames:
    """A task module's tensor names: trained (and stepped by the server) and float buffers."""
    trainable: list[str]
    buffers: list[str]


@dataclass(frozen=True)
class Trainer:
    """What every client of a run trains with: the model, the data on the device, `client.*`,
    and the context of every forward pass (`ComputeMode.forward_context`: bf16 autocast or
    nothing; the backward pass runs outside it)."""
    model: nn.Module
    data: FederatedData
    cfg: ClientConfig
    forward: Callable[[], ContextManager] = nullcontext


def train_epoch(data: FederatedData, task: int, shard: torch.Tensor, batch_size: int,
                gen: torch.Generator, augment: Callable, loss: Callable, params: list[torch.Tensor],
                step: Callable, loss_sum: torch.Tensor, fill_unused: bool = False) -> int:
    """One epoch of the client loop every trainer shares (fedjax's loop with hooks): the
    shard's batches in a fresh seeded order, each augmented and normalised, `loss(x, y)` (the
    method's loss, forward context included), its gradients w.r.t. `params` (`fill_unused`:
    zeros for a tensor the loss did not reach) and `step(params, grads)` (the optimizer, with a
    client algorithm's correction). Each batch's loss is added to `loss_sum` in place (one
    running sum over every epoch, as the records have always summed it); returns the steps."""
    td = data.tasks[task]
    steps = 0
    for idx in epoch_batches(shard, batch_size, gen):
        value = loss(data.normalise(augment(td.train_x[idx])), td.train_y[idx])
        grads = torch.autograd.grad(value, params, allow_unused=fill_unused)
        if fill_unused:
            grads = [torch.zeros_like(p) if g is None else g for g, p in zip(grads, params)]
        step(params, list(grads))
        loss_sum += value.detach()
        steps += 1
    return steps


def local_epochs(data: FederatedData, task: int, shard: torch.Tensor, cfg: ClientConfig,
                 gen: torch.Generator, loss: Callable, params: list[torch.Tensor],
                 step: Callable, moving: list[torch.Tensor], start: list[torch.Tensor],
                 fill_unused: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """K = `client.local_epochs` epochs of `train_epoch`, the drift of the federated tensors
    `moving` from `start` measured after each (Eq. 2's sum over k of ||P_k - P_0||^2); returns
    (drift, mean loss over the steps)."""
    drift = torch.zeros((), device=shard.device)
    loss_sum = torch.zeros((), device=shard.device)
    steps = 0
    augment = data.augmenter(gen)      # identity unless data.augment
    for _ in range(cfg.local_epochs):
        steps += train_epoch(data, task, shard, cfg.batch_size, gen, augment, loss, params,
                             step, loss_sum, fill_unused)
        with torch.no_grad():
            drift += sum(d.pow(2).sum() for d in torch._foreach_sub(moving, start))
    return drift, loss_sum / max(steps, 1)


def local_train(trainer: Trainer, task: int, client: int, start: Params, names: TaskNames,
                gen: torch.Generator, correction: Correction | None = None) -> ClientUpdate:
    """K local epochs of `client` on `task` from `start` (`local_epochs`). `correction`: the
    client algorithm's gradient correction (FedProx, SCAFFOLD), applied to every step's
    gradients before the SGD step; None for plain SGD."""
    model, data, cfg = trainer.model, trainer.data, trainer.cfg
    module = model.tasks[task]
    load_state_(module, start)
    params = live_tensors(module, names.trainable)
    momentum_bufs: list[torch.Tensor] = []
    shard = data.tasks[task].shards[client]

    def loss(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        with trainer.forward():
            value = F.cross_entropy(model(x, task), y)
            extra = model.extra_loss(task)
            return value if extra is None else value + extra

    def step(params: list[torch.Tensor], grads: list[torch.Tensor]) -> None:
        if correction is not None:
            grads = correction(grads, params)
        sgd_step_(params, grads, momentum_bufs, cfg)

    model.train()
    drift, mean_loss = local_epochs(data, task, shard, cfg, gen, loss, params, step,
                                    moving=params, start=[start[n] for n in names.trainable])
    return ClientUpdate(client, task, read_state(module, names.trainable + names.buffers),
                        len(shard), drift, mean_loss)
