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


def write_text_atomic(text: str, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        Path(tmp).write_text(text, encoding="utf-8")
