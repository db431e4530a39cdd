"""`fcl bench`: samples/s of whole runs against a bare loop doing the same work, per workload
and compute mode (or torch.profiler's top ops with `--profile`). Imports torch only when it
runs."""
from __future__ import annotations

import argparse
import sys

from fcl.cli_args import check_device, parse_sets
from fcl.config import ConfigError, with_overrides
from fcl.config_fields import parse_value
from fcl.presets import PRESETS


def _add_bench(p: argparse.ArgumentParser) -> None:
    from fcl import bench

    p.add_argument("--workloads", nargs="+", choices=list(bench.WORKLOADS),
                   default=list(bench.WORKLOADS), help="rows of the table (default: all)")
    p.add_argument("--modes", nargs="+", choices=list(bench.MODES), default=None,
                   help="compute modes per workload (default: all; on a CPU without native "
                        "bfloat16 kernels, all but the bf16 ones)")
    p.add_argument("--preset", choices=sorted(PRESETS), default=None,
                   help="bench this preset (with --set) instead of --workloads")
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="override config keys of every workload (e.g. run.threads=1)")
    p.add_argument("--rounds", type=int, default=0,
                   help="R of every workload (rounded up to a multiple of T; 0: the preset's)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default=None,
                   help="run.device of every workload (cuda: the table on a GPU)")
    p.add_argument("--repeats", type=int, default=1, help="runs of each side (best is kept)")
    p.add_argument("--profile", action="store_true",
                   help="instead of the table: torch.profiler's top ops of a run per "
                        "workload and mode (--rounds, default: T rounds)")


MAX_BENCH_ROUNDS = 10_000


def main_bench(args) -> int:
    import torch

    from fcl import bench
    from fcl.engine import prepare_data

    if not 0 <= args.rounds <= MAX_BENCH_ROUNDS:     # 1e12 rounds ran until killed
        raise ConfigError("--rounds", args.rounds, "out of range",
                          f"0 <= rounds <= {MAX_BENCH_ROUNDS}")
    if args.repeats < 1:
        raise ConfigError("--repeats", args.repeats, "out of range", ">= 1")
    overrides = parse_sets(args.set)
    if args.device:
        if overrides.get("run.device", args.device) != args.device:
            raise ConfigError("--device", args.device, f"contradicts --set run.device="
                              f"{overrides['run.device']}", "one of the two")
        overrides["run.device"] = args.device
    workloads = ({args.preset: (args.preset, {})} if args.preset else
                 {name: bench.WORKLOADS[name] for name in args.workloads})
    for spec in workloads.values():     # every config checked before the first measurement
        check_device(bench.workload_config(spec, args.rounds, overrides))
    if "run.threads" in overrides:
        torch_threads = parse_value("run.threads", overrides["run.threads"], int)
        if torch_threads > 0:
            torch.set_num_threads(torch_threads)
    header = f"{bench.describe_machine(overrides.get('run.device', 'auto'))}"
    print(header, flush=True)
    if args.modes is None:
        args.modes, skipped = bench.default_modes(overrides.get("run.device", "auto"))
        if skipped:
            print(f"skipped {', '.join(skipped)}: this CPU has no native bfloat16 kernels, "
                  "where bf16 runs ~10x slower than fp32 (--modes bf16 ... to measure anyway)",
                  flush=True)
    if args.profile:
        for name, spec in workloads.items():
            cfg = bench.workload_config(spec, args.rounds or 1, overrides)   # default: T rounds
            data = prepare_data(cfg)
            for mode in args.modes:
                print(f"\n## {name} / {mode}, {cfg.rounds} rounds\n" +
                      bench.profile_run(with_overrides(cfg, bench.MODES[mode]), data), flush=True)
        return 0
    rows = bench.bench_table(workloads, args.modes, args.rounds, overrides, args.repeats,
                       out=sys.stderr)
    print(bench.format_table(rows))
    return 0
