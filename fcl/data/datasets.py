"""Data sets as uint8 tensors in memory, and the registry that maps `data.name` to a loader.

A loader is `load(root: str, cfg: DataConfig) -> ImageDataset` (it reads `data.root` and any other
`data.*` key it needs, e.g. `data.domains`); it never normalises or augments (that happens per
batch on the compute device, see `fcl.data.federated`). Loaders of real data sets decode once and
cache the tensors (`fcl.data.cache`). Missing or malformed files raise `DataError`, whose message
names the path, what was expected and how to get it.

| data.name             | module                   | tasks                                  |
|-----------------------|--------------------------|----------------------------------------|
| fashion_mnist_bundled | fcl.data.bundled         | classes split into data.num_tasks      |
| fashion_mnist         | fcl.data.fashion_mnist   | classes split into data.num_tasks      |
| cifar10, cifar100     | fcl.data.cifar           | classes split into data.num_tasks      |
| miniimagenet          | fcl.data.miniimagenet    | classes split into data.num_tasks      |
| decathlon             | fcl.data.decathlon       | one task per domain (`task_classes`)   |
| npz                   | here                     | classes split into data.num_tasks      |
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch


class DataError(RuntimeError):
    """A data set that is missing or malformed; the CLI prints it as one line and exits 2."""


@dataclass(frozen=True)
class ImageDataset:
    name: str
    train_x: torch.Tensor        # uint8 (n, C, H, W)
    train_y: torch.Tensor        # int64 (n,), global class ids 0..num_classes-1
    test_x: torch.Tensor
    test_y: torch.Tensor
    classes: tuple[str, ...]
    # The data set's own grouping of classes into tasks (Decathlon: one per domain), in sequence
    # order; None: `fcl.data.federated` cuts the classes into data.num_tasks groups.
    task_classes: tuple[tuple[int, ...], ...] | None = None

    @property
    def num_classes(self) -> int:
        return len(self.classes)

    @property
    def image_shape(self) -> tuple[int, int, int]:
        return tuple(self.train_x.shape[1:])


def from_arrays(name: str, train_x, train_y, test_x, test_y, classes=None) -> ImageDataset:
    """Check and convert numpy arrays; images may be (n, H, W), (n, H, W, C) or (n, C, H, W)."""
    def images(a: np.ndarray, split: str) -> torch.Tensor:
        a = np.asarray(a)
        if a.dtype != np.uint8:
            raise DataError(f"{name}: {split}_x has dtype {a.dtype}; expected uint8 images")
        if a.ndim == 3:
            a = a[:, None]
        elif a.ndim == 4 and a.shape[-1] in (1, 3) and a.shape[1] not in (1, 3):
            a = a.transpose(0, 3, 1, 2)            # NHWC -> NCHW
        elif a.ndim != 4:
            raise DataError(f"{name}: {split}_x has shape {a.shape}; expected (n, H, W[, C])")
        return torch.from_numpy(np.ascontiguousarray(a))

    def labels(a, n: int, split: str) -> torch.Tensor:
        a = np.asarray(a).reshape(-1)
        if len(a) != n:
            raise DataError(f"{name}: {split}_y has {len(a)} labels for {n} images")
        return torch.from_numpy(a.astype(np.int64))

    tx, sx = images(train_x, "train"), images(test_x, "test")
    ty, sy = labels(train_y, len(tx), "train"), labels(test_y, len(sx), "test")
    num_classes = int(max(ty.max(), sy.max())) + 1
    if classes is None or len(classes) != num_classes:
        classes = tuple(str(c) for c in range(num_classes))
    return ImageDataset(name, tx, ty, sx, sy, tuple(str(c) for c in classes))


def load_npz(root: str, cfg=None) -> ImageDataset:
    """Any arrays train_x/train_y/test_x/test_y (and optional `classes`) in one .npz file; the
    NCHW tensors are cached next to it (`fcl.data.cache`)."""
    if not root:
        raise DataError("data.name=npz needs data.root=FILE.npz with arrays "
                        "train_x, train_y, test_x, test_y")
    if not os.path.isfile(root):
        raise DataError(f"{root}: no such file; expected an .npz with arrays train_x, train_y, "
                        "test_x, test_y (CIFAR-10 here: python ../shared/data/"
                        "cifar10_jpg_to_npz.py OUT.npz)")
    from fcl.data.cache import cached   # imports this module
    return cached(os.path.basename(root), os.path.dirname(os.path.abspath(root)), [root],
                  lambda: decode_npz(root))


def decode_npz(root: str) -> ImageDataset:
    try:
        with np.load(root, allow_pickle=False) as z:
            missing = {"train_x", "train_y", "test_x", "test_y"} - set(z.files)
            if missing:
                raise DataError(f"{root}: missing arrays {sorted(missing)}; expected train_x, "
                                "train_y, test_x, test_y")
            classes = tuple(z["classes"].tolist()) if "classes" in z.files else None
            return from_arrays(os.path.basename(root), z["train_x"], z["train_y"], z["test_x"],
                               z["test_y"], classes)
    except (OSError, ValueError) as e:
        raise DataError(f"{root}: not a readable .npz file ({e})") from None


LOADERS: dict[str, Callable[..., ImageDataset]] = {"npz": load_npz}


def register(name: str):
    """Decorator: `@register("cifar100") def load(root, cfg) -> ImageDataset`."""
    def deco(fn):
        LOADERS[name] = fn
        return fn
    return deco


def load_dataset(name: str, root: str = "", cfg=None) -> ImageDataset:
    """The data set `name` from `root`; `cfg` (a DataConfig, default: its defaults) carries the
    loader-specific keys."""
    # modules that register loaders
    from fcl.data import bundled, cifar, decathlon, fashion_mnist, miniimagenet  # noqa: F401
    if name not in LOADERS:
        raise DataError(f"data.name={name}: no loader; allowed: {', '.join(sorted(LOADERS))}")
    if cfg is None:
        from fcl.config import DataConfig
        cfg = DataConfig(name=name, root=root)
    return LOADERS[name](root, cfg)
