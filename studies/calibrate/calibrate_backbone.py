"""Which frozen backbone puts the cifar10-local studies in the FCL paper's regime (issue 23,
item 1): the random init the stored studies use against each pretrained checkpoint, under
FedSGD eta 1 and FedAdam at the preset's settings (eta 0.5, tau 0.1), the same seeds each.

    python studies/calibrate/calibrate_backbone.py                # random + the shipped backbones
    python studies/calibrate/calibrate_backbone.py --backbone fmnist=fcl/weights/X.pt \\
        --seeds 3 --jobs 2 --json /tmp/calibration.json
    python studies/calibrate/calibrate_backbone.py --table-from /tmp/calibration.json

Each run is `fcl.run(PRESET, {model.weights, server.*, seed, run.threads=1})`, `--jobs` at a
time (one CPU thread each). Per backbone and optimizer the table gives ACC (mean and std over
seeds); per backbone, the optimizer gap (FedAdam - FedSGD ACC of the same seed: mean ± std,
and how many seeds agree in sign), drops (the share of BWT_f's terms, a task trained before a phase
boundary at that boundary, where its accuracy falls by more than 5 points; and the share of
boundaries where some task does), and the best task's final accuracy (saturation near 100).
Not a Tune study (run_all does not run it): it only calibrates the preset the studies use.
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

from fcl.cli_args import parse_sets
from fcl.config import ConfigError
from fcl.shipped_weights import PREFIX, SHA256, shipped, weights_file

# FedAdam keeps the preset's server.lr and server.tau (cifar10-local: 0.5 and 0.1)
OPTIMIZERS = {"FedSGD eta 1": {"server.optimizer": "fedsgd", "server.lr": 1.0},
              "FedAdam": {"server.optimizer": "fedadam"}}
DROP = 5.0          # points: a drop at a boundary larger than this counts


def one_run(job: tuple[str, str, str, int, str]) -> dict:
    """One FCL run; what the table needs from it (plain values, to cross processes)."""
    import fcl
    backbone, weights, optimizer, seed, preset, sets = job
    t0 = time.perf_counter()
    res = fcl.run(preset, {**sets, **OPTIMIZERS[optimizer], "model.weights": weights,
                           "seed": seed, "run.threads": 1})
    first = [math.inf] * res.accuracy.shape[0]
    for t in res.task_records:
        if t.reports > 0:
            first[t.task] = min(first[t.task], t.round)
    regime = " ".join(f"{k}={v}" for k, v in sets.items())
    return {"backbone": f"{backbone} {regime}".strip(), "weights": weights, "optimizer": optimizer, "seed": seed,
            "acc": res.summary.acc, "bwt_f": res.summary.bwt_f,
            "final": res.accuracy[:, -1].tolist(), "accuracy": res.accuracy.tolist(),
            "first_update": first, "q": res.config.rounds_per_phase,
            "server": f"eta {res.config.server.lr:g}, tau {res.config.server.tau:g}",
            "wall_s": time.perf_counter() - t0}


def boundary_drops(row: dict) -> tuple[int, int, int, int]:
    """(terms that drop > DROP, terms, boundaries with such a drop, boundaries): the terms are
    BWT_f's, A[t, pQ] - A[t, pQ-1] for the tasks updated before the boundary pQ."""
    A, q = row["accuracy"], row["q"]
    drops = terms = hit = 0
    boundaries = range(q, len(A[0]), q)
    for b in boundaries:
        deltas = [A[t][b] - A[t][b - 1] for t in range(len(A)) if row["first_update"][t] < b]
        terms += len(deltas)
        drops += sum(d < -DROP for d in deltas)
        hit += any(d < -DROP for d in deltas)
    return drops, terms, hit, len(boundaries)


def mean_sd(values: list[float], fmt: str = ".1f") -> str:
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):{fmt}} ± {sd:.1f}"


def table(rows: list[dict]) -> str:
    """The calibration table, Markdown, one line per candidate (backbone and `--set`s)."""
    names = list(dict.fromkeys(r["backbone"] for r in rows))
    head = ["candidate", *(f"ACC {o}" for o in OPTIMIZERS), *(f"BWT_f {o}" for o in OPTIMIZERS),
            "FedAdam - FedSGD (same seed)",
            f"BWT_f terms < -{DROP:g}", "boundaries with one", "best task (final)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in names:
        mine = [r for r in rows if r["backbone"] == name]
        by = {o: {r["seed"]: r for r in mine if r["optimizer"] == o} for o in OPTIMIZERS}
        sgd, adam = by.values()
        gaps = [adam[s]["acc"] - sgd[s]["acc"] for s in sorted(set(sgd) & set(adam))]
        agree = max(sum(g > 0 for g in gaps), sum(g < 0 for g in gaps))
        d, t, h, b = (sum(x) for x in zip(*(boundary_drops(r) for r in mine)))
        cells = [name, *(mean_sd([r["acc"] for r in by[o].values()]) for o in OPTIMIZERS),
                 *(mean_sd([r["bwt_f"] for r in by[o].values()], "+.2f") for o in OPTIMIZERS),
                 f"{mean_sd(gaps, '+.1f')} ({agree}/{len(gaps)} seeds same sign)",
                 f"{d}/{t} = {d / max(t, 1):.2f}", f"{h}/{b} = {h / max(b, 1):.2f}",
                 mean_sd([max(r["final"]) for r in mine])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def backbones(args: argparse.Namespace) -> dict[str, str]:
    """name -> model.weights ("" = the preset's random init), checked before any run: a shipped
    backbone by its name (`fcl:NAME`, so the runs' configs name no path of this checkout), any
    other file by its absolute path."""
    out = {"random": ""}
    given = args.backbone or [f"{Path(n).stem}={shipped(n)}" for n in sorted(SHA256)]
    for item in given:
        name, sep, value = item.partition("=")
        try:
            path = weights_file(value) if sep else ""
        except ConfigError:
            path = ""
        if not name or not path or not Path(path).is_file():
            raise SystemExit(f"error: --backbone={item}: expected NAME=FILE.pt of an existing "
                             "file (written by `fcl pretrain`) or NAME=fcl:SHIPPED "
                             f"({', '.join(shipped(n) for n in sorted(SHA256))})")
        out[name] = value if value.startswith(PREFIX) else str(Path(path).resolve())
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backbone", action="append", metavar="NAME=FILE.pt",
                   help="a pretrained candidate (repeatable; default: every shipped backbone, "
                        "fcl:NAME)")
    p.add_argument("--preset", default="cifar10-local", help="run preset (random backbone)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a config key every run of this call overrides (repeatable), e.g. "
                        "rounds=50: a candidate regime; the table names it beside the backbone")
    p.add_argument("--seeds", type=int, default=3, help="seeds 0..S-1 (default 3)")
    p.add_argument("--jobs", type=int, default=2, help="runs at a time (default 2)")
    p.add_argument("--json", metavar="FILE", help="also write every run's row to FILE (JSON)")
    p.add_argument("--table-from", metavar="FILE", nargs="+",
                   help="print the table of the rows --json runs wrote (one table over all "
                        "files given), running nothing")
    args = p.parse_args(argv)
    if args.table_from:
        print(table([r for f in args.table_from for r in json.loads(Path(f).read_text())]))
        return 0
    if args.seeds < 1 or args.jobs < 1:
        print(f"error: --seeds={args.seeds} --jobs={args.jobs}: allowed: >= 1", file=sys.stderr)
        return 2
    try:
        named = backbones(args)
        sets = parse_sets(args.set)
    except (SystemExit, ConfigError) as e:
        print(e, file=sys.stderr)
        return 2
    jobs = [(n, w, o, s, args.preset, sets) for n, w in named.items() for o in OPTIMIZERS
            for s in range(args.seeds)]
    t0 = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        rows = []
        for row in pool.imap_unordered(one_run, jobs):
            rows.append(row)
            print(f"[{len(rows)}/{len(jobs)}] {row['backbone']} {row['optimizer']} seed "
                  f"{row['seed']}: ACC {row['acc']:.2f} ({row['wall_s']:.0f} s)",
                  file=sys.stderr, flush=True)
    rows.sort(key=lambda r: (list(named).index(r["backbone"].split(" ")[0]), r["optimizer"],
                             r["seed"]))
    if args.json:             # first: the runs' rows are the costly part
        from fcl.atomic_file import write_bytes_atomic
        write_bytes_atomic(json.dumps(rows, indent=1).encode(), args.json)
    print(table(rows))
    print("\n" + "; ".join(sorted({f"{r['optimizer']}: {r['server']}" for r in rows})))
    print(f"\n{len(rows)} runs of preset {args.preset}, seeds 0..{args.seeds - 1}, {args.jobs} at "
          f"a time: {(time.perf_counter() - t0) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
