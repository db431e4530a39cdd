"""`fcl run` with its default torch threads against other thread settings, alone and beside busy
processes.

    python benchmarks/threads_under_load.py [--preset smoke] [--busy 2] [--reps 2]
                                            [--set KEY=VALUE ...]

A single run computes with torch's intra-op threads (as many as the CPUs; `run.threads=0`
leaves torch's default). When other processes keep those CPUs busy, OpenMP's threads wait for
each other at every parallel region, and a run can slow down many times over, far more than
its share of the CPUs explains. This script measures that, per condition:
- **alone**: nothing else runs (the load average is printed: a busy machine shows here);
- **beside N busy**: `--busy` processes spin a CPU each (a pure-Python loop), started before the
  variants and ended after them.

Variants, interleaved within each repetition, each a fresh `fcl run --preset P --json --quiet`
subprocess (imports, data, the run), with the variable OMP_WAIT_POLICY unset in its environment:
- **fcl's default**: fcl sets `OMP_WAIT_POLICY=PASSIVE` before torch loads (`fcl/__init__.py`):
  OpenMP's idle threads sleep instead of spinning; this changes no number a run computes;
- **OpenMP's default**: the same command with torch imported before fcl, so OpenMP starts with
  its own wait policy (spin at each parallel region, then sleep): fcl before that choice;
- each with `run.threads=1` too.
Prints every repetition (wall time of the process, the run's training samples/s and final ACC,
which must be equal within a thread count), then per variant and condition the median wall and
its speed against OpenMP's default threads in the same condition.
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
SPIN = "while True:\n    pass\n"

# name -> (config keys, whether torch loads before fcl: OpenMP's own wait policy)
VARIANTS: dict[str, tuple[list[str], bool]] = {
    "default threads, OpenMP's wait policy": ([], True),
    "default threads, fcl's (PASSIVE)": ([], False),
    "run.threads=1, OpenMP's wait policy": (["run.threads=1"], True),
    "run.threads=1, fcl's (PASSIVE)": (["run.threads=1"], False),
}
BASE = "default threads, OpenMP's wait policy"
TORCH_FIRST = "import sys, torch; from fcl.cli import main; sys.exit(main())"


def cpu_in_words() -> str:
    model = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        text = f.read()
    for line in text.splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    flags = "avx512_bf16" in text
    return (f"{model}, {os.cpu_count()} logical CPUs, "
            f"{'native bf16 (avx512_bf16)' if flags else 'no native bf16'}")


def one_run(preset: str, sets: list[str], torch_first: bool) -> tuple[float, float, str]:
    """(process wall s, the run's samples/s, the run's final ACC as printed)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS")}
    start_cmd = ["-c", TORCH_FIRST] if torch_first else ["-m", "fcl"]
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
    args = p.parse_args()
    print(f"CPU: {cpu_in_words()}; preset {args.preset} {' '.join(args.set)}")
    print("| condition | rep | variant | wall (s) | samples/s | ACC | load before |")
    print("|---|---|---|---|---|---|---|")
    walls: dict[tuple[str, str], list[float]] = {}
    for condition, busy in (("alone", 0), (f"beside {args.busy} busy", args.busy)):
        spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(busy)]
        try:
            for rep in range(1, args.reps + 1):
                for name, (sets, torch_first) in VARIANTS.items():
                    load = os.getloadavg()[0]
                    wall, rate, acc = one_run(args.preset, args.set + sets, torch_first)
                    walls.setdefault((condition, name), []).append(wall)
                    print(f"| {condition} | {rep} | {name} | {wall:.1f} | {rate:.0f} | {acc} "
                          f"| {load:.1f} |", flush=True)
        finally:
            for s in spinners:
                s.kill()
                s.wait()
    print()
    print(f"Medians over {args.reps} repetitions; speed: the median wall of {BASE!r} in the "
          "same condition / the variant's (above 1: faster)")
    print()
    print("| condition | variant | median wall (s) | speed |")
    print("|---|---|---|---|")
    for (condition, name), values in walls.items():
        base = statistics.median(walls[(condition, BASE)])
        med = statistics.median(values)
        print(f"| {condition} | {name} | {med:.1f} | {base / med:.2f}x |")


if __name__ == "__main__":
    main()
