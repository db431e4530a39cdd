"""Server-side aggregation of one task's client reports.

The pseudo-gradient (FCL paper Eq. 1) is the sample-weighted mean of the deltas,
sum_c |D_c| Delta_c / sum_c |D_c|; `server.aggregate=sum` takes Eq. 7 literally,
sum_c Delta_c, which makes a round's step grow with the number of reporting clients.
Buffers (norm running statistics) are not optimised: they become the weighted mean of the
reporting clients' end values.
Every report carries samples: a client with none for its task sends nothing (the engine's
`holding_data`), so a weighted mean over reports whose weights sum to 0 is an error.
"""
from __future__ import annotations

from typing import Callable

import torch

from fcl.models.task_state import Params


def pseudo_gradient(deltas: list[Params], weights: list[float], mode: str) -> Params:
    return AGGREGATES[mode](deltas, weights)


def mean_of_deltas(deltas: list[Params], weights: list[float]) -> Params:
    return weighted_mean(deltas, weights)


def sum_of_deltas(deltas: list[Params], weights: list[float]) -> Params:
    return weighted_sum(deltas, [1.0] * len(deltas))


# server.aggregate -> (deltas, sample counts) -> pseudo-gradient
AGGREGATES: dict[str, Callable[[list[Params], list[float]], Params]] = {
    "mean": mean_of_deltas, "sum": sum_of_deltas}


def weighted_mean(states: list[Params], weights: list[float]) -> Params:
    total = float(sum(weights))
    if total <= 0:
        raise ValueError(f"weighted mean of {len(states)} reports holding no samples "
                         f"(weights {weights}): a client without data must not report")
    return weighted_sum(states, [w / total for w in weights])


def weighted_sum(states: list[Params], coeffs: list[float]) -> Params:
    out = {n: t * coeffs[0] for n, t in states[0].items()}
    for state, c in zip(states[1:], coeffs[1:]):
        for n, t in state.items():
            out[n].add_(t, alpha=c)
    return out


def subtract(a: Params, b: Params) -> Params:
    return {n: a[n] - b[n] for n in a}


def cosine_distance(a: Params, b: Params, names: list[str] | None = None) -> torch.Tensor:
    """1 - cos(a, b) of the concatenated tensors (`names`: a subset, e.g. the head)."""
    names = list(a) if names is None else names
    va = torch.cat([a[n].flatten().float() for n in names])
    vb = torch.cat([b[n].flatten().float() for n in names])
    return 1 - torch.nn.functional.cosine_similarity(va, vb, dim=0, eps=1e-12)

