"""Batched clients (`run.client_batching`): the clients that train the same task in the same round
take their local steps together: one forward pass vmapped over their stacked task tensors and
their stacked batches (`torch.func.functional_call` + `torch.func.vmap`), then one backward pass
of the sum of their losses (clients share no trainable tensor, so the gradient of the sum with
respect to client g's slice is client g's own gradient). The frozen backbone is shared, not
stacked: its convolutions see one batch of G x B images and get no gradient. Plain autograd
instead of `torch.func.grad`: the latter imports torch._dynamo on first use (3-7 s a process).

`local_train` (one client at a time) stays the reference; this path computes the same update:
- every client draws from its own generator(seed, 'batches', r, c), in local_train's order (the
  augmenter's seed first, then one permutation per epoch), so its batches are the same;
- the same loss (the mean over the client's batch, plus the model's extra loss), the same SGD
  step (`sgd_step_` is elementwise, so it runs on the stacked tensors as is), the same drift.
The deltas agree to float32 rounding (tested to 1e-5).

Unequal shards. Client c takes S_c = ceil(|D_c| / B) steps per epoch. The group is sorted by
S_c, most first, so at step s of an epoch the clients still training are a prefix of the stack:
the step runs on that prefix (views of the stacked tensors; the others' parameters and momentum
stay untouched, as if they had finished). Within a step the batches differ in size only where a
client takes its last, partial batch: it is padded to the step's largest batch with copies of
one of its samples that weigh 0 in the loss (per-client loss = weighted sum, weights 1 / n_batch
on real samples). That is exact only for models whose outputs are per sample (GroupNorm;
BatchNorm in eval mode), which the fallbacks below guarantee. A task with one client in the
round trains with `local_train`.

Falls back to `local_train`, client by client, where vmap cannot give the same update:
- a BatchNorm in train mode, or float buffers in the task module: batch statistics would mix
  clients (and padding), and running statistics are updated in place, once per client;
- a client algorithm with per-client control variates (SCAFFOLD: each client's c_i would have
  to be stacked by the engine). FedProx (a correction towards the client's start) is batched;
- a module that says why not in its `sequential_only` (ZeroFL's SWAT layers: a custom
  backward, not vmapped).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, vmap

from fcl.federated.client import ClientUpdate, TaskNames, Trainer, sgd_step_
from fcl.federated.client_algorithms import ClientAlgorithm
from fcl.models.task_state import Params
from fcl.seeding import generator


def why_sequential(model: nn.Module, buffers: list[str], algorithm: ClientAlgorithm
                   ) -> str | None:
    """None when a task's clients can be batched, else why they train one by one (the model
    must already be in train mode)."""
    if buffers or any(isinstance(m, nn.modules.batchnorm._BatchNorm) and m.training
                      for m in model.modules()):
        return "BatchNorm in train mode (batch and running statistics are per client)"
    if algorithm.control_variates:
        return f"{type(algorithm).__name__} keeps per-client control variates"
    return next((m.sequential_only for m in model.modules()
                 if getattr(m, "sequential_only", None)), None)   # e.g. ZeroFL's SWAT layers


@dataclass(frozen=True)
class StepShape:
    """One step of an epoch: the first `active` clients of the (sorted) group train on batches
    padded to `width`; `counts[g]` real samples each."""
    active: int
    width: int
    counts: tuple[int, ...]


def step_shapes(sizes: list[int], batch_size: int) -> list[StepShape]:
    """The steps of one epoch for shard sizes sorted by steps per epoch, most first."""
    steps = [math.ceil(n / batch_size) for n in sizes]
    assert steps == sorted(steps, reverse=True), "sizes must be sorted by steps, most first"
    shapes = []
    for s in range(steps[0] if steps else 0):
        counts = tuple(min(batch_size, n - s * batch_size) for n, st in zip(sizes, steps)
                       if st > s)
        shapes.append(StepShape(len(counts), max(counts), counts))
    return shapes


class _ClientLoss(nn.Module):
    """One client's loss on one (padded) batch: the weighted cross-entropy plus the model's
    extra loss; run through `functional_call` with the client's task tensors swapped in."""

    def __init__(self, model: nn.Module, task: int):
        super().__init__()
        self.model, self.task = model, task

    def forward(self, x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        loss = (F.cross_entropy(self.model(x, self.task), y, reduction="none") * weight).sum()
        extra = self.model.extra_loss(self.task)
        return loss if extra is None else loss + extra


def _pad(x: torch.Tensor, width: int) -> torch.Tensor:
    return torch.cat([x, x[:1].expand(width - len(x), *x.shape[1:])]) if len(x) < width else x


def round_plan(shards: list[torch.Tensor], gens: list[torch.Generator], epochs: int,
               batch_size: int) -> tuple[list[StepShape], list[list[torch.Tensor]],
                                         list[torch.Tensor]]:
    """(step shapes of an epoch, per epoch the permuted shards on the device, per step the
    loss weights (active, width) on the device). Permutations are drawn as `epoch_batches`
    draws them; everything goes to the device in one copy each, so the steps never sync."""
    sizes = [len(s) for s in shards]
    shapes = step_shapes(sizes, batch_size)
    device = shards[0].device
    perms = torch.cat([torch.randperm(n, generator=g) for _ in range(epochs)
                       for n, g in zip(sizes, gens)] or [torch.zeros(0, dtype=torch.long)])
    perms = perms.to(device).split(sizes * epochs)
    by_epoch = [[shard[p] for shard, p in zip(shards, perms[k * len(sizes):(k + 1) *
                                                              len(sizes)])]
                for k in range(epochs)]
    flat = torch.zeros(sum(sh.active * sh.width for sh in shapes))
    at = 0
    for sh in shapes:
        for g, count in enumerate(sh.counts):
            flat[at + g * sh.width: at + g * sh.width + count] = 1.0 / count
        at += sh.active * sh.width
    weights = flat.to(device).split([sh.active * sh.width for sh in shapes])
    return shapes, by_epoch, [w.view(sh.active, sh.width) for w, sh in zip(weights, shapes)]


def train_group(trainer: Trainer, task: int, clients: list[int], starts: list[Params],
                trainable: list[str], gens: list[torch.Generator],
                algorithm: ClientAlgorithm = ClientAlgorithm()) -> list[ClientUpdate]:
    """K local epochs of `clients` (same task) in vmapped steps; updates in the given order."""
    model, data, cfg = trainer.model, trainer.data, trainer.cfg
    td = data.tasks[task]
    sizes = [len(td.shards[c]) for c in clients]
    order = sorted(range(len(clients)), key=lambda g: -math.ceil(sizes[g] / cfg.batch_size))
    shards = [td.shards[clients[g]] for g in order]
    gens = [gens[g] for g in order]
    augments = [data.augmenter(g) for g in gens]        # drawn first, as in local_train
    shapes, perms, weights = round_plan(shards, gens, cfg.local_epochs, cfg.batch_size)
    params = {n: torch.stack([starts[g][n] for g in order]).requires_grad_(True)
              for n in trainable}
    live = [params[n] for n in trainable]
    start = [p.detach().clone() for p in live]
    momentum = [torch.zeros_like(p) for p in live] if cfg.momentum else []
    loss_module = _ClientLoss(model, task)
    prefix = f"model.tasks.{task}."

    def client_loss(p: Params, x, y, w):
        return functional_call(loss_module, {prefix + n: t for n, t in p.items()}, (x, y, w))

    losses_of = vmap(client_loss)
    G = len(clients)
    drift = torch.zeros(G, device=td.train_y.device)
    loss_sum = torch.zeros(G, device=td.train_y.device)
    model.train()
    for k in range(cfg.local_epochs):
        for s, (sh, w) in enumerate(zip(shapes, weights)):
            a = sh.active                                   # clients 0..a-1 take this step
            idx = torch.stack([_pad(perms[k][g][s * cfg.batch_size:
                                                s * cfg.batch_size + n], sh.width)
                               for g, n in enumerate(sh.counts)])            # (a, width)
            if data.augment:   # each client's augmenter on its real batch, then padded
                x = torch.stack([_pad(augments[g](td.train_x[idx[g, :n]]), sh.width)
                                 for g, n in enumerate(sh.counts)])
            else:
                x = td.train_x[idx]
            views = {n: params[n][:a] for n in trainable}
            with trainer.forward():
                loss = losses_of(views, data.normalise(x), td.train_y[idx], w)
            grads = list(torch.autograd.grad(loss.sum(), list(views.values())))
            with torch.no_grad():
                active = [p[:a] for p in live]
                correction = algorithm.correction(cfg, [p[:a] for p in start], None)
                if correction is not None:
                    grads = correction(grads, active)
                sgd_step_(active, grads, [m[:a] for m in momentum], cfg)
                loss_sum[:a] += loss.detach()
        with torch.no_grad():
            drift += sum(d.pow(2).flatten(1).sum(1) for d in torch._foreach_sub(live, start))
    steps = [cfg.local_epochs * math.ceil(len(s) / cfg.batch_size) for s in shards]
    ups = {clients[g]: ClientUpdate(clients[g], task,
                                    {n: params[n][i].detach().clone() for n in trainable},
                                    len(shards[i]), drift[i], loss_sum[i] / max(steps[i], 1))
           for i, g in enumerate(order)}
    return [ups[c] for c in clients]


def batched_updates(trainer: Trainer, algorithm: ClientAlgorithm, seed: int, r: int,
                    by_task: dict[int, list[int]], starts: dict[int, Params],
                    names: list[TaskNames]) -> dict[int, ClientUpdate]:
    """Round r's updates of the clients that can train batched: `by_task` lists each task's
    reporting clients, `starts` what each task's clients received. A task trains batched when
    it has at least two clients and `why_sequential` finds nothing; clients missing from the
    result are for `local_train`."""
    trainer.model.train()
    out: dict[int, ClientUpdate] = {}
    for t, clients in sorted(by_task.items()):
        if len(clients) < 2 or why_sequential(trainer.model, names[t].buffers, algorithm):
            continue
        gens = [generator(seed, "batches", r, c) for c in clients]
        ups = train_group(trainer, t, clients, [starts[t]] * len(clients), names[t].trainable,
                          gens, algorithm)
        out.update((up.client, up) for up in ups)
    return out
