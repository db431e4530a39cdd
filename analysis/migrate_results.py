"""Bring stored study results up to today's contract, in place (atomic writes): schema 1 to
schema 2, then the manifest (`study.json`) of every study stored without one.

    python -m analysis migrate results/            # every study folder below it

Schema 1 stored rounds.parquet as one row per trial x round x task. Schema 2 (`fcl.results_io`)
splits it: rounds.parquet one row per trial x round, tasks.parquet one row per trial x round x
task; trials.parquet gains every column schema 2 documents. What the old rows cannot tell is
left null, never invented:
- a round's `cos_head` / `cos_module` are the mean over the tasks updated that round (as the
  engine computes them), `tasks_trained` the tasks with reports; `wall_s` was not stored (null);
  `tcc_bytes` where missing is the running sum of the round's bytes; `compression_ratio` where
  missing stays null (the full-model bytes per round were not stored);
- config keys added after the run (e.g. `compression.payload`, `model.norm_groups`,
  `model.node_relu`) are null: those runs predate the keys (their behaviour is the one the
  commit in `fcl_git` had).
A folder already at schema 2 is left as it is. Then, in a folder without `study.json`, the
manifest is built from the study's declaration (`studies/<name>.py`) and its stored trials
(`analysis/stored_manifest.py`: what comes from where), and written last, with every Parquet
file's rows and sha256; a folder that has one keeps it, and one missing any of the three files
(half an export) gets none, so `analysis` keeps refusing it. The stored Parquet is never rewritten
for the manifest.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import pandas as pd

from analysis.output_paths import unwritable_folder
from fcl.cli_args import EXIT_USAGE
from fcl.manifest import read_manifest
from fcl.records import TaskRecord, columns
from fcl.results_io import (FILES, SCHEMA_VERSION, config_types, round_types,
                            study_trial_types, task_types, typed, write_parquet_atomic)

NULLABLE = {"int64": "Int64", "bool": "boolean", "float64": "float64", "string": "string"}


def nullable_where_missing(df: pd.DataFrame, types: dict[str, str]) -> dict[str, str]:
    """`types`, with the columns `df` lacks made nullable (they will hold nulls)."""
    return {c: (t if c in df else NULLABLE.get(t, t)) for c, t in types.items()}


def split_rounds(old: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Schema-1 rounds (per task) -> schema-2 (rounds, tasks)."""
    config = [c for c in config_types() if c in old]
    tasks = old.rename(columns={"task_reports": "reports"})
    tasks = tasks[["study", "trial_id", *columns(TaskRecord), *config]]
    rows = []
    for (_, _), g in old.groupby(["trial_id", "round"], sort=False):
        first = g.iloc[0]
        updated = g[g["task_reports"] > 0]
        row = {c: first[c] for c in old.columns if c not in columns(TaskRecord)
               and c not in ("task_reports",)}
        row.update(round=first["round"],
                   tasks_trained=json.dumps(sorted(int(t) for t in updated["task"])),
                   cos_head=_mean(updated["cos_head"]), cos_module=_mean(updated["cos_module"]))
        rows.append(row)
    rounds = pd.DataFrame(rows)
    if "tcc_bytes" not in rounds:
        rounds["tcc_bytes"] = (rounds["bytes_up"] + rounds["bytes_down"]).groupby(
            rounds["trial_id"]).cumsum()
    return rounds, tasks


def _mean(values: pd.Series) -> float:
    vals = [float(v) for v in values if not math.isnan(float(v))]
    return sum(vals) / len(vals) if vals else math.nan


def migrate_folder(folder: Path) -> bool:
    """True if the folder was migrated, False if it was already at schema 2 (or no study).
    Written tasks, rounds, trials in that order, each atomically: a run stopped half-way is
    finished by running it again."""
    trials_path, rounds_path = folder / "trials.parquet", folder / "rounds.parquet"
    if not trials_path.is_file():
        return False
    trials = pd.read_parquet(trials_path)
    if int(trials["schema_version"].max()) >= SCHEMA_VERSION:
        return False
    if rounds_path.is_file() and int(pd.read_parquet(rounds_path)["schema_version"].max()) == 1:
        rounds, tasks = split_rounds(pd.read_parquet(rounds_path))
        rounds, tasks = (df.assign(schema_version=SCHEMA_VERSION) for df in (rounds, tasks))
        write_parquet_atomic(typed(tasks, nullable_where_missing(tasks, task_types())),
                             str(folder / "tasks.parquet"))
        write_parquet_atomic(typed(rounds, nullable_where_missing(rounds, round_types())),
                             str(rounds_path))
    trials = trials.assign(schema_version=SCHEMA_VERSION)
    write_parquet_atomic(typed(trials, nullable_where_missing(trials, study_trial_types())),
                         str(trials_path))
    return True


def manifest_step(folder: Path, studies: Path | None) -> str:
    """Write the folder's study.json where it has none and holds a whole export; what was done.
    A folder missing one of the three files is half an export: no manifest vouches for it."""
    if read_manifest(folder) is not None:
        return "study.json kept"
    missing = [f"{n}.parquet" for n in FILES if not (folder / f"{n}.parquet").is_file()]
    if missing:
        return (f"{', '.join(missing)} missing: no study.json written (half an export? run the "
                "study again)")
    # The manifest step reads the study scripts, which import Ray: imported only for that step.
    from analysis.stored_manifest import STUDIES, write_stored_manifest
    studies = studies or STUDIES
    if not (studies / f"{folder.name}.py").is_file():
        return f"no {studies / folder.name}.py: no study.json written"
    return f"{write_stored_manifest(folder, studies)} written"


def main(argv: list[str] | None = None, prog: str = "python -m analysis migrate") -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="?", type=Path, default=Path("results"),
                   help="folder with <study>/trials.parquet (default: results/)")
    p.add_argument("--studies", type=Path, default=None,
                   help="where studies/<name>.py are (default: the repo's studies/)")
    args = p.parse_args(argv)
    if not args.results.is_dir():
        print(f"error: {args.results}: not a folder", file=sys.stderr)
        return EXIT_USAGE
    problem = unwritable_folder(args.results, "results")     # migrated in place
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    for folder in sorted(p for p in args.results.iterdir()
                         if (p / "trials.parquet").is_file() and not p.name.startswith(".")):
        schema = "migrated to schema 2" if migrate_folder(folder) else "schema 2"
        print(f"{folder}: {schema}; {manifest_step(folder, args.studies)}")
    return 0
