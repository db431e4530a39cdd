"""The decode-once cache: reuse, invalidation, atomic writes, fallback for read-only data."""
import os
import warnings

import numpy as np
import pytest
import torch

from fcl.data import cache
from fcl.data.datasets import from_arrays, load_dataset
from real_formats import write_cifar10


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
    with pytest.warns(RuntimeWarning, match="corrupt data cache .unreadable"):
        cache.cached("toy", src.parent, [src], decode)
    assert len(calls) == 2 and cache.read_cache(path) is not None


def overwrite(path, offset, n=64 * 1024):
    """n random bytes written over `path` from `offset`: the file keeps its size."""
    raw = bytearray(path.read_bytes())
    raw[offset:offset + n] = np.random.default_rng(1).integers(0, 256, n, np.uint8).tobytes()
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize("where", ["file start", "image bytes"])
def test_64_kib_overwritten_in_a_real_cache_is_detected_rebuilt_and_replaced(tmp_path, where):
    """Issue 21 item 3: 64 KiB overwritten, same size. At the file's start the zip's pickle
    goes (the load fails); over the images' bytes it used to load, silently other pixels."""
    written = write_cifar10(tmp_path, per_batch_per_class=20)          # 3.7 MB cache
    folder = tmp_path / "cifar-10-batches-py"
    load_dataset("cifar10", str(tmp_path))
    (path,) = folder.glob("cifar10.*.fclcache.pt")
    size, x = path.stat().st_size, written["train"][0]
    offset = 0 if where == "file start" else path.read_bytes().find(x[:2].tobytes())
    assert offset >= 0
    overwrite(path, offset)
    assert path.stat().st_size == size
    with pytest.warns(RuntimeWarning, match=r"corrupt data cache .*decoding cifar10 again") as w:
        ds = load_dataset("cifar10", str(tmp_path))
    line = warnings.formatwarning(w[0].message, w[0].category, w[0].filename, w[0].lineno)
    assert len(w) == 1 and line.count("\n") == 1                   # one line, as printed
    assert np.array_equal(ds.train_x.numpy(), x)                   # the source's pixels
    assert cache.read_cache(path) is not None                       # replaced in place
    assert sorted(p.name for p in folder.glob("*.fclcache.pt")) == [path.name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        again = load_dataset("cifar10", str(tmp_path))              # no warning, no decode
    assert torch.equal(again.train_x, ds.train_x)


def test_the_digest_covers_every_byte_label_shape_and_class_name(tmp_path):
    src, calls, decode = make(tmp_path)
    blob = cache.to_blob(decode())
    d = cache.content_digest(blob)
    assert d == blob["digest"] and d == cache.content_digest(dict(blob))
    changed = [{"train_x": blob["train_x"].clone().index_put_((torch.tensor(3),),
                                                             torch.tensor(9, dtype=torch.uint8))},
               {"test_y": blob["test_y"].flip(0)},
               {"train_x": blob["train_x"].reshape(4, 1, 1, 4)},
               {"classes": ["a", "c"]}, {"name": "toy2"}]
    assert all(cache.content_digest({**blob, **c}) != d for c in changed)
    with pytest.raises(cache.CorruptCache, match="content hash"):
        cache.from_blob({**blob, **changed[0]})
    with pytest.raises(cache.CorruptCache, match="format"):
        cache.from_blob({**blob, "format": "fcl-cache/1"})


def test_a_corrupt_cache_in_a_read_only_data_folder_gives_way_to_the_fallback(tmp_path,
                                                                               monkeypatch):
    src, calls, decode = make(tmp_path)
    cache.cached("toy", src.parent, [src], decode)                 # in the data folder
    (path,) = src.parent.glob("*.fclcache.pt")
    raw = bytearray(path.read_bytes())
    at = raw.find(bytes([1, 1, 1, 1, 1, 1, 1, 1]))                   # train_x's pixels
    raw[at] = 7
    path.write_bytes(bytes(raw))
    real_write = cache.write_atomic

    def refuse_data_folder(blob, p):
        if p.parent == src.parent:
            raise PermissionError(13, "read-only", str(p))
        real_write(blob, p)
    real_unlink = cache.Path.unlink

    def refuse_unlink(p, *a, **k):
        if p == path:
            raise PermissionError(13, "read-only", str(p))
        real_unlink(p, *a, **k)
    monkeypatch.setattr(cache, "write_atomic", refuse_data_folder)
    monkeypatch.setattr(cache.Path, "unlink", refuse_unlink)
    with pytest.warns(RuntimeWarning, match="content hash does not match.*decoding toy again"):
        a = cache.cached("toy", src.parent, [src], decode)
    with pytest.warns(RuntimeWarning, match="content hash does not match.*; using .*fallback"):
        b = cache.cached("toy", src.parent, [src], decode)           # read, not decoded
    assert len(calls) == 2 and torch.equal(a.train_x, b.train_x) and int(b.train_x.max()) == 2
    monkeypatch.setattr(cache.Path, "unlink", real_unlink)         # writable again
    with pytest.warns(RuntimeWarning, match="; using .*fallback"):
        cache.cached("toy", src.parent, [src], decode)
    assert not path.exists()                                        # the corrupt one, removed
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cache.cached("toy", src.parent, [src], decode)
    assert len(calls) == 2


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
