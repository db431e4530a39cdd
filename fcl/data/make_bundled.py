"""Build the bundled Split Fashion-MNIST subset shipped inside the package.

    python -m fcl.data.make_bundled [--source DIR] [--out FILE]

Reads the four IDX files of Fashion-MNIST (Debian's `dataset-fashion-mnist` puts them in
/usr/share/datasets/fashion-mnist; torchvision's download puts the same files in
<root>/FashionMNIST/raw) and keeps the first TRAIN_PER_CLASS training and TEST_PER_CLASS test
images of every class, in file order, so the subset is a pure function of the source files.
Prints the SHA-256 that `fcl.data.bundled.SHA256` must record.
"""
from __future__ import annotations

import argparse
import hashlib
import io

import numpy as np

from fcl.atomic_file import write_bytes_atomic
from fcl.data.idx import read_idx_pair

TRAIN_PER_CLASS = 600
TEST_PER_CLASS = 100
CLASSES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker",
           "Bag", "Ankle boot")
DEFAULT_SOURCE = "/usr/share/datasets/fashion-mnist"


def first_per_class(x: np.ndarray, y: np.ndarray, per_class: int) -> tuple[np.ndarray, np.ndarray]:
    keep = np.concatenate([np.flatnonzero(y == c)[:per_class] for c in range(len(CLASSES))])
    keep.sort()  # file order, classes interleaved as in the source
    return x[keep], y[keep]


def build(source: str) -> bytes:
    train_x, train_y = read_idx_pair(source, "train")
    test_x, test_y = read_idx_pair(source, "t10k")
    train_x, train_y = first_per_class(train_x, train_y, TRAIN_PER_CLASS)
    test_x, test_y = first_per_class(test_x, test_y, TEST_PER_CLASS)
    buf = io.BytesIO()
    # savez_compressed writes fixed zip timestamps, so the bytes (and the checksum) are stable.
    np.savez_compressed(buf, train_x=train_x[:, None], train_y=train_y.astype(np.int64),
                        test_x=test_x[:, None], test_y=test_y.astype(np.int64),
                        classes=np.array(CLASSES))
    return buf.getvalue()


def main() -> None:
    from fcl.data.bundled import BUNDLED_PATH
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default=DEFAULT_SOURCE, help="folder with the four IDX(.gz) files")
    ap.add_argument("--out", default=str(BUNDLED_PATH))
    args = ap.parse_args()
    blob = build(args.source)
    write_bytes_atomic(blob, args.out)
    print(f"wrote {args.out} ({len(blob)} bytes) sha256={hashlib.sha256(blob).hexdigest()}")


if __name__ == "__main__":
    main()
