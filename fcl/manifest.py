"""The manifest of a results folder, `study.json`: what the study was, and the commit marker of
its three Parquet files. Imports no Ray.

The export writes the Parquet files first (each atomically), then the manifest with every file's
row count and sha256 (atomically, last): a folder whose manifest is missing, or names a hash its
file does not have, holds a half-finished or replaced export. `analysis/` reads the manifest
instead of re-guessing what the study driver knew (its doc, whether it searched, the keys it
varied, the preset and data set it ran on, the commit).

    {"study": "ablation_lr", "doc": "...", "searcher": null, "objective": "acc",
     "varying": ["client.lr", "server.lr"], "axes": {"client.lr": ["client.lr"], ...},
     "preset": "cifar10-local", "dataset": "cifar10", "base": {...flat config...},
     "seeds": [0, 1, 2], "trial_seeds": 1, "num_samples": 1, "scheduler": "fifo",
     "command": "python studies/ablation_lr.py ...", "fcl_git": "<commit>",
     "optuna_storage": null,   # a search given --optuna-storage: its URL (null: RESULTS/optuna.db)
     "extended": [],      # or, for a study run again with more seeds, one entry per part:
                          # {"seeds": [...], "trials": N, "fcl_git": ..., "command": ...}
     "copied": [],        # or, with --copy-from, one entry per source study:
                          # {"study": ..., "trials": N, "seeds": [...], "fcl_git": ...,
                          #  "machine": [the kinds that computed them, or "unrecorded"]}
     "provenance": "",    # where fcl_git is `unknown`: the id it recorded and why it does
                          # not resolve (a dirty tree, a commit not on main; an extended
                          # part says the same of itself); `python -m analysis provenance`
     "schema_version": 2, "files": {"trials": {"rows": 36, "sha256": "..."}, ...}}
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from fcl.atomic_file import remove_temp_files, write_bytes_atomic
from fcl.config import RunConfig
from fcl.provenance import fcl_git
from fcl.results_io import FILES, MANIFEST_FILE, SCHEMA_VERSION, run_frames, write_frames


class ManifestError(ValueError):
    """A manifest that is unreadable, or whose files do not match it; `str()` is one line."""


def dataset_label(name: str, root: str) -> str:
    """The data set's name; `npz` data sets are named after their file (cifar10.npz -> cifar10)."""
    if name == "npz" and isinstance(root, str) and root:
        return Path(root).name.split(".")[0]
    return name


@dataclass(frozen=True)
class Manifest:
    study: str
    preset: str
    dataset: str                               # `dataset_label` of the base config
    base: dict[str, Any]                       # the base config every trial starts from, flat
    doc: str = ""                              # the study script's docstring
    searcher: str | None = None                # None: a grid (and random draws); "optuna"
    objective: str = "acc"                     # what a search optimises
    varying: tuple[str, ...] = ()              # config keys the space varies (seed excluded)
    axes: dict[str, list[str]] = field(default_factory=dict)   # space key -> its config keys
    seeds: tuple[int, ...] = ()                # the seeds the study ran
    trial_seeds: int = 1                       # seeds each trial runs itself (a search's)
    num_samples: int = 1
    scheduler: str = "fifo"
    command: str = ""
    fcl_git: str = ""              # `unknown` where the recorded commit does not resolve
    provenance: str = ""           # why fcl_git is unknown: the id it recorded, and what it lost
    extended: tuple[dict[str, Any], ...] = ()  # parts of a study run with seeds added later
    optuna_storage: str | None = None          # --optuna-storage as given (None: the default)
    copied: tuple[dict[str, Any], ...] = ()    # `--copy-from`: each source study, its trials
    #                                            copied and its commit(s) (`fcl.tune.copies`)
    seeds_auto: dict[str, Any] | None = None   # `--seeds auto`: its rule, looks, verdicts and
    #                                            seeds per setting (`fcl.tune.auto_seeds`)
    schema_version: int = SCHEMA_VERSION
    files: dict[str, dict[str, Any]] = field(default_factory=dict)   # name -> rows, sha256

    @classmethod
    def for_run(cls, cfg: RunConfig, preset: str = "", command: str = "") -> "Manifest":
        """One run (`fcl run --out`): study `run`, nothing varied, its own seed."""
        flat = cfg.to_flat()
        return cls("run", preset, dataset_label(cfg.data.name, cfg.data.root), flat,
                   seeds=(cfg.seed,), command=command, fcl_git=fcl_git())

    @property
    def commits(self) -> str:
        """The commit the study ran at, or of each part of a study run again with more seeds
        (`extended`), joined by " + "."""
        parts = list(dict.fromkeys(p.get("fcl_git", "") or "?" for p in self.extended))
        return " + ".join(parts) if parts else (self.fcl_git or "?")

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=1, sort_keys=True, default=str) + "\n"

    @classmethod
    def from_dict(cls, d: dict) -> "Manifest":
        if not isinstance(d, dict):     # `[1,2,3]` failed later in d.items(): a traceback
            kind = {list: "a JSON list", str: "JSON text", bool: "true/false",
                    type(None): "null"}.get(type(d), "a JSON number")
            raise TypeError(f"{kind}, not an object")
        names = {f.name for f in dataclasses.fields(cls)}
        known = {k: v for k, v in d.items() if k in names}
        for key in ("varying", "seeds", "extended", "copied"):
            known[key] = tuple(known.get(key, ()))
        return cls(**known)


COMPARED = ("preset", "dataset", "varying", "axes", "seeds")


def manifest_differences(old: Manifest, new: Manifest) -> list[str]:
    """What makes `new` another study than `old`: the fields of `COMPARED` and the base config
    keys both record (`run.*` aside: threads and device change how a run computes; and the keys
    the study varies: every trial sets its own)."""
    was, now = json.loads(old.to_json()), json.loads(new.to_json())
    diff = [k for k in COMPARED if was[k] != now[k]]
    varied = set(old.varying) | set(new.varying)
    return diff + sorted(f"base {k}" for k in set(was["base"]) & set(now["base"])
                         if not k.startswith("run.") and k not in varied
                         and was["base"][k] != now["base"][k])


def sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def parquet_rows(path: str | os.PathLike) -> int | None:
    """The row count in a Parquet file's footer; None where it has no readable footer
    (truncated, or another file under the name)."""
    import pyarrow.parquet as pq
    try:
        return pq.ParquetFile(path).metadata.num_rows
    except Exception:  # pyarrow raises several types for a file that is not Parquet
        return None


def file_entry(path: str | os.PathLike) -> dict[str, Any]:
    import pyarrow.parquet as pq
    return {"rows": pq.ParquetFile(path).metadata.num_rows, "sha256": sha256(path)}


def write_manifest(folder: str | os.PathLike, manifest: Manifest) -> str:
    """`study.json` with the row count and sha256 of every Parquet file now in `folder`."""
    files = {n: file_entry(Path(folder) / f"{n}.parquet") for n in FILES
             if (Path(folder) / f"{n}.parquet").is_file()}
    path = os.path.join(folder, MANIFEST_FILE)
    write_bytes_atomic(dataclasses.replace(manifest, files=files).to_json().encode(), path)
    return path


def write_study_files(frames: dict[str, pd.DataFrame], folder: str | os.PathLike,
                      manifest: Manifest) -> list[str]:
    """The Parquet files, then the manifest as their commit marker; every path written."""
    paths = write_frames(frames, folder)
    return paths + [write_manifest(folder, manifest)]


def replace_study_files(frames: dict[str, pd.DataFrame], folder: str | os.PathLike,
                        manifest: Manifest) -> list[str]:
    """A re-export as one unit: the old manifest is removed first (synced), so an export killed
    part-way leaves Parquet files with no manifest (refused by readers) rather than an old
    manifest beside new files; the temp files of an earlier killed export are removed; then
    `write_study_files`. The caller is the folder's one writer (a study driver under its lock)."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    Path(folder, MANIFEST_FILE).unlink(missing_ok=True)
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    remove_temp_files(folder)
    return write_study_files(frames, folder, manifest)


def write_run_files(result, out_dir: str, preset: str = "", command: str = "") -> list[str]:
    """One run's three tables (`fcl.results_io.run_frames`) and its manifest."""
    return write_study_files(run_frames(result), out_dir,
                             Manifest.for_run(result.config, preset, command))


def read_manifest(folder: str | os.PathLike) -> Manifest | None:
    """The folder's manifest; None where it has none (results written before manifests)."""
    path = Path(folder) / MANIFEST_FILE
    if not path.is_file():
        return None
    try:
        return Manifest.from_dict(json.loads(path.read_text()))
    except (ValueError, TypeError) as exc:
        raise ManifestError(f"{path}: not a readable manifest ({type(exc).__name__}: "
                            f"{str(exc).splitlines()[0] if str(exc) else ''})") from None


def verify(folder: str | os.PathLike, manifest: Manifest) -> list[str]:
    """One line per file that does not match the manifest (missing, other rows or hash)."""
    problems = []
    for name, entry in manifest.files.items():
        path = Path(folder) / f"{name}.parquet"
        if not path.is_file():
            problems.append(f"{path}: listed in {MANIFEST_FILE} but missing")
        elif sha256(path) != entry.get("sha256"):
            problems.append(f"{path}: sha256 differs from {MANIFEST_FILE} (replaced or "
                            "half-written after the manifest)")
    return problems
