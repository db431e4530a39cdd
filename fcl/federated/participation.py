"""Who takes part in a round: a sample of fraction * N clients rounded half up (at least one),
each of which fails to report (straggles) with probability `straggler_prob`. A straggler
receives the broadcast but its update never reaches the server, so the engine does not train
it. Pure in (round, seed)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from fcl.seeding import generator

if TYPE_CHECKING:
    from fcl.config import ParticipationConfig, RunConfig


@dataclass(frozen=True)
class Participation:
    sampled: tuple[int, ...]      # clients that receive the server state this round
    reporting: tuple[int, ...]    # the subset whose update reaches the server


def participation(round_: int, num_clients: int, cfg: ParticipationConfig, seed: int
                  ) -> Participation:
    g = generator(seed, "participation", round_)
    k = num_sampled(cfg.fraction, num_clients)
    sampled = torch.randperm(num_clients, generator=g)[:k].sort().values
    drops = torch.rand(k, generator=g) < cfg.straggler_prob
    return Participation(tuple(sampled.tolist()), tuple(sampled[~drops].tolist()))


def num_sampled(fraction: float, num_clients: int) -> int:
    """fraction x N rounded half up (0.5 x 5 -> 3; Python's round() gives 2), at least one."""
    return max(1, math.floor(fraction * num_clients + 0.5))


def training_samples(cfg: RunConfig, train_images_per_task: float) -> float:
    """Expected samples a run trains on: R rounds x sampled clients x (1 - straggler
    probability) x K epochs x a client's shard (the task's images / N)."""
    n = cfg.data.num_clients
    sampled = num_sampled(cfg.participation.fraction, n)
    shard = train_images_per_task / n
    return (cfg.rounds * sampled * (1 - cfg.participation.straggler_prob)
            * cfg.client.local_epochs * shard)
