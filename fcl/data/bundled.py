"""The bundled default: a Split Fashion-MNIST subset that ships inside the package.

600 training and 100 test images per class (the first ones of each class in file order), 28x28
grayscale, made by `python -m fcl.data.make_bundled` from the Debian package's IDX files. Its
SHA-256 is checked when it is decoded, so a damaged install fails loudly instead of training on
garbage; the decoded tensors are cached next to it (`fcl.data.cache`; falls back to
~/.cache/fcl when the package folder is read-only).
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from fcl.data.cache import cached
from fcl.data.image_dataset import DataError, ImageDataset, from_arrays

BUNDLED_PATH = Path(__file__).parent / "bundled" / "fashion_mnist_split.npz"
SHA256 = "c8bc7d083a707211d6a383f67f0ac4201c08b6b7941700ba32024c706beedd20"


def load_bundled(root: str = "", cfg=None) -> ImageDataset:
    del root, cfg  # the bundled set lives inside the package
    if not BUNDLED_PATH.is_file():
        raise DataError(f"{BUNDLED_PATH}: bundled data set missing; reinstall fcl or rebuild it "
                        "with `python -m fcl.data.make_bundled`")
    return cached("fashion_mnist_bundled", BUNDLED_PATH.parent, [BUNDLED_PATH], decode_bundled,
                  salt=SHA256)


def decode_bundled() -> ImageDataset:
    try:
        blob = BUNDLED_PATH.read_bytes()
    except OSError:
        raise DataError(f"{BUNDLED_PATH}: bundled data set missing; reinstall fcl or rebuild it "
                        "with `python -m fcl.data.make_bundled`") from None
    digest = hashlib.sha256(blob).hexdigest()
    if digest != SHA256:
        raise DataError(f"{BUNDLED_PATH}: checksum {digest[:12]}... != expected {SHA256[:12]}...; "
                        "rebuild it with `python -m fcl.data.make_bundled`")
    import io
    with np.load(io.BytesIO(blob), allow_pickle=False) as z:
        return from_arrays("fashion_mnist_bundled", z["train_x"], z["train_y"], z["test_x"],
                           z["test_y"], tuple(z["classes"].tolist()), source=str(BUNDLED_PATH))
