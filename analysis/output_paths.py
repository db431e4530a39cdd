"""Every path `analysis` writes (`figures --out`, `dashboard --out`, the folder `migrate`
rewrites) is checked before any study is read or anything drawn: where it cannot be written, the
command prints one line `error: ...` and exits 2, instead of a traceback after the work.

The check writes (and removes) one byte in the folder, creating the folder first where it is
missing: mode bits alone would not do (root ignores them), and a read-only mount, a full disk,
a file where the folder should be or a path under a regular file all fail there.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _existing_ancestor(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def folder_problem(path: Path) -> str | None:
    """Why `path` cannot take files, as a phrase; None where it can (then it exists)."""
    found = _existing_ancestor(path)
    if not found.is_dir():
        return "is a file, not a folder" if found == path else f"is under {found}, a file"
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".tmp-probe-")
        try:
            os.write(fd, b"x")       # an empty file fits on a full disk; one byte does not
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        return f"is not writable ({exc.strerror or type(exc).__name__})"
    return None


def unwritable_folder(path: str | os.PathLike, flag: str) -> str | None:
    """Why the folder `flag=path` cannot take files (one line, no `error: `); None if it can."""
    problem = folder_problem(Path(path))
    return None if problem is None else f"{flag}={path}: {problem}"


def unwritable_file(path: str | os.PathLike, flag: str) -> str | None:
    """Why the file `flag=path` cannot be written (one line); None where it can."""
    path = Path(path)
    if path.is_dir():
        return f"{flag}={path}: is a folder; give a file name, e.g. {path / 'dashboard.html'}"
    problem = folder_problem(path.parent)
    return None if problem is None else f"{flag}={path}: its folder {path.parent} {problem}"
