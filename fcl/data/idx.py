"""Reader for the IDX format of (Fashion-)MNIST: `<prefix>-images-idx3-ubyte[.gz]` + labels."""
from __future__ import annotations

import gzip
import os

import numpy as np

_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path: str) -> np.ndarray:
    """One IDX file (plain or gzipped) as an array; a malformed header raises ValueError."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _DTYPES:
        raise ValueError(f"{path}: not an IDX file (bad magic number)")
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    dtype = np.dtype(_DTYPES[data[2]])
    count = int(np.prod(dims)) if dims else 0
    offset = 4 + 4 * ndim
    if len(data) - offset != count * dtype.itemsize:
        raise ValueError(f"{path}: IDX payload has {len(data) - offset} bytes, header says "
                         f"{count * dtype.itemsize}")
    values = np.frombuffer(data, dtype=dtype, offset=offset).reshape(dims)
    return values.astype(dtype.newbyteorder("="))


def find_idx(folder: str, prefix: str, kind: str) -> str:
    """Path of `<prefix>-<kind>-idx?-ubyte` or its .gz in `folder`; FileNotFoundError otherwise."""
    ndim = 3 if kind == "images" else 1
    for name in (f"{prefix}-{kind}-idx{ndim}-ubyte", f"{prefix}-{kind}-idx{ndim}-ubyte.gz"):
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(os.path.join(folder, f"{prefix}-{kind}-idx{ndim}-ubyte[.gz]"))


def read_idx_pair(folder: str, prefix: str) -> tuple[np.ndarray, np.ndarray]:
    """(images uint8 (n, h, w), labels int64 (n,)) for prefix `train` or `t10k`."""
    x = read_idx(find_idx(folder, prefix, "images"))
    y = read_idx(find_idx(folder, prefix, "labels")).astype(np.int64)
    if len(x) != len(y):
        raise ValueError(f"{folder}: {len(x)} {prefix} images but {len(y)} labels")
    return x, y
