"""Continual-learning metrics as pure functions of the accuracy matrix A (T x R).

A[t, r] is the test accuracy of task t after round r's server update, rounds numbered
r = 0..R-1; columns that were not evaluated are NaN. Phase p covers rounds pQ..(p+1)Q-1.

ACC (FCL paper): the mean over tasks of the last column, (1/T) sum_t A[t, R-1].

BWT_f (Eq. 10), our reading of its indices: with 0-based rounds, A[t, pQ] - A[t, pQ-1] is the
change of task t across the boundary into phase p: the end of phase p-1 versus the first round
of phase p, i.e. the drop caused by the clients that start new tasks. p runs over the T-1
boundaries p = 1..T-1 (the p = T term would need a round R that does not exist), and the
paper's 1/T^2 normalisation is kept.
  - `bwt_f` sums only tasks that had received a server update before the boundary (the paper's
    "drop in accuracy ... from new clients updating the model"): a task trained for the first
    time at the boundary jumps up from chance, which is learning, not forgetting.
  - `bwt_f_literal` sums over all tasks, as Eq. 10 is printed.
Both are returned in points when A is in percent.

Where each client keeps its own task model (FedWeIT), A[t, r] is the mean over the clients that
hold task t, and the set grows at a boundary by the clients that start t there, after one round
on it: their low accuracy would read as a drop that no client suffered. Eq. 10's term is then
taken over the clients that held t before the boundary, the same on both sides: `held`[t, pQ]
is their mean accuracy after round pQ (`model.fedweit_bwt_clients=held`, the default; `all`
keeps A[t, pQ], every holder). For a global model `held` is A itself.
"""
from __future__ import annotations

import torch


def eval_rounds(rounds: int, q: int, every: int) -> list[int]:
    """Rounds to evaluate: every `every`-th (counted from 1), both sides of each phase boundary
    (needed by BWT_f), and the last round."""
    due = {r for r in range(rounds) if (r + 1) % every == 0}
    for p in range(1, rounds // q):
        due.update((p * q - 1, p * q))
    due.add(rounds - 1)
    return sorted(due)


def acc(A: torch.Tensor) -> float:
    return float(A[:, -1].mean())


def _boundary_terms(A: torch.Tensor, q: int, held: torch.Tensor | None = None
                    ) -> torch.Tensor:
    """(T, P) matrix of A[t, pQ] - A[t, pQ-1] for p = 1..T-1 (P = R/Q - 1); with `held`,
    held[t, pQ] - A[t, pQ-1]."""
    phases = A.shape[1] // q
    cols = torch.arange(1, phases) * q
    after = A if held is None else held
    return after[:, cols] - A[:, cols - 1]


def bwt_f(A: torch.Tensor, q: int, first_update: list[float],
          held: torch.Tensor | None = None) -> float:
    """Eq. 10 over tasks updated before each boundary (`first_update[t]`: first round in which
    task t got a server update, inf if never). `held` (T, R): per-client models' accuracy after
    each round over the clients that held the task before it (see the module docstring); a
    term where no client held the task is left out."""
    T = A.shape[0]
    terms = _boundary_terms(A, q, held).double()
    boundaries = torch.arange(1, A.shape[1] // q) * q
    seen = torch.tensor(first_update, dtype=torch.float64)[:, None] < boundaries[None, :]
    if held is not None:
        seen &= ~terms.isnan()
    return float(torch.where(seen, terms, 0.0).sum()) / T ** 2


def bwt_f_literal(A: torch.Tensor, q: int) -> float:
    """Eq. 10 as printed: every task at every boundary."""
    return float(_boundary_terms(A, q).double().sum()) / A.shape[0] ** 2
