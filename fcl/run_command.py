"""`fcl run`: one whole FCL run from the command line, with its progress lines, its summary
(or one JSON object), and its files (`--out`, `--save-model`, `--export-to`). Imports torch only
when it runs."""
from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time

from fcl.cli_args import (EXIT_WRITE_FAILED, add_config_arguments, check_device, check_output,
                          config_from_args, write_failed)
from fcl.clock import clock
from fcl.config import ConfigError


def _add_run(p: argparse.ArgumentParser) -> None:
    add_config_arguments(p)
    p.add_argument("--json", action="store_true",
                   help="print one JSON object with the summary on stdout (progress to stderr)")
    p.add_argument("--out", metavar="DIR", help="write trials/rounds/tasks Parquet files to DIR "
                                                "(their columns: docs/results.md)")
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
