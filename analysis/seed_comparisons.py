"""The comparisons a study declares, as same-seed paired differences: the papers' claims on it
(`analysis.claims`), or, for a study no claim reads, every setting against its first one on ACC.
What the seed rule judges (`fcl.sequential`), replayed on stored studies
(`analysis.seeds_simulation`) and run by a study's `--seeds auto` driver
(`fcl.tune.auto_seeds`)."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.claims import CLAIMS
from analysis.claims.judging import pick_rows, with_round_values
from analysis.study_tables import Study


@dataclass(frozen=True)
class Paired:
    """One comparison: its two settings (their trials' ids, every seed) and, per seed both
    ran, (a - b) - bound, signed so that "as claimed" is above 0."""
    label: str
    a: tuple[str, ...]
    b: tuple[str, ...]
    diffs: dict[int, float]


def claim_pairs(loaded: Study) -> list[Paired]:
    """The comparisons of every claim on `loaded`'s study that both its settings ran (one
    trial per seed each)."""
    trials = with_round_values(loaded)
    out = []
    for claim in (c for c in CLAIMS if c.study == loaded.name):
        for comp in claim.on(trials):
            sides = [pick_rows(trials, {**claim.fixed, **s}) for s in (comp.a, comp.b)]
            if any(s is None or s.empty or comp.value not in s or not s["seed"].is_unique
                   for s in sides):
                continue
            a, b = (s.set_index("seed") for s in sides)
            d = ((a[comp.value] - b[comp.value]) - comp.bound).dropna() * comp.sign
            out.append(Paired(f"{claim.name}: {comp.label}", tuple(sorted(a["trial_id"])),
                              tuple(sorted(b["trial_id"])),
                              {int(s): float(v) for s, v in d.items()}))
    return out


def reference_pairs(trials: pd.DataFrame, setting_of: dict[str, int],
                    labels: list[str]) -> list[Paired]:
    """Every setting against setting 0 (the study's first grid point), on ACC: `setting_of`
    maps a trial id to its setting's index, `labels` names the settings."""
    rows = trials.assign(_setting=trials["trial_id"].map(setting_of)).dropna(
        subset=["_setting"])
    by = {int(k): g.set_index("seed") for k, g in rows.groupby("_setting")}
    if 0 not in by:
        return []
    ref = by[0]
    out = []
    for k in sorted(by):
        if k == 0:
            continue
        d = (by[k]["acc"] - ref["acc"]).dropna()
        out.append(Paired(f"{labels[k]} against {labels[0]} (ACC)",
                          tuple(sorted(by[k]["trial_id"])), tuple(sorted(ref["trial_id"])),
                          {int(s): float(v) for s, v in d.items()}))
    return out


def rule_summary(seeds_auto: dict | None) -> str:
    """A `--seeds auto` study in one line (its manifest's `seeds_auto`): how many comparisons
    the rule resolved, left open at its maximum or stopped for futility, and the seeds a
    setting got; "" for a fixed-seed study."""
    if not seeds_auto:
        return ""
    said = [c["verdict"] for c in seeds_auto.get("comparisons", [])]
    resolved = [int(t.split()[2]) for t in said if t.startswith("resolved at")]
    parts = []
    if resolved:
        at = (f"{min(resolved)}" if min(resolved) == max(resolved)
              else f"{min(resolved)}-{max(resolved)}")
        parts.append(f"{len(resolved)} resolved (at {at} seeds)")
    open_ = sum(t.startswith("open") for t in said)
    futile = sum(t.startswith("stopped") for t in said)
    if open_:
        parts.append(f"{open_} open" + (" at the maximum" if seeds_auto.get("done") else ""))
    if futile:
        parts.append(f"{futile} stopped for futility")
    per = list(seeds_auto.get("seeds_per_setting", {}).values()) or [0]
    seeds = f"{min(per)}" if min(per) == max(per) else f"{min(per)}-{max(per)}"
    return (f"seed rule (--seeds auto, at most {seeds_auto.get('most', '?')}): "
            f"{len(said)} comparison{'' if len(said) == 1 else 's'}, "
            f"{', '.join(parts) or 'none judged'}; "
            f"{seeds} seeds a setting" + ("" if seeds_auto.get("done") else
                                          "; not done: --resume goes on"))
