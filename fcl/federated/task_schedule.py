"""Which task each client trains in each round: the three cases of Algorithm 1.

Rounds are numbered r = 0..R-1 and phase p covers rounds pQ..(p+1)Q-1, Q = R / T.
    fmtl  (case 1): t ~ Uniform[T], drawn per client and round (shuffled, with repetition)
    sync  (case 2): t = r // Q for every client (common order)
    async (case 3): t = order_c[r // Q], order_c a per-client permutation of the tasks
The schedule is a pure function of (order, T, N, R, seed): an (R, N) int tensor.
"""
from __future__ import annotations

import torch

from fcl.seeding import generator


def task_schedule(order: str, num_tasks: int, num_clients: int, rounds: int, seed: int
                  ) -> torch.Tensor:
    q = rounds // num_tasks
    phase = torch.arange(rounds) // q                                    # (R,)
    if order == "sync":
        return phase[:, None].expand(rounds, num_clients).clone()
    if order == "async":
        g = generator(seed, "task_order")
        perms = torch.stack([torch.randperm(num_tasks, generator=g) for _ in range(num_clients)])
        return perms[:, phase].T.contiguous()                            # (R, N)
    if order == "fmtl":
        g = generator(seed, "fmtl")
        return torch.randint(num_tasks, (rounds, num_clients), generator=g)
    raise ValueError(f"schedule.order={order}; allowed: fmtl, sync, async")
