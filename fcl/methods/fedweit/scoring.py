"""FedWeIT's evaluation: each client's own model of each task it holds (its task state and
knowledge base on the server's B), a task's accuracy the mean over its holders, and the BWT_f
side of it: the mean over the clients that held the task before the round
(`model.fedweit_bwt_clients`)."""
from __future__ import annotations

import math
from dataclasses import replace

import torch

from fcl.federated.round import Plan, RunState, task_hits
from fcl.models.task_state import Params, load_state_


def scored(plan: Plan, state: RunState, r: int, held_before: list[set[int]]) -> RunState:
    """`state` with round r's column of `accuracy` (every holder's mean, or the initial
    model's where none holds the task) and of `held_accuracy` (the mean over the clients that
    held the task before the round, NaN where none did); `model.fedweit_bwt_clients=all`
    sets both to the first."""
    per_client, initial = evaluate_clients(plan, state)
    T, R = state.accuracy.shape
    accuracy = state.accuracy.clone()
    held = state.held_accuracy.clone() if state.held_accuracy is not None else \
        torch.full((T, R), math.nan, dtype=torch.float64)
    accuracy[:, r] = holders_mean(per_client, initial)
    held[:, r] = accuracy[:, r] if plan.cfg.model.fedweit_bwt_clients == "all" else \
        held_mean(per_client, held_before)
    return replace(state, accuracy=accuracy, held_accuracy=held)


def holders_mean(per_client: torch.Tensor, initial: torch.Tensor) -> torch.Tensor:
    """(T,) each task's mean over the clients holding it (`per_client` (T, N), NaN where a
    client does not hold the task), `initial` where none does."""
    held = ~per_client.isnan()
    mean = torch.where(held, per_client, 0.0).sum(1) / held.sum(1).clamp(min=1)
    return torch.where(held.any(1), mean, initial)


def held_mean(per_client: torch.Tensor, held_before: list[set[int]]) -> torch.Tensor:
    """(T,) each task's mean over the clients that held it before the round (NaN: none)."""
    T, N = per_client.shape
    mask = torch.tensor([[t in held_before[c] for c in range(N)] for t in range(T)])
    kept = torch.where(mask, per_client, math.nan)
    n = mask.sum(1)
    return torch.where(n > 0, torch.nan_to_num(kept).sum(1) / n.clamp(min=1), math.nan)


@torch.no_grad()
def evaluate_clients(plan: Plan, state: RunState) -> tuple[torch.Tensor, torch.Tensor]:
    """(T, N) the test accuracy (percent) of each client's own model of each task it holds
    (its task state and knowledge base on the server's B), NaN where it does not hold it; and
    (T,) the initial task state's, for the tasks no client holds (NaN for the others)."""
    model, data, fs = plan.model, plan.data, state.method
    load_state_(model.shared, fs.shared)
    model.eval()
    T, N = data.num_tasks, data.num_clients
    per_client = torch.full((T, N), math.nan, dtype=torch.float64)
    initial = torch.full((T,), math.nan, dtype=torch.float64)

    def score(t: int, tensors: Params, kb, alpha) -> float:
        load_state_(model.tasks[t], tensors)
        model.set_knowledge(t, kb, alpha)
        hits = task_hits(model, data, t, plan.eval_batch, plan.trainer.forward,
                         plan.eval_channels_last)
        return float(hits.cpu().double()) * 100.0 / len(data.tasks[t].test_y)

    for t in range(T):
        holders = [c for c in range(N) if t in fs.clients[c].tasks]
        for c in holders:
            own = fs.clients[c]
            per_client[t, c] = score(t, own.tasks[t], own.knowledge.get(t), own.attention.get(t))
        if not holders:
            initial[t] = score(t, {**state.tasks[t].params, **state.tasks[t].buffers}, None, None)
    return per_client, initial
