"""Kill a study's driver with `kill -9` (or SIGTERM) at random moments, resume it each time,
and compare its rows with an uninterrupted run's: the check that a hard kill never loses a
study silently (`tests/test_kill_anywhere.py` runs it at the suite's size; more kills with
`python tests/kill_anywhere.py --kills 200 --folder /tmp/ka`).

Each cycle starts the driver (`--resume` after the first), waits for its first line (Ray
joined: the study's own work has begun), then a random time within the uninterrupted run's
length, and kills it. A driver that ends before its kill is a finished cycle. After the
kills, the study runs to its end with `--resume`; its trials, rounds and tasks must equal the
uninterrupted run's, timing columns aside. The drivers join one Ray (`--address`), so a cycle
costs a driver's start, not a Ray's.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

SCRIPT = """
from fcl.tune import Study, grid, main
STUDY = Study("anywhere", {"client.lr": grid(0.02, 0.1)})
if __name__ == "__main__":
    main(STUDY)
"""
SMALL = ["model.weights=", "model.width=8", "rounds=5", "data.test_per_class=10"]
TIMING = ("wall_s", "samples_per_s", "tune_trial_id", "tune_trial_dir", "hostname")
DEADLINE_S = 600                 # one driver's run, on a busy machine


@dataclass
class Tally:
    kills: int = 0               # drivers killed while running
    ended: int = 0               # drivers that finished before their kill came
    exits: list[int] = field(default_factory=list)


def command(folder: Path, address: str, resume: bool, results: str = "results") -> list[str]:
    return [sys.executable, str(folder / "anywhere.py"), "--preset", "smoke", "--seeds", "1",
            "--results", str(folder / results), "--address", address, "--set", *SMALL,
            *(["--resume"] if resume else [])]


def cycle(folder: Path, address: str, resume: bool, after_s: float, sig: int,
          env: dict) -> int | None:
    """One driver: started, killed `after_s` seconds after its first line; its exit code, or
    None when it was killed."""
    proc = subprocess.Popen(command(folder, address, resume), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)
    first = proc.stdout.readline()          # the first line: it joined Ray
    if not first:
        return proc.wait(timeout=DEADLINE_S)
    try:
        return proc.wait(timeout=after_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(sig)
        proc.stdout.close()
        proc.wait(timeout=DEADLINE_S)
        return None


def kill_anywhere(folder: Path, address: str, kills: int, seed: int = 0,
                  sig: int = signal.SIGKILL) -> Tally:
    """`kills` killed drivers of the study in `folder`, then a resume to its end; the tally.
    Raises RuntimeError where the final resume fails."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "anywhere.py").write_text(textwrap.dedent(SCRIPT))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    whole = time.perf_counter()
    rc = subprocess.run(command(folder, address, False, "whole"), capture_output=True,
                        text=True, env=env, timeout=DEADLINE_S).returncode
    if rc:
        raise RuntimeError(f"the uninterrupted run exited {rc}")
    span = time.perf_counter() - whole
    rng, tally, started = random.Random(seed), Tally(), False
    while tally.kills < kills:
        code = cycle(folder, address, started, rng.uniform(0, span), sig, env)
        started = True
        if code is None:
            tally.kills += 1
        else:
            tally.ended += 1
            tally.exits.append(code)
            if code == 0:       # it finished: start the study again, fresh, for the next kills
                started = False
                shutil.rmtree(folder / "results", ignore_errors=True)
    final = subprocess.run(command(folder, address, started), capture_output=True, text=True,
                           env=env, timeout=DEADLINE_S)
    if final.returncode:
        raise RuntimeError(f"the last resume exited {final.returncode}: "
                           f"{final.stderr.strip().splitlines()[-1:]}")
    return tally


def frames(results: Path) -> dict:
    import pandas as pd
    return {n: pd.read_parquet(results / "anywhere" / f"{n}.parquet")
            for n in ("trials", "rounds", "tasks")}


def differences(folder: Path) -> list[str]:
    """Where the killed-and-resumed study's rows differ from the uninterrupted run's."""
    a, b = frames(folder / "whole"), frames(folder / "results")
    out = []
    for name in a:
        x = a[name].drop(columns=[c for c in TIMING if c in a[name]])
        y = b[name].drop(columns=[c for c in TIMING if c in b[name]])
        if not x.equals(y):
            out.append(f"{name}.parquet differs")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kills", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--sigterm", action="store_true", help="SIGTERM instead of kill -9")
    p.add_argument("--folder", type=Path, required=True)
    args = p.parse_args(argv)
    import ray

    from fcl.tune import cluster
    cluster.connect(None, num_cpus=2)
    address = ray.get_runtime_context().gcs_address
    tally = kill_anywhere(args.folder, address, args.kills, args.seed,
                          signal.SIGTERM if args.sigterm else signal.SIGKILL)
    diff = differences(args.folder)
    print(f"{tally.kills} kills, {tally.ended} drivers ended before their kill "
          f"(exit codes {sorted(set(tally.exits))}); rows equal to the uninterrupted run's: "
          f"{'yes' if not diff else 'no: ' + ', '.join(diff)}")
    return 0 if not diff else 1


if __name__ == "__main__":
    sys.exit(main())
