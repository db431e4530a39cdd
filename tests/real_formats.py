"""Writers of tiny data sets in the real on-disk formats, for the loader tests (not a test file).

Every image's pixels say where it came from (solid colours, or a known random array), so a test
can check that the loader put each image with its label and in its split.
"""
from __future__ import annotations

import gzip
import json
import pickle
from pathlib import Path

import numpy as np
from PIL import Image


def _pickle(path: Path, blob: dict) -> None:
    with open(path, "wb") as f:
        pickle.dump(blob, f, protocol=2)         # the archives were written by Python 2


def write_cifar100(root: Path, train_per_class: int = 3, test_per_class: int = 1,
                   seed: int = 0) -> dict:
    """root/cifar-100-python/{train,test,meta}; returns the arrays written (NCHW)."""
    rng = np.random.default_rng(seed)
    folder = root / "cifar-100-python"
    folder.mkdir(parents=True)
    out = {}
    for split, per in (("train", train_per_class), ("test", test_per_class)):
        labels = np.tile(np.arange(100), per)
        rng.shuffle(labels)
        data = rng.integers(0, 256, (len(labels), 3072), dtype=np.uint8)
        _pickle(folder / split, {"filenames": [f"img_{i}.png" for i in range(len(labels))],
                                 "batch_label": f"{split} batch 1 of 1",
                                 "fine_labels": labels.tolist(),
                                 "coarse_labels": (labels // 5).tolist(), "data": data})
        out[split] = (data.reshape(-1, 3, 32, 32), labels)
    _pickle(folder / "meta", {"fine_label_names": [f"fine{i:02d}" for i in range(100)],
                              "coarse_label_names": [f"coarse{i}" for i in range(20)]})
    return out


def _bytes_keys(blob: dict) -> dict:
    """A dict as Python 3 re-pickles a `pickle.load(encoding="bytes")` of the archive."""
    return {k.encode(): ([v.encode() for v in val] if k == "label_names" else val)
            for k, val in blob.items()}


def write_cifar10(root: Path, per_batch_per_class: int = 1, seed: int = 0,
                  bytes_keys: bool = False) -> dict:
    """root/cifar-10-batches-py/{data_batch_1..5,test_batch,batches.meta}; `bytes_keys`: keys
    and class names as bytes, as a Python 3 re-pickled copy has them."""
    dump = (lambda path, blob: _pickle(path, _bytes_keys(blob))) if bytes_keys else _pickle
    rng = np.random.default_rng(seed)
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    xs, ys = [], []
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        labels = np.tile(np.arange(10), per_batch_per_class)
        data = rng.integers(0, 256, (len(labels), 3072), dtype=np.uint8)
        dump(folder / name, {"batch_label": name, "labels": labels.tolist(), "data": data,
                             "filenames": [f"{name}_{i}.png" for i in range(len(labels))]})
        xs.append(data.reshape(-1, 3, 32, 32))
        ys.append(labels)
    dump(folder / "batches.meta", {"label_names": [f"c{i}" for i in range(10)],
                                   "num_cases_per_batch": 10 * per_batch_per_class})
    return {"train": (np.concatenate(xs[:5]), np.concatenate(ys[:5])), "test": (xs[5], ys[5])}


def colour(label: int, index: int) -> tuple[int, int, int]:
    """A solid colour that identifies (label, index): JPEG keeps flat colours within a few
    levels."""
    return (20 + 40 * label, 10 + 20 * index, 128)


def write_miniimagenet(root: Path, wnids: list[str], per_class: int,
                       size: tuple[int, int] = (84, 84)) -> dict[str, tuple[str, int, int]]:
    """Ravi & Larochelle layout; the classes are spread over train/val/test.csv like the real
    split. Returns {filename: (wnid, label in sorted order, index within its class)}."""
    (root / "images").mkdir(parents=True)
    files, rows = {}, {"train.csv": [], "val.csv": [], "test.csv": []}
    order = sorted(wnids)
    for k, wnid in enumerate(wnids):
        csv_name = ("train.csv", "val.csv", "test.csv")[k % 3]
        for i in range(per_class):
            name = f"{wnid}{i + 1:08d}.jpg"
            label = order.index(wnid)
            Image.new("RGB", size, colour(label, i)).save(root / "images" / name, quality=95)
            rows[csv_name].append(f"{name},{wnid}")
            files[name] = (wnid, label, i)
    for csv_name, lines in rows.items():
        (root / csv_name).write_text("filename,label\n" + "".join(f"{r}\n" for r in lines))
    return files


def write_decathlon(root: Path, domains: dict[str, dict]) -> None:
    """Devkit layout: root/annotations/<d>_{train,val}.json (COCO-style, category ids
    base + 1..C, file names relative to root) and images under root/data/<d>/<split>/.
    `domains[d]` = {"classes": C, "train": per class, "val": per class, "size": (w, h),
    "mode": "RGB" or "L", "base": category id base}."""
    (root / "annotations").mkdir(parents=True)
    for d, spec in domains.items():
        base = spec["base"]
        cats = [{"id": base + 1 + c, "name": f"{d}-class{c}"} for c in range(spec["classes"])]
        for split in ("train", "val"):
            images, anns = [], []
            (root / "data" / d / split).mkdir(parents=True)
            for c in range(spec["classes"]):
                for i in range(spec[split]):
                    img_id = base * 10 + len(images) + (0 if split == "train" else 5000)
                    name = f"data/{d}/{split}/{len(images):07d}.jpg"
                    fill = colour(c, i) if spec["mode"] == "RGB" else colour(c, i)[0]
                    Image.new(spec["mode"], spec["size"], fill).save(root / name, quality=95)
                    images.append({"id": img_id, "file_name": name, "width": spec["size"][0],
                                   "height": spec["size"][1]})
                    anns.append({"id": img_id, "image_id": img_id,
                                 "category_id": base + 1 + c, "segmentation": [], "area": 1,
                                 "bbox": [0, 0, 1, 1], "iscrowd": 0})
            images.reverse()           # file order is not label order
            blob = {"info": {}, "images": images, "annotations": anns, "categories": cats}
            (root / "annotations" / f"{d}_{split}.json").write_text(json.dumps(blob))


def write_idx(folder: Path, prefix: str, images: np.ndarray, labels: np.ndarray,
              gz: bool = True) -> None:
    """`<prefix>-images-idx3-ubyte[.gz]` and `<prefix>-labels-idx1-ubyte[.gz]`."""
    folder.mkdir(parents=True, exist_ok=True)
    for kind, arr in (("images", images.astype(np.uint8)), ("labels", labels.astype(np.uint8))):
        header = bytes([0, 0, 8, arr.ndim]) + b"".join(d.to_bytes(4, "big") for d in arr.shape)
        blob = header + arr.tobytes()
        name = f"{prefix}-{kind}-idx{arr.ndim}-ubyte"
        if gz:
            (folder / f"{name}.gz").write_bytes(gzip.compress(blob))
        else:
            (folder / name).write_bytes(blob)
