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

The file also carries `digest`, a SHA-256 of the decoded tensors' bytes, dtypes and shapes and of
the names and class groups, computed before the write and checked on every load: a cache whose
bytes changed on disk (a bad block, a partial copy, a stray write) is never trained on; it is
decoded again from the source files with a one-line RuntimeWarning and replaced (atomically, as
any write). SHA-256 because x86 CPUs with SHA-NI hash it in hardware (1.7 GB/s on an AMD EPYC,
blake2b 0.6 GB/s). The check reads every page the memory-mapped load would otherwise read lazily: a
CIFAR-10-sized cache (216 MB) loads in ~0.25 s instead of ~1 ms, once per process.
"""
from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path
from typing import Callable, Iterable

import torch

from fcl.atomic_file import atomic_path
from fcl.data.image_dataset import ImageDataset

FORMAT = "fcl-cache/2"            # /2: with `digest`
TENSORS = ("train_x", "train_y", "test_x", "test_y")
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


class CorruptCache(Exception):
    """A cache file that exists but cannot be trusted (unreadable, foreign format, bad digest)."""


def content_digest(blob: dict) -> str:
    """SHA-256 over the blob's names, classes, groups, and every tensor's dtype, shape and
    bytes (in `TENSORS` order): equal digests, equal data sets."""
    tensors = [blob[k].contiguous() for k in TENSORS]
    head = [blob["format"], blob["name"], blob["classes"], blob["task_classes"],
            [[str(t.dtype), list(t.shape)] for t in tensors]]
    h = hashlib.sha256(json.dumps(head).encode())
    for t in tensors:
        h.update(t.view(torch.uint8).numpy())      # the bytes as stored (no copy)
    return h.hexdigest()


def to_blob(ds: ImageDataset) -> dict:
    blob = {"format": FORMAT, "name": ds.name, "train_x": ds.train_x, "train_y": ds.train_y,
            "test_x": ds.test_x, "test_y": ds.test_y, "classes": [str(c) for c in ds.classes],
            "task_classes": None if ds.task_classes is None else [[int(c) for c in g] for g in
                                                                  ds.task_classes]}
    return {**blob, "digest": content_digest(blob)}


def from_blob(blob: dict) -> ImageDataset:
    if blob.get("format") != FORMAT:
        raise CorruptCache(f"format {blob.get('format')!r}, expected {FORMAT!r}")
    if blob.get("digest") != content_digest(blob):
        raise CorruptCache("its content hash does not match: the file changed after it was "
                           "written")
    groups = blob["task_classes"]
    return ImageDataset(blob["name"], blob["train_x"], blob["train_y"], blob["test_x"],
                        blob["test_y"], tuple(blob["classes"]),
                        None if groups is None else tuple(tuple(g) for g in groups))


def check_cache(path: Path) -> ImageDataset:
    """The cache at `path`, its digest verified; FileNotFoundError when there is none,
    CorruptCache (saying why) when there is one that cannot be trusted."""
    try:
        # mmap: trials on one node share the pages in the page cache
        blob = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except FileNotFoundError:
        raise
    except Exception as e:  # noqa: BLE001  (truncated, foreign or old file: decode again)
        raise CorruptCache(f"unreadable ({type(e).__name__})") from None
    try:
        return from_blob(blob)
    except CorruptCache:
        raise
    except Exception as e:  # noqa: BLE001  (a dict without the expected keys or tensors)
        raise CorruptCache(f"malformed ({type(e).__name__}: {e})") from None


def read_cache(path: Path) -> ImageDataset | None:
    """The verified cache at `path`, or None (missing or corrupt)."""
    try:
        return check_cache(path)
    except (FileNotFoundError, CorruptCache):
        return None


def write_atomic(blob: dict, path: Path) -> None:
    with atomic_path(path) as tmp:
        torch.save(blob, tmp)


def remove_stale(path: Path) -> None:
    """Older caches of the same data set and folder (their sources have changed since)."""
    stem = path.name[:-len(SUFFIX)].rsplit(".", 1)[0]          # `<name>` or `<name>@<where>`
    for old in path.parent.glob(f"*{SUFFIX}"):
        if old != path and old.name[:-len(SUFFIX)].rsplit(".", 1)[0] == stem:
            _remove(old)


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass                              # read-only: left, and warned about at every load


def _warn(message: str) -> None:
    """A RuntimeWarning of one line: attributed to this module, not to a source line (which
    `warnings` would print as a second line); filterable by module="fcl.data.cache"."""
    warnings.warn_explicit(message, RuntimeWarning, filename=__name__, lineno=0)


def cached(name: str, folder: str | Path, sources: Iterable[Path],
           decode: Callable[[], ImageDataset], salt: str = "") -> ImageDataset:
    """The cached `ImageDataset` for these sources, or `decode()` once and cache it."""
    folder = Path(folder)
    paths = cache_paths(name, folder, fingerprint(folder, sources, salt))
    corrupt: list[tuple[Path, CorruptCache]] = []
    for path in paths:
        try:
            ds = check_cache(path)
        except FileNotFoundError:
            continue
        except CorruptCache as e:
            corrupt.append((path, e))
            continue
        for bad, e in corrupt:            # the data folder's, and the fallback is good
            _warn(f"{bad}: corrupt data cache ({e}); using {path}")
            _remove(bad)
        return ds
    for bad, e in corrupt:
        _warn(f"{bad}: corrupt data cache ({e}); decoding {name} again from its source files")
    ds = decode()
    blob = to_blob(ds)
    for path in paths:
        try:
            write_atomic(blob, path)      # replaces a corrupt cache at `path` in one rename
        except OSError:
            continue                      # read-only data folder: try the fallback
        remove_stale(path)
        for bad, _ in corrupt:            # a corrupt one where nothing could be written
            if bad != path:
                _remove(bad)
        break
    return ds
