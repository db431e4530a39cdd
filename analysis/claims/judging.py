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
VERDICTS = (HOLDS, FAILS, OPEN, UNTESTED)
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
        rows = pd.Series(True, index=trials.index)
        for key, text in {**fixed, **setting}.items():
            if key not in trials.columns:
                return pd.Series(dtype=float)
            rows &= matches(trials[key], text)
        chosen = trials[rows]
        # several trials per seed: the claim's keys do not pick one setting; read as not run
        if comparison.value not in chosen.columns or not chosen["seed"].is_unique:
            return pd.Series(dtype=float)
        return chosen.set_index("seed")[comparison.value]
    d = (pick(comparison.a) - pick(comparison.b)).dropna()
    n = len(d)
    if n == 0:
        return math.nan, math.nan, 0
    return float(d.mean()), (t975(n - 1) * float(d.std()) / math.sqrt(n) if n > 1 else math.inf), n


def verdict(results: list[tuple[float, float, int]], comparisons: list[Comparison]) -> str:
    """HOLDS where every comparison's interval lies on its claimed side of its bound, FAILS
    where one lies wholly on the other side, OPEN otherwise (one not run included); UNTESTED
    where none ran."""
    if not any(n for _, _, n in results):
        return UNTESTED
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
    """The study's trials plus `drift_peak` and `worst_drop` (NaN where its rounds or tasks
    are not stored)."""
    trials = study.trials.copy()
    rounds_path, tasks_path = study.folder / "rounds.parquet", study.folder / "tasks.parquet"
    if rounds_path.is_file() and "data.num_tasks" in trials:
        rounds = pd.read_parquet(rounds_path, columns=["trial_id", "round", "cos_head"])
        by_id = trials.set_index("trial_id")
        q = by_id["rounds"] // by_id["data.num_tasks"]            # rounds per phase
        later = rounds[rounds["round"] >= rounds["trial_id"].map(q)]
        trials["drift_peak"] = trials["trial_id"].map(later.groupby("trial_id")["cos_head"].max())
    if tasks_path.is_file() and "data.num_tasks" in trials:
        tasks = pd.read_parquet(tasks_path, columns=["trial_id", "round", "task", "accuracy"])
        trials["worst_drop"] = trials["trial_id"].map(_worst_drops(trials, tasks))
    return trials


def _worst_drops(trials: pd.DataFrame, tasks: pd.DataFrame) -> dict[str, float]:
    """Per trial, the most negative change of a task's accuracy across a phase boundary."""
    by_trial = dict(list(tasks.groupby("trial_id")))
    worst = {}
    for trial_id, rounds, num_tasks in zip(trials["trial_id"], trials["rounds"],
                                           trials["data.num_tasks"]):
        q = int(rounds) // int(num_tasks)         # rounds per phase
        if trial_id not in by_trial or q < 1:
            continue
        grid = by_trial[trial_id].pivot_table(index="task", columns="round", values="accuracy")
        deltas = [(grid[b] - grid[b - 1]).min() for b in range(q, int(rounds), q)
                  if b in grid and b - 1 in grid]
        worst[trial_id] = min(deltas, default=math.nan)
    return worst


def cell_text(claim: Claim, results: list[tuple[float, float, int]], judged: str,
              comparisons: tuple[Comparison, ...] | None = None) -> str:
    """Every comparison (`claim.comparisons` unless given) as `label mean ± half-width
    (seeds)`, then the verdict in bold."""
    if judged == UNTESTED:
        return f"**{UNTESTED}**: the study holds none of these settings"
    parts = []
    for comp, (m, h, n) in zip(comparisons or claim.comparisons, results):
        k = SCALE.get(comp.value, 1.0)
        unit = UNITS.get(k, "")
        parts.append(f"{comp.label}{unit} {m * k:+.2f} ± {h * k:.2f} ({n})" if n else
                     f"{comp.label}: not run")
    return "; ".join(parts) + f": **{judged}**"
