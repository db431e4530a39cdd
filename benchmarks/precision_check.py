"""The accuracy check of a compute mode at a preset: final ACC of fp32 against other modes
(bf16 autocast, bf16 + channels_last) at seeds 0..S-1, and each mode's samples/s.

    python benchmarks/precision_check.py [--preset cifar10-local] [--seeds 3] [--threads 1]
                                         [--modes fp32 bf16 bf16+cl] [--set KEY=VALUE ...]

Runs the study preset's base config (`fcl.presets.study_preset`: what a study's trial starts
from) straight through the engine, modes interleaved per seed. The bound the README uses: a
mode passes when its mean ACC is within 1 point of fp32's.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from fcl.cli_args import parse_sets  # noqa: E402
from fcl.engine import prepare_data, run  # noqa: E402
from fcl.presets import study_preset  # noqa: E402

MODES = {"fp32": {"run.precision": "fp32", "run.channels_last": False},
         "bf16": {"run.precision": "bf16", "run.channels_last": False},
         "bf16+cl": {"run.precision": "bf16", "run.channels_last": True},
         "fp32+cl": {"run.precision": "fp32", "run.channels_last": True}}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="cifar10-local")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--modes", nargs="+", choices=list(MODES), default=["fp32", "bf16", "bf16+cl"])
    p.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE")
    args = p.parse_args()
    os.chdir(ROOT)                                   # data.root=data
    torch.set_num_threads(args.threads)
    sets = {"run.threads": args.threads, **parse_sets(args.set)}
    acc: dict[str, list[float]] = {m: [] for m in args.modes}
    sps: dict[str, list[float]] = {m: [] for m in args.modes}
    for seed in range(args.seeds):
        data = prepare_data(study_preset(args.preset, {**sets, "seed": seed}))
        for m in args.modes:
            res = run(study_preset(args.preset, {**sets, **MODES[m], "seed": seed}), data=data)
            acc[m].append(float(res.summary.acc))
            sps[m].append(float(res.summary.samples_per_s))
            print(f"seed {seed} {m:8s} ACC {acc[m][-1]:6.2f}  {sps[m][-1]:6.0f} samples/s  "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
    ref = statistics.mean(acc[args.modes[0]])
    for m in args.modes:
        mean = statistics.mean(acc[m])
        print(f"{args.preset} {m:8s} ACC {' / '.join(f'{a:.2f}' for a in acc[m])} = mean "
              f"{mean:.2f}; vs {args.modes[0]} {mean - ref:+.2f} "
              f"({'within' if abs(mean - ref) <= 1 else 'OUTSIDE'} 1 point); samples/s median "
              f"{statistics.median(sps[m]):.0f}")


if __name__ == "__main__":
    main()
