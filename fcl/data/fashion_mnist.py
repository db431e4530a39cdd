"""Fashion-MNIST, the whole set (60,000 training and 10,000 test images of 28x28, 10 classes).

    data.name=fashion_mnist                 Debian's /usr/share/datasets/fashion-mnist
    data.name=fashion_mnist data.root=DIR   DIR/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]
                                            or torchvision's layout DIR/FashionMNIST/raw/...

Without data.root the files of Debian's `dataset-fashion-mnist` package are read
(`apt-get install dataset-fashion-mnist`). When DIR holds no IDX files, torchvision's
`FashionMNIST(DIR, download=True)` fetches them (not with `FCL_OFFLINE=1`). The bundled subset
(`fashion_mnist_bundled`) is the first 600/100 images per class of these same files.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from fcl.data.cache import cached
from fcl.data.download import try_download
from fcl.data.idx import find_idx, read_idx_pair
from fcl.data.image_dataset import DataError, ImageDataset, from_arrays
from fcl.data.make_bundled import CLASSES, DEFAULT_SOURCE

PARTS = [(prefix, kind) for prefix in ("train", "t10k") for kind in ("images", "labels")]


def idx_files(folder: Path) -> list[Path] | None:
    """The four IDX files in `folder`, or None if any is missing."""
    try:
        return [Path(find_idx(str(folder), prefix, kind)) for prefix, kind in PARTS]
    except FileNotFoundError:
        return None


def find_folder(root: Path) -> Path | None:
    for folder in (root, root / "FashionMNIST" / "raw"):
        if idx_files(folder):
            return folder
    return None


def decode(folder: Path) -> ImageDataset:
    try:
        train_x, train_y = read_idx_pair(str(folder), "train")
        test_x, test_y = read_idx_pair(str(folder), "t10k")
    except (OSError, ValueError, EOFError) as e:   # gzip/IDX errors name the file
        raise DataError(f"{str(e).splitlines()[0][:200]}; expected the four Fashion-MNIST IDX "
                        "files (apt-get install dataset-fashion-mnist, or torchvision's "
                        "FashionMNIST download)") from None
    for split, y in (("train", train_y), ("t10k", test_y)):
        if len(y) and (y.min() < 0 or y.max() >= len(CLASSES)):
            raise DataError(f"{folder}: {split} labels span {y.min()}..{y.max()}; expected "
                            f"0..{len(CLASSES) - 1}")
    return from_arrays("fashion_mnist", train_x.astype(np.uint8, copy=False), train_y,
                       test_x.astype(np.uint8, copy=False), test_y, CLASSES, source=str(folder))


def load_fashion_mnist(root: str = "", cfg=None) -> ImageDataset:
    base = Path(root or DEFAULT_SOURCE)
    folder = find_folder(base)
    expected = (f"{base}: no Fashion-MNIST IDX files; expected train-images-idx3-ubyte[.gz], "
                "train-labels-idx1-ubyte[.gz], t10k-images-idx3-ubyte[.gz], "
                "t10k-labels-idx1-ubyte[.gz] (apt-get install dataset-fashion-mnist puts them in "
                f"{DEFAULT_SOURCE})")
    if folder is None and root:
        def fetch():
            import torchvision
            torchvision.datasets.FashionMNIST(str(base), train=True, download=True)
        try_download(fetch, expected)
        folder = find_folder(base)
    if folder is None:
        raise DataError(expected)
    return cached("fashion_mnist", folder, idx_files(folder), lambda: decode(folder))
