"""What every command line shares: `--preset P --set KEY=VALUE ...` into a `RunConfig`, and the
exit code of bad input (one line `error: ...`, exit 2)."""
from __future__ import annotations

import argparse

from fcl.config import ConfigError, RunConfig
from fcl.presets import PRESETS, preset

EXIT_USAGE = 2


def parse_sets(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(pair, "", "not of the form key=value",
                              "key=value, e.g. server.lr=0.5")
        out[key.strip()] = value.strip()
    return out


def add_config_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--preset", default="local", choices=sorted(PRESETS),
                   help="starting point (default: local)")
    p.add_argument("--set", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="override config keys (see the list below)")


def config_from_args(args: argparse.Namespace) -> RunConfig:
    return preset(args.preset, parse_sets(args.set))
