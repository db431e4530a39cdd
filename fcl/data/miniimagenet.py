"""MiniImageNet (Vinyals et al. 2016) in the Ravi & Larochelle (2017) layout.

    data.name=miniimagenet data.root=DIR
    DIR/train.csv, DIR/val.csv, DIR/test.csv    header `filename,label`, label = WordNet id
    DIR/images/<filename>                       JPEG, 84x84 (larger images are resized)

The FCL paper uses all 100 classes as a classification benchmark (10 tasks x 10 classes), not the
few-shot class split, so the three CSVs' 64 + 16 + 20 classes are merged into 100 classes in
sorted WordNet-id order, and every class's images (600 in the real set) are split into train and
test by a fixed rule that depends neither on the run's seed nor on the other classes:

    sort the class's file names; permute them with numpy.random.default_rng(crc32(wnid));
    the last n // 6 are test images, the others training images.

That gives 500 / 100 images per class (50,000 / 10,000), the same on every machine. Images that
are not 84x84 are resized as Ravi's script does (`im.resize((84, 84), Image.LANCZOS)`). There is
no download: the images are ImageNet's (its licence), made by Ravi's script or a mirror of it.
"""
from __future__ import annotations

import csv
import zlib
from pathlib import Path

import numpy as np

from fcl.data.cache import cached
from fcl.data.image_dataset import DataError, ImageDataset, from_arrays
from fcl.data.images import decode_images

SPLITS = ("train.csv", "val.csv", "test.csv")
SIZE = 84
TEST_SHARE = 6          # one image in six is a test image
HOW = ("expected the Ravi & Larochelle layout: train.csv, val.csv, test.csv (filename,label) and "
       "images/<filename>, e.g. from github.com/twitter/meta-learning-lstm's split files and its "
       "ImageNet script")


def read_csv(path: Path) -> list[tuple[str, str]]:
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except FileNotFoundError:
        raise DataError(f"{path}: missing; {HOW}") from None
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise DataError(f"{path}: unreadable ({type(e).__name__}); {HOW}") from None
    if not rows or [c.strip() for c in rows[0][:2]] != ["filename", "label"]:
        raise DataError(f"{path}: header {rows[0] if rows else '(empty)'}; expected "
                        "filename,label")
    pairs = [(r[0].strip(), r[1].strip()) for r in rows[1:] if len(r) >= 2 and r[0].strip()]
    if len(pairs) != sum(1 for r in rows[1:] if any(c.strip() for c in r)):
        raise DataError(f"{path}: some rows lack a filename or a label; expected filename,label")
    return pairs


def split_class(wnid: str, files: list[str]) -> tuple[list[str], list[str]]:
    """(train, test) file names of one class: the module docstring's rule."""
    ordered = sorted(files)
    perm = np.random.default_rng(zlib.crc32(wnid.encode())).permutation(len(ordered))
    shuffled = [ordered[i] for i in perm]
    n_test = len(shuffled) // TEST_SHARE
    return shuffled[:len(shuffled) - n_test], shuffled[len(shuffled) - n_test:]


def file_lists(root: Path) -> tuple[list[str], dict[str, list[str]]]:
    """(sorted WordNet ids, files per id) over the three CSVs."""
    by_class: dict[str, list[str]] = {}
    seen: set[str] = set()
    for name in SPLITS:
        for filename, wnid in read_csv(root / name):
            if filename not in seen:
                seen.add(filename)
                by_class.setdefault(wnid, []).append(filename)
    return sorted(by_class), by_class


def decode(root: Path, classes: list[str], by_class: dict[str, list[str]]) -> ImageDataset:
    train, test = [], []
    for label, wnid in enumerate(classes):
        tr, te = split_class(wnid, by_class[wnid])
        train += [(f, label) for f in tr]
        test += [(f, label) for f in te]
    images = root / "images"
    tx = decode_images([images / f for f, _ in train], SIZE, "squash")
    sx = decode_images([images / f for f, _ in test], SIZE, "squash")
    return from_arrays("miniimagenet", tx, np.array([y for _, y in train]), sx,
                       np.array([y for _, y in test]), tuple(classes), source=str(root))


def load_miniimagenet(root: str, cfg=None) -> ImageDataset:
    if not root:
        raise DataError(f"data.name=miniimagenet needs data.root=DIR; {HOW}")
    base = Path(root)
    if not base.is_dir():
        raise DataError(f"{base}: no such folder; {HOW}")
    classes, by_class = file_lists(base)
    if not classes:
        raise DataError(f"{base}: the CSVs list no images; {HOW}")
    if min(len(v) for v in by_class.values()) < 2:
        raise DataError(f"{base}: a class has fewer than 2 images; expected 600 per class")
    images = [base / "images" / f for wnid in classes for f in by_class[wnid]]
    missing = next((p for p in images if not p.is_file()), None)
    if missing is not None:
        raise DataError(f"{missing}: image missing; {HOW}")
    return cached("miniimagenet", base, [base / s for s in SPLITS] + images,
                  lambda: decode(base, classes, by_class), salt=f"{SIZE}px squash")
