"""How one claim is judged on one study: the claim as data (`Claim`, its `Comparison`s; `Untested`
for a claim no stored study can test), the per-trial values a comparison reads, the same-seed
difference with its 95% t-interval, and the verdict."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import pandas as pd

from analysis.paired import matches
from analysis.seed_stats import t975

HOLDS, FAILS, OPEN, UNTESTED = "holds", "does not hold", "not resolved", "not tested"
NOT_TESTABLE = "not testable in this regime"
VERDICTS = (HOLDS, FAILS, OPEN, NOT_TESTABLE, UNTESTED)
# Values that measure drops (`analysis.forgetting`): a claim that setting X drops more than Y
# can only be tested where X drops at all
DROP_VALUES = ("mean_drop", "drop_share")
# printed units: cosine drift in 1e-3, bytes in MB
SCALE = {"drift_mean": 1e3, "drift_peak": 1e3, "tcc_bytes": 1e-6}
UNITS = {1e3: " (x 1e-3)", 1e-6: " (MB)"}


@dataclass(frozen=True)
class Comparison:
    """`value` of setting `a` minus that of setting `b` (config key -> value as text, on top of
    `Claim.fixed`), claimed above `bound` (`sign` +1) or below it (-1): `bound` 0 claims a
    direction, `bound` -2 with sign +1 claims "a loses less than 2 points to b"."""
    label: str
    value: str
    a: dict[str, str]
    b: dict[str, str]
    sign: int = 1
    bound: float = 0.0


@dataclass(frozen=True)
class Claim:
    """A claim of `paper` ("FCL" or "FLoCoRA") that `study` tests: it holds where every
    comparison does. `runs_on`: the run it needs where that is not the study as stored (another
    data set, say); where no trial matches, the claim reads "not tested". `match`: where a
    comparison's setting is chosen from the study's values (FLoCoRA's Table IV: the LoRA
    message no larger than the other method's), the comparisons as judged on these trials
    (`comparisons` then name the settings the claim reads)."""
    name: str
    study: str
    paper: str
    says: str
    comparisons: tuple[Comparison, ...]
    fixed: dict[str, str] = field(default_factory=dict)
    runs_on: str = ""
    match: Callable[[pd.DataFrame], tuple[Comparison, ...]] | None = None
    context: tuple[Comparison, ...] = ()      # shown beside the verdict, not judged

    def on(self, trials: pd.DataFrame) -> tuple[Comparison, ...]:
        """The comparisons judged on `trials` (`match`'s where given)."""
        return self.comparisons if self.match is None else self.match(trials)


@dataclass(frozen=True)
class Untested:
    """A claim of `paper` that no study fcl stores can test; `would`: the study that would."""
    name: str
    paper: str
    says: str
    would: str


def c(label, value, a, b, sign=1, bound=0.0) -> Comparison:
    return Comparison(label, value, a, b, sign, bound)


def compare(trials: pd.DataFrame, fixed: dict[str, str], comparison: Comparison
            ) -> tuple[float, float, int]:
    """(mean of a - b over the seeds both ran, its 95% half-width, seeds)."""
    def pick(setting: dict[str, str]) -> pd.Series:
        chosen = pick_rows(trials, {**fixed, **setting})
        if chosen is None:
            return pd.Series(dtype=float)
        # several trials per seed: the claim's keys do not pick one setting; read as not run
        if comparison.value not in chosen.columns or not chosen["seed"].is_unique:
            return pd.Series(dtype=float)
        return chosen.set_index("seed")[comparison.value]
    d = (pick(comparison.a) - pick(comparison.b)).dropna()
    n = len(d)
    if n == 0:
        return math.nan, math.nan, 0
    return float(d.mean()), (t975(n - 1) * float(d.std()) / math.sqrt(n) if n > 1 else math.inf), n


def dropper(comparison: Comparison) -> dict[str, str]:
    """The setting a drop comparison claims drops more: b in "a - b < 0", a in "a - b > 0"."""
    return comparison.b if comparison.sign < 0 else comparison.a


def drops_seen(trials: pd.DataFrame, fixed: dict[str, str], comparison: Comparison) -> bool:
    """Whether the setting claimed to drop more shows drops: the 95% t-interval over its seeds
    of its share of boundary terms losing more than 5 points lies above 0 (one sharp drop in
    ten seeds is not a regime that drops). True where the comparison is not about drops."""
    if comparison.value not in DROP_VALUES:
        return True
    rows = pick_rows(trials, {**fixed, **dropper(comparison)})
    if rows is None or "drop_share" not in rows:
        return False
    shares = rows["drop_share"].dropna()
    n = len(shares)
    if n < 2:
        return bool(n and shares.iloc[0] > 0)
    return float(shares.mean()) - t975(n - 1) * float(shares.std()) / math.sqrt(n) > 0


def pick_rows(trials: pd.DataFrame, setting: dict[str, str]) -> pd.DataFrame | None:
    """The trials of `setting` (config key -> value as text); None where a key is no column."""
    rows = pd.Series(True, index=trials.index)
    for key, text in setting.items():
        if key not in trials.columns:
            return None
        rows &= matches(trials[key], text)
    return trials[rows]


def verdict(results: list[tuple[float, float, int]], comparisons: list[Comparison],
            testable: bool = True) -> str:
    """HOLDS where every comparison's interval lies on its claimed side of its bound, FAILS
    where one lies wholly on the other side, OPEN otherwise (one not run included); UNTESTED
    where none ran; NOT_TESTABLE where a drop claim's reference does not drop (`testable`
    False: "X drops less than Y" says nothing where Y shows no drops)."""
    if not any(n for _, _, n in results):
        return UNTESTED
    if not testable:
        return NOT_TESTABLE
    holds, fails = [], []
    for (m, h, n), comp in zip(results, comparisons):
        if not n:
            holds.append(False)
            continue
        lo, hi = m - h - comp.bound, m + h - comp.bound
        holds.append(lo > 0 if comp.sign > 0 else hi < 0)
        fails.append(hi < 0 if comp.sign > 0 else lo > 0)
    if any(fails):
        return FAILS
    return HOLDS if all(holds) else OPEN


def with_round_values(study) -> pd.DataFrame:
    """The study's trials plus `drift_peak` (NaN where its rounds are not stored); the
    forgetting measures come with `load_study`."""
    trials = study.trials.copy()
    rounds_path = study.folder / "rounds.parquet"
    if rounds_path.is_file() and "data.num_tasks" in trials:
        rounds = pd.read_parquet(rounds_path, columns=["trial_id", "round", "cos_head"])
        by_id = trials.set_index("trial_id")
        q = by_id["rounds"] // by_id["data.num_tasks"]            # rounds per phase
        later = rounds[rounds["round"] >= rounds["trial_id"].map(q)]
        trials["drift_peak"] = trials["trial_id"].map(later.groupby("trial_id")["cos_head"].max())
    return trials


def cell_text(claim: Claim, results: list[tuple[float, float, int]], judged: str,
              comparisons: tuple[Comparison, ...] | None = None,
              context: list[tuple[float, float, int]] = ()) -> str:
    """Every comparison (`claim.comparisons` unless given) as `label mean ± half-width
    (seeds)`, then the verdict in bold, then the claim's context comparisons in brackets."""
    if judged == UNTESTED:
        return f"**{UNTESTED}**: the study holds none of these settings"
    parts = [_part(comp, r) for comp, r in zip(comparisons or claim.comparisons, results)]
    why = (" (the setting claimed to drop more shows no sharp drops: its share of boundary "
           "terms losing > 5 points is not above 0)"
           if judged == NOT_TESTABLE else "")
    aside = "; ".join(_part(comp, r) for comp, r in zip(claim.context, context))
    return "; ".join(parts) + f": **{judged}**{why}" + (f" [beside: {aside}]" if aside else "")


def _part(comp: Comparison, result: tuple[float, float, int]) -> str:
    m, h, n = result
    k = SCALE.get(comp.value, 1.0)
    unit = UNITS.get(k, "")
    if not n:
        return f"{comp.label}: not run"
    return f"{comp.label}{unit} {m * k:+.2f} ± {h * k:.2f} ({n})"
