"""Kill a study's driver with `kill -9` (or SIGTERM) at random moments, resume it each time,
and compare its rows with an uninterrupted run's: the check that a hard kill never loses a
study silently (`tests/test_kill_anywhere.py` runs it at the suite's size; more kills with
`python tests/kill_anywhere.py --kills 200 --sigterm-every 4 --folder /tmp/ka`).

Each cycle starts the driver (`--resume` after the first), waits for its first line (Ray
joined: the study's own work has begun), then a random time within the uninterrupted run's
length, and kills it (`kill -9`, or SIGTERM, after which the driver must exit 143 with its
line). A driver that ends before its kill is a finished cycle. After the
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
from collections import Counter
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
SIGTERM_LINE = "terminated (SIGTERM)"   # how a SIGTERMed driver's line begins (exit 143)


@dataclass
class Tally:
    kills: int = 0               # drivers killed while running
    by_signal: Counter = field(default_factory=Counter)      # the kills, by signal name
    ended: int = 0               # drivers that finished before their kill came
    exits: list[int] = field(default_factory=list)
    silent: list = field(default_factory=list)   # SIGTERMed drivers (exit 143) with no line
    odd: list = field(default_factory=list)      # (exit code, output) of the other exits


def command(folder: Path, address: str, resume: bool, results: str = "results") -> list[str]:
    return [sys.executable, str(folder / "anywhere.py"), "--preset", "smoke", "--seeds", "1",
            "--results", str(folder / results), "--address", address, "--set", *SMALL,
            *(["--resume"] if resume else [])]


def first_line(log: Path, proc: subprocess.Popen) -> bool:
    """Wait for the driver's first line in `log` (it joined Ray); False if it ended first."""
    deadline = time.monotonic() + DEADLINE_S
    while b"\n" not in log.read_bytes():
        if proc.poll() is not None:
            return False
        if time.monotonic() > deadline:
            raise RuntimeError(f"no first line in {DEADLINE_S} s: {log.read_text()[-500:]}")
        time.sleep(0.05)
    return True


def cycle(folder: Path, address: str, resume: bool, after_s: float, sig: int,
          env: dict) -> tuple[int | None, str]:
    """One driver: started, sent `sig` `after_s` seconds after its first line. (Its exit code,
    or None when the signal came while it ran; its output.)"""
    log = folder / "driver.log"
    with open(log, "wb") as f:
        proc = subprocess.Popen(command(folder, address, resume), stdout=f,
                                stderr=subprocess.STDOUT, env=env)
    try:
        if not first_line(log, proc):
            return proc.wait(timeout=DEADLINE_S), log.read_text()
        try:
            return proc.wait(timeout=after_s), log.read_text()
        except subprocess.TimeoutExpired:
            proc.send_signal(sig)
            code = proc.wait(timeout=DEADLINE_S)
            # SIGTERM: the driver's own exit (143, or 0 where it had just finished)
            return (None if sig == signal.SIGKILL or code == 143 else code), log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def work_span(folder: Path, address: str, env: dict) -> float:
    """The uninterrupted run (the rows to compare with); the seconds from its first line to
    its end, the window the kills are drawn in."""
    log = folder / "whole.log"
    with open(log, "wb") as f:
        proc = subprocess.Popen(command(folder, address, False, "whole"), stdout=f,
                                stderr=subprocess.STDOUT, env=env)
    first_line(log, proc)
    start = time.monotonic()
    if proc.wait(timeout=DEADLINE_S):
        raise RuntimeError(f"the uninterrupted run exited {proc.returncode}: "
                           f"{log.read_text()[-500:]}")
    return time.monotonic() - start


def kill_anywhere(folder: Path, address: str, kills: int, seed: int = 0,
                  signals: tuple[int, ...] = (signal.SIGKILL,)) -> Tally:
    """`kills` killed drivers of the study in `folder` (the signals taken in turn from
    `signals`), then a resume to its end; the tally. Raises RuntimeError where the final resume
    fails."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "anywhere.py").write_text(textwrap.dedent(SCRIPT))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    span = work_span(folder, address, env)
    rng, tally, started = random.Random(seed), Tally(), False
    while tally.kills < kills:
        if len(tally.odd) > 3:           # a driver that cannot go on makes no more kills
            raise RuntimeError(f"{len(tally.odd)} drivers exited with an error, the last: "
                               f"{tally.odd[-1]}")
        sig = signals[(tally.kills + tally.ended) % len(signals)]
        code, output = cycle(folder, address, started, rng.uniform(0, span), sig, env)
        started = True
        if code is None:
            tally.kills += 1
            tally.by_signal[signal.Signals(sig).name] += 1
            if sig == signal.SIGTERM and SIGTERM_LINE not in output:
                tally.silent.append(output.strip().splitlines()[-1:])
        else:
            tally.ended += 1
            tally.exits.append(code)
            if code:
                tally.odd.append((code, output[-1500:]))
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
    p.add_argument("--sigterm-every", type=int, default=0, metavar="N",
                   help="every Nth signal a SIGTERM, the others kill -9 (default: only kill -9)")
    p.add_argument("--folder", type=Path, required=True)
    args = p.parse_args(argv)
    import ray

    from fcl.tune import cluster
    cluster.connect(None, num_cpus=2)
    address = ray.get_runtime_context().gcs_address
    signals = ((signal.SIGKILL,) * (args.sigterm_every - 1) + (signal.SIGTERM,)
               if args.sigterm_every else (signal.SIGKILL,))
    tally = kill_anywhere(args.folder, address, args.kills, args.seed, signals)
    diff = differences(args.folder)
    print(f"{tally.kills} kills ({dict(tally.by_signal)}), {tally.ended} drivers ended before their kill "
          f"(exit codes {sorted(set(tally.exits))}); SIGTERMed drivers without their line: "
          f"{len(tally.silent)}; rows equal to the uninterrupted run's: "
          f"{'yes' if not diff else 'no: ' + ', '.join(diff)}")
    for code, output in tally.odd:
        print(f"--- exit {code}:\n{output}")
    return 0 if not diff and not tally.silent and set(tally.exits) <= {0} else 1


if __name__ == "__main__":
    sys.exit(main())
