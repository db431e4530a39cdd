"""Wall time of the 36-trial `optimizers` study (Table 3: 4 server optimizers x 3 server lrs x
3 seeds) at the `cifar10-local` preset, run into a temp folder.

    python benchmarks/optimizers_study.py [--set KEY=VALUE ...] [--keep DIR] [--compare DIR]
                                          [--accuracy-only]

Prints the study's wall time (driver start to export, Ray's start included), the trials' own
mean wall time (`trials.parquet`'s `wall_s`: the trial function from its first round to its
last), the rounds' share of it and the time outside the trials. `--keep DIR` copies
trials.parquet and rounds.parquet there; `--compare DIR` checks every metric of every trial
(same trial_id) against such a copy, bit for bit (same seeds -> same numbers), and prints the
accuracy check that a change meant to move the numbers needs (per cell, the seeds' mean ACC and
BWT_f against the copy's). Not a timed test: a benchmark for a quiet machine. Needs CIFAR-10 in
torchvision's layout under data/ (data/cifar-10-batches-py, the preset's `data.root=data`),
which torchvision downloads there on first use (not with `FCL_OFFLINE=1`).
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from fcl.cli_args import parse_sets  # noqa: E402
from fcl.results_io import WERE_BOOLS  # noqa: E402
from fcl.tune import StudyOptions, run_study  # noqa: E402

# the metrics a study stores that are functions of the config (wall times and where it ran
# are not)
VOLATILE = {"wall_s", "samples_per_s", "tune_trial_id", "tune_trial_dir", "fcl_git",
            "device"}


def load_study():
    sys.path.insert(0, str(ROOT / "studies"))
    import optimizers
    return optimizers.STUDY


def compare(new: dict[str, pd.DataFrame], old_dir: Path) -> list[str]:
    """Every difference of the config-determined columns, per file, matched on trial_id (and
    round): empty when the study reproduced the stored numbers exactly."""
    diffs = []
    for name, keys in (("trials", ["trial_id"]), ("rounds", ["trial_id", "round"])):
        old = pd.read_parquet(old_dir / f"{name}.parquet")
        cols = [c for c in old.columns if c not in VOLATILE and c in new[name].columns]
        a = old[cols].sort_values(keys).reset_index(drop=True)
        b = new[name][cols].sort_values(keys).reset_index(drop=True)
        if len(a) != len(b):
            diffs.append(f"{name}: {len(a)} rows stored, {len(b)} now")
            continue
        for c in cols:
            if c in WERE_BOOLS:             # stored as a bool before `auto`: compare the words
                a[c], b[c] = (x.map(lambda v: str(v).lower()) for x in (a[c], b[c]))
            same = (a[c] == b[c]) | (a[c].isna() & b[c].isna())
            if not same.all():
                diffs.append(f"{name}.{c}: {int((~same).sum())} of {len(a)} rows differ")
    return diffs


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE")
    p.add_argument("--cpus-per-trial", type=float, default=None)
    p.add_argument("--checkpoint-every", type=int, default=None,
                   help="rounds between a trial's checkpoints (default: the study's, R / 10)")
    p.add_argument("--keep", type=Path, default=None)
    p.add_argument("--compare", type=Path, default=None)
    p.add_argument("--accuracy-only", action="store_true",
                   help="with --compare: exit 0 when numbers differ (a change meant to move "
                        "them); the accuracy check is the comparison")
    args = p.parse_args()
    os.chdir(ROOT)                             # the preset's data.root=data
    study = load_study()
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="fcl-optimizers-") as folder:
        opts = StudyOptions(preset="cifar10-local", sets=parse_sets(args.set), results=folder,
                            cpus_per_trial=args.cpus_per_trial, fresh=True,
                            checkpoint_every=args.checkpoint_every,
                            command="python benchmarks/optimizers_study.py")
        t0 = time.perf_counter()
        outcome = run_study(study, opts, out=open(os.devnull, "w"))
        wall = time.perf_counter() - t0
        out = Path(folder) / study.name
        frames = {n: pd.read_parquet(out / f"{n}.parquet") for n in ("trials", "rounds")}
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            for n in frames:
                shutil.copy(out / f"{n}.parquet", args.keep / f"{n}.parquet")
    trials, rounds = frames["trials"], frames["rounds"]
    in_rounds = rounds.groupby("trial_id")["wall_s"].sum()
    print(f"optimizers @ cifar10-local: {outcome.finished} finished, {outcome.failed} failed of "
          f"{outcome.trials}; study wall {wall:.1f} s ({wall / 60:.2f} min); per trial "
          f"{trials['wall_s'].mean():.2f} s mean (min {trials['wall_s'].min():.2f}, max "
          f"{trials['wall_s'].max():.2f}), of which rounds {in_rounds.mean():.2f} s; "
          f"{wall / len(trials):.2f} s of study wall per trial; precision "
          f"{','.join(sorted(trials['precision'].unique()))}, layout "
          f"{','.join(sorted(trials['layout'].unique())) if 'layout' in trials else 'nchw'}, "
          f"eval batch {','.join(map(str, sorted(trials['eval.batch_size'].unique())))}, threads "
          f"{','.join(map(str, sorted(trials['run.threads'].unique())))}; load "
          f"{load0:.1f} -> {os.getloadavg()[0]:.1f}", flush=True)
    if args.compare:
        diffs = compare(frames, args.compare)
        print("metrics identical to " + str(args.compare) if not diffs else
              "DIFFERENT from " + str(args.compare) + ": " + "; ".join(diffs))
        print(accuracy_check(trials, pd.read_parquet(args.compare / "trials.parquet")))
        return 1 if diffs and not args.accuracy_only else 0
    return 0


CELL = ["server.optimizer", "server.lr"]


def accuracy_check(new: pd.DataFrame, old: pd.DataFrame) -> str:
    """Per grid cell (optimizer x server lr), the seeds' mean ACC and BWT_f now minus stored:
    the check of a change that moves the numbers (another layout or precision), at the study's
    size."""
    means = {k: df.groupby(CELL)[["acc", "bwt_f"]].mean() for k, df in (("new", new),
                                                                         ("old", old))}
    delta = (means["new"] - means["old"]).dropna()
    seeds = sorted(new["seed"].unique())
    return (f"accuracy check over {len(delta)} cells x {len(seeds)} seeds: mean ACC "
            f"{new['acc'].mean():.2f} now vs {old['acc'].mean():.2f} stored "
            f"({new['acc'].mean() - old['acc'].mean():+.2f}); per cell ACC difference "
            f"{delta['acc'].min():+.2f} .. {delta['acc'].max():+.2f} (|mean| "
            f"{delta['acc'].abs().mean():.2f}); BWT_f difference {delta['bwt_f'].min():+.2f} .. "
            f"{delta['bwt_f'].max():+.2f}; the seeds' own spread (SD of ACC per cell, stored, "
            f"mean) {old.groupby(CELL)['acc'].std().mean():.2f}")


if __name__ == "__main__":
    sys.exit(main())
