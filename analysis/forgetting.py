"""Forgetting measures of every stored trial, from its per-round, per-task accuracies
(tasks.parquet), so that studies stored before these measures existed get them too:

- `mean_drop`: the mean loss of a task across a phase boundary (the end of phase p-1 against
  the first round of phase p), over BWT_f's terms (tasks updated before the boundary), gains
  counted as 0, in points;
- `drop_share`: the percent of those terms where the task lost more than
  `fcl.forgetting.DROP_POINTS` (5 points);
- `forgetting`: best-minus-final forgetting (Chaudhry et al., 2018), in points.

BWT_f sums signed changes (a gain cancels a drop); these do not. A claim about drops is judged
on them (`analysis/claims`). The functions are `fcl.forgetting`'s.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fcl import forgetting as measures

COLUMNS = ("mean_drop", "drop_share", "forgetting")


def forgetting_columns(trials: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    """One row per trial of `trials` (by `trial_id`) with `COLUMNS`, NaN where its tasks are
    not stored or it has a single phase. `tasks`: trial_id, round, task, accuracy, reports
    (and `accuracy_held` where clients keep their own task models: FedWeIT)."""
    # the columns read, before the split: a trial's slice of the wide rounds table costs ~10x more
    kept = [c for c in ("trial_id", "round", "task", "accuracy", "reports", "accuracy_held")
            if c in tasks]
    by_trial = dict(list(tasks[kept].groupby("trial_id")))
    rows = []
    for trial_id, rounds, num_tasks in zip(trials["trial_id"], trials["rounds"],
                                           trials["data.num_tasks"]):
        rows.append({"trial_id": trial_id, **_measures(by_trial.get(trial_id), int(rounds),
                                                       int(num_tasks))})
    return pd.DataFrame(rows, columns=["trial_id", *COLUMNS])


def _measures(tasks: pd.DataFrame | None, rounds: int, num_tasks: int) -> dict[str, float]:
    q = rounds // num_tasks if num_tasks else 0
    if tasks is None or q < 1 or rounds // q < 2:
        return dict.fromkeys(COLUMNS, math.nan)
    task, round_ = tasks["task"].to_numpy(int), tasks["round"].to_numpy(int)
    A = np.full((num_tasks, rounds), math.nan)
    acc = tasks["accuracy"].to_numpy(float, na_value=math.nan)
    evaluated = ~np.isnan(acc)
    A[task[evaluated], round_[evaluated]] = acc[evaluated]
    # the first round each task was trained in (inf: never)
    updated = (tasks["reports"].to_numpy(float, na_value=math.nan) > 0) & (task < num_tasks)
    first_round = np.full(num_tasks, math.inf)
    np.minimum.at(first_round, task[updated], round_[updated])
    first = [float(r) for r in first_round]
    changes = measures.boundary_changes(A, q, first, _held(tasks, num_tasks, rounds))
    return {"mean_drop": measures.mean_drop(changes), "drop_share": measures.drop_share(changes),
            "forgetting": measures.forgetting(A, first, q)}


def _held(tasks: pd.DataFrame, num_tasks: int, rounds: int) -> np.ndarray | None:
    """The accuracy over the clients that held each task before the round, where stored (a
    method whose clients keep their own task models); None for one global model."""
    if "accuracy_held" not in tasks or not tasks["accuracy_held"].notna().any():
        return None
    H = np.full((num_tasks, rounds), math.nan)
    h = tasks.dropna(subset=["accuracy_held"])
    H[h["task"].to_numpy(int), h["round"].to_numpy(int)] = h["accuracy_held"].to_numpy(float)
    return H
