"""`fcl run` with its default torch threads against other thread settings, alone and beside busy
processes.

    python benchmarks/threads_under_load.py [--preset smoke] [--busy 2] [--reps 2]
                                            [--set KEY=VALUE ...]

A single run computes with torch's intra-op threads (as many as the CPUs; `run.threads=0`
leaves torch's default). When other processes keep those CPUs busy, OpenMP's threads wait for
each other at every parallel region, and a run can slow down many times over, far more than
its share of the CPUs explains. This script measures that, per condition:
- **alone**: nothing else runs (each row prints the load average before it: a busy machine
  shows in that column);
- **beside N busy**: `--busy` processes spin a CPU each (a pure-Python loop), started before the
  variants and ended after them.

Variants, interleaved within each repetition, each a fresh `fcl run --preset P --json --quiet`
subprocess (imports, data, the run), with no OpenMP variable in its environment:
- **fcl's default**: fcl sets `GOMP_SPINCOUNT=10000` before torch loads (`fcl/__init__.py`): GNU
  OpenMP's threads spin that many times at a parallel region, then sleep (its own default is
  300,000); this changes no number a run computes;
- **OpenMP's default**: the same command with torch imported before fcl, so OpenMP starts with
  its own wait policy (spin at each parallel region, then sleep): fcl before that choice;
- `--policies NAME=VALUE`: an OpenMP variable of the user's (e.g. `GOMP_SPINCOUNT=10000`: spin that
  many times at a parallel region, then sleep; `OMP_WAIT_POLICY=PASSIVE`: sleep at once), with
  torch imported before fcl;
- each with every `--threads` (default: torch's default and `run.threads=1`).
Prints every repetition (wall time of the process, the run's training samples/s and final ACC,
which must be equal within a thread count), then per variant and condition the median wall and
its speed against the first variant (`--threads`' first with `--policies`' first) in the same
condition.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fcl.bench import describe_machine  # noqa: E402
SPIN = "while True:\n    pass\n"

OPENMP, FCL = "openmp", "fcl"
OPENMP_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS")
POLICY_NAMES = {OPENMP: "OpenMP's wait policy", FCL: "fcl's wait policy"}
TORCH_FIRST = "import sys, torch; from fcl.cli import main; sys.exit(main())"


def variants(threads: list[int], policies: list[str]) -> dict[str, tuple[list[str], str]]:
    """name -> (config keys, policy), every thread count with every policy."""
    out = {}
    for n in threads:
        for policy in policies:
            where = "default threads" if n == 0 else f"run.threads={n}"
            out[f"{where}, {POLICY_NAMES.get(policy, policy)}"] = (
                [f"run.threads={n}"] if n else [], policy)
    return out


def one_run(preset: str, sets: list[str], policy: str) -> tuple[float, float, str]:
    """(process wall s, the run's samples/s, the run's final ACC as printed). `policy`: fcl (the
    plain command), openmp (torch imported before fcl: OpenMP's own default), or NAME=VALUE (an
    OpenMP variable, e.g. GOMP_SPINCOUNT=10000, with torch imported before fcl)."""
    env = {k: v for k, v in os.environ.items() if k not in OPENMP_VARIABLES}
    name, _, value = policy.partition("=")
    if value:
        env[name] = value
    start_cmd = ["-m", "fcl"] if policy == FCL else ["-c", TORCH_FIRST]
    cmd = [sys.executable, *start_cmd, "run", "--preset", preset, "--json", "--quiet"]
    if sets:
        cmd += ["--set", *sets]
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"fcl run failed (exit {proc.returncode}): {proc.stderr.strip()[-300:]}")
    summary = json.loads(proc.stdout)
    return wall, float(summary.get("samples_per_s", float("nan"))), f"{summary.get('acc')}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--preset", default="smoke", help="fcl run's preset (default: smoke)")
    p.add_argument("--busy", type=int, default=2, help="busy processes beside the run (default 2)")
    p.add_argument("--reps", type=int, default=2, help="repetitions per condition (default 2)")
    p.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                   help="config keys of every variant (e.g. rounds=4)")
    p.add_argument("--threads", type=int, nargs="+", default=[0, 1],
                   help="run.threads values (0: torch's default; default: 0 1)")
    p.add_argument("--policies", nargs="+", default=[OPENMP, FCL],
                   help="openmp, fcl, or NAME=VALUE of an OpenMP variable (default: openmp fcl)")
    args = p.parse_args()
    runs = variants(args.threads, args.policies)
    base = next(iter(runs))
    print(f"{describe_machine('cpu')}; preset {args.preset} {' '.join(args.set)}")
    print("| condition | rep | variant | wall (s) | samples/s | ACC | load before |")
    print("|---|---|---|---|---|---|---|")
    walls: dict[tuple[str, str], list[float]] = {}
    for condition, busy in (("alone", 0), (f"beside {args.busy} busy", args.busy)):
        spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(busy)]
        try:
            for rep in range(1, args.reps + 1):
                for name, (sets, policy) in runs.items():
                    load = os.getloadavg()[0]
                    wall, rate, acc = one_run(args.preset, args.set + sets, policy)
                    walls.setdefault((condition, name), []).append(wall)
                    print(f"| {condition} | {rep} | {name} | {wall:.1f} | {rate:.0f} | {acc} "
                          f"| {load:.1f} |", flush=True)
        finally:
            for s in spinners:
                s.kill()
                s.wait()
    print()
    print(f"Medians over {args.reps} repetitions; speed: the median wall of {base!r} in the "
          "same condition / the variant's (above 1: faster)")
    print()
    print("| condition | variant | median wall (s) | speed |")
    print("|---|---|---|---|")
    for (condition, name), values in walls.items():
        med = statistics.median(values)
        print(f"| {condition} | {name} | {med:.1f} | "
              f"{statistics.median(walls[(condition, base)]) / med:.2f}x |")


if __name__ == "__main__":
    main()
