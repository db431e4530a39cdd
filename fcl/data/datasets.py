"""The registry that maps `data.name` to a loader, and `load_dataset`.

A loader is `load(root: str, cfg: DataConfig) -> ImageDataset` (`fcl.data.image_dataset`; it
reads `data.root` and any other `data.*` key it needs, e.g. `data.domains`); it never normalises
or augments (that happens per batch on the compute device, see `fcl.data.federated`). Loaders of
real data sets decode once and cache the tensors (`fcl.data.cache`). Missing or malformed files
raise `DataError`, whose message names the path, what was expected and how to get it.

| data.name             | module                   | tasks                                  |
|-----------------------|--------------------------|----------------------------------------|
| fashion_mnist_bundled | fcl.data.bundled         | classes split into data.num_tasks      |
| fashion_mnist         | fcl.data.fashion_mnist   | classes split into data.num_tasks      |
| cifar10, cifar100     | fcl.data.cifar           | classes split into data.num_tasks      |
| miniimagenet          | fcl.data.miniimagenet    | classes split into data.num_tasks      |
| decathlon             | fcl.data.decathlon       | one task per domain (`task_classes`)   |
| npz                   | fcl.data.datasets        | classes split into data.num_tasks      |
"""
from __future__ import annotations

import os
from typing import Callable

import numpy as np

from fcl.config import DataConfig
from fcl.data import bundled, cifar, decathlon, fashion_mnist, miniimagenet
from fcl.data.cache import cached
from fcl.data.image_dataset import DataError, ImageDataset, from_arrays

__all__ = ["DataError", "ImageDataset", "LOADERS", "from_arrays", "load_dataset"]


def load_npz(root: str, cfg=None) -> ImageDataset:
    """Any arrays train_x/train_y/test_x/test_y (and optional `classes`) in one .npz file; the
    NCHW tensors are cached next to it (`fcl.data.cache`)."""
    if not root:
        raise DataError("data.name=npz needs data.root=FILE.npz with arrays "
                        "train_x, train_y, test_x, test_y")
    if not os.path.isfile(root):
        raise DataError(f"{root}: no such file; expected an .npz with arrays train_x, train_y, "
                        "test_x, test_y (uint8 images N x H x W [x C], integer labels)")
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
                               z["test_y"], classes, source=root)
    except (OSError, ValueError) as e:
        raise DataError(f"{root}: not a readable .npz file ({e})") from None


LOADERS: dict[str, Callable[[str, DataConfig], ImageDataset]] = {
    "fashion_mnist_bundled": bundled.load_bundled,
    "fashion_mnist": fashion_mnist.load_fashion_mnist,
    "cifar10": cifar.load_cifar10,
    "cifar100": cifar.load_cifar100,
    "miniimagenet": miniimagenet.load_miniimagenet,
    "decathlon": decathlon.load_decathlon,
    "npz": load_npz,
}


def load_dataset(name: str, root: str = "", cfg: DataConfig | None = None) -> ImageDataset:
    """The data set `name` from `root`; `cfg` (default: its defaults) carries the loader-specific
    keys."""
    if name not in LOADERS:
        raise DataError(f"data.name={name}: no loader; allowed: {', '.join(sorted(LOADERS))}")
    return LOADERS[name](root, cfg if cfg is not None else DataConfig(name=name, root=root))
