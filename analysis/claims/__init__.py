"""The papers' claims, each as same-seed comparisons in a stored study, judged on every results
folder given side by side (the random frozen backbone's `results/`, the pretrained one's
`results-pretrained/`):

    python -m analysis claims --results results results-pretrained results-pretrained/tau_0.001

The claims are data: `analysis/claims/fcl_paper.py` (the FCL paper) and
`analysis/claims/flocora.py` (FLoCoRA), each a `Claim` naming its study, the settings it fixes
and its comparisons, or an `Untested` claim with the study that would test it. A comparison is
`a - b` of one per-trial value over the seeds both settings ran (the pairing of
`analysis/paired.py`: a seed fixes the partition and the initialisation of every setting alike),
with its 95% t-interval, claimed above or below a bound (0: a direction; -2: "loses less than 2
points"). Where a claim's setting is chosen from the study's own values (`Claim.match`: FLoCoRA's
Table IV pairs each pruning and ZeroFL row with the LoRA bit width whose total bytes are the
closest to its own without exceeding them), its comparisons are built from the stored trials.
A claim *holds* in a folder where every one of its comparisons has its interval on the
claimed side, *does not hold* where one has it on the other side, and is *not resolved*
otherwise (an interval that contains the bound, or a comparison it did not run). It is *not
tested* where the folder does not store its study ("not run"), where the study holds none of its
settings (another data set, say), or where no study can test it.

Values: `acc`, `bwt_f` (the seen-tasks reading: negative = a drop), `drift_mean` (the trial's
mean client drift), `drift_peak` read from the trial's rounds (the largest cosine distance of
the heads between consecutive rounds, `cos_head` as in Fig. 3b / 4b, after the first phase:
every order starts with the fresh modules moving fast; the claims are about the spikes that
come later), and the forgetting measures of `analysis/forgetting.py` read from its tasks:
`mean_drop` (a task's mean loss across a phase boundary, gains counted as 0, in points),
`drop_share` (percent of boundary terms losing more than 5 points) and `forgetting`
(best-minus-final). A claim about drops ("drops less", "shrink", "reduces the drops") is judged
on `mean_drop`, never on BWT_f, which counts gains against drops; a claim about BWT_f keeps
BWT_f. Where the setting claimed to drop more has no boundary term dropping more than 5 points
in any seed, a drop claim is *not testable in this regime*. Drift is printed in units of
1e-3. Each cell: every comparison as `mean ± 95% half-width (seeds)`, then the
verdict. The last row counts the verdicts per folder.
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from analysis.claims import fcl_paper, flocora
from analysis.claims.judging import (FAILS, HOLDS, NOT_TESTABLE, OPEN, UNTESTED, VERDICTS,
                                     Claim, Comparison, Untested, cell_text, compare,
                                     drops_seen, verdict, with_round_values)
from analysis.output_paths import first_path_problem
from analysis.study_tables import MissingStudy, SchemaError, load_study
from fcl.cli_args import EXIT_USAGE

CLAIMS: tuple[Claim, ...] = (*fcl_paper.CLAIMS, *flocora.CLAIMS)
UNTESTED_CLAIMS: tuple[Untested, ...] = (*fcl_paper.UNTESTED, *flocora.UNTESTED)
ROWS = len(CLAIMS) + len(UNTESTED_CLAIMS)

__all__ = ["CLAIMS", "UNTESTED_CLAIMS", "Claim", "Comparison", "Untested", "HOLDS", "FAILS",
           "OPEN", "NOT_TESTABLE", "UNTESTED", "compare", "verdict", "judge", "table", "main"]


def judge(claim: Claim, folder: Path, cache: dict) -> tuple[str, str]:
    """The claim's cell for one results folder (each comparison, then the verdict), and the
    verdict."""
    key = (folder, claim.study)
    if key not in cache:
        try:
            cache[key] = with_round_values(load_study(folder, claim.study))
        except MissingStudy:
            cache[key] = None
    trials = cache[key]
    if trials is None:
        return f"not run: **{UNTESTED}**", UNTESTED
    comparisons = claim.on(trials)
    results = [compare(trials, claim.fixed, comp) for comp in comparisons]
    testable = all(drops_seen(trials, claim.fixed, comp) for comp in comparisons)
    judged = verdict(results, list(comparisons), testable)
    context = [compare(trials, claim.fixed, comp) for comp in claim.context]
    return cell_text(claim, results, judged, comparisons, context), judged


def _counts(counter: Counter) -> str:
    return " · ".join(f"{v} {counter[v]}" for v in VERDICTS)


def table(folders: list[Path]) -> str:
    """The Markdown table: one row per claim (the untested ones last), one column per folder,
    and a last row counting the verdicts per folder."""
    cache: dict = {}
    counts = [Counter() for _ in folders]
    head = "| claim | study | paper | " + " | ".join(f"`{f}`" for f in folders) + " |"
    lines = [head, "|" + "---|" * (3 + len(folders))]
    for claim in CLAIMS:
        judged = [judge(claim, f, cache) for f in folders]
        for count, (_, v) in zip(counts, judged):
            count[v] += 1
        study = f"`{claim.study}`" + (f" {claim.runs_on}" if claim.runs_on else "")
        lines.append(f"| {claim.name} | {study} | {claim.says} | "
                     + " | ".join(cell for cell, _ in judged) + " |")
    for claim in UNTESTED_CLAIMS:
        for count in counts:
            count[UNTESTED] += 1
        lines.append(f"| {claim.name} | {claim.would} | {claim.says} | "
                     + " | ".join(f"**{UNTESTED}**" for _ in folders) + " |")
    lines.append("| **verdicts** | | | " + " | ".join(_counts(c) for c in counts) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None, prog: str = "python -m analysis claims") -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("--results", type=Path, nargs="+", default=[Path("results")],
                   help="results folders, one column each (default: results/)")
    args = p.parse_args(argv)
    long = first_path_problem(args.results, "--results")      # is_dir() raises on it
    if long:
        print(f"error: {long}", file=sys.stderr)
        return EXIT_USAGE
    bad = next((r for r in args.results if not r.is_dir()), None)
    if bad is not None:
        print(f"error: --results={bad}: not a folder", file=sys.stderr)
        return EXIT_USAGE
    from analysis.figures.catalog import no_study
    empty = no_study(args.results)        # every claim "no study" and exit 0 read as a pass
    if empty:
        print(f"error: {empty}", file=sys.stderr)
        return EXIT_USAGE
    try:
        print(table(args.results))
    except SchemaError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    return 0
