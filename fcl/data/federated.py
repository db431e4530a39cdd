"""From a data set to what a run trains on: T tasks of disjoint classes, each task's training
set partitioned over N clients, held on the compute device as uint8 and normalised per batch.

Task-incremental: task t owns classes `task_classes[t]` and a head of that many outputs, so
labels are stored task-local (0..C_t-1).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from fcl.config import DataConfig
from fcl.data.datasets import DataError, ImageDataset
from fcl.data.partition import dirichlet_partition, iid_partition
from fcl.seeding import derive_seed


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

    def to(self, device: torch.device) -> "FederatedData":
        move = lambda t: t.to(device, non_blocking=True)  # noqa: E731
        tasks = tuple(TaskData(t.classes, move(t.train_x), move(t.train_y), move(t.test_x),
                               move(t.test_y), tuple(move(s) for s in t.shards))
                      for t in self.tasks)
        return FederatedData(tasks, move(self.mean), move(self.std), self.image_shape)


def split_classes(num_classes: int, num_tasks: int, order: str, seed: int) -> list[list[int]]:
    """Classes cut into T contiguous groups of (nearly) equal size, in natural or seeded order."""
    if num_tasks > num_classes:
        raise DataError(f"data.num_tasks={num_tasks}: the data set has only {num_classes} classes;"
                        f" allowed: 1..{num_classes}")
    classes = np.arange(num_classes)
    if order == "seeded":
        classes = np.random.default_rng(derive_seed(seed, "class_order")).permutation(classes)
    return [g.tolist() for g in np.array_split(classes, num_tasks)]


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
    groups = split_classes(ds.num_classes, cfg.num_tasks, cfg.class_order, seed)
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
            try:
                shards = dirichlet_partition(ty.numpy(), cfg.num_clients, cfg.alpha, rng,
                                             cfg.min_client_samples)
            except ValueError as e:
                raise DataError(f"data.alpha={cfg.alpha}: {e}") from None
        tasks.append(TaskData(tuple(group), train_x[in_train].contiguous(), ty,
                              test_x[in_test].contiguous(), local[test_y[in_test]],
                              tuple(shards)))
    pixels = train_x.float().div_(255.0)
    mean = pixels.mean(dim=(0, 2, 3)).view(1, -1, 1, 1)
    std = pixels.std(dim=(0, 2, 3)).clamp_min(1e-3).view(1, -1, 1, 1)
    return FederatedData(tuple(tasks), mean, std, ds.image_shape)
