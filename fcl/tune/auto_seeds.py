"""`--seeds auto` (`auto:MOST`): a grid study that adds seeds only where its comparisons are open.

The rule is `fcl.sequential.SeedRule` (looks at 3, 5, 7, 9, 10 seeds for MOST 10, a t-interval
per look at the level an alpha-spending function allows it: valid under peeking). Look 1 runs
every setting at the first seeds; after each look the study's comparisons
(`analysis.seed_comparisons`: the papers' claims on it, else every setting against its first
on ACC) are judged on their same-seed pairs, and the next look's seeds go only to the settings
of the comparisons still open, until each is resolved, stopped for futility, or at MOST.

Each look is a study of its own in Tune (`STUDY-lookK`, its results and Tune state under
`RESULTS/.seeds-auto/STUDY/`): a look killed part-way continues with `--resume` like any study,
and a finished look is read back, not rerun. After each look the whole study so far is written
to `RESULTS/STUDY/` (one trial per setting and seed, as a fixed-seed study's), its manifest's
`seeds_auto` holding the rule, the looks, the verdicts and the seeds each setting got.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import sys
from dataclasses import dataclass, replace
from typing import TextIO

import pandas as pd

from fcl.config import ConfigError
from fcl.manifest import (ManifestError, read_manifest, replace_study_files, verify,
                          write_manifest)
from fcl.results_io import FILES, TERMINATED
from fcl.sequential import ABOVE, FUTILE, OPEN, SeedRule
from fcl.tune import extend
from fcl.tune.plan import plan_study
from fcl.tune.run import run_study
from fcl.tune.space import grid, grid_points, trial_overrides
from fcl.tune.state import storage_of
from fcl.tune.study import Study, StudyOptions, StudyOutcome

STAGING = ".seeds-auto"
RESOLVED = "resolved"


@dataclass(frozen=True)
class AutoSeeds:
    """`--seeds auto[:MOST]` as parsed."""
    most: int = 10

    def rule(self) -> SeedRule:
        return SeedRule(most=self.most, first=min(3, self.most))


def parse_auto(text: str, most_allowed: int) -> AutoSeeds:
    """`auto` or `auto:MOST` (2 <= MOST <= `most_allowed`: a t-interval needs two pairs);
    ValueError otherwise."""
    word, colon, most = text.partition(":")
    if word != "auto" or (colon and not (most.isdigit() and 2 <= int(most) <= most_allowed)):
        raise ValueError(text)
    return AutoSeeds(int(most)) if colon else AutoSeeds()


@dataclass
class Look:
    """One batch: the seeds it adds (offsets from the base seed), the settings that get them."""
    lo: int
    hi: int
    settings: list[int]


@dataclass
class Verdict:
    label: str
    verdict: str = OPEN                 # OPEN, ABOVE, BELOW, FUTILE
    seeds: int = 0                      # pairs it was judged on last
    settings: tuple[int, ...] = ()


def run_auto(study: Study, opts: StudyOptions, auto: AutoSeeds, out: TextIO | None = None,
             table: bool = False) -> StudyOutcome:
    """Run `study` under the seed rule; the outcome of the whole study (its trials, the sum of
    the looks' finished and failed, the wall time of all looks)."""
    out = out or sys.stdout
    if study.searcher is not None:
        raise ConfigError("--seeds", "auto", f"study {study.name} is a search: its seeds are "
                          "the objective's, not trials", "a number of seeds")
    rule = auto.rule()
    plan = plan_study(study, replace(opts, seeds=rule.most))
    points = [trial_overrides(p) for p in grid_points(study.space_for(opts.preset))]
    labels = [",".join(f"{k}={v}" for k, v in p.items()) or "base" for p in points]
    base_seed = plan.cfg.seed
    staging = os.path.join(opts.results, STAGING, study.name)
    final = os.path.join(opts.results, study.name)
    start_fresh(opts, staging, final)
    print(f"seeds auto: looks at {', '.join(map(str, rule.looks))} seeds per setting "
          f"(alpha {rule.alpha:g}, {rule.spending.replace('_', '-')} spending): "
          f"{len(points) * rule.looks[0]} to {len(points) * rule.most} trials",
          file=out, flush=True)
    frames, looks, verdicts, wall, finished, failed = None, [], None, 0.0, 0, 0
    open_settings = list(range(len(points)))
    previous = 0
    for k, n in enumerate(rule.looks):
        look = Look(previous, n, open_settings)
        previous = n
        seeds = (f"seed {base_seed + look.lo}" if look.hi - look.lo == 1 else
                 f"seeds {base_seed + look.lo}-{base_seed + look.hi - 1}")
        print(f"seeds auto: look {k + 1} of {len(rule.looks)}: {seeds} for "
              f"{len(look.settings)} of {len(points)} settings "
              f"({len(look.settings) * (look.hi - look.lo)} trials)", file=out, flush=True)
        done, outcome = run_look(study, opts, staging, f"{study.name}-look{k + 1}",
                                 [points[i] for i in look.settings], look, out, table)
        if outcome is not None:
            wall += outcome.wall_s
            finished, failed = finished + outcome.finished, failed + outcome.failed
        if done is None:              # a dry run, or a look stopped or failed: its lines said
            return replace(outcome, wall_s=wall)
        looks.append({"seeds": [base_seed + s for s in range(look.lo, look.hi)],
                      "settings": len(look.settings),
                      "trials": len(look.settings) * (look.hi - look.lo)})
        frames = done if frames is None else merged(frames, done)
        setting_of = settings_of(frames["trials"], points)
        # the claims read the study as `analysis` loads it (its forgetting measures): on disk
        paths = export(plan, final, frames, manifest_of(plan, frames, rule, looks, verdicts or [],
                                                        labels, setting_of, False))
        verdicts = judge(study, opts.results, frames, setting_of, labels, rule, k, verdicts)
        open_settings = sorted({i for v in verdicts if v.verdict == OPEN for i in v.settings})
        last = k == len(rule.looks) - 1 or not open_settings
        paths = [*paths[:-1], write_manifest(final, manifest_of(
            plan, frames, rule, looks, verdicts, labels, setting_of, last))]
        if last:
            print_verdicts(verdicts, rule, out)
            trials = frames["trials"]
            return StudyOutcome(len(trials), tuple(paths), finished, failed, 0, wall,
                                frames=frames)
    raise AssertionError("not reached: the last look returns")


def run_look(study: Study, opts: StudyOptions, staging: str, name: str, points: list[dict],
             look: Look, out: TextIO, table: bool
             ) -> tuple[dict[str, pd.DataFrame] | None, StudyOutcome | None]:
    """A look as a study of its own: (its frames, or None where it did not finish; the outcome
    of its run, or None where a finished look was read back)."""
    done = finished_look(os.path.join(staging, name))
    if done is not None:
        return done, None
    look_opts = replace(opts, results=staging, seeds=look.hi - look.lo,
                        seed_offsets=(look.lo, look.hi), fresh=False)
    has_state = os.path.isdir(os.path.join(storage_of(look_opts), name))
    outcome = run_study(replace(study, name=name, by_preset={}, space={"setting": grid(*points)}),
                        replace(look_opts, resume=has_state), out=out, table=table)
    if opts.dry_run or outcome.interrupted or outcome.unfinished or outcome.failed:
        return None, outcome
    return finished_look(os.path.join(staging, name)), outcome


def start_fresh(opts: StudyOptions, staging: str, final: str) -> None:
    """`--fresh` discards the looks; a rerun without `--resume` of a study that has looks or
    stored results is refused (as a fixed-seed study's is)."""
    if opts.fresh:
        shutil.rmtree(staging, ignore_errors=True)
        return
    if opts.resume or opts.dry_run:
        return
    if os.path.isdir(staging) or os.path.exists(os.path.join(final, "study.json")):
        raise ConfigError("--resume", "off", f"study {os.path.basename(final)} already has "
                          f"looks in {staging} or results in {final}",
                          "--resume to continue it, or --fresh to start over")


def finished_look(folder: str) -> dict[str, pd.DataFrame] | None:
    """A look's frames where its export is whole and every trial finished; else None."""
    try:
        manifest = read_manifest(folder)
    except ManifestError:
        return None
    if manifest is None or verify(folder, manifest):
        return None
    frames = {n: pd.read_parquet(os.path.join(folder, f"{n}.parquet")) for n in FILES}
    return frames if (frames["trials"]["status"] == TERMINATED).all() else None


def settings_of(trials: pd.DataFrame, points: list[dict]) -> dict[str, int]:
    """Each trial's setting: the index of the grid point whose every key its row holds."""
    out = {}
    for _, row in trials.iterrows():
        for i, point in enumerate(points):
            if all(k in row and row[k] == v for k, v in point.items()):
                out[row["trial_id"]] = i
                break
    return out


def merged(a: dict[str, pd.DataFrame], b: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    return {n: extend.concat(a[n], b[n]) for n in FILES}


def judge(study: Study, results: str, frames, setting_of, labels, rule: SeedRule, look: int,
          before: list[Verdict] | None) -> list[Verdict]:
    """The comparisons at look `look`, read from the study as written to `results`: each
    still open judged on its pairs; resolved and futile ones keep their verdict."""
    from analysis.claims import CLAIMS
    from analysis.seed_comparisons import claim_pairs, reference_pairs
    from analysis.study_tables import load_study
    pairs = None
    if any(c.study == study.name for c in CLAIMS):
        pairs = claim_pairs(load_study(results, study.name))
    if not pairs:
        pairs = reference_pairs(frames["trials"], setting_of, labels)
    old = {v.label: v for v in before or []}
    out = []
    for p in pairs:
        settings = tuple(sorted({setting_of[t] for t in (*p.a, *p.b) if t in setting_of}))
        v = old.get(p.label) or Verdict(p.label, settings=settings)
        if v.verdict == OPEN:
            diffs = [p.diffs[s] for s in sorted(p.diffs)]
            v = Verdict(p.label, rule.verdict(diffs, look), len(diffs), settings)
        out.append(v)
    return out


def export(plan, final: str, frames, manifest) -> list[str]:
    """The whole study so far into `final`, in a fixed-seed study's row order."""
    keys = [k for k in plan.manifest().varying if k in frames["trials"]] + ["seed"]
    frames = extend.merged_frames(extend.StoredPart(plan.manifest(), {
        n: frames[n].iloc[0:0] for n in FILES}), frames, keys)
    return replace_study_files(frames, final, manifest)


def manifest_of(plan, frames, rule: SeedRule, looks: list[dict], verdicts: list[Verdict],
                labels: list[str], setting_of: dict, last: bool):
    """The study's manifest, its `seeds_auto` saying how far the rule has come."""
    trials = frames["trials"]
    per_setting = trials.assign(s=trials["trial_id"].map(setting_of)).groupby("s").size()
    record = {**rule.describe(), "done": last,
              "looks": looks,
              "comparisons": [{"label": v.label, "verdict": describe(v, rule),
                               "seeds": v.seeds} for v in verdicts],
              "seeds_per_setting": {labels[int(i)]: int(c) for i, c in per_setting.items()}}
    return dataclasses.replace(plan.manifest(), seeds=tuple(sorted(
        int(s) for s in trials["seed"].unique())), seeds_auto=record)


def describe(v: Verdict, rule: SeedRule) -> str:
    if v.verdict == OPEN:
        return f"open at the maximum ({rule.most} seeds)" if v.seeds >= rule.most else "open"
    if v.verdict == FUTILE:
        return f"stopped at {v.seeds} seeds (futility: it would not resolve by {rule.most})"
    side = "above its bound" if v.verdict == ABOVE else "below its bound"
    return f"resolved at {v.seeds} seeds ({side})"


def print_verdicts(verdicts: list[Verdict], rule: SeedRule, out: TextIO) -> None:
    for v in verdicts:
        print(f"  {v.label}: {describe(v, rule)}", file=out)
