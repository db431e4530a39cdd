"""The seed rule (`fcl.sequential`) replayed on the stored 10-seed studies: what it would
have spent and decided, against the fixed 10 seeds that were run.

    python -m analysis seeds-simulation --results results-pretrained results-pretrained/tau_0.001
    python -m analysis seeds-simulation --draws 400 --first 5 --step 1 --spending obrien_fleming

The comparisons are the papers' claims on each study (`analysis.claims`: same-seed paired
differences, each against its bound); a study is replayed where every setting a comparison
reads ran the rule's most seeds. A draw is a random order of the stored seeds, the same for
every setting (the pairing is by seed): the rule runs its first looks on the first seeds of that
order, adds seeds to the settings of the comparisons still open, and ends at its most. Per
study it reports:

- trial-minutes: the stored wall time of the trials the rule would have run, as a share of the
  fixed seeds' (all the study's settings, and the settings the comparisons read);
- agreement: the share of draws in which every comparison's verdict (above, below, open) is the
  fixed seeds' 95% t verdict, and the share of comparisons that agree over all draws; of those
  that do not, the share left open where the fixed seeds resolve it, and the share resolved on
  the side opposite to the fixed seeds' (the rest: resolved where the fixed seeds leave it open);
- false resolutions (A/A): each comparison's paired differences centred on their mean and given
  random signs (no true difference, the stored spread), replayed by the rule and by a naive
  fixed-n 95% interval at every look; the share of such null comparisons resolved.
"""
from __future__ import annotations

import argparse
import math
import random
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from analysis.claims import CLAIMS
from analysis.figures.files import markdown_table
from analysis.output_paths import first_path_problem
from analysis.seed_comparisons import claim_pairs
from analysis.study_tables import MissingStudy, SchemaError, load_study
from fcl.cli_args import EXIT_USAGE
from fcl.sequential import BOUNDARIES, FUTILE, OPEN, SPENDING, SeedRule, judge


@dataclass(frozen=True)
class Stored:
    """One comparison as stored: its settings' names and per-seed values."""
    label: str
    a: str                      # the settings, by their trial ids (keys of `Replay.minutes`)
    b: str
    diffs: dict[int, float]     # seed -> (a - b) - bound, signed as claimed


@dataclass(frozen=True)
class Replay:
    """A study's comparisons and the wall minutes of every setting's trial at every seed."""
    folder: str
    study: str
    comparisons: tuple[Stored, ...]
    minutes: dict[str, dict[int, float]]      # setting -> seed -> trial minutes
    seeds: tuple[int, ...]


def replays(folder: Path, most: int) -> list[Replay]:
    """Every study in `folder` that a claim reads and whose compared settings ran `most`
    seeds (or more)."""
    out = []
    for study in dict.fromkeys(c.study for c in CLAIMS):
        try:
            loaded = load_study(folder, study)
        except MissingStudy:
            continue
        comps, settings = [], {}
        for pair in claim_pairs(loaded):
            if len(pair.diffs) < most:
                continue
            # a setting is its trials (two claims may name it by other keys)
            names = [",".join(side) for side in (pair.a, pair.b)]
            for name, side in zip(names, (pair.a, pair.b)):
                rows = loaded.trials[loaded.trials["trial_id"].isin(side)]
                settings[name] = (rows.set_index("seed")["wall_s"] / 60).to_dict()
            comps.append(Stored(pair.label, *names, pair.diffs))
        if comps:
            seeds = sorted(set.intersection(*(set(c.diffs) for c in comps)))
            out.append(Replay(str(folder), study, tuple(comps), settings, tuple(seeds)))
    return out


def fixed_verdicts(replay: Replay, seeds: list[int]) -> list[str]:
    return [judge([c.diffs[s] for s in seeds], 0.05)[0] for c in replay.comparisons]


def run_rule(comparisons: list[dict[int, float]], order: list[int], looks: tuple[int, ...],
             levels: tuple[float, ...], rule: SeedRule | None = None
             ) -> tuple[list[str], list[int]]:
    """Each comparison's verdict and the seeds (a count, along `order`) at which it stopped;
    with `rule`, its own verdicts (futility among them) at its looks instead of `levels`."""
    verdicts, stopped = [OPEN] * len(comparisons), [looks[-1]] * len(comparisons)
    running = [True] * len(comparisons)
    for k, (n, level) in enumerate(zip(looks, levels)):
        for i, diffs in enumerate(comparisons):
            if not running[i]:
                continue
            pairs = [diffs[s] for s in order[:n]]
            v = rule.verdict(pairs, k) if rule is not None else judge(pairs, level)[0]
            if v != OPEN:
                running[i], stopped[i] = False, n
                verdicts[i] = OPEN if v == FUTILE else v
    return verdicts, stopped


def spent_minutes(replay: Replay, stopped: list[int], order: list[int], first: int,
                  most: int, total_study_minutes: float) -> tuple[float, float, float]:
    """(rule minutes over the whole study, fixed minutes of the compared settings, rule minutes
    of the compared settings): a setting runs until its last comparison stops; a setting no
    comparison reads runs `first` seeds."""
    seeds_of = {}
    for comp, n in zip(replay.comparisons, stopped):
        for name in (comp.a, comp.b):
            seeds_of[name] = max(seeds_of.get(name, 0), n)
    compared_fixed = sum(replay.minutes[s][x] for s in seeds_of for x in order[:most])
    compared_rule = sum(replay.minutes[s][x] for s, n in seeds_of.items() for x in order[:n])
    others = total_study_minutes - compared_fixed
    return compared_rule + others * first / most, compared_fixed, compared_rule


def simulate(replay: Replay, rule: SeedRule, draws: int, seed: int,
             study_minutes: float) -> dict:
    rng = random.Random(seed)
    seeds = list(replay.seeds)
    fixed = fixed_verdicts(replay, seeds[:rule.most])
    agree_draws, agree_comps, spent, compared_fixed, compared_rule = 0, 0, 0.0, 0.0, 0.0
    false_rule, false_naive, nulls, opposite, fewer = 0, 0, 0, 0, 0
    naive = (0.05,) * len(rule.looks)
    for _ in range(draws):
        order = rng.sample(seeds, len(seeds))[:rule.most]
        diffs = [c.diffs for c in replay.comparisons]
        verdicts, stopped = run_rule(diffs, order, rule.looks, rule.levels, rule)
        same = [v == f for v, f in zip(verdicts, fixed)]
        agree_draws += all(same)
        agree_comps += sum(same)
        opposite += sum(OPEN not in (v, f) and v != f for v, f in zip(verdicts, fixed))
        fewer += sum(v == OPEN != f for v, f in zip(verdicts, fixed))
        total, cf, cr = spent_minutes(replay, stopped, order, rule.first, rule.most,
                                      study_minutes)
        spent, compared_fixed, compared_rule = spent + total, compared_fixed + cf, \
            compared_rule + cr
        # A/A: centred, random signs: no true difference, the stored spread
        null = []
        for d in diffs:
            mean = sum(d[s] for s in order) / len(order)
            null.append({s: (d[s] - mean) * rng.choice((-1, 1)) for s in order})
        false_rule += sum(v != OPEN for v in run_rule(null, order, rule.looks, rule.levels,
                                                      rule)[0])
        false_naive += sum(v != OPEN for v in run_rule(null, order, rule.looks, naive)[0])
        nulls += len(null)
    n = len(replay.comparisons)
    return {"folder": replay.folder, "study": replay.study, "comparisons": n,
            "open at 10": sum(f == OPEN for f in fixed),
            "minutes fixed": study_minutes, "minutes rule": spent / draws,
            "share": spent / draws / study_minutes,
            "share compared": compared_rule / compared_fixed,
            "draws agreeing": agree_draws / draws, "comparisons agreeing": agree_comps / (n * draws),
            "left open": fewer / (n * draws), "opposite": opposite / (n * draws),
            "false rule": false_rule / nulls, "false naive": false_naive / nulls}


def study_minutes(folder: str, study: str, most: int) -> float:
    trials = load_study(folder, study).trials
    return float(trials.loc[trials["seed"].isin(sorted(trials["seed"].unique())[:most]),
                            "wall_s"].sum() / 60)


def table(rows: list[dict]) -> str:
    header = ["study", "comparisons (open at 10)", "trial-minutes fixed", "rule", "share",
              "share of compared", "draws agreeing", "comparisons agreeing",
              "left open", "opposite side", "false resolutions: rule", "naive peeking"]
    body = [[f"{Path(r['folder']).as_posix()}/{r['study']}",
             f"{r['comparisons']} ({r['open at 10']})", f"{r['minutes fixed']:.1f}",
             f"{r['minutes rule']:.1f}", f"{100 * r['share']:.0f}%",
             f"{100 * r['share compared']:.0f}%", f"{100 * r['draws agreeing']:.0f}%",
             f"{100 * r['comparisons agreeing']:.1f}%", f"{100 * r['left open']:.1f}%",
             f"{100 * r['opposite']:.1f}%", f"{100 * r['false rule']:.1f}%",
             f"{100 * r['false naive']:.1f}%"] for r in rows]
    if rows:
        fixed = sum(r["minutes fixed"] for r in rows)
        rule = sum(r["minutes rule"] for r in rows)
        comps = sum(r["comparisons"] for r in rows)
        w = [r["comparisons"] / comps for r in rows]
        body.append(["all", f"{comps} ({sum(r['open at 10'] for r in rows)})", f"{fixed:.1f}",
                     f"{rule:.1f}", f"{100 * rule / fixed:.0f}%", "",
                     "", f"{100 * sum(x * r['comparisons agreeing'] for x, r in zip(w, rows)):.1f}%",
                     f"{100 * sum(x * r['left open'] for x, r in zip(w, rows)):.1f}%",
                     f"{100 * sum(x * r['opposite'] for x, r in zip(w, rows)):.1f}%",
                     f"{100 * sum(x * r['false rule'] for x, r in zip(w, rows)):.1f}%",
                     f"{100 * sum(x * r['false naive'] for x, r in zip(w, rows)):.1f}%"])
    return markdown_table(header, body)


def main(argv: list[str] | None = None,
         prog: str = "python -m analysis seeds-simulation") -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("--results", type=Path, nargs="+",
                   default=[Path("results-pretrained"), Path("results-pretrained/tau_0.001"),
                            Path("results")],
                   help="folders of stored studies (default: every 10-seed folder)")
    p.add_argument("--draws", type=int, default=200, help="seed orders per study")
    p.add_argument("--first", type=int, default=3)
    p.add_argument("--step", type=int, default=2)
    p.add_argument("--most", type=int, default=10)
    p.add_argument("--spending", choices=SPENDING, default="obrien_fleming")
    p.add_argument("--boundary", choices=BOUNDARIES, default="simulated",
                   help="each look's level: from the looks' simulated joint null distribution, "
                        "or the spent alpha itself (union bound)")
    p.add_argument("--futility", type=float, default=0.5,
                   help="stop an open comparison whose mean is under this share of the "
                        "half-width it would have at the most seeds (0: never; default 0.5)")
    p.add_argument("--seed", type=int, default=0, help="of the draws")
    args = p.parse_args(argv)
    problem = first_path_problem(args.results, "--results")
    try:
        rule = SeedRule(args.most, args.first, args.step, 0.05, args.spending, args.boundary,
                        args.futility)
    except ValueError as bad:
        problem = problem or f"--{bad}"
    if args.draws < 1:
        problem = problem or f"--draws={args.draws}: allowed a positive integer"
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    rows = []
    try:
        for folder in args.results:
            for replay in replays(folder, rule.most):
                rows.append(simulate(replay, rule, args.draws, args.seed,
                                     study_minutes(folder, replay.study, rule.most)))
    except SchemaError as bad:
        print(f"error: {bad}", file=sys.stderr)
        return EXIT_USAGE
    if not rows:
        print(f"error: --results={' '.join(map(str, args.results))}: no study whose compared "
              f"settings ran {rule.most} seeds", file=sys.stderr)
        return EXIT_USAGE
    print(f"rule: {rule.describe()}; {args.draws} seed orders per study (draw seed "
          f"{args.seed})\n")
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
