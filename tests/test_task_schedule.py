"""Algorithm 1's three task orders and the participation sample."""
import torch

from fcl.config import ParticipationConfig
from fcl.federated.participation import participation
from fcl.federated.task_schedule import task_schedule

T, N, R = 4, 6, 16      # Q = 4


def test_sync_all_clients_same_task_in_phase_order():
    s = task_schedule("sync", T, N, R, seed=0)
    assert s.shape == (R, N)
    assert torch.equal(s, (torch.arange(R) // 4)[:, None].expand(R, N))


def test_async_each_client_visits_every_task_exactly_once():
    s = task_schedule("async", T, N, R, seed=0)
    for c in range(N):
        phases = s[::4, c]
        assert sorted(phases.tolist()) == list(range(T))
        assert torch.equal(s[:, c], phases.repeat_interleave(4))   # constant within a phase
    assert len({tuple(s[::4, c].tolist()) for c in range(N)}) > 1   # clients differ


def test_fmtl_draws_tasks_with_repetition_and_covers_all():
    s = task_schedule("fmtl", T, N, R, seed=0)
    assert set(s.flatten().tolist()) == set(range(T))
    assert any(len(set(s[:, c].tolist())) < R for c in range(N))


def test_schedules_are_deterministic_under_the_seed():
    for order in ("fmtl", "async"):
        assert torch.equal(task_schedule(order, T, N, R, 3), task_schedule(order, T, N, R, 3))
        assert not torch.equal(task_schedule(order, T, N, R, 3), task_schedule(order, T, N, R, 4))


def test_participation_fraction_and_stragglers():
    cfg = ParticipationConfig(fraction=0.5, straggler_prob=0.0)
    p = participation(3, 10, cfg, seed=0)
    assert len(p.sampled) == 5 and p.reporting == p.sampled
    cfg = ParticipationConfig(fraction=1.0, straggler_prob=0.5)
    dropped = [10 - len(participation(r, 10, cfg, seed=0).reporting) for r in range(400)]
    assert 0.45 < sum(dropped) / 4000 < 0.55
    assert participation(7, 10, cfg, 1) == participation(7, 10, cfg, 1)
