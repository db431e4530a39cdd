"""Decode once: a data set's uint8 tensors cached in one file next to its source files.

    ds = cached("cifar100", folder, sources, decode)

The cache is `<folder>/<name>.<key>.fclcache.pt`, a `torch.save` of the `ImageDataset`'s tensors
read back memory-mapped. `key` hashes the source files' paths relative to `folder`, their sizes
and modification times, plus `FORMAT` and the decoder's `salt` (e.g. its image size). Adding,
replacing or touching a source file gives a new key and decodes again; the hundreds of trials
of a study only read tensors.
Hashing the files' bytes instead would read every source (60,000 JPEGs for MiniImageNet) on
every load, most of what the cache saves.

Writes are atomic (temp file + rename): a killed process or two trials decoding at once never
leave a half-written cache; older caches of the same name in that folder are removed. When the
data folder is read-only (Debian's /usr/share/datasets), the cache goes to `$FCL_CACHE_DIR`
(default `~/.cache/fcl`), keyed by the folder's absolute path as well. A cache that fails to
load is decoded again and rewritten.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Callable, Iterable

import torch

from fcl.atomic_file import atomic_path
from fcl.data.image_dataset import ImageDataset

FORMAT = "fcl-cache/1"
SUFFIX = ".fclcache.pt"


def fingerprint(folder: Path, sources: Iterable[Path], salt: str = "") -> str:
    """Hash of (relative path, size, mtime_ns) of every source file, in sorted order."""
    h = hashlib.sha256(f"{FORMAT}\0{salt}\0".encode())
    for path in sorted(Path(p) for p in sources):
        st = path.stat()
        rel = os.path.relpath(path, folder)
        h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:20]


def fallback_dir() -> Path:
    return Path(os.environ.get("FCL_CACHE_DIR") or Path.home() / ".cache" / "fcl")


def cache_paths(name: str, folder: Path, key: str) -> list[Path]:
    """Where the cache may live: next to the data, else in the fallback folder (there the name
    also carries a hash of the data folder's absolute path, so two folders never collide)."""
    where = hashlib.sha256(str(Path(folder).resolve()).encode()).hexdigest()[:8]
    return [Path(folder) / f"{name}.{key}{SUFFIX}",
            fallback_dir() / f"{name}@{where}.{key}{SUFFIX}"]


def to_blob(ds: ImageDataset) -> dict:
    return {"format": FORMAT, "name": ds.name, "train_x": ds.train_x, "train_y": ds.train_y,
            "test_x": ds.test_x, "test_y": ds.test_y, "classes": list(ds.classes),
            "task_classes": None if ds.task_classes is None else [list(g) for g in
                                                                  ds.task_classes]}


def from_blob(blob: dict) -> ImageDataset:
    if blob.get("format") != FORMAT:
        raise ValueError(f"cache format {blob.get('format')!r}")
    groups = blob["task_classes"]
    return ImageDataset(blob["name"], blob["train_x"], blob["train_y"], blob["test_x"],
                        blob["test_y"], tuple(blob["classes"]),
                        None if groups is None else tuple(tuple(g) for g in groups))


def read_cache(path: Path) -> ImageDataset | None:
    try:
        # mmap: pages are read when used, and trials on one node share them in the page cache
        return from_blob(torch.load(path, map_location="cpu", weights_only=True, mmap=True))
    except FileNotFoundError:
        return None
    except Exception:  # noqa: BLE001  (truncated, foreign or old file: decode again)
        return None


def write_atomic(blob: dict, path: Path) -> None:
    with atomic_path(path) as tmp:
        torch.save(blob, tmp)


def remove_stale(path: Path) -> None:
    """Older caches of the same data set and folder (their sources have changed since)."""
    stem = path.name[:-len(SUFFIX)].rsplit(".", 1)[0]          # `<name>` or `<name>@<where>`
    for old in path.parent.glob(f"*{SUFFIX}"):
        if old != path and old.name[:-len(SUFFIX)].rsplit(".", 1)[0] == stem:
            try:
                old.unlink()
            except OSError:
                pass


def cached(name: str, folder: str | Path, sources: Iterable[Path],
           decode: Callable[[], ImageDataset], salt: str = "") -> ImageDataset:
    """The cached `ImageDataset` for these sources, or `decode()` once and cache it."""
    folder = Path(folder)
    paths = cache_paths(name, folder, fingerprint(folder, sources, salt))
    for path in paths:
        ds = read_cache(path)
        if ds is not None:
            return ds
    ds = decode()
    blob = to_blob(ds)
    for path in paths:
        try:
            write_atomic(blob, path)
        except OSError:
            continue                      # read-only data folder: try the fallback
        remove_stale(path)
        break
    return ds
