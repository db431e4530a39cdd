"""Forgetting measures beside BWT_f, as pure functions of the accuracy matrix A (T x R, NaN
where a round was not evaluated; `fcl.metrics` for its conventions) in numpy, so that analysis
computes them from stored results without torch.

BWT_f sums signed changes across the phase boundaries, so a task that gains after a boundary
cancels one that drops: a mean BWT_f near 0 can hide sharp drops. These count losses only:

- `boundary_changes`: A[t, pQ] - A[t, pQ-1] over BWT_f's terms (a task updated before the
  boundary, both rounds evaluated);
- `mean_drop`: the mean loss over those terms, gains counted as 0;
- `drop_share`: the percent of those terms that lose more than `DROP_POINTS`;
- `forgetting`: best-minus-final forgetting (Chaudhry et al., 2018, "Riemannian Walk for
  Incremental Learning", Eq. 3 read over rounds): per task trained before the last phase, its
  best accuracy from its first update to the round before the last, minus its final one;
  the mean over those tasks. It sees a task overwritten slowly, within phases, where the
  boundary terms see only the step at the boundary.
"""
from __future__ import annotations

import math

import numpy as np

DROP_POINTS = 5.0           # a boundary term losing more than this (points) counts as a drop


def boundary_changes(A: np.ndarray, q: int, first_update: list[float],
                     held: np.ndarray | None = None) -> np.ndarray:
    """BWT_f's terms that were evaluated on both sides, as a flat vector in A's units; with
    `held` (per-client task models: the accuracy over the clients that held the task before
    the round, `fcl.metrics`), held[t, pQ] - A[t, pQ-1]."""
    A = np.asarray(A, dtype=float)
    cols = np.arange(1, A.shape[1] // q) * q
    after = A if held is None else np.asarray(held, dtype=float)
    terms = after[:, cols] - A[:, cols - 1]
    seen = np.asarray(first_update, dtype=float)[:, None] < cols[None, :]
    return terms[seen & np.isfinite(terms)]


def mean_drop(changes: np.ndarray) -> float:
    return float(np.clip(-changes, 0, None).mean()) if changes.size else math.nan


def drop_share(changes: np.ndarray, points: float = DROP_POINTS) -> float:
    return 100 * float((changes < -points).mean()) if changes.size else math.nan


def forgetting(A: np.ndarray, first_update: list[float], q: int) -> float:
    A = np.asarray(A, dtype=float)
    R = A.shape[1]
    last_phase = (R // q - 1) * q
    per_task = []
    for t, first in enumerate(first_update):
        if not first < last_phase or not np.isfinite(A[t, -1]):
            continue
        earlier = A[t, int(first):R - 1]
        earlier = earlier[np.isfinite(earlier)]
        if earlier.size:
            per_task.append(float(earlier.max() - A[t, -1]))
    return sum(per_task) / len(per_task) if per_task else math.nan
