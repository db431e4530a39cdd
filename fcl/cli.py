"""Command line: `fcl run` (`fcl.run_command`), `fcl bench` (`fcl.bench_command`), `fcl params`,
`fcl pretrain`, `fcl ls`, `fcl export` (the table `COMMANDS`), and the analysis's commands
(`ANALYSIS`: `fcl claims` is `python -m analysis claims`).

Bad input (an unknown key, a wrong type, an out-of-range value, a missing data set) prints one
line `error: <key>=<value>: <why>; allowed: ...` and exits with code 2, no traceback.

The module imports neither torch nor Ray: each command imports what it needs when it runs,
`fcl --version` answers before the parser is built, and the parser builds the arguments of the
command on the line only (`fcl run`'s and `fcl bench`'s import torch): `fcl ls` and `fcl --help`
load no torch.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Callable

from fcl import __version__
from fcl.cli_args import EXIT_USAGE, OneLineParser, add_config_arguments, config_from_args
from fcl.config import ConfigError, describe_keys, iter_fields, one_line
from fcl.data.errors import DataError
from fcl.bench_command import _add_bench, main_bench
from fcl.presets import PRESETS, preset
from fcl.run_command import _add_run, main_run


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
    named = command_named(argv or [])
    for name, (add_arguments, _, help_) in COMMANDS.items():
        if name != named:        # listed only: building a command's arguments can import torch
            sub.add_parser(name, help=help_, description=help_)
            continue
        p = sub.add_parser(name, help=help_, description=help_,
                           formatter_class=argparse.RawDescriptionHelpFormatter,
                           epilog=None if name in NO_KEYS else keys_epilog(shown))
        add_arguments(p)
    for name, help_ in {**ANALYSIS, "study": STUDY_HELP}.items():   # `main` runs them first
        sub.add_parser(name, help=help_, add_help=False)
    return parser


def command_named(argv: list[str]) -> str | None:
    """The command on the line: its first word that is not a flag (the top-level flags take no
    value), or None."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


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
