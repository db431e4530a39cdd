"""Which folders under a results folder hold a study, and whether one is whole.

A study folder holds `study.json` (`fcl.manifest.Manifest`) and the Parquet files it names
(`trials`, and `rounds`, `tasks` where stored), written by the export in that order, the
manifest last as the commit marker of the three. `analysis` reads a folder only when it is
whole, and refuses it in one line naming the folder and what is wrong otherwise:
- no `study.json`: an export that did not finish, or results of an fcl older than manifests
  (the study's script run again with `--resume` exports a finished study anew from its Tune
  state; `--fresh` reruns it);
- a `study.json` that is unreadable, has a field of the wrong type (`files` a list, `seeds`
  text, ...), or names no `trials.parquet` (half an export);
- a file it names missing, or with other rows or another sha256 (replaced, truncated or
  half-written after the manifest);
- a study Parquet file it does not name (written after it).
Leftover temp files of a killed export (`.tmp-*`) are not study files and are ignored; a folder
holding nothing but those holds no study.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from fcl.manifest import Manifest, ManifestError, parquet_rows, read_manifest, sha256
from fcl.results_io import FILES, MANIFEST_FILE


# What a user does about a folder this code will not read: export it again from the study.
REEXPORT = ("run the study's script again with --results {results} and --resume (a finished "
            "study is exported anew from its Tune state) or --fresh (run anew)")


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


# study.json's fields and the JSON types each must have (`fcl.manifest.Manifest`)
TEXT = ("study", "preset", "dataset", "doc", "objective", "scheduler", "command", "fcl_git",
        "provenance")
WHOLE = ("trial_seeds", "num_samples", "schema_version")


def _kind(value) -> str:
    return {dict: "an object", list: "a list", tuple: "a list", str: "text", bool: "true/false",
            int: "a number", float: "a number", type(None): "null"}.get(type(value), "a value")


def field_problems(manifest: Manifest, raw: dict | None = None) -> list[str]:
    """`field files is a list, not an object`: each study.json field whose value has the
    wrong type (a hand-edited or foreign manifest), one phrase each; empty where all fit.
    `raw`: the file's JSON object, for the list fields the manifest turns into tuples."""
    m, out, raw = manifest, [], raw or {}

    def want(name: str, ok: bool, kind: str) -> None:
        if not ok:
            out.append(f"field {name} is {_kind(raw.get(name, getattr(m, name)))}, not {kind}")

    for name in TEXT:
        want(name, isinstance(getattr(m, name), str), "text")
    want("searcher", m.searcher is None or isinstance(m.searcher, str), "text or null")
    for name in WHOLE:
        v = getattr(m, name)
        want(name, isinstance(v, int) and not isinstance(v, bool), "a whole number")
    want("base", isinstance(m.base, dict), "an object")
    listed = {k: isinstance(raw.get(k, []), list) for k in ("varying", "seeds", "extended")}
    want("varying", listed["varying"] and all(isinstance(k, str) for k in m.varying),
         "a list of config keys")
    want("seeds", listed["seeds"] and all(isinstance(k, int) and not isinstance(k, bool)
                                          for k in m.seeds), "a list of whole numbers")
    want("extended", listed["extended"] and all(isinstance(e, dict) for e in m.extended),
         "a list of objects")
    want("axes", isinstance(m.axes, dict) and all(
        isinstance(v, list) and all(isinstance(k, str) for k in v) for v in m.axes.values()),
        "an object of lists of config keys")
    want("files", isinstance(m.files, dict) and all(
        isinstance(e, dict) and isinstance(e.get("sha256"), str)
        and isinstance(e.get("rows"), int) for e in m.files.values()),
        'an object of {"rows": number, "sha256": text} entries')
    return out


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
                          f"finish, or results of an older fcl); "
                          + REEXPORT.format(results=folder.parent))
    raw = json.loads((folder / MANIFEST_FILE).read_text())    # read_manifest parsed it
    problems = (field_problems(manifest, raw if isinstance(raw, dict) else None)
                or disagreements(folder, manifest))
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise SchemaError(f"{folder}: refused: {MANIFEST_FILE}: {problems[0]}{more}"
                          if problems[0].startswith("field ") else
                          f"{folder}: refused: {problems[0]}{more}")
    return manifest


def nested_results(results: str | os.PathLike) -> list[Path]:
    """Folders under `results` that are not studies but hold studies of their own (a results
    folder inside another: `results-pretrained/tau_0.001`), which a reader of `results` skips."""
    results = Path(results)
    if not results.is_dir():
        return []
    return sorted(p for p in results.iterdir() if p.is_dir() and not p.name.startswith(".")
                  and not holds_study(p) and study_folders(p))
