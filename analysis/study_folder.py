"""Which folders under a results folder hold a study, and whether one is whole.

A study folder holds `study.json` (`fcl.manifest.Manifest`) and the Parquet files it names
(`trials`, and `rounds`, `tasks` where stored), written by the export in that order, the
manifest last as the commit marker of the three. `analysis` reads a folder only when it is
whole, and refuses it in one line naming the folder and what is wrong otherwise:
- no `study.json`: an export that did not finish, or results stored before manifests
  (`python -m analysis migrate RESULTS` writes theirs);
- a `study.json` that is unreadable, or names no `trials.parquet` (half an export);
- a file it names missing, or with other rows or another sha256 (replaced, truncated or
  half-written after the manifest);
- a study Parquet file it does not name (written after it).
Leftover temp files of a killed export (`.tmp-*`) are not study files and are ignored; a folder
holding nothing but those holds no study.
"""
from __future__ import annotations

import os
from pathlib import Path

from fcl.manifest import Manifest, ManifestError, read_manifest, sha256
from fcl.results_io import FILES, MANIFEST_FILE


class SchemaError(ValueError):
    """Stored results this code will not read: a Parquet file that is not a study table, or a
    study folder whose manifest is missing or disagrees with its files; `str()` is one line."""


def holds_study(folder: Path) -> bool:
    """A study's manifest or one of its Parquet files is there (temp leftovers do not count)."""
    return folder.is_dir() and not folder.name.startswith(".") and any(
        (folder / f).is_file() for f in (MANIFEST_FILE, *(f"{n}.parquet" for n in FILES)))


def study_folders(results: str | os.PathLike) -> list[str]:
    """The names of the folders under `results` that hold a study, whole or not."""
    results = Path(results)
    return sorted(p.name for p in results.iterdir() if holds_study(p)) if results.is_dir() else []


def parquet_rows(path: Path) -> int | None:
    """The row count in the file's footer; None where it has no readable footer (truncated)."""
    import pyarrow.parquet as pq
    try:
        return pq.ParquetFile(path).metadata.num_rows
    except Exception:  # pyarrow raises several types for a file that is not Parquet
        return None


def disagreements(folder: Path, manifest: Manifest) -> list[str]:
    """What in `folder` disagrees with its manifest, one phrase each (empty: it is whole)."""
    problems = [] if "trials" in manifest.files else [f"{MANIFEST_FILE} names no trials.parquet"]
    for name, entry in manifest.files.items():
        path = folder / f"{name}.parquet"
        if not path.is_file():
            problems.append(f"{path.name} is named in {MANIFEST_FILE} but missing")
        elif sha256(path) != entry.get("sha256"):
            rows, listed = parquet_rows(path), entry.get("rows")
            what = ("is not readable Parquet (truncated?)" if rows is None else
                    f"has {rows} rows, {MANIFEST_FILE} says {listed}" if rows != listed else
                    f"has another sha256 than {MANIFEST_FILE}")
            problems.append(f"{path.name} {what} (replaced or half-written after the manifest)")
    problems += [f"{n}.parquet is not named in {MANIFEST_FILE} (written after it)" for n in FILES
                 if n not in manifest.files and (folder / f"{n}.parquet").is_file()]
    return problems


def checked_manifest(folder: Path) -> Manifest:
    """The folder's manifest, its files checked against it; SchemaError (one line naming the
    folder and what is wrong) where it is missing, unreadable or disagrees with them."""
    try:
        manifest = read_manifest(folder)
    except ManifestError as bad:
        raise SchemaError(f"{folder}: refused: {str(bad).removeprefix(f'{folder}{os.sep}')}"
                          ) from None
    if manifest is None:
        raise SchemaError(f"{folder}: refused: no {MANIFEST_FILE} (an export that did not "
                          f"finish; results stored before manifests get theirs from "
                          f"`python -m analysis migrate {folder.parent}`)")
    problems = disagreements(folder, manifest)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise SchemaError(f"{folder}: refused: {problems[0]}{more}")
    return manifest
