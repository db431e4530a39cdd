"""`python -m analysis COMMAND [its flags]`: one command line for the analysis (see the package
docstring); `python -m analysis COMMAND --help` for a command's flags."""
from __future__ import annotations

import importlib
import sys

from fcl.cli_args import EXIT_USAGE

# command -> the module whose `main(argv, prog)` runs it (imported only when chosen: the
# dashboard needs no matplotlib, the figures no plotly)
COMMANDS = {"figures": "analysis.figures.catalog", "dashboard": "analysis.dashboard.page",
            "paired": "analysis.paired", "claims": "analysis.claims",
            "flocora_table1": "analysis.flocora_table1", "provenance": "analysis.provenance",
            "seeds-simulation": "analysis.seeds_simulation", "report": "analysis.report"}
USAGE = f"usage: python -m analysis {{{','.join(COMMANDS)}}} [flags]   (COMMAND --help for each)"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE, file=sys.stderr if not argv else sys.stdout)
        return EXIT_USAGE if not argv else 0
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"error: {command}: not a command; allowed: {', '.join(COMMANDS)}",
              file=sys.stderr)
        return EXIT_USAGE
    module = importlib.import_module(COMMANDS[command])
    return module.main(rest, prog=f"python -m analysis {command}")


if __name__ == "__main__":
    sys.exit(main())
