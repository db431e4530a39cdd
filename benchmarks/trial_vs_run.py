"""Samples/s of a Tune trial against `fcl run` of the same config and thread count.

    python benchmarks/trial_vs_run.py [--reps 3] [--set KEY=VALUE ...]

Runs, interleaved `--reps` times: the engine's `run()` straight through (what `fcl run` does)
and a one-trial study of the same config (`fcl.tune.run_study`, a local Ray with one trial of
`run.threads` CPUs), whose samples/s is the trial's own (`trials.parquet`: training samples
over the trial function's wall time, reports and checkpoints included, Ray's start not). Prints
each pair, the seconds each spent outside its rounds (wall time minus the rounds' own `wall_s`:
the per-round overhead, robust to how fast the machine computes at that moment), and the median
ratio trial / run; the target is >= 0.97.
The default config is the `local` preset at study size (`fcl.presets.STUDY_PRESETS["local"]`) on
the bundled data, 1 thread, checkpoints every 2 rounds (what a study of 25 rounds does).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pandas as pd  # noqa: E402

from fcl.cli_args import parse_sets  # noqa: E402
from fcl.engine import run  # noqa: E402
from fcl.presets import preset  # noqa: E402
from fcl.tune import Study, StudyOptions, run_study  # noqa: E402

SIZE = {"rounds": 25, "data.train_per_class": 200, "data.test_per_class": 100,
        "run.threads": 1, "run.precision": "fp32"}


def run_rate(sets: dict) -> tuple[float, float]:
    """(samples/s, seconds outside the rounds) of `fcl run`'s engine call."""
    res = run(preset("local", sets))
    outside = res.summary["wall_s"] - sum(r["wall_s"] for r in res.records)
    return float(res.summary["samples_per_s"]), outside


def trial_rate(sets: dict, folder: str, rep: int) -> tuple[float, float]:
    """(samples/s, seconds outside the rounds) of a one-trial study's trial."""
    study = Study(f"bench_trial_{rep}", {}, doc="benchmark")
    opts = StudyOptions(preset="local", sets={k: str(v) for k, v in sets.items()}, seeds=1,
                        results=folder, cpus_per_trial=float(sets["run.threads"]), fresh=True,
                        checkpoint_every=2)
    outcome = run_study(study, opts, out=open(os.devnull, "w"))
    trials = pd.read_parquet(Path(folder) / study.name / "trials.parquet")
    rounds = pd.read_parquet(Path(folder) / study.name / "rounds.parquet")
    assert outcome.finished == 1, outcome
    return float(trials["samples_per_s"].iloc[0]), float(trials["wall_s"].iloc[0]
                                                         - rounds["wall_s"].sum())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE")
    args = p.parse_args()
    sets = {**SIZE, **parse_sets(args.set)}
    ratios = []
    with tempfile.TemporaryDirectory(prefix="fcl-bench-") as folder:
        for rep in range(args.reps):
            t0 = time.perf_counter()
            (a, a_out), (b, b_out) = run_rate(sets), trial_rate(sets, folder, rep)
            ratios.append(b / a)
            print(f"rep {rep}: run {a:,.0f} samples/s ({a_out:.2f} s outside its rounds), "
                  f"trial {b:,.0f} samples/s ({b_out:.2f} s outside its rounds), "
                  f"trial/run {b / a:.3f} ({time.perf_counter() - t0:.0f} s)", flush=True)
    print(f"median trial/run: {statistics.median(ratios):.3f} over {args.reps} reps "
          f"({', '.join(f'{r:.3f}' for r in ratios)})")


if __name__ == "__main__":
    main()
