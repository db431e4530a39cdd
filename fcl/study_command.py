"""`fcl study NAME [flags]`: one of the studies fcl ships (`fcl.studies`), with the flags of a
study script (`fcl study NAME --help`); `fcl study` alone lists them with their first line."""
from __future__ import annotations

import argparse
import sys

from fcl.cli_args import EXIT_USAGE, parse_sets
from fcl.config import (ConfigError, RunConfig, check_value, did_you_mean, iter_fields, one_line,
                        parsed_values)


def listing(studies: dict) -> str:
    width = max(map(len, studies))
    lines = ["fcl study NAME [flags]: the studies (fcl study NAME --help: a study's flags)"]
    lines += [f"  {name:<{width}}  {(study.doc or '').strip().splitlines()[0]}"
              for name, study in studies.items()]
    return "\n".join(lines)


def bad_set(flags: list[str]) -> str | None:
    """A study's `--set` checked key by key against the config (known key, a value of its
    type), in a fraction of a second: the study's own checks, of the whole config, come after
    it has imported torch and Ray. None when each pair passes (or there is none)."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--set", nargs="+", action="extend", default=[])
    sets = p.parse_known_args(flags)[0].set
    metas = {key: meta for key, _, meta, _ in iter_fields(RunConfig())}
    try:
        for key, value in parsed_values(RunConfig(), parse_sets(sets)).items():
            check_value(key, value, metas[key])
    except ConfigError as e:
        return one_line(str(e))
    return None


def study_command(argv: list[str]) -> int:
    """Run the study `argv[0]` with the flags after it: the process ends with it, with a study
    script's exit code (`fcl.tune.main`); the list, or one line for an unknown name, returns."""
    if argv and argv[0] not in ("-h", "--help") and (bad := bad_set(argv[1:])) is not None:
        print(f"error: {bad}", file=sys.stderr)      # before the studies import torch and Ray
        return EXIT_USAGE
    from fcl.studies import STUDIES
    if not argv or argv[0] in ("-h", "--help"):
        print(listing(STUDIES))
        return 0
    name, rest = argv[0], argv[1:]
    if name not in STUDIES:
        print(f"error: study={name}: unknown study; allowed: {did_you_mean(name, STUDIES)}"
              f"{', '.join(STUDIES)}", file=sys.stderr)
        return EXIT_USAGE
    from fcl.tune import main
    main(STUDIES[name], rest, command=("fcl", "study", name))
    return 0    # not reached: main ends the process
