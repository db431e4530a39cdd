"""How a study's cost on the driver grows with its number of trials: grids and Optuna searches of
10, 100 and 1,000 tiny trials (a second or two of training each) on one machine's local Ray.

    python benchmarks/study_scale.py [--sizes 10 100 1000] [--kinds grid search]
                                     [--out DIR] [--json FILE]

Per study it prints: the driver's CPU seconds per trial (`time.process_time` of the driver
process around `fcl.tune.run_study`; the trials run in Ray's worker processes, not counted),
Tune's experiment-state snapshots, the state `--resume` restores (how many were written: calls
of `TuneController.save_to_dir`; and their seconds per trial: the time inside
`TuneController.checkpoint`, which Tune calls every step of its loop and which writes a snapshot
when its period has passed or one is forced, then uploads it), the export's wall time and the
growth of the driver's resident memory while it ran (sampled from /proc every 20 ms), the
study's wall time, and the sizes of trials.parquet and rounds.parquet. The cost per trial should
not grow with the study's size; a column that does names the part to fix.

A grid varies `client.lr` over N values; a search draws N trials of Optuna TPE over `client.lr`
(its SQLite storage in the output folder). The run is the smoke preset cut to 2 rounds, one
task, width 8, 10 images per class. Everything goes under --out (default: a temporary folder,
removed afterwards); nothing is written into results/.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("FCL_OFFLINE", "1")

import ray  # noqa: E402
from ray import tune  # noqa: E402
from ray.tune.execution import tune_controller  # noqa: E402

from fcl.bench import describe_machine  # noqa: E402
from fcl.tune import Study, StudyOptions, grid, run  # noqa: E402
from fcl.tune import run_study  # noqa: E402

TINY = {"rounds": "2", "data.num_tasks": "1", "data.train_per_class": "10",
        "data.test_per_class": "10", "client.local_epochs": "1", "model.width": "8",
        "model.weights": "", "eval.every": "2"}


def study_of(kind: str, size: int) -> Study:
    if kind == "grid":    # N distinct learning rates: N trials, one config each
        lrs = [round(0.01 + 0.09 * i / max(1, size - 1), 6) for i in range(size)]
        return Study(f"scale_grid_{size}", {"client.lr": grid(*lrs)})
    return Study(f"scale_search_{size}", {"client.lr": tune.loguniform(0.005, 0.2)},
                 searcher="optuna", num_samples=size)


class Timed:
    """Wraps `owner.name` to add up the seconds spent inside it and count the calls."""

    def __init__(self, owner, name: str):
        self.owner, self.name, self.seconds, self.calls = owner, name, 0.0, 0
        self.original = getattr(owner, name)

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return self.original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t0
                self.calls += 1

        setattr(owner, name, timed)

    def restore(self):
        setattr(self.owner, self.name, self.original)


def rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class PeakRss:
    """The highest resident size of this process seen while `active`, sampled every 20 ms."""

    def __init__(self):
        self.active, self.base, self.peak = False, 0, 0
        self._stop = threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self):
        while not self._stop.wait(0.02):
            if self.active:
                self.peak = max(self.peak, rss_bytes())

    def start(self):
        self.base = self.peak = rss_bytes()
        self.active = True

    def stop(self) -> int:
        self.active = False
        return max(0, self.peak - self.base)

    def close(self):
        self._stop.set()


def measure(kind: str, size: int, out: Path, peak: PeakRss) -> dict:
    study = study_of(kind, size)
    opts = StudyOptions(preset="smoke", sets=TINY, seeds=1, results=str(out), fresh=True,
                        num_samples=study.num_samples,
                        command=f"benchmarks/study_scale.py {kind} {size}")
    snapshots = Timed(tune_controller.TuneController, "checkpoint")
    written = Timed(tune_controller.TuneController, "save_to_dir")
    export = Timed(run, "export_study")
    export_growth = []
    inner = export.original

    def export_with_memory(*args, **kwargs):
        peak.start()
        try:
            return inner(*args, **kwargs)
        finally:
            export_growth.append(peak.stop())

    export.original = export_with_memory
    cpu0, t0 = time.process_time(), time.perf_counter()
    try:
        outcome = run_study(study, opts, out=io.StringIO())
    finally:
        snapshots.restore()
        written.restore()
        export.restore()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    folder = out / study.name
    return {"kind": kind, "trials": size, "finished": outcome.finished,
            "driver_cpu_ms_per_trial": 1000 * cpu / size,
            "snapshots": written.calls,
            "snapshot_ms_per_trial": 1000 * snapshots.seconds / size,
            "export_s": export.seconds, "export_rss_mb": sum(export_growth) / 2**20,
            "wall_s": wall, "wall_s_per_trial": wall / size,
            "trials_parquet_kb": (folder / "trials.parquet").stat().st_size / 1024,
            "rounds_parquet_kb": (folder / "rounds.parquet").stat().st_size / 1024}


COLUMNS = [("kind", "{}"), ("trials", "{}"), ("finished", "{}"),
           ("driver_cpu_ms_per_trial", "{:.0f}"), ("snapshots", "{}"),
           ("snapshot_ms_per_trial", "{:.1f}"), ("export_s", "{:.2f}"),
           ("export_rss_mb", "{:.1f}"), ("wall_s_per_trial", "{:.2f}"),
           ("trials_parquet_kb", "{:.1f}"), ("rounds_parquet_kb", "{:.1f}")]


def table(rows: list[dict]) -> str:
    head = "| " + " | ".join(name for name, _ in COLUMNS) + " |"
    lines = [head, "|" + "---|" * len(COLUMNS)]
    for r in rows:
        lines.append("| " + " | ".join(fmt.format(r[name]) for name, fmt in COLUMNS) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    ap.add_argument("--kinds", nargs="+", choices=["grid", "search"], default=["grid", "search"])
    ap.add_argument("--out", help="folder for the studies (default: a temporary one, removed)")
    ap.add_argument("--json", help="also write the rows to this JSON file")
    args = ap.parse_args()
    print(describe_machine("cpu"), "| Ray", ray.__version__, "| CPUs:", os.cpu_count())
    tmp = None if args.out else tempfile.TemporaryDirectory(prefix="fcl-scale-")
    out = Path(args.out or tmp.name)
    peak, rows = PeakRss(), []
    try:
        for size in args.sizes:
            for kind in args.kinds:
                rows.append(measure(kind, size, out, peak))
                print(table(rows[-1:]).splitlines()[-1], flush=True)
                if args.json:
                    Path(args.json).write_text(json.dumps(rows, indent=1))
    finally:
        peak.close()
        if tmp is not None:
            tmp.cleanup()
    print()
    print(table(rows))


if __name__ == "__main__":
    main()
