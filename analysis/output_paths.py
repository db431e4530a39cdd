"""Every path `analysis` writes (`figures --out`, `dashboard --out`) is checked before any
study is read or anything drawn: where it cannot be written, the command prints one line
`error: ...` and exits 2, instead of a traceback after the work.

The check writes (and removes) one byte in the folder, creating the folder first where it is
missing: mode bits alone would not do (root ignores them), and a read-only mount, a full disk,
a file where the folder should be or a path under a regular file all fail there.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from fcl.cli_args import check_name_lengths
from fcl.config import ConfigError


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


def path_problem(path: str | os.PathLike, flag: str, kind: str = "folder") -> str | None:
    """What is wrong with the path as typed, before anything is created (one line, no
    `error: `); None where nothing is. '' (which `Path` reads as '.', the working directory: the
    flags take text for that reason) and a component longer than the file system takes (`File
    name too long` from deep in the work, after parent folders were made)."""
    if not str(path):
        return f"{flag}=: empty (not taken as the working directory); allowed: a {kind} path"
    try:
        check_name_lengths(flag, str(path))
    except ConfigError as bad:
        return str(bad)
    return None


def first_path_problem(paths, flag: str, kind: str = "folder") -> str | None:
    """`path_problem` of the first of `paths` that has one (`--results A B`)."""
    return next(filter(None, (path_problem(p, flag, kind) for p in paths)), None)


def unwritable_folder(path: str | os.PathLike, flag: str) -> str | None:
    """Why the folder `flag=path` cannot take files (one line, no `error: `); None if it can."""
    problem = path_problem(path, flag, "folder")
    if problem is not None:
        return problem
    problem = folder_problem(Path(path))
    return None if problem is None else f"{flag}={path}: {problem}"


def unwritable_file(path: str | os.PathLike, flag: str) -> str | None:
    """Why the file `flag=path` cannot be written (one line); None where it can."""
    problem = path_problem(path, flag, "file")
    if problem is not None:
        return problem
    path = Path(path)
    if path.is_dir():
        return f"{flag}={path}: is a folder; give a file name, e.g. {path / 'dashboard.html'}"
    problem = folder_problem(path.parent)
    return None if problem is None else f"{flag}={path}: its folder {path.parent} {problem}"
