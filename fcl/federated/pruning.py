"""Magnitude pruning of a message (`compression.prune`), as FLoCoRA's released code does it for
its Table IV comparison (`prune.py`: `prune_threshold`; the `--prune --prate p --prune_srv` runs
of `run_eusipco24.sh`, p in 0.5 / 0.8 / 0.9 / 0.95):

    |v| of every value of every tensor of the message, flattened together and sorted ascending
    threshold = sorted[floor(N * rate)]        (one global threshold, N values in all)
    v -> 0 where |v| < threshold               (a value equal to the threshold is kept)

so about `rate * N` values become zero (fewer where values tie at the threshold). The client
prunes what it uploads; with `compression.prune_server` the global model clients receive is
pruned the same way (the code's `--prune_srv`: each client prunes the parameters it receives
before training). The server averages the zero-filled tensors as they are (plain FedAvg: with
`server.optimizer=fedsgd`, `server.lr=1` the new global is their sample-weighted mean).

Where this departs from the code:
- The code thresholds every entry of the model's `state_dict`, norm running statistics included
  (its ResNet builder hands `batchn=False` to `zero_init_residual`, so its models carry
  BatchNorm). In fcl, norm statistics (a model's float buffers) travel dense in float32: a zeroed
  running variance is not a pruned weight. With group norm (the paper's setting) a message holds
  none, and the threshold runs over exactly the trained tensors.
- The code counts no bytes for a pruned message (it logs the dense size). fcl counts a pruned
  message exactly, in the sparse encoding below, and gives its values-only size beside it.
As in the code, the server keeps and evaluates its dense aggregate (evaluation sees the server
state, not the pruned broadcast).

Sparse encoding of one pruned tensor of n values with k non-zero ones (tensor names and shapes
are known to both sides, as in every message):

    4 B   k, as uint32
    4k B  the k non-zero values, float32, in row-major order
    positions, the cheaper of:  a bitmap, ceil(n / 8) B  |  k uint32 indices, 4k B
          (the receiver knows n and k, so it knows which one was sent: no flag)

The values-only size (4k per tensor, what papers often quote as a pruned message's size) leaves
out the count and the positions.
"""
from __future__ import annotations

import math
from collections.abc import Collection

import torch

from fcl.federated.kth_value import flat_view, kth_smallest
from fcl.models.task_state import Params

FLOAT_BYTES = 4
COUNT_BYTES = 4           # uint32 number of non-zero values of a tensor
INDEX_BYTES = 4           # uint32 flat index of one non-zero value


def magnitude_threshold(tensors: list[torch.Tensor], rate: float) -> torch.Tensor:
    """The code's `sorted(|all values|)[floor(N * rate)]`: the (floor(N * rate) + 1)-th smallest
    magnitude over every tensor together (a 0-d tensor)."""
    flat = torch.cat([t.detach().float().reshape(-1).abs() for t in tensors])
    return torch.kthvalue(flat, math.floor(flat.numel() * rate) + 1).values


def prune(params: Params, rate: float, dense: Collection[str] = ()) -> Params:
    """`params` with every value whose magnitude is below the global threshold set to 0; the
    tensors named in `dense` (norm statistics) left out of the threshold and kept as they are."""
    pruned = [n for n in params if n not in dense]
    if rate <= 0 or not pruned:
        return dict(params)
    threshold = magnitude_threshold([params[n] for n in pruned], rate)
    out = dict(params)
    for n in pruned:
        t = params[n].float()
        out[n] = torch.where(t.abs() < threshold.to(t.device), torch.zeros_like(t), t)
    return out


def sparse_nbytes(numel: int, nonzero: int) -> int:
    """Bytes of one pruned tensor of `numel` values with `nonzero` of them kept: the count, the
    values, and the cheaper of a bitmap and uint32 indices for their positions."""
    positions = min(math.ceil(numel / 8), INDEX_BYTES * nonzero)
    return COUNT_BYTES + FLOAT_BYTES * nonzero + positions


def values_nbytes(nonzero: int) -> int:
    """The values-only size of a pruned tensor: its kept values in float32, positions left out."""
    return FLOAT_BYTES * nonzero


def top_k_count(numel: int, density: float) -> int:
    """K = ceil(density x numel), at least 1 and at most numel (a tolerance of 1e-9 keeps a
    product such as 0.3 x 10 = 3.0000000000000004 at 3)."""
    return min(numel, max(1, math.ceil(density * numel - 1e-9)))


def top_k(t: torch.Tensor, density: float) -> torch.Tensor:
    """`t` with every value whose |value| is below the K-th largest |value| set to 0 (K =
    `top_k_count(t.numel(), density)`; ties at the threshold kept). density >= 1: `t`. The K-th
    largest is torch.kthvalue's, found faster on a CPU (`fcl.federated.kth_value`)."""
    n = t.numel()
    k = top_k_count(n, density)
    if k >= n:
        return t
    mags = t.detach().abs()
    threshold = kth_smallest(flat_view(mags).float(), n - k + 1).to(mags.dtype)
    return torch.where(mags >= threshold, t, torch.zeros_like(t))   # t's layout, as before
