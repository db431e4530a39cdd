"""Stored studies that ran on a shipped backbone, rewritten to name it `fcl:NAME` instead of the
absolute path of the checkout that ran them (fcl/shipped_weights.py): their `model.weights`
column, the base config of their manifest, and their trial ids (config hashes, recomputed), so
that a study extended with more seeds on another machine finds its stored trials.

    python studies/migrate/shipped_weights_names.py results-pretrained results-drift

Every other value stays as stored. Each trial's old id is first recomputed from its stored
config (a row whose hash does not give back its id stops the migration before anything is
written); the Parquet files and the manifest are then replaced as one export does it.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import pandas as pd

from fcl.config import from_flat
from fcl.manifest import read_manifest, replace_study_files
from fcl.results_io import FILES, as_today, config_hash
from fcl.shipped_weights import SHA256, shipped

KEY = "model.weights"


def portable(value):
    """`/any/checkout/fcl/weights/NAME` of a shipped NAME -> `fcl:NAME`; else as it is."""
    if isinstance(value, str) and Path(value).name in SHA256 \
            and Path(value).parent.parts[-2:] == ("fcl", "weights"):
        return shipped(Path(value).name)
    return value


def new_ids(trials: pd.DataFrame) -> dict[str, str]:
    """old trial id -> the id of its config with the portable weights name."""
    today = as_today(trials)
    out = {}
    for (_, row), old in zip(today.iterrows(), trials["trial_id"]):
        flat = {k: v for k, v in row.items() if pd.notna(v) or k == KEY}
        base, _, suffix = str(old).partition("-")          # -1, -2: num_samples > 1
        if config_hash(from_flat(flat)) != base:
            raise SystemExit(f"error: {old}: its stored config does not hash to its id")
        new = config_hash(from_flat({**flat, KEY: portable(flat[KEY])}))
        out[old] = f"{new}-{suffix}" if suffix else new
    return out


def migrate(folder: Path) -> bool:
    manifest = read_manifest(folder)
    if manifest is None or portable(manifest.base.get(KEY, "")) == manifest.base.get(KEY, ""):
        return False
    frames = {n: pd.read_parquet(folder / f"{n}.parquet") for n in FILES}
    ids = new_ids(frames["trials"])
    for name, df in frames.items():
        df["trial_id"] = df["trial_id"].map(ids)
    frames["trials"][KEY] = frames["trials"][KEY].map(portable)
    base = {**manifest.base, KEY: portable(manifest.base[KEY])}
    replace_study_files(frames, folder, dataclasses.replace(manifest, base=base))
    return True


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="+", help="results folders (each holds study folders)")
    args = p.parse_args(argv)
    for results in args.results:
        for manifest in sorted(Path(results).rglob("study.json")):
            if ".tune" in manifest.parts:
                continue
            if migrate(manifest.parent):
                print(f"{manifest.parent}: {KEY} named, trial ids recomputed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
