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
verdict. The last row counts the verdicts per folder. A study whose trials of one seed ran on
several kinds of machine is named on stderr (`analysis/machine_mix.py`).
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

from analysis.claims import fcl_paper, flocora
from analysis.claims.judging import (FAILS, HOLDS, NOT_TESTABLE, OPEN, UNTESTED, VERDICTS,
                                     Claim, Comparison, Untested, cell_text, compare,
                                     drops_seen, verdict, with_round_values)
from analysis.machine_mix import note
from analysis.output_paths import first_path_problem
from analysis.seed_stats import t975
from analysis.study_tables import MissingStudy, SchemaError, load_study
from fcl.cli_args import EXIT_USAGE
from fcl.sequential import SeedRule, t_quantile

CLAIMS: tuple[Claim, ...] = (*fcl_paper.CLAIMS, *flocora.CLAIMS)
UNTESTED_CLAIMS: tuple[Untested, ...] = (*fcl_paper.UNTESTED, *flocora.UNTESTED)
ROWS = len(CLAIMS) + len(UNTESTED_CLAIMS)

__all__ = ["CLAIMS", "UNTESTED_CLAIMS", "Claim", "Comparison", "Untested", "HOLDS", "FAILS",
           "OPEN", "NOT_TESTABLE", "UNTESTED", "compare", "verdict", "judge", "rule_verdict",
           "table", "main"]


def judge(claim: Claim, folder: Path, cache: dict) -> tuple[str, str]:
    """The claim's cell for one results folder (each comparison, then the verdict), and the
    verdict."""
    key = (folder, claim.study)
    if key not in cache:
        try:
            loaded = load_study(folder, claim.study)
            cache[key] = with_round_values(loaded), loaded.manifest.seeds_auto
            mixed = note(f"{folder}/{claim.study}", loaded.trials)
            if mixed:
                print(mixed, file=sys.stderr)
        except MissingStudy:
            cache[key] = None, None
    trials, seeds_auto = cache[key]
    if trials is None:
        return f"not run: **{UNTESTED}**", UNTESTED
    comparisons = claim.on(trials)
    results = [compare(trials, claim.fixed, comp) for comp in comparisons]
    testable = all(drops_seen(trials, claim.fixed, comp) for comp in comparisons)
    judged = verdict(results, list(comparisons), testable)
    context = [compare(trials, claim.fixed, comp) for comp in claim.context]
    said = ""
    if seeds_auto and testable and judged != UNTESTED:
        judged, said = rule_verdict(seeds_auto, claim, comparisons)
        results = [rule_interval(trials, claim, comp, seeds_auto) or r
                   for comp, r in zip(comparisons, results)]
    cell = cell_text(claim, results, judged, comparisons, context)
    return cell + (f" [seed rule, each interval at the level of the look that decided it: "
                   f"{said}]" if said else ""), judged


def rule_interval(trials, claim: Claim, comp: Comparison, seeds_auto: dict
                  ) -> tuple[float, float, int] | None:
    """A comparison of a `--seeds auto` study as its rule last judged it: over its first n
    seeds (n as recorded), the t-interval at that look's level, not 95%; None where the record
    does not name it."""
    said = {c["label"]: c["seeds"] for c in seeds_auto.get("comparisons", [])}
    n = said.get(f"{claim.name}: {comp.label}")
    rule = SeedRule(most=seeds_auto["most"], first=seeds_auto["first"], step=seeds_auto["step"])
    levels = seeds_auto.get("levels", [])
    if not n or n not in rule.looks or len(levels) != len(rule.looks):
        return None
    seeds = sorted(trials["seed"].unique())[:n]
    mean, half, pairs = compare(trials[trials["seed"].isin(seeds)], claim.fixed, comp)
    if pairs < 2:
        return None
    level = levels[rule.looks.index(n)]
    return mean, half * t_quantile(1 - level / 2, pairs - 1) / t975(pairs - 1), pairs


def rule_verdict(seeds_auto: dict, claim: Claim, comparisons) -> tuple[str, str]:
    """A study run with `--seeds auto` is judged by its rule's verdicts (`study.json`'s
    `seeds_auto`): a fixed-n interval over seeds chosen by peeking is not a 95% interval. HOLDS
    where every comparison resolved on its claimed side, FAILS where one resolved on the
    other, OPEN otherwise; with what the rule said of each."""
    said = {c["label"]: c["verdict"] for c in seeds_auto.get("comparisons", [])}
    texts = [said.get(f"{claim.name}: {comp.label}", "not judged") for comp in comparisons]
    if any("below its bound" in t for t in texts):
        judged = FAILS
    elif all("above its bound" in t for t in texts):
        judged = HOLDS
    else:
        judged = OPEN
    return judged, "; ".join(texts)


def _counts(counter: Counter) -> str:
    return " · ".join(f"{v} {counter[v]}" for v in VERDICTS)


def judged_rows(folders: list[Path]) -> list[dict]:
    """One row per claim and folder (the untested claims last): claim, study, paper, folder,
    cell (each comparison, then the verdict) and verdict. The table, the CSV and the brief
    listing are all made from these."""
    cache: dict = {}
    rows = []
    for claim in CLAIMS:
        for folder in folders:
            cell, verdict_ = judge(claim, folder, cache)
            rows.append({"claim": claim.name, "study": claim.study, "runs_on": claim.runs_on,
                         "paper": claim.says, "folder": str(folder), "cell": cell,
                         "verdict": verdict_})
    for claim in UNTESTED_CLAIMS:     # `would`: the study that would test it, as prose
        for folder in folders:
            rows.append({"claim": claim.name, "study": "", "runs_on": claim.would,
                         "paper": claim.says, "folder": str(folder),
                         "cell": f"**{UNTESTED}**", "verdict": UNTESTED})
    return rows


def table(folders: list[Path], rows: list[dict] | None = None) -> str:
    """The Markdown table: one row per claim (the untested ones last), one column per folder,
    and a last row counting the verdicts per folder."""
    rows = judged_rows(folders) if rows is None else rows
    head = "| claim | study | paper | " + " | ".join(f"`{f}`" for f in folders) + " |"
    lines = [head, "|" + "---|" * (3 + len(folders))]
    for i in range(0, len(rows), len(folders)):
        group = rows[i:i + len(folders)]
        first = group[0]
        study = " ".join(w for w in (f"`{first['study']}`" if first["study"] else "",
                                     first["runs_on"]) if w)
        lines.append(f"| {first['claim']} | {study} | {first['paper']} | "
                     + " | ".join(r["cell"] for r in group) + " |")
    counts = [Counter(r["verdict"] for r in rows if r["folder"] == str(f)) for f in folders]
    lines.append("| **verdicts** | | | " + " | ".join(_counts(c) for c in counts) + " |")
    return "\n".join(lines)


def brief(folders: list[Path], rows: list[dict]) -> str:
    """For a terminal: per claim one line, its verdict in each folder (`--brief`)."""
    width = max(len(r["claim"]) for r in rows)
    lines = [" " * width + "  " + " | ".join(str(f) for f in folders)]
    for i in range(0, len(rows), len(folders)):
        group = rows[i:i + len(folders)]
        lines.append(f"{group[0]['claim']:<{width}}  " + " | ".join(r["verdict"]
                                                                  for r in group))
    return "\n".join(lines)


def write_out(path: Path, folders: list[Path], rows: list[dict]) -> None:
    """`--out`: Markdown (.md, the table) or CSV (.csv, one row per claim and folder), written
    to a temporary file and renamed, so a failed write leaves nothing half-written."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        if path.suffix == ".csv":
            import pandas as pd
            pd.DataFrame(rows).to_csv(tmp, index=False)
        else:
            tmp.write_text(table(folders, rows) + "\n")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def main(argv: list[str] | None = None, prog: str = "python -m analysis claims") -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("--results", type=Path, nargs="+", default=[Path("results")],
                   help="results folders, one column each (default: results/)")
    p.add_argument("--out", type=Path, help="write the table to FILE instead: .md (Markdown) or "
                                            ".csv (one row per claim and folder)")
    p.add_argument("--brief", action="store_true",
                   help="print one line per claim with its verdict per folder (for a terminal)")
    args = p.parse_args(argv)
    if args.out is not None and args.out.suffix not in (".md", ".csv"):
        print(f"error: --out={args.out}: unknown format; allowed: a .md or .csv file",
              file=sys.stderr)
        return EXIT_USAGE
    if args.out is not None and not args.out.parent.is_dir():
        print(f"error: --out={args.out}: its folder does not exist; allowed: a file in an "
              f"existing folder", file=sys.stderr)
        return EXIT_USAGE
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
        rows = judged_rows(args.results)
    except SchemaError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    if args.out is not None:
        try:
            write_out(args.out, args.results, rows)
        except OSError as e:
            print(f"error: --out={args.out}: not written ({e.strerror or type(e).__name__})",
                  file=sys.stderr)
            return EXIT_USAGE
        print(f"wrote {args.out} ({len(rows) // len(args.results)} claims x "
              f"{len(args.results)} folders)")
    if args.brief:
        print(brief(args.results, rows))
    elif args.out is None:
        print(table(args.results, rows))
    return 0
