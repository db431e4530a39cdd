"""FedWeIT's knowledge base and the sparse messages that build it, with their exact bytes.

The server keeps one slot per client: the thresholded task-adaptive kernels (|A| > lambda_1,
per conv) that client sent at the end of its latest task, or nothing yet. The knowledge base a
client receives when it starts a task it has never trained is the stack of all N slots (an
empty slot is zeros: it adds nothing to a kernel and its attention gets no gradient). In the
synchronous order with every client reporting this is the official server's `get_adapts`: the
adaptives of all clients from the last round of the previous task, the sender's own included.
In the asynchronous order (a per-client permutation of the tasks, every client switching at the
same rounds) each slot holds what that client learnt on its own previous task; in the FMTL order
(a task drawn per round) a client ends a task at every round whose next task differs, and its
slot is the latest. A client that was sampled but straggled at its last round of a task sends
nothing, and its slot keeps its older kernels.

Bytes of a sparse tensor: its nonzero values as float32 plus their positions, in the cheaper of
a bitmap (ceil(numel / 8) bytes) and a list of indices (index_bytes(numel) each: 1, 2 or 4
bytes, the narrowest unsigned integer that holds any position), chosen per tensor.
"""
from __future__ import annotations

import math

import torch

from fcl.federated.compression import FLOAT_BYTES
from fcl.models.task_state import Params

Slots = tuple  # tuple[Params | None, ...], one per client


def index_bytes(numel: int) -> int:
    """Bytes of one position index into a tensor of `numel` entries."""
    return 1 if numel <= 2 ** 8 else 2 if numel <= 2 ** 16 else 4


def positions_nbytes(count: int, numel: int) -> int:
    """The cheaper of a bitmap and an index list for `count` positions out of `numel`."""
    return min(math.ceil(numel / 8), count * index_bytes(numel))


def sparse_nbytes(t: torch.Tensor) -> int:
    """A tensor sent as its nonzero values (float32) plus their positions."""
    count = int(torch.count_nonzero(t))
    return FLOAT_BYTES * count + positions_nbytes(count, t.numel())


def masked_nbytes(kernel: torch.Tensor, keep: torch.Tensor) -> int:
    """B's channels in `keep` (all values, float32) plus the channel mask as positions."""
    count = int(keep.sum())
    return FLOAT_BYTES * count * (kernel[0].numel() if kernel.dim() > 1 else 1) + \
        positions_nbytes(count, keep.numel())


def empty_slots(num_clients: int) -> Slots:
    return (None,) * num_clients


def with_slot(slots: Slots, client: int, adaptives: Params) -> Slots:
    """The slots after `client` sent its thresholded kernels."""
    return slots[:client] + (adaptives,) + slots[client + 1:]


def has_knowledge(slots: Slots) -> bool:
    return any(s is not None for s in slots)


def stacked(slots: Slots, like: Params) -> Params:
    """The knowledge base: per conv, S = len(slots) kernels stacked (zeros where a slot is
    empty); `like` gives the shapes."""
    return {n: torch.stack([s[n] if s is not None else torch.zeros_like(t) for s in slots])
            for n, t in like.items()}


def knowledge_nbytes(slots: Slots) -> int:
    """What the knowledge base costs on the downlink: every filled slot, sparse."""
    return sum(sparse_nbytes(t) for s in slots if s is not None for t in s.values())


def kept_channels(n: int, sparsity: float, rule: str) -> int:
    """How many of n output channels `fcl.methods.fedweit.layers.channel_mask` keeps when the |m| are
    distinct: code, n - floor(s n) - 1; top, ceil((1 - s) n)."""
    if rule == "top":
        return math.ceil(round((1 - sparsity) * n, 9))
    return n - min(math.floor(n * sparsity), n - 1) - 1


def planned_nbytes(shared: Params, sparsity: float, rule: str) -> tuple[int, int]:
    """(down, up) bytes of one client's round that ends no task, from the shapes of B alone:
    B dense down; B's kept channels (distinct |m| assumed) with their masks up. A task's last
    round adds its thresholded A and a task's first the knowledge base: both depend on the
    values, and the run counts them exactly."""
    down = FLOAT_BYTES * sum(b.numel() for b in shared.values())
    up = sum(masked_nbytes(b, torch.arange(b.shape[0]) < kept_channels(b.shape[0], sparsity,
                                                                      rule))
             for b in shared.values())
    return down, up
