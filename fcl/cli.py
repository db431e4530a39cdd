"""Command line: `fcl run`, `fcl bench`, `fcl params`, `fcl pretrain`, `fcl ls`, `fcl export`
(the table `COMMANDS`), and the analysis's commands (`ANALYSIS`: `fcl claims` is `python -m
analysis claims`).

Bad input (an unknown key, a wrong type, an out-of-range value, a missing data set) prints one
line `error: <key>=<value>: <why>; allowed: ...` and exits with code 2, no traceback.

The module imports neither torch nor Ray: each command imports what it needs when it runs, and
`fcl --version` answers before the parser (whose subcommands' arguments import torch) is built.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import time
from typing import Callable

from fcl import __version__
from fcl.clock import clock
from fcl.cli_args import (
    EXIT_USAGE,
    EXIT_WRITE_FAILED,
    OneLineParser,
    add_config_arguments,
    check_device,
    check_output,
    config_from_args,
    parse_sets,
    write_failed,
)
from fcl.config import (
    ConfigError,
    describe_keys,
    iter_fields,
    one_line,
    with_overrides,
)
from fcl.config_fields import parse_value
from fcl.presets import PRESETS, preset


def _add_run(p: argparse.ArgumentParser) -> None:
    add_config_arguments(p)
    p.add_argument("--json", action="store_true",
                   help="print one JSON object with the summary on stdout (progress to stderr)")
    p.add_argument("--out", metavar="DIR", help="write trials/rounds/tasks Parquet files to DIR "
                                                "(the study schema: results/README.md)")
    p.add_argument("--quiet", action="store_true", help="no per-round progress lines")
    p.add_argument("--save-model", metavar="DIR", help="write the trained model to DIR "
                   "(model.pt + model.json; load with fcl.load_model(DIR): fcl/saved_model.py)")
    p.add_argument("--export-to", metavar="TRACKER=DEST", action="append", default=[],
                   help="with --out: the run into a tracker too, as `fcl export` writes it "
                        "(tensorboard=FOLDER, mlflow=URI or PATH, optuna=URL); repeatable")


def progress_line(rec, total: int, elapsed: float | None = None) -> str:
    """One round of a run; with `elapsed` (seconds since the run started), the elapsed time and
    the ETA at the mean round time so far (rounds cost about the same: same clients, epochs)."""
    acc = "" if math.isnan(rec["mean_acc"]) else f" acc {rec['mean_acc']:5.1f}%"
    mb = (rec["bytes_up"] + rec["bytes_down"]) / 1e6
    done = rec["round"] + 1
    eta = ("" if elapsed is None else
           f" elapsed {clock(elapsed)} ETA {clock(elapsed / done * (total - done))}")
    return (f"round {done:>4}/{total} phase {rec['phase']} "
            f"tasks {','.join(map(str, rec['tasks_trained'])) or '-':<10} "
            f"reports {rec['clients_reporting']}/{rec['clients_sampled']} "
            f"drift {rec['drift']:.3g}{acc} sent {mb:.3f} MB{eta}")


RUN_OUTPUT_BYTES = 1 << 20      # a run's three Parquet files and manifest: ~0.1-0.5 MB


def main_run(args) -> int:
    from fcl.engine import prepare_data, run
    from fcl.manifest import write_run_files
    from fcl.models.factory import build_model
    from fcl.saved_model import save_model

    cfg = config_from_args(args)
    check_run_outputs(args, cfg)
    stream = sys.stderr if args.json else sys.stdout
    t0 = time.perf_counter()          # the data is loaded inside run(): its time counts too

    def on_round(rec, _state):
        if not args.quiet:
            print(progress_line(rec, cfg.rounds, time.perf_counter() - t0), file=stream,
                  flush=True)

    data = model = None
    if args.save_model is not None:     # the run trains this model: built here to save it
        data = prepare_data(cfg)
        model = build_model(cfg.model, data.image_shape, data.classes_per_task(), cfg.seed)
    result = run(cfg, on_round, data=data, model=model)
    s = result.summary
    failed = None
    if args.out is not None:
        command = shlex.join(["fcl", *sys.argv[1:]])
        try:
            for path in write_run_files(result, args.out, args.preset or "", command):
                print(f"wrote {path}", file=stream)
        except OSError as e:        # checked writable before the run: the disk filled since
            failed = write_failed("--out", args.out, e)
        if failed is None:
            export_run(args.out, args.export_to, stream)
    if args.save_model is not None and failed is None:
        try:
            for path in save_model(args.save_model, cfg, model, data, s):
                print(f"wrote {path}", file=stream)
        except OSError as e:
            failed = write_failed("--save-model", args.save_model, e)
    print(json.dumps({**s.row(), "preset": args.preset, "config": cfg.to_flat()}) if args.json
          else summary_line(s))
    if s.diverged:        # data, not an error: the run exits 0, its numbers marked
        print(f"warning: the run diverged at round {s.diverged_round} (training loss above "
              f"run.divergence_loss={cfg.run.divergence_loss:g} or not finite, or a server "
              f"state not finite); its metrics are those of a failed optimisation",
              file=sys.stderr)
    if failed:
        print(failed, file=sys.stderr)
        return EXIT_WRITE_FAILED
    return 0


def export_targets(specs: list[str], out: str | None) -> list[tuple[str, str]]:
    """`--export-to TRACKER=DEST` values checked (a known tracker whose package is there, and
    `--out`, which the export reads) before the run trains."""
    from fcl.tracker_export import TARGETS, check_target
    targets = []
    for spec in specs:
        to, sep, dest = spec.partition("=")
        if not sep or not dest or to not in TARGETS:
            raise ConfigError("--export-to", spec, "not TRACKER=DEST",
                              f"TRACKER one of {', '.join(TARGETS)}")
        check_target(to)
        targets.append((to, dest))
    if targets and out is None:
        raise ConfigError("--export-to", specs[0], "exports what --out writes", "with --out DIR")
    return targets


def export_run(out: str, targets: list[tuple[str, str]], stream) -> None:
    from fcl.tracker_export import export
    for to, dest in targets:
        _, runs, view = export([out], to, dest)
        print(f"exported the run to {to} at {dest}; view it with: {view}", file=stream)


def check_run_outputs(args, cfg) -> None:
    """What `fcl run` will write, checked before it trains: the device, `--out` and
    `--save-model` writable with room, and a saved model never replaced unasked."""
    from fcl.communication import params_report
    from fcl.methods.registry import method
    from fcl.saved_model import holds_model
    check_device(cfg)
    args.export_to = export_targets(args.export_to, args.out)
    if args.out is not None:
        check_output("--out", args.out, "folder", RUN_OUTPUT_BYTES)
    if args.save_model is None:
        return
    if not method(cfg.model.adapter).whole_model:     # FedWeIT: a model per client
        raise ConfigError("--save-model", args.save_model, f"model.adapter={cfg.model.adapter} "
                          "keeps a model per client, not one to save", "a run of another adapter")
    check_output("--save-model", args.save_model, "folder",
                 4 * params_report(cfg)["total_params"] + RUN_OUTPUT_BYTES)
    if holds_model(args.save_model):      # another run's model is not replaced unasked
        raise ConfigError("--save-model", args.save_model, "already holds a saved model",
                          "a new folder, or remove its model.pt and model.json first")


def summary_line(s) -> str:
    """The run's last line: ACC, BWT_f (both readings), drift, bytes and speed."""
    return (f"ACC {s.acc:.2f}%  BWT_f {s.bwt_f:+.2f}  (literal Eq. 10: "
            f"{s.bwt_f_literal:+.2f})  drift {s.drift_mean:.3g}  "
            f"up {s.bytes_up / 1e6:.2f} MB  down {s.bytes_down / 1e6:.2f} MB  "
            f"(TCC {s.tcc_bytes / 1e6:.2f} MB, {s.compression_ratio:.2f}x less than "
            f"full-model FedAvg)  {s.rounds} rounds in {s.wall_s:.1f} s "
            f"({s.samples_per_s:.0f} samples/s)")


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


def _add_params(p: argparse.ArgumentParser) -> None:
    add_config_arguments(p)
    p.add_argument("--json", action="store_true", help="print the numbers as one JSON object")


def main_params(args) -> int:
    from fcl.communication import format_report, params_report

    cfg = config_from_args(args)
    report = params_report(cfg)
    print(json.dumps(report) if args.json else format_report(report, cfg))
    return 0


def _add_pretrain(p: argparse.ArgumentParser) -> None:
    from fcl import pretrain
    pretrain.add_arguments(p)


def main_pretrain(args) -> int:
    from fcl import pretrain
    return pretrain.main(args)


def _add_export(p: argparse.ArgumentParser) -> None:
    from fcl.tracker_export import TARGETS
    p.add_argument("folders", nargs="+", metavar="FOLDER",
                   help="a results folder (its nested study folders too) or a study folder")
    p.add_argument("--to", required=True, choices=tuple(TARGETS),
                   help="tensorboard: event files; mlflow: a tracking store; optuna: an Optuna "
                        "storage for optuna-dashboard")
    p.add_argument("--dest", required=True, metavar="DEST",
                   help="tensorboard: a folder; mlflow: a tracking URI, or a path (an SQLite "
                        "store there); optuna: a storage URL (sqlite:///x.db, journal://x)")


def main_export(args) -> int:
    from fcl.tracker_export import export
    studies, runs, view = export(args.folders, args.to, args.dest)
    for study in studies:
        print(f"{study.name}: {len(study.trials)} trials")
    count = f"{len(studies)} stud{'y' if len(studies) == 1 else 'ies'}"
    print(f"wrote {runs} runs of {count} to {args.dest}; view them with: {view}")
    return 0


def _add_ls(p: argparse.ArgumentParser) -> None:
    p.add_argument("folders", nargs="*", metavar="FOLDER",
                   help="results folders or study folders (default: every results* folder "
                        "in the current folder); nested study folders are listed too")


def main_ls(args) -> int:
    from fcl.study_folders import list_studies, results_folders, table
    folders = args.folders or results_folders()
    missing = [f for f in folders if not os.path.isdir(f)]
    if missing:
        raise ConfigError("FOLDER", missing[0], "no such folder", "a results folder or a study "
                          "folder")
    rows = list_studies(folders)
    print(table(rows) if rows else f"no stored study in {', '.join(folders) or 'this folder'}")
    return 0 if all(r.status == "whole" for r in rows) else 1


def help_preset(argv: list[str]) -> str | None:
    """The preset whose values `fcl run --help` shows as defaults: `--preset P` anywhere on the
    line, else `fcl run`'s own default (local); None (the bare config) for other commands or an
    unknown preset (argparse reports that one)."""
    name = None
    for i, arg in enumerate(argv):
        if arg == "--preset" and i + 1 < len(argv):
            name = argv[i + 1]
        elif arg.startswith("--preset="):
            name = arg.split("=", 1)[1]
    if name is None and argv[:1] == ["run"]:
        name = "local"
    return name if name in PRESETS else None


def keys_epilog(preset_name: str | None) -> str:
    if preset_name is None:
        return "config keys (--set KEY=VALUE):\n" + describe_keys()
    lines = [f"config keys (--set KEY=VALUE); defaults: preset {preset_name}'s values:"]
    for key, value, meta, typ in iter_fields(preset(preset_name)):
        allowed = meta.get("allowed") or ("true/false" if typ is bool else typ.__name__)
        lines.append(f"  {key:<30} default {value!r:<24} allowed: {allowed}\n"
                     f"  {'':<30} {meta.get('help', '')}")
    return "\n".join(lines)


# name -> (add_arguments(parser), main(args) -> exit code, one-line help)
COMMANDS: dict[str, tuple[Callable, Callable, str]] = {
    "run": (_add_run, main_run, "one whole FCL run on the bundled data set (or any data.name)"),
    "bench": (_add_bench, main_bench, "samples/s of whole runs vs a bare loop doing the same "
              "work: workloads x compute modes (fp32, bf16, channels_last, batched clients)"),
    "params": (_add_params, main_params, "parameters (total / trainable / communicated) and "
               "bytes per message on each link, at 32/8/4/2 bits, vs full-model FedAvg; loads "
               "no data"),
    "pretrain": (_add_pretrain, main_pretrain,
                 "train a backbone on a data set and save it for model.weights=PATH"),
    "ls": (_add_ls, main_ls, "the stored studies, nested ones too: date, commit, trials, "
           "seeds, and whether each is whole (its files match study.json)"),
    "export": (_add_export, main_export, "stored studies into TensorBoard, MLflow or Optuna "
               "(offline; every trial with its settings, summary and per-round history)"),
}
NO_KEYS = ("export", "ls")          # commands that take no config keys: no key list in their help


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="fcl", description="Federated continual learning runs (FCL paper, FLoCoRA).")
    parser.add_argument("--version", action="version", version=f"fcl {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    shown = help_preset(list(argv or [])) if argv and ("-h" in argv or "--help" in argv) \
        else None
    for name, (add_arguments, _, help_) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_,
                           formatter_class=argparse.RawDescriptionHelpFormatter,
                           epilog=None if name in NO_KEYS else
                           keys_epilog(shown if argv and argv[0] == name else None))
        add_arguments(p)
    for name, help_ in {**ANALYSIS, "study": STUDY_HELP}.items():   # `main` runs them first
        sub.add_parser(name, help=help_, add_help=False)
    return parser


def asks_version(argv: list[str]) -> bool:
    """Whether argparse would answer `--version` (or an abbreviation such as `--vers`): it comes
    before the command and before any -h/--help."""
    for arg in argv:
        if arg == "-h" or (len(arg) > 2 and "--help".startswith(arg)):
            return False
        if len(arg) > 2 and "--version".startswith(arg):
            return True
        if arg == "--" or not arg.startswith("-"):      # the command: its own flags follow
            return False
    return False


def check_config_early(argv: list[str]) -> None:
    """`--preset` and `--set` of a command that takes them, checked before the parser (whose
    commands import torch, about 2 s) is built: a typo is refused at once. Everything else, and
    every error this does not raise, is the full parser's."""
    if not argv or argv[0] not in ("run", "params") or "-h" in argv or "--help" in argv:
        return
    early = QuietParser(add_help=False)
    add_config_arguments(early)
    try:
        known, _ = early.parse_known_args(argv[1:])
    except QuietParser.Refused:          # argparse's own complaint: the full parser says it
        return
    config_from_args(known)


class QuietParser(argparse.ArgumentParser):
    """A parser whose complaints are raised, not printed: the full parser prints them."""

    class Refused(Exception):
        pass

    def error(self, message):
        raise QuietParser.Refused(message)


# `fcl NAME ...` is `python -m analysis NAME ...` (the analysis package installs with fcl)
STUDY_HELP = "one of the studies fcl ships, with a study script's flags (fcl study: the list)"
ANALYSIS = {"figures": "the papers' figures and tables from stored studies",
            "claims": "each paper claim judged on the stored studies (--out .md or .csv)",
            "dashboard": "one offline HTML page comparing the stored studies' settings",
            "paired": "same-seed paired differences of a study's settings from a reference",
            "provenance": "every commit a stored study or table cites, checked against git",
            "seeds-simulation": "the seed rule replayed on the stored 10-seed studies",
            "report": "one offline Markdown page over stored studies: each with its provenance "
                      "and best setting, the figures, the claims"}


def analysis_command(argv: list[str]) -> int:
    import importlib

    from analysis.__main__ import COMMANDS as MODULES
    return importlib.import_module(MODULES[argv[0]]).main(argv[1:], prog=f"fcl {argv[0]}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if asks_version(argv):          # no parser: building it imports torch (~2 s)
        print(f"fcl {__version__}")
        return 0
    if argv and argv[0] in ANALYSIS:     # its own parser, flags and --help
        return analysis_command(argv)
    if argv and argv[0] == "study":      # the study's own parser, as its script has
        from fcl.study_command import study_command
        return study_command(argv[1:])
    try:
        check_config_early(argv)
    except ConfigError as e:
        print(f"error: {one_line(str(e))}", file=sys.stderr)
        return EXIT_USAGE
    from fcl.data.datasets import DataError
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command][1](args)
    except (ConfigError, DataError) as e:
        print(f"error: {one_line(str(e))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
