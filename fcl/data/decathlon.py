"""The Visual Decathlon (Rebuffi et al. 2017): one task per domain.

    data.name=decathlon data.root=DIR [data.domains=aircraft,dtd,...] data.num_tasks=<#domains>
    DIR/annotations/<domain>_train.json, <domain>_val.json    COCO-style (the devkit's)
    DIR/<file_name>                                      e.g. DIR/data/aircraft/train/0000001.jpg

DIR is the devkit's `decathlon-1.0` folder with the image archives extracted into DIR/data (as
NetTailor's `download_decathlon.py` does); an image's `file_name` is read relative to DIR, or to
DIR/data when that is where it lies. Labels: a domain's category ids in sorted order become its
labels 0..C-1 (the devkit's ids are base + 1..C). Classes are numbered globally, domain after
domain, and `ImageDataset.task_classes` holds each domain's classes, so task t is domain t.

The sequence is `data.domains` in the order given; empty means all ten in the devkit's
(alphabetical) order: aircraft, cifar100, daimlerpedcls, dtd, gtsrb, imagenet12, omniglot, svhn,
ucf101, vgg-flowers (the FCL paper: "ten ... datasets ... each ... a separate task").
`data.num_tasks` must equal the number of domains. imagenet12 is not in decathlon-1.0-data.tar
(it comes from image-net.org) and holds 1.2M images, about 19 GB as 72x72 uint8; NetTailor
leaves it out, since the backbone was pretrained on it:
`data.domains=aircraft,cifar100,daimlerpedcls,dtd,gtsrb,omniglot,svhn,ucf101,vgg-flowers
data.num_tasks=9`.

The test labels are withheld by the benchmark, so each domain is evaluated on its val split (the
run's "test" set) and trained on its train split. Images (already 72 pixels on the shorter side
in the devkit's data) are resized to 72 on the shorter side and centre-cropped to 72x72, RGB
(NetTailor's evaluation transform for most domains, without its 64-pixel crop). Each domain is
decoded once and cached by itself, next to its annotation files.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from fcl.config_error import ConfigError
from fcl.data.cache import cached
from fcl.data.domains import DOMAINS, parse_domains
from fcl.data.image_dataset import DataError, ImageDataset, from_arrays
from fcl.data.images import decode_images

SIZE = 72
HOW = ("expected the Visual Decathlon devkit layout DIR/annotations/<domain>_{train,val}.json "
       "with images under DIR/data (decathlon-1.0-devkit.tar.gz and decathlon-1.0-data.tar.gz "
       "from www.robots.ox.ac.uk/~vgg/decathlon/; imagenet12 from image-net.org)")


def read_annotations(path: Path) -> tuple[list[str], list[int], list[str]]:
    """(image file names, labels 0..C-1, category names) of one COCO-style annotation file."""
    try:
        with open(path) as f:
            coco = json.load(f)
        cats = sorted(coco["categories"], key=lambda c: int(c["id"]))
        label_of = {int(c["id"]): i for i, c in enumerate(cats)}
        category_of = {int(a["image_id"]): int(a["category_id"]) for a in coco["annotations"]}
        images = sorted(coco["images"], key=lambda im: int(im["id"]))
        files = [str(im["file_name"]) for im in images]
        labels = [label_of[category_of[int(im["id"])]] for im in images]
    except FileNotFoundError:
        raise DataError(f"{path}: missing; {HOW}") from None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise DataError(f"{path}: not a Decathlon annotation file ({type(e).__name__}: "
                        f"{str(e)[:60]}); expected COCO-style images, annotations (image_id, "
                        "category_id) and categories") from None
    return files, labels, [str(c.get("name", c["id"])) for c in cats]


def image_path(root: Path, file_name: str) -> Path:
    direct = root / file_name
    return direct if direct.is_file() or not (root / "data" / file_name).is_file() \
        else root / "data" / file_name


def load_domain(root: Path, domain: str) -> ImageDataset:
    """One domain: train split as training set, val split as test set, labels 0..C-1."""
    ann = root / "annotations"
    (tf, tl, names), (vf, vl, vnames) = [read_annotations(ann / f"{domain}_{split}.json")
                                         for split in ("train", "val")]
    if names != vnames:
        raise DataError(f"{ann / f'{domain}_val.json'}: categories differ from "
                        f"{domain}_train.json's; expected the same list in both")
    train_paths = [image_path(root, f) for f in tf]
    val_paths = [image_path(root, f) for f in vf]
    missing = next((p for p in train_paths + val_paths if not p.is_file()), None)
    if missing is not None:
        raise DataError(f"{missing}: image missing; {HOW}")

    def decode() -> ImageDataset:
        return from_arrays(f"decathlon-{domain}", decode_images(train_paths, SIZE, "center"),
                           np.array(tl, dtype=np.int64),
                           decode_images(val_paths, SIZE, "center"),
                           np.array(vl, dtype=np.int64), tuple(names),
                           source=str(ann / f"{domain}_{{train,val}}.json"))

    ds = cached(f"decathlon-{domain}", ann,
                [ann / f"{domain}_train.json", ann / f"{domain}_val.json"] + train_paths
                + val_paths, decode, salt=f"{SIZE}px center")
    if ds.num_classes != len(names):
        raise DataError(f"{ann / f'{domain}_train.json'}: images use {ds.num_classes} of its "
                        f"{len(names)} categories; expected every category to have an image")
    return ds


def concat_domains(parts: list[tuple[str, ImageDataset]]) -> ImageDataset:
    """Domains side by side: global class ids domain after domain, one task group per domain."""
    offset, groups, classes, ys = 0, [], [], {"train": [], "test": []}
    for domain, ds in parts:
        groups.append(tuple(range(offset, offset + ds.num_classes)))
        classes += [f"{domain}/{c}" for c in ds.classes]
        ys["train"].append(ds.train_y + offset)
        ys["test"].append(ds.test_y + offset)
        offset += ds.num_classes
    return ImageDataset("decathlon", torch.cat([ds.train_x for _, ds in parts]),
                        torch.cat(ys["train"]), torch.cat([ds.test_x for _, ds in parts]),
                        torch.cat(ys["test"]), tuple(classes), tuple(groups))


def load_decathlon(root: str, cfg=None) -> ImageDataset:
    if not root:
        raise DataError(f"data.name=decathlon needs data.root=DIR; {HOW}")
    base = Path(root)
    if not (base / "annotations").is_dir():
        raise DataError(f"{base / 'annotations'}: no such folder; {HOW}")
    try:
        domains = parse_domains(cfg.domains if cfg is not None else "")
    except ValueError:
        raise ConfigError("data.domains", cfg.domains, "unknown or repeated domain",
                          ", ".join(DOMAINS)) from None
    return concat_domains([(d, load_domain(base, d)) for d in domains])
