"""Every study, one after another, at one preset: the stored results in one command.

    python studies/run_all.py --preset cifar10-local            # 2 CPU cores: hours
    python studies/run_all.py --preset cifar10-gpu --cpus-per-trial 2 --gpus-per-trial 0.125
    bash studies/gpu/run.sh        # the same on a GPU machine without Ray (studies/gpu/bundle.sh)
    python studies/run_all.py --preset smoke --only ablation_lr optimizers

Every other flag goes to each study as it would on its own command line (`--results`,
`--seeds`, `--fresh`, `--resume`, `--set ...`); the search runs with `--scheduler asha`.
Studies run in the order below; one that fails (exit 1: a trial failed or did not finish)
is reported and the next one starts, and the last line names every study that failed. A
refused command line (exit 2: a bad flag or value, or state left without `--resume` /
`--fresh`) stops the lot, since every later study gets the same flags. The exit code is the
worst of theirs.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))        # this clone's fcl before an installed one
from fcl.studies import STUDIES  # noqa: E402  (the order below is theirs)

EXTRA = {"search": ["--scheduler", "asha"]}     # a search is the one study ASHA may stop early


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="studies/run_all.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=list(STUDIES), default=list(STUDIES),
                        help="these studies (default: all, in the order above)")
    args, rest = parser.parse_known_args(argv)
    from fcl.cli_args import EXIT_USAGE
    from fcl.tune import run_study_cli
    worst, failed = 0, []
    for name in args.only:
        study = STUDIES[name]
        print(f"== {name}", flush=True)
        code = run_study_cli(study, [*rest, *EXTRA.get(name, [])])
        print(f"== {name}: exit {code}", flush=True)
        worst = max(worst, code)
        if code:
            failed.append(f"{name} (exit {code})")
        if code == EXIT_USAGE:
            later = args.only[args.only.index(name) + 1:]
            if later:
                print(f"run_all: stopped at {name}: not started: {' '.join(later)}",
                      file=sys.stderr)
            break
    if failed:
        print(f"run_all: {len(failed)} of {len(args.only)} studies failed: {', '.join(failed)}",
              file=sys.stderr)
    return worst


if __name__ == "__main__":
    sys.exit(main())
