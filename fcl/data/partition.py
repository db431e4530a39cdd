"""Partition one task's training samples over clients: IID, Dirichlet per class, or LDA.

Pure functions of (labels, seed): every index lands in exactly one client's shard, and the
same seed gives the same shards.
"""
from __future__ import annotations

import numpy as np
import torch


def iid_partition(n: int, num_clients: int, rng: np.random.Generator) -> list[torch.Tensor]:
    """A random permutation cut into `num_clients` shards whose sizes differ by at most one."""
    perm = rng.permutation(n)
    return [torch.from_numpy(np.sort(s)).long() for s in np.array_split(perm, num_clients)]


def dirichlet_partition(labels: np.ndarray, num_clients: int, alpha: float,
                        rng: np.random.Generator, min_size: int = 2,
                        max_tries: int = 1000) -> list[torch.Tensor]:
    """For each class, client proportions ~ Dir(alpha * 1_N) (Hsu et al. 2019; the FCL paper's
    non-IID setting). Draws again until every client holds at least `min_size` samples, so no
    client is left with nothing to train on; raises ValueError if that never happens."""
    labels = np.asarray(labels)
    if len(labels) < num_clients * min_size:
        raise ValueError(f"{len(labels)} samples cannot give {num_clients} clients "
                         f"{min_size} each")
    for _ in range(max_tries):
        shards: list[list[np.ndarray]] = [[] for _ in range(num_clients)]
        for c in np.unique(labels):
            idx = rng.permutation(np.flatnonzero(labels == c))
            props = rng.dirichlet(np.full(num_clients, alpha))
            cuts = (np.cumsum(props)[:-1] * len(idx)).astype(int)
            for client, part in enumerate(np.split(idx, cuts)):
                shards[client].append(part)
        merged = [np.sort(np.concatenate(s)) for s in shards]
        if min(len(s) for s in merged) >= min_size:
            return [torch.from_numpy(s).long() for s in merged]
    raise ValueError(f"no Dirichlet(alpha={alpha}) draw gave every one of {num_clients} clients "
                     f"{min_size} samples in {max_tries} tries; raise data.alpha or lower "
                     "data.min_client_samples")


def lda_partition(labels: np.ndarray, num_clients: int, alpha: float, rng: np.random.Generator,
                  min_size: int = 2) -> list[torch.Tensor]:
    """Flower's latent-Dirichlet recipe (`create_lda_partitions`, which FLoCoRA's code uses):
    every client gets the same number of samples (n / N; the first n mod N clients one more),
    drawn without replacement from its own class mix ~ Dir(alpha * 1_C). When a class runs
    out, its share goes to the classes left, renormalised (Flower's sample-by-sample draw,
    drawn in multinomial rounds instead: the same distribution). Clients are filled in order, so the
    last ones get what the first left."""
    labels = np.asarray(labels)
    n = len(labels)
    if n // num_clients < min_size:
        raise ValueError(f"{n} samples cannot give {num_clients} clients {min_size} each")
    classes = np.unique(labels)
    pools = [list(rng.permutation(np.flatnonzero(labels == c))) for c in classes]
    mixes = rng.dirichlet(np.full(len(classes), alpha), size=num_clients)
    sizes = [n // num_clients + (k < n % num_clients) for k in range(num_clients)]
    shards = []
    for client, size in enumerate(sizes):
        counts = np.zeros(len(classes), dtype=np.int64)
        while counts.sum() < size:
            left = np.array([len(p) for p in pools]) - counts
            mix = np.where(left > 0, mixes[client] + 1e-12, 0.0)    # Flower adds an eps too
            draw = rng.multinomial(size - counts.sum(), mix / mix.sum())
            counts += np.minimum(draw, left)
        taken = [pools[c][len(pools[c]) - k:] for c, k in enumerate(counts) if k]
        for c, k in enumerate(counts):
            del pools[c][len(pools[c]) - k:]
        shards.append(torch.from_numpy(np.sort(np.concatenate(taken))).long())
    return shards
