"""CIFAR-10 and CIFAR-100 from the python versions of Krizhevsky's archives.

    data.name=cifar100 data.root=DIR    DIR/cifar-100-python/{train,test,meta}
    data.name=cifar10  data.root=DIR    DIR/cifar-10-batches-py/{data_batch_1..5,test_batch,
                                                                 batches.meta}

DIR is torchvision's `root` (the folder that holds the extracted archive; the archive's folder
itself is accepted too). When that folder does not exist, torchvision's `CIFAR10`/`CIFAR100`
with `download=True` fetches and extracts it into DIR (not with `FCL_OFFLINE=1`). fcl reads the
pickles itself rather than through torchvision's classes, which refuse any file whose MD5
differs from the published archive's (so no test could feed them a small file). They are
pickles: load only files you trust, as with torchvision.

CIFAR-100 uses its 100 fine labels; classes are in label order (apple, aquarium_fish, ...), so
`data.num_tasks=10` makes tasks of labels 0-9, 10-19, ... (`data.class_order=natural`), the
FCL paper's 10 x 10 split. 50,000 training and 10,000 test images of 32x32x3.
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fcl.data.cache import cached
from fcl.data.download import try_download
from fcl.data.image_dataset import DataError, ImageDataset, from_arrays


@dataclass(frozen=True)
class CifarLayout:
    folder: str
    train: tuple[str, ...]
    test: tuple[str, ...]
    meta: str
    label_key: str
    names_key: str
    url: str
    torchvision_class: str

    @property
    def files(self) -> tuple[str, ...]:
        return self.train + self.test + (self.meta,)


LAYOUTS = {
    "cifar10": CifarLayout("cifar-10-batches-py", tuple(f"data_batch_{i}" for i in range(1, 6)),
                           ("test_batch",), "batches.meta", "labels", "label_names",
                           "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz", "CIFAR10"),
    "cifar100": CifarLayout("cifar-100-python", ("train",), ("test",), "meta", "fine_labels",
                            "fine_label_names",
                            "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz",
                            "CIFAR100"),
}


def find_folder(root: Path, layout: CifarLayout) -> Path | None:
    """`root/<archive folder>` or `root` itself, whichever holds the archive's files."""
    for folder in (root / layout.folder, root):
        if (folder / layout.meta).is_file() or (folder / layout.train[0]).is_file():
            return folder
    return None


def read_pickle(path: Path, what: str, layout: CifarLayout) -> dict:
    try:
        with open(path, "rb") as f:
            blob = pickle.load(f, encoding="latin1")
        if not isinstance(blob, dict):
            raise TypeError(f"a {type(blob).__name__}, not a dict")
        # Python 2's pickles (the published archive) load with str keys; copies re-pickled by
        # Python 3 from `encoding="bytes"` loads carry bytes keys and bytes label names
        return {_text(k): v for k, v in blob.items()}
    except Exception as e:  # noqa: BLE001  (unpickling garbage raises almost anything)
        raise DataError(f"{path}: not a CIFAR python {what} ({type(e).__name__}: "
                        f"{str(e)[:80]}); re-extract {layout.url}") from None


def _text(key):
    return key.decode("latin1") if isinstance(key, bytes) else key


def read_batch(path: Path, layout: CifarLayout) -> tuple[np.ndarray, np.ndarray]:
    """One pickled batch: rows of 3072 bytes (R, G, B planes of 32x32) and their labels."""
    blob = read_pickle(path, "batch", layout)
    if "data" not in blob or layout.label_key not in blob:
        raise DataError(f"{path}: keys {sorted(blob)[:6]}; expected 'data' and "
                        f"'{layout.label_key}'; re-extract {layout.url}")
    data = np.asarray(blob["data"])
    labels = np.asarray(blob[layout.label_key], dtype=np.int64).reshape(-1)
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072 \
            or len(labels) != len(data):
        raise DataError(f"{path}: 'data' is {data.dtype} {data.shape} for {len(labels)} labels; "
                        f"expected uint8 (n, 3072); re-extract {layout.url}")
    return data.reshape(-1, 3, 32, 32), labels


def decode(name: str, folder: Path, layout: CifarLayout) -> ImageDataset:
    meta = read_pickle(folder / layout.meta, "meta file", layout)
    if layout.names_key not in meta:
        raise DataError(f"{folder / layout.meta}: no '{layout.names_key}'; re-extract "
                        f"{layout.url}")
    classes = tuple(str(_text(c)) for c in meta[layout.names_key])
    parts = {split: [read_batch(folder / f, layout) for f in files]
             for split, files in (("train", layout.train), ("test", layout.test))}
    (tx, ty), (sx, sy) = [(np.concatenate([x for x, _ in p]), np.concatenate([y for _, y in p]))
                          for p in (parts["train"], parts["test"])]
    for split, y in (("train", ty), ("test", sy)):
        if len(y) and (y.min() < 0 or y.max() >= len(classes)):
            raise DataError(f"{folder}: {split} labels span {y.min()}..{y.max()} but the meta "
                            f"file names {len(classes)} classes; re-extract {layout.url}")
    ds = from_arrays(name, tx, ty, sx, sy, classes, source=str(folder))
    if ds.num_classes != len(classes):   # labels that never occur at the top end
        raise DataError(f"{folder}: labels use {ds.num_classes} of the {len(classes)} classes "
                        "the meta file names; expected every class in the training set")
    return ds


def load_cifar(name: str, root: str) -> ImageDataset:
    layout = LAYOUTS[name]
    if not root:
        raise DataError(f"data.name={name} needs data.root=DIR: the folder that holds "
                        f"{layout.folder}/ (torchvision's {layout.torchvision_class} root; it is "
                        "downloaded there where the network allows)")
    base = Path(root)
    folder = find_folder(base, layout)
    if folder is None:
        def fetch():
            import torchvision
            getattr(torchvision.datasets, layout.torchvision_class)(str(base), train=True,
                                                                    download=True)
        expected = (f"{base / layout.folder}: not found; expected {', '.join(layout.files)} "
                    f"from {layout.url} extracted into {base}")
        try_download(fetch, expected)
        folder = find_folder(base, layout)
        if folder is None:
            raise DataError(expected)
    missing = [f for f in layout.files if not (folder / f).is_file()]
    if missing:
        raise DataError(f"{folder / missing[0]}: missing; expected {', '.join(layout.files)} "
                        f"in {folder}; re-extract {layout.url}")
    return cached(name, folder, [folder / f for f in layout.files],
                  lambda: decode(name, folder, layout))


def load_cifar100(root: str, cfg=None) -> ImageDataset:
    return load_cifar("cifar100", root)


def load_cifar10(root: str, cfg=None) -> ImageDataset:
    return load_cifar("cifar10", root)
