"""What every loader returns: uint8 image tensors in memory (`ImageDataset`), checked and
converted from numpy arrays (`from_arrays`); and `DataError`, a data set that is missing or
malformed (the CLI prints it as one line and exits 2)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from fcl.data.errors import DataError  # noqa: F401  (re-exported: every loader raises it)


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


def check_labels(a: np.ndarray, num_classes: int | None, where: str) -> None:
    """Labels are integers in [0, num_classes) (num_classes None: >= 0): a label of -3 would pick
    class C - 3 by negative indexing and 2.7 would be truncated to 2, both silently."""
    allowed = (f"integers in [0, {num_classes})" if num_classes is not None
               else "integers >= 0")
    if a.dtype == np.bool_ or not np.issubdtype(a.dtype, np.number) \
            or np.issubdtype(a.dtype, np.complexfloating):
        raise DataError(f"{where} has dtype {a.dtype}; expected {allowed}")
    bad = ~np.isfinite(a) | (a != np.round(a)) if np.issubdtype(a.dtype, np.floating) \
        else np.zeros(a.shape, bool)
    bad |= a < 0
    if num_classes is not None:
        bad |= a >= num_classes
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"{where} has label {a[i].item()!r} (at index {i}, {int(bad.sum())} bad in "
                        f"all); expected {allowed}")


def from_arrays(name: str, train_x, train_y, test_x, test_y, classes=None,
                source: str | None = None) -> ImageDataset:
    """Check and convert numpy arrays; images may be (n, H, W), (n, H, W, C) or (n, C, H, W).
    Labels must be integers (any integer dtype, or integral floats) in [0, len(classes)), or
    >= 0 without `classes`; `source` (default `name`): the file or folder errors name."""
    source = source or name
    def images(a: np.ndarray, split: str) -> torch.Tensor:
        a = np.asarray(a)
        if a.dtype != np.uint8:
            raise DataError(f"{source}: {split}_x has dtype {a.dtype}; expected uint8 images")
        if a.ndim == 3:
            a = a[:, None]
        elif a.ndim == 4 and a.shape[-1] in (1, 3) and a.shape[1] not in (1, 3):
            a = a.transpose(0, 3, 1, 2)            # NHWC -> NCHW
        elif a.ndim != 4:
            raise DataError(f"{source}: {split}_x has shape {a.shape}; expected (n, H, W[, C])")
        return torch.from_numpy(np.ascontiguousarray(a))

    def labels(a, n: int, split: str) -> torch.Tensor:
        a = np.asarray(a).reshape(-1)
        if len(a) != n:
            raise DataError(f"{source}: {split}_y has {len(a)} labels for {n} images")
        check_labels(a, None if classes is None else len(classes), f"{source}: {split}_y")
        return torch.from_numpy(a.astype(np.int64))

    tx, sx = images(train_x, "train"), images(test_x, "test")
    ty, sy = labels(train_y, len(tx), "train"), labels(test_y, len(sx), "test")
    num_classes = int(max(ty.max(), sy.max())) + 1
    if classes is None or len(classes) != num_classes:
        classes = tuple(str(c) for c in range(num_classes))
    return ImageDataset(name, tx, ty, sx, sy, tuple(str(c) for c in classes))
