"""The manifest (`study.json`) of a study stored before manifests existed, built from the
study's declaration and its stored trials, without a rerun. Imports Ray (the study scripts and
`fcl.tune.study_manifest` do): only `python -m analysis migrate` uses this module.

Where each field comes from:
- name, doc, searcher, the space at the preset, num_samples: the study script's `STUDY`
  (`studies/<name>.py`, loaded by path), through `fcl.tune.study_manifest.study_manifest`, as
  the export builds it (so `varying` and `axes` are the declared ones);
- preset, seeds, fcl_git: the trials' `preset`, `seed` and `fcl_git` columns (one preset and one
  commit per stored study: results/README.md);
- the base config: per config column, the value every trial shares, else the first trial's in
  trial order (the Optuna trial number in a search, else Tune's trial id). A key the study
  varies so gets one of the values it took, not necessarily the study's own base value: the
  rows do not hold that one;
- trial_seeds: 1 (the stored search ran one seed per draw; a row does not say how many);
- scheduler: the `--scheduler` that `studies/run_all.py` adds for the study (`EXTRA`: asha for
  the search), else fifo;
- command: `COMMAND` at the preset and study, as results/README.md records how the stored
  studies ran (`<worktree>`: a clean checkout of the commit in `fcl_git`).
"""
from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

from fcl.config import field_types, from_flat
from fcl.manifest import Manifest, write_manifest
from fcl.results_io import OPTUNA_COLUMN
from fcl.tune.space import grid
from fcl.tune.study_manifest import study_manifest

STUDIES = Path(__file__).resolve().parent.parent / "studies"
COMMAND = ("python studies/run_all.py --preset {preset} --only {study} "
           "--results <worktree>/results --fresh")


def load_script(path: Path) -> ModuleType:
    """A study script (or studies/run_all.py) imported by path, its `main` not run."""
    spec = importlib.util.spec_from_file_location(f"fcl_stored_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def one_value(trials: pd.DataFrame, column: str) -> str:
    values = sorted(trials[column].dropna().astype(str).unique()) if column in trials else []
    if len(values) != 1:
        raise ValueError(f"trials.parquet: column {column} holds {len(values)} values "
                         f"({', '.join(values)}); a stored study has one")
    return values[0]


def in_trial_order(trials: pd.DataFrame) -> pd.DataFrame:
    """Optuna's order in a search, else Tune's (its trial ids count up), else the trial ids."""
    if OPTUNA_COLUMN in trials and trials[OPTUNA_COLUMN].notna().all():
        return trials.sort_values(OPTUNA_COLUMN, kind="stable")
    return trials.sort_values("tune_trial_id" if "tune_trial_id" in trials else "trial_id",
                              kind="stable")


def python_value(value: Any) -> Any:
    """A Parquet cell as a plain Python value (numpy scalars unwrapped, nulls as None)."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def stored_base(trials: pd.DataFrame) -> dict[str, Any]:
    """Per config column: the value all trials share, else the first trial's (trial order)."""
    first = in_trial_order(trials).iloc[0]
    return {key: python_value(trials[key].iloc[0] if trials[key].nunique(dropna=False) == 1
                              else first[key])
            for key in field_types() if key in trials}


def scheduler_of(name: str, studies: Path) -> str:
    extra = load_script(studies / "run_all.py").EXTRA.get(name, [])
    return extra[extra.index("--scheduler") + 1] if "--scheduler" in extra else "fifo"


def stored_manifest(folder: Path, studies: Path = STUDIES) -> Manifest:
    """The manifest of the study stored in `folder` (see the module docstring)."""
    trials = pd.read_parquet(Path(folder) / "trials.parquet")
    name, preset = one_value(trials, "study"), one_value(trials, "preset")
    study = load_script(studies / f"{name}.py").STUDY
    base = stored_base(trials)
    space = study.space_for(preset)
    if study.searcher is None:      # a grid runs its seeds as one more axis
        space = {**space, "seed": grid(*sorted(int(s) for s in trials["seed"].unique()))}
    manifest = study_manifest(
        name, study.doc, study.searcher, preset,
        from_flat({k: v for k, v in base.items() if v is not None}), space,
        trial_seeds=1, num_samples=study.num_samples, scheduler=scheduler_of(name, studies),
        command=COMMAND.format(preset=preset, study=name))
    return dataclasses.replace(manifest, base=base, fcl_git=one_value(trials, "fcl_git"))


def write_stored_manifest(folder: Path, studies: Path = STUDIES) -> str:
    """Write `folder/study.json` (with its files' rows and hashes); the path written."""
    return write_manifest(folder, stored_manifest(folder, studies))
