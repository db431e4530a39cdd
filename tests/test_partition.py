"""Partition properties: every index exactly once, deterministic, skew grows as alpha falls."""
import numpy as np
import pytest
import torch

from fcl.data.partition import dirichlet_partition, iid_partition


def labels(n_per_class=200, classes=4):
    return np.repeat(np.arange(classes), n_per_class)


def covers_exactly_once(shards, n):
    allidx = torch.cat(shards).sort().values
    return torch.equal(allidx, torch.arange(n))


def test_iid_every_index_once_and_balanced():
    shards = iid_partition(103, 5, np.random.default_rng(0))
    assert covers_exactly_once(shards, 103)
    assert {len(s) for s in shards} <= {20, 21}


@pytest.mark.parametrize("alpha", [0.1, 0.5, 8.0])
def test_dirichlet_every_index_once(alpha):
    y = labels()
    shards = dirichlet_partition(y, 5, alpha, np.random.default_rng(1), min_size=2)
    assert covers_exactly_once(shards, len(y))
    assert min(len(s) for s in shards) >= 2


def test_partitions_are_deterministic_under_the_seed():
    y = labels()
    a = dirichlet_partition(y, 5, 0.5, np.random.default_rng(7))
    b = dirichlet_partition(y, 5, 0.5, np.random.default_rng(7))
    c = dirichlet_partition(y, 5, 0.5, np.random.default_rng(8))
    assert all(torch.equal(x, z) for x, z in zip(a, b))
    assert not all(torch.equal(x, z) for x, z in zip(a, c))


def skew(alpha, seeds=20):
    """Mean total-variation distance between a client's label mix and the global mix."""
    y = labels()
    tv = []
    for s in range(seeds):
        for shard in dirichlet_partition(y, 5, alpha, np.random.default_rng(s)):
            mix = np.bincount(y[shard.numpy()], minlength=4) / len(shard)
            tv.append(0.5 * np.abs(mix - 0.25).sum())
    return float(np.mean(tv))


def test_dirichlet_skew_grows_as_alpha_falls():
    s8, s1, s01 = skew(8.0), skew(1.0), skew(0.1)
    assert s8 < s1 < s01
    assert s8 < 0.2 and s01 > 0.4


def test_dirichlet_impossible_guard_raises():
    with pytest.raises(ValueError, match="samples"):
        dirichlet_partition(labels(2, 2), 5, 0.5, np.random.default_rng(0), min_size=2)


def test_lda_gives_every_client_an_equal_shard_of_its_own_class_mix():
    from fcl.data.partition import lda_partition
    labels = np.repeat(np.arange(10), 5000)                  # CIFAR-10's training labels
    shards = lda_partition(labels, 100, 0.5, np.random.default_rng(3))
    assert [len(s) for s in shards] == [500] * 100
    every = torch.cat(shards)
    assert len(every) == 50_000 and len(torch.unique(every)) == 50_000
    mixes = np.array([np.bincount(labels[s.numpy()], minlength=10) / 500 for s in shards])
    assert np.median(mixes.max(axis=1)) > 0.3               # skewed: far from 0.1 each
    again = lda_partition(labels, 100, 0.5, np.random.default_rng(3))
    assert all(torch.equal(a, b) for a, b in zip(shards, again))


def test_lda_spreads_the_remainder_and_checks_the_size():
    from fcl.data.partition import lda_partition
    shards = lda_partition(np.repeat(np.arange(3), 34), 10, 1.0, np.random.default_rng(0))
    assert sorted(len(s) for s in shards) == [10] * 8 + [11] * 2
    with pytest.raises(ValueError, match="cannot give 10 clients 2 each"):
        lda_partition(np.arange(15) % 3, 10, 1.0, np.random.default_rng(0))
