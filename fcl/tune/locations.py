"""Before any work, a dry run included: the places a study writes to (`--results`,
`--storage`, `--optuna-storage`) are paths the file system takes or URIs Tune can open, and
(`check_outputs`) folders this user can write in, or an object store the driver reaches; each
refusal is one line."""
from __future__ import annotations

import os

import pyarrow.fs

from fcl.atomic_file import unwritable
from fcl.cli_args import check_name_lengths
from fcl.config import ConfigError
from fcl.tune.optuna_storage import parse_storage
from fcl.tune.study import StudyOptions

# what pyarrow's filesystems (Tune's storage layer) open; another scheme failed deep in Ray
STORAGE_SCHEMES = ("file", "s3", "gs", "gcs", "hdfs", "viewfs", "abfs", "abfss")


def check_locations(opts: StudyOptions) -> None:
    """Before anything, a dry run included: `--results` is a non-empty path with components
    the file system takes, and `--storage` such a path or a URI of a scheme Tune can open."""
    if not opts.results:
        raise ConfigError("--results", opts.results, "empty (the study would write into the "
                          "working directory)", "a folder path, e.g. results")
    check_name_lengths("--results", opts.results)
    if opts.optuna_storage is not None:
        parse_storage(opts.optuna_storage)
    if opts.storage is None:
        return
    if not opts.storage:
        raise ConfigError("--storage", opts.storage, "empty", "a shared folder path or "
                          "s3://... / gs://...")
    scheme, sep, _ = opts.storage.partition("://")
    if sep and scheme.lower() not in STORAGE_SCHEMES:
        raise ConfigError("--storage", opts.storage, f"unknown scheme {scheme}://",
                          "a folder path or a URI of " + ", ".join(f"{s}://"
                                                                 for s in STORAGE_SCHEMES))
    if not sep:
        check_name_lengths("--storage", opts.storage)


def check_outputs(name: str, opts: StudyOptions) -> None:
    """Before any work: `--results` (and `<results>/<study>` where it exists) and a local
    `--storage` are folders files can be written in (created if missing); else one line."""
    where = [("--results", opts.results), ("--results", os.path.join(opts.results, name))]
    if opts.storage and "://" not in opts.storage:
        where.append(("--storage", opts.storage))
    elif opts.storage:          # first: `unwritable` creates --results, left empty on refusal
        check_reachable(opts.storage)
    for flag, folder in where:
        if flag == "--results" and folder != opts.results and not os.path.lexists(folder):
            continue
        why = unwritable(folder)
        if why:
            raise ConfigError(flag, folder, f"cannot write there ({why})",
                              "a folder this user can write in, on a disk with room")


def check_reachable(uri: str) -> None:
    """An object store `--storage` the driver cannot reach (no network, no such bucket, no
    credentials) is one line before any work, not the file system's traceback."""
    try:
        fs, path = pyarrow.fs.FileSystem.from_uri(uri)
        fs.get_file_info(path)
    except (OSError, ValueError) as e:
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ConfigError("--storage", uri, f"cannot be reached ({reason})", "a bucket this "
                          "machine reaches (network, credentials), or a shared folder path"
                          ) from None
