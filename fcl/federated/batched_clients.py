"""Batched clients (`run.client_batching`): the clients that train the same task in the same round
take their local steps together: one forward pass vmapped over their stacked task tensors and
their stacked batches (`torch.func.functional_call` + `torch.func.vmap`), then one backward pass
of the sum of their losses (clients share no trainable tensor, so the gradient of the sum with
respect to client g's stacked slice is client g's own gradient). The frozen backbone is shared,
not stacked: its convolutions see one batch of G x B images and get no gradient. Plain autograd
instead of `torch.func.grad`: the latter imports torch._dynamo on first use (3-7 s a process).

`local_train` (one client at a time) stays the reference; this path computes the same update:
- every client draws from its own generator(seed, 'batches', r, c), in local_train's order (the
  augmenter's seed first, then one permutation per epoch), so its batches are the same;
- the same loss (the mean over the client's batch, plus the model's extra loss), the same SGD
  step (`sgd_step_` is elementwise, so it runs on the stacked tensors as is), the same drift.
The deltas agree to float32 rounding (tested to 1e-5).

Unequal shards. vmap needs one batch shape per step for the whole group, so clients are grouped
by their steps per epoch, ceil(|D_c| / B). Within a group only the last batch of an epoch can
differ in size: it is padded to the group's largest with copies of a real sample that weigh 0 in
the loss (the per-client loss is a weighted sum, weights 1/n_batch on real samples). This is
exact only for models whose outputs are per sample (GroupNorm; BatchNorm in eval mode), which is
also what the fallbacks below require. A client alone in its group trains with `local_train`.

Falls back to `local_train`, client by client, where vmap cannot give the same update:
- a BatchNorm in train mode, or float buffers in the task module: batch statistics would mix
  clients (and padding), and running statistics are updated in place, once per client;
- a client algorithm with per-client control variates (SCAFFOLD: each client's c_i would have
  to be stacked by the engine). FedProx (a correction over the client's start state) is batched.
"""
from __future__ import annotations

import math
from typing import Callable, ContextManager

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, vmap

from fcl.config import ClientConfig, ModelConfig, RunConfig
from fcl.data.federated import FederatedData
from fcl.federated.client import ClientUpdate, sgd_step_
from fcl.federated.client_algorithms import ALGORITHMS
from fcl.models.task_state import Params
from fcl.seeding import generator


def why_sequential(model: nn.Module, buffers: list[str], cfg: ClientConfig) -> str | None:
    """None when a task's clients can be batched, else why they train one by one (the model
    must already be in train mode)."""
    if buffers or any(isinstance(m, nn.modules.batchnorm._BatchNorm) and m.training
                      for m in model.modules()):
        return "BatchNorm in train mode (batch and running statistics are per client)"
    if ALGORITHMS[cfg.algorithm].control_variates:
        return f"client.algorithm={cfg.algorithm} keeps per-client control variates"
    return None


def client_groups(clients: list[int], sizes: list[int], batch_size: int) -> list[list[int]]:
    """Clients with the same number of steps per epoch, in their given order."""
    groups: dict[int, list[int]] = {}
    for c, n in zip(clients, sizes):
        groups.setdefault(math.ceil(n / batch_size), []).append(c)
    return list(groups.values())


class _ClientLoss(nn.Module):
    """One client's loss on one (padded) batch: the weighted cross-entropy plus the model's
    extra loss; run through `functional_call` with the client's task tensors swapped in."""

    def __init__(self, model: nn.Module, task: int, model_cfg: ModelConfig):
        super().__init__()
        self.model, self.task, self.model_cfg = model, task, model_cfg

    def forward(self, x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        loss = (F.cross_entropy(self.model(x, self.task), y, reduction="none") * weight).sum()
        extra = self.model.extra_loss(self.task, self.model_cfg)
        return loss if extra is None else loss + extra


def batch_plan(shards: list[torch.Tensor], gens: list[torch.Generator], epochs: int,
               batch_size: int) -> tuple[torch.Tensor, torch.Tensor, list[list[int]]]:
    """Index and weight tensors of shape (epochs, steps, G, width) for the whole round, on the
    device, and the real batch sizes [step][g] (host ints, known without a sync). Each client's
    permutation is drawn as `epoch_batches` draws it."""
    sizes = [len(s) for s in shards]
    steps = math.ceil(sizes[0] / batch_size)
    width = min(batch_size, max(sizes))
    counts = [[min(width, n - s * width) for n in sizes] for s in range(steps)]
    idx = []
    for _ in range(epochs):
        per_client = []
        for shard, gen, n in zip(shards, gens, sizes):
            perm = shard[torch.randperm(n, generator=gen).to(shard.device)]
            pad = perm[:1].expand(steps * width - n)
            per_client.append(torch.cat([perm, pad]).view(steps, width))
        idx.append(torch.stack(per_client, dim=1))                  # (steps, G, width)
    weight = torch.zeros(steps, len(shards), width)
    for s, row in enumerate(counts):
        for g, count in enumerate(row):
            weight[s, g, :count] = 1.0 / count
    device = shards[0].device
    return torch.stack(idx), weight.to(device).expand(epochs, -1, -1, -1), counts


def train_group(model: nn.Module, data: FederatedData, task: int, clients: list[int],
                starts: list[Params], trainable: list[str], cfg: ClientConfig,
                model_cfg: ModelConfig, gens: list[torch.Generator],
                forward_context: Callable[[], ContextManager]) -> list[ClientUpdate]:
    """K local epochs of the `clients` (same task, same steps per epoch) in vmapped steps."""
    td = data.tasks[task]
    shards = [td.shards[c] for c in clients]
    augments = [data.augmenter(g) for g in gens]        # drawn first, as in local_train
    idx, weight, counts = batch_plan(shards, gens, cfg.local_epochs, cfg.batch_size)
    params = {n: torch.stack([s[n] for s in starts]).requires_grad_(True) for n in trainable}
    live = [params[n] for n in trainable]
    start = [p.detach().clone() for p in live]
    correction = ALGORITHMS[cfg.algorithm].correction(cfg, start, None)
    loss_module = _ClientLoss(model, task, model_cfg)
    prefix = f"model.tasks.{task}."

    def client_loss(p: Params, x, y, w):
        return functional_call(loss_module, {prefix + n: t for n, t in p.items()}, (x, y, w))

    losses_of = vmap(client_loss)
    G = len(clients)
    drift = torch.zeros(G, device=td.train_y.device)
    loss_sum = torch.zeros(G, device=td.train_y.device)
    momentum_bufs: list[torch.Tensor] = []
    model.train()
    for k in range(cfg.local_epochs):
        for s in range(idx.shape[1]):
            batch = idx[k, s]                                        # (G, width)
            if data.augment:   # each client's augmenter on its real batch, then padded
                x = torch.stack([_pad(aug(td.train_x[b[:n]]), len(b))
                                 for aug, b, n in zip(augments, batch, counts[s])])
            else:
                x = td.train_x[batch]
            with forward_context():
                loss = losses_of(params, data.normalise(x), td.train_y[batch], weight[k, s])
            grads = list(torch.autograd.grad(loss.sum(), live))
            if correction is not None:
                grads = correction(grads, live)
            sgd_step_(live, grads, momentum_bufs, cfg)
            loss_sum += loss.detach()
        with torch.no_grad():
            drift += sum(d.pow(2).flatten(1).sum(1) for d in torch._foreach_sub(live, start))
    steps = cfg.local_epochs * idx.shape[1]
    return [ClientUpdate(c, task, {n: params[n][g].detach().clone() for n in trainable}, len(shards[g]),
                         drift[g], loss_sum[g] / steps) for g, c in enumerate(clients)]


def _pad(x: torch.Tensor, width: int) -> torch.Tensor:
    return torch.cat([x, x[:1].expand(width - len(x), *x.shape[1:])]) if len(x) < width else x


def batched_updates(cfg: RunConfig, r: int, model: nn.Module, data: FederatedData,
                    tasks_of: list[int], reporting: list[int], received: dict[int, Params],
                    names, forward_context: Callable[[], ContextManager]
                    ) -> dict[int, ClientUpdate]:
    """The updates of round r's reporting clients that train in vmapped groups (every group of
    at least two clients of one task with the same steps per epoch). Clients missing from the
    result are for `local_train`. Empty unless `run.client_batching`."""
    if not cfg.run.client_batching:
        return {}
    model.train()
    by_task: dict[int, list[int]] = {}
    for c in reporting:
        by_task.setdefault(tasks_of[c], []).append(c)
    out: dict[int, ClientUpdate] = {}
    for t, clients in sorted(by_task.items()):
        trainable, buffers = names[t]
        if why_sequential(model, buffers, cfg.client) is not None:
            continue
        sizes = [len(data.tasks[t].shards[c]) for c in clients]
        for group in client_groups(clients, sizes, cfg.client.batch_size):
            if len(group) < 2:
                continue
            gens = [generator(cfg.seed, "batches", r, c) for c in group]
            ups = train_group(model, data, t, group, [received[c] for c in group], trainable,
                              cfg.client, cfg.model, gens, forward_context)
            out.update((up.client, up) for up in ups)
    return out
