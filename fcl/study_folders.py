"""Stored study folders found and summarised (`fcl ls`): a study folder is one with a
`study.json` beside its Parquet files, at any depth of a results folder (hidden folders, Tune's
state among them, skipped)."""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

import pandas as pd

from fcl.manifest import MANIFEST_FILE, ManifestError, read_manifest, verify
from fcl.results_io import ERROR, TERMINATED


def find_studies(folder: str) -> list[str]:
    """The study folders at or below `folder`, sorted."""
    found = []
    for here, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if MANIFEST_FILE in files:
            found.append(here)
    return found


def named_studies(folder: str) -> list[tuple[str, str]]:
    """(path, name) of each study at or below `folder`, the name from its results folder down
    ("results-pretrained/tau_0.001/optimizers"): a study folder given alone keeps its parent's
    name."""
    paths = find_studies(folder)
    top = os.path.abspath(folder)
    parent = os.path.dirname(os.path.dirname(top) if paths == [folder] else top)
    return [(p, os.path.relpath(p, parent)) for p in paths]


def results_folders(where: str = ".") -> list[str]:
    """The folders named results* in `where` (what `fcl ls` lists by default)."""
    return sorted(d for d in os.listdir(where)
                  if d.startswith("results") and os.path.isdir(os.path.join(where, d)))


@dataclass(frozen=True)
class Listing:
    name: str            # where it lies from its results folder down
    date: str            # the commit's date (git), else study.json's modification date
    commit: str
    finished: int
    failed: int
    other: int           # stopped early by the scheduler, or unfinished
    seeds: str
    status: str          # "whole", or what does not match the manifest


def commit_date(commit: str, where: str) -> str | None:
    """The commit's date where `where` lies in a git clone that has it."""
    if not commit or commit == "unknown":
        return None
    try:
        done = subprocess.run(["git", "-C", where, "show", "-s", "--format=%cs", commit],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def seeds_text(seeds) -> str:
    seeds = list(seeds)
    if seeds and seeds == list(range(seeds[0], seeds[0] + len(seeds))) and len(seeds) > 2:
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(map(str, seeds))


def listing(path: str, name: str) -> Listing:
    try:
        manifest = read_manifest(path)
    except ManifestError as e:
        return Listing(name, "", "", 0, 0, 0, "", f"damaged: {e}")
    problems = verify(path, manifest)
    status = "whole" if not problems else f"damaged: {len(problems)} files differ from study.json"
    counts = pd.Series(dtype="int64")
    trials_file = os.path.join(path, "trials.parquet")
    try:
        if os.path.isfile(trials_file):
            counts = pd.read_parquet(trials_file, columns=["status"])["status"].value_counts()
    except (OSError, ValueError, KeyError) as e:         # pyarrow's errors are ValueErrors
        status = f"damaged: trials.parquet unreadable ({type(e).__name__})"
    finished, failed = int(counts.get(TERMINATED, 0)), int(counts.get(ERROR, 0))
    other = int(counts.sum()) - finished - failed
    date = commit_date(manifest.fcl_git, path) or pd.Timestamp(
        os.path.getmtime(os.path.join(path, MANIFEST_FILE)), unit="s").strftime("%Y-%m-%d")
    seeds = seeds_text(manifest.seeds)
    auto = manifest.seeds_auto
    if auto:            # `--seeds auto`: the settings got unequal seeds
        per = list(auto.get("seeds_per_setting", {}).values()) or [0]
        seeds += f" (auto: {min(per)}-{max(per)} a setting)"
        if status == "whole" and not auto.get("done"):
            status = "whole so far: the seed rule goes on with --resume"
    return Listing(name, date, manifest.fcl_git, finished, failed, other, seeds, status)


def list_studies(folders: list[str]) -> list[Listing]:
    """Every study at or below `folders`, each named from its results folder down."""
    return [listing(path, name) for folder in folders for path, name in named_studies(folder)]


def table(rows: list[Listing]) -> str:
    """A table a terminal shows whole: one study a line."""
    head = ("study", "date", "commit", "finished", "failed", "other", "seeds", "status")
    cells = [head] + [(r.name, r.date, r.commit, str(r.finished), str(r.failed), str(r.other),
                       r.seeds, r.status) for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(len(head) - 1)]
    return "\n".join("  ".join(c[i].ljust(widths[i]) for i in range(len(head) - 1)) + "  " + c[-1]
                     for c in cells)
