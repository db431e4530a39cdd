"""From a data set to what a run trains on: T tasks of disjoint classes, each task's training
set partitioned over N clients, held on the compute device as uint8 and normalised per batch.

Task-incremental: task t owns classes `task_classes[t]` and a head of that many outputs, so
labels are stored task-local (0..C_t-1). A data set made of domains (Decathlon) brings its own
groups (`ImageDataset.task_classes`): task t is its domain t, and `data.num_tasks` must equal the
number of domains. Augmentation (`data.augment`) is cut per batch on the device, see
`fcl.data.augment`.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np
import torch

from fcl.data.augment import random_crop_flip
from fcl.data.image_dataset import DataError, ImageDataset
from fcl.data.partition import dirichlet_partition, iid_partition, lda_partition
from fcl.seeding import derive_seed

if TYPE_CHECKING:
    from fcl.config import DataConfig


@dataclass(frozen=True)
class TaskData:
    classes: tuple[int, ...]           # global class ids of this task
    train_x: torch.Tensor              # uint8 (n, C, H, W) on the device
    train_y: torch.Tensor              # int64 task-local labels
    test_x: torch.Tensor
    test_y: torch.Tensor
    shards: tuple[torch.Tensor, ...]   # per client: indices into train_x (on the device)


@dataclass(frozen=True)
class FederatedData:
    tasks: tuple[TaskData, ...]
    mean: torch.Tensor                 # (1, C, 1, 1) float32, from the training images
    std: torch.Tensor
    image_shape: tuple[int, int, int]
    augment: bool = False              # random crop + flip of training batches (data.augment)

    @property
    def num_tasks(self) -> int:
        return len(self.tasks)

    @property
    def num_clients(self) -> int:
        return len(self.tasks[0].shards)

    def classes_per_task(self) -> list[int]:
        return [len(t.classes) for t in self.tasks]

    def normalise(self, x: torch.Tensor) -> torch.Tensor:
        return (x.float() * (1.0 / 255.0) - self.mean) / self.std

    def augmenter(self, gen: torch.Generator) -> Callable[[torch.Tensor], torch.Tensor]:
        """Per-batch augmentation of uint8 images for one client's local training: identity
        (drawing nothing from `gen`) unless `augment`; else random crop + flip with a device
        generator seeded by one draw from `gen`, so it never syncs with the host."""
        if not self.augment:
            return lambda x: x
        device = self.mean.device
        dev_gen = torch.Generator(device=device)
        dev_gen.manual_seed(int(torch.randint(2**62, (1,), generator=gen)))
        pad = max(1, self.image_shape[-1] // 8)
        return lambda x: random_crop_flip(x, pad, dev_gen)

    def with_stats(self, stats: tuple[torch.Tensor, torch.Tensor] | None) -> "FederatedData":
        """The same data normalised with other (mean, std); None keeps the data set's."""
        if stats is None:
            return self
        mean, std = (t.to(self.mean.device, torch.float32) for t in stats)
        return dataclasses.replace(self, mean=mean, std=std)

    def to(self, device: torch.device) -> "FederatedData":
        move = lambda t: t.to(device, non_blocking=True)  # noqa: E731
        tasks = tuple(TaskData(t.classes, move(t.train_x), move(t.train_y), move(t.test_x),
                               move(t.test_y), tuple(move(s) for s in t.shards))
                      for t in self.tasks)
        return FederatedData(tasks, move(self.mean), move(self.std), self.image_shape,
                             self.augment)


def split_classes(num_classes: int, num_tasks: int, order: str, seed: int) -> list[list[int]]:
    """Classes cut into T contiguous groups of (nearly) equal size, in natural or seeded order."""
    if num_tasks > num_classes:
        raise DataError(f"data.num_tasks={num_tasks}: the data set has only {num_classes} classes;"
                        f" allowed: 1..{num_classes}")
    classes = np.arange(num_classes)
    if order == "seeded":
        classes = np.random.default_rng(derive_seed(seed, "class_order")).permutation(classes)
    return [g.tolist() for g in np.array_split(classes, num_tasks)]


def chance_accuracy(ds: ImageDataset, cfg: DataConfig) -> tuple[float, int]:
    """(ACC in percent of a model that guesses, the test images ACC is measured on): the mean
    over tasks of 1 / classes of the task, and each task's classes x test images per class."""
    groups = task_groups(ds, cfg, 0)
    counts = torch.bincount(ds.test_y, minlength=ds.num_classes).tolist()
    per_class = [min(n, cfg.test_per_class) if cfg.test_per_class else n for n in counts]
    return (float(np.mean([100 / len(g) for g in groups])),
            int(sum(per_class[c] for g in groups for c in g)))


def task_groups(ds: ImageDataset, cfg: DataConfig, seed: int) -> list[list[int]]:
    """The data set's own groups (domains), in sequence or seeded order, or classes cut into
    data.num_tasks groups."""
    if ds.task_classes is None:
        return split_classes(ds.num_classes, cfg.num_tasks, cfg.class_order, seed)
    groups = [list(g) for g in ds.task_classes]
    if cfg.num_tasks != len(groups):
        raise DataError(f"data.num_tasks={cfg.num_tasks}: {ds.name} has one task per domain and "
                        f"holds {len(groups)}; allowed: {len(groups)} (or choose data.domains)")
    if cfg.class_order == "seeded":
        order = np.random.default_rng(derive_seed(seed, "class_order")).permutation(len(groups))
        groups = [groups[i] for i in order]
    return groups


def channel_stats(x: torch.Tensor, chunk: int = 2048) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-channel mean and std (unbiased) of uint8 images in [0, 1], as (1, C, 1, 1) float32.
    Exact integer sums over chunks: a 3 GB uint8 set never becomes 12 GB of float32 at once,
    and the result does not depend on the chunking."""
    total = torch.zeros(x.shape[1], dtype=torch.int64)
    squares = torch.zeros(x.shape[1], dtype=torch.int64)
    for part in x.split(chunk):
        total += part.sum(dim=(0, 2, 3), dtype=torch.int64)
        squares += part.to(torch.int32).square().sum(dim=(0, 2, 3), dtype=torch.int64)
    n = x.shape[0] * x.shape[2] * x.shape[3]
    mean = total.double() / n
    var = (squares.double() - n * mean.square()) / max(n - 1, 1)
    std = var.clamp_min(0).sqrt() / 255.0
    return ((mean / 255.0).float().view(1, -1, 1, 1),
            std.float().clamp_min(1e-3).view(1, -1, 1, 1))


def _first_per_class(y: torch.Tensor, per_class: int) -> torch.Tensor:
    """Indices keeping the first `per_class` samples of every class (all if 0), in order."""
    if per_class <= 0:
        return torch.arange(len(y))
    keep = torch.cat([torch.nonzero(y == c).flatten()[:per_class] for c in torch.unique(y)])
    return keep.sort().values


def build_federated_data(ds: ImageDataset, cfg: DataConfig, seed: int) -> FederatedData:
    """Split `ds` into tasks and client shards (deterministic under `seed`), on the CPU."""
    tr = _first_per_class(ds.train_y, cfg.train_per_class)
    te = _first_per_class(ds.test_y, cfg.test_per_class)
    train_x, train_y, test_x, test_y = ds.train_x[tr], ds.train_y[tr], ds.test_x[te], ds.test_y[te]
    groups = task_groups(ds, cfg, seed)
    tasks = []
    for t, group in enumerate(groups):
        local = torch.full((ds.num_classes,), -1, dtype=torch.long)
        local[group] = torch.arange(len(group))
        in_train = local[train_y] >= 0
        in_test = local[test_y] >= 0
        ty = local[train_y[in_train]]
        rng = np.random.default_rng(derive_seed(seed, "partition", t))
        if len(ty) < cfg.num_clients:
            raise DataError(f"data.num_clients={cfg.num_clients}: task {t} has only {len(ty)} "
                            f"training samples; allowed: <= {len(ty)}")
        if cfg.partition == "iid":
            shards = iid_partition(len(ty), cfg.num_clients, rng)
        else:
            split = dirichlet_partition if cfg.partition == "dirichlet" else lda_partition
            try:
                shards = split(ty.numpy(), cfg.num_clients, cfg.alpha, rng,
                               cfg.min_client_samples)
            except ValueError as e:
                raise DataError(f"data.alpha={cfg.alpha}: {e}") from None
        tasks.append(TaskData(tuple(group), train_x[in_train].contiguous(), ty,
                              test_x[in_test].contiguous(), local[test_y[in_test]],
                              tuple(shards)))
    mean, std = channel_stats(train_x)
    return FederatedData(tuple(tasks), mean, std, ds.image_shape, cfg.augment)
