"""`fcl study NAME [flags]`: one of the studies fcl ships (`fcl.studies`), with the flags of a
study script (`fcl study NAME --help`); `fcl study` alone lists them with their first line."""
from __future__ import annotations

import sys

from fcl.cli_args import EXIT_USAGE
from fcl.config import did_you_mean


def listing(studies: dict) -> str:
    width = max(map(len, studies))
    lines = ["fcl study NAME [flags]: the studies (fcl study NAME --help: a study's flags)"]
    lines += [f"  {name:<{width}}  {(study.doc or '').strip().splitlines()[0]}"
              for name, study in studies.items()]
    return "\n".join(lines)


def study_command(argv: list[str]) -> int:
    """Run the study `argv[0]` with the flags after it: the process ends with it, with a study
    script's exit code (`fcl.tune.main`); the list, or one line for an unknown name, returns."""
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
