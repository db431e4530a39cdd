"""Atomic file writes: every result, cache, checkpoint, figure and page fcl writes goes to a
temporary file next to its destination and is renamed onto it only once complete, so a reader
(or a crash) never sees half a file."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[str]:
    """Yields a temporary path in `path`'s folder (created if missing) for the caller to write;
    on a clean exit it gets the mode a plain `open` would give (0666 minus the umask; mkstemp
    makes 0600) and replaces `path`; on an exception it is removed and `path` is untouched."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    os.close(fd)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_bytes_atomic(blob: bytes, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        Path(tmp).write_bytes(blob)


def write_torch_atomic(obj, path: str | os.PathLike) -> bytes:
    """`torch.save(obj)` written atomically; returns the bytes. Serialised in memory first:
    torch.save names its zip's folder after the file it writes, so writing to the random temp
    name would give other bytes each time for the same object."""
    import io

    import torch                     # in the function: reading results must not need torch

    buf = io.BytesIO()
    torch.save(obj, buf)
    write_bytes_atomic(buf.getvalue(), path)
    return buf.getvalue()


def write_text_atomic(text: str, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        Path(tmp).write_text(text, encoding="utf-8")


def unwritable(folder: str | os.PathLike) -> str | None:
    """Why files cannot be written in `folder` (created if missing), or None: a probe file is
    written, synced and removed, so a read-only mount, an immutable folder, a full disk and a
    file where the folder should be are all told apart before any work is done."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        return "it is a file, not a folder"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-probe-")
        try:
            os.write(fd, b"fcl")
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(tmp)
    except OSError as e:
        return e.strerror or type(e).__name__
    return None


def remove_temp_files(folder: str | os.PathLike) -> list[str]:
    """Remove the `.tmp-*` files `atomic_path` left in `folder` when its writer was killed (only
    safe where no writer is at work: a study's folder under its lock); the paths removed."""
    folder = Path(folder)
    gone = []
    for p in sorted(folder.glob(".tmp-*")) if folder.is_dir() else []:
        if p.is_file():
            p.unlink(missing_ok=True)
            gone.append(str(p))
    return gone
