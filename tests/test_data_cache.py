"""The decode-once cache: reuse, invalidation, atomic writes, fallback for read-only data."""
import os

import numpy as np
import pytest
import torch

from fcl.data import cache
from fcl.data.datasets import from_arrays


@pytest.fixture(autouse=True)
def fallback(monkeypatch, tmp_path):
    monkeypatch.setenv("FCL_CACHE_DIR", str(tmp_path / "fallback"))


def make(tmp_path):
    src = tmp_path / "data" / "a.bin"
    src.parent.mkdir()
    src.write_bytes(b"12345")
    calls = []

    def decode():
        calls.append(1)
        x = np.full((4, 2, 2), len(calls), np.uint8)
        return from_arrays("toy", x, np.arange(4) % 2, x[:2], np.arange(2), ("a", "b"))
    return src, calls, decode


def test_decoded_once_then_read_and_redecoded_when_a_source_changes(tmp_path):
    src, calls, decode = make(tmp_path)
    a = cache.cached("toy", src.parent, [src], decode)
    b = cache.cached("toy", src.parent, [src], decode)
    assert len(calls) == 1 and torch.equal(a.train_x, b.train_x) and b.classes == ("a", "b")
    src.write_bytes(b"123456")                                # new size -> new key
    c = cache.cached("toy", src.parent, [src], decode)
    assert len(calls) == 2 and int(c.train_x[0, 0, 0, 0]) == 2
    os.utime(src, ns=(1, 1))                                   # new mtime -> new key
    cache.cached("toy", src.parent, [src], decode)
    assert len(calls) == 3
    left = sorted(p.name for p in src.parent.iterdir())
    assert len(left) == 2 and left[0] == "a.bin"              # stale caches and temps removed
    assert cache.cached("toy", src.parent, [src], decode, salt="84px") is not None
    assert len(calls) == 4                                     # the decoder's salt is in the key


def test_corrupt_cache_is_decoded_again_and_rewritten(tmp_path):
    src, calls, decode = make(tmp_path)
    cache.cached("toy", src.parent, [src], decode)
    (path,) = src.parent.glob("*.fclcache.pt")
    path.write_bytes(path.read_bytes()[:100])                 # truncated
    cache.cached("toy", src.parent, [src], decode)
    assert len(calls) == 2 and cache.read_cache(path) is not None


def test_read_only_data_folder_falls_back(tmp_path, monkeypatch):
    src, calls, decode = make(tmp_path)
    real_write = cache.write_atomic

    def refuse_data_folder(blob, path):
        if path.parent == src.parent:
            raise PermissionError(13, "read-only", str(path))
        real_write(blob, path)
    monkeypatch.setattr(cache, "write_atomic", refuse_data_folder)
    cache.cached("toy", src.parent, [src], decode)
    cache.cached("toy", src.parent, [src], decode)
    assert len(calls) == 1 and not list(src.parent.glob("*.fclcache.pt"))
    assert len(list((tmp_path / "fallback").glob("toy@*.fclcache.pt"))) == 1
