"""The papers' claims, each as same-seed comparisons in a stored study, judged on every results
folder given side by side (the random frozen backbone's `results/`, the pretrained one's
`results-pretrained/`):

    python -m analysis claims --results results results-pretrained

A comparison is `a - b` of one per-trial value over the seeds both settings ran (the pairing of
`analysis/paired.py`: a seed fixes the partition and the initialisation of every setting alike),
with its 95% t-interval. A claim *holds* in a folder where every one of its comparisons has its
interval on the claimed side of 0, *does not hold* where one has it on the other side, and is
*not resolved* otherwise (an interval that contains 0, or a comparison it did not run).

Values: `acc`, `bwt_f` (the seen-tasks reading: negative = a drop), `drift_mean` (the trial's
mean client drift), and two read from the trial's rounds: `drift_peak` (the largest cosine
distance of the heads between consecutive rounds, `cos_head` as in Fig. 3b / 4b, after the first
phase: every order starts with the fresh modules moving fast; the claims are about the spikes
that come later) and `worst_drop` (the most negative change of any task's accuracy across a phase
boundary, A[t, pQ] - A[t, pQ-1], in points: the sharp drops of FCL Fig. 4a). Drift is printed
in units of 1e-3. Each cell: every comparison as `mean ± 95% half-width (seeds)`, then the
verdict; "not run" where the folder does not store the study.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from analysis.paired import matches
from analysis.seed_stats import t975
from analysis.study_tables import MissingStudy, SchemaError, load_study
from fcl.cli_args import EXIT_USAGE

HOLDS, FAILS, OPEN = "holds", "does not hold", "not resolved"
SCALE = {"drift_mean": 1e3, "drift_peak": 1e3}      # cosine drift is printed in units of 1e-3


@dataclass(frozen=True)
class Comparison:
    """`value` of setting `a` minus that of setting `b` (config key -> value as text; both on
    top of `Claim.fixed`), claimed > 0 (`sign` +1), < 0 (-1), or (`sign` 0) within `margin`
    of 0 either way ("barely changes": holds where the whole interval is inside the margin,
    does not hold where it is wholly outside)."""
    label: str
    value: str
    a: dict[str, str]
    b: dict[str, str]
    sign: int = 1
    margin: float = 0.0


@dataclass(frozen=True)
class Claim:
    name: str
    study: str
    paper: str
    comparisons: tuple[Comparison, ...]
    fixed: dict[str, str] = field(default_factory=dict)


def _c(label, value, a, b, sign=1, margin=0.0) -> Comparison:
    return Comparison(label, value, a, b, sign, margin)


ADAM, SGD = {"server.optimizer": "fedadam", "server.lr": "0.5"}, \
    {"server.optimizer": "fedsgd", "server.lr": "1"}


def _orders(opt: dict[str, str], aggregate: str) -> tuple[Comparison, ...]:
    fmtl, sync, asyn = ({**opt, "schedule.order": o, "server.aggregate": aggregate}
                        for o in ("fmtl", "sync", "async"))
    return (_c("FMTL - sync", "acc", fmtl, sync), _c("sync - async", "acc", sync, asyn))


CLAIMS: tuple[Claim, ...] = (
    Claim("Fig. 5a: ACC peaks at client LR 0.05 (FedAdam eta 0.5)", "ablation_lr",
          "rises up to client LR 0.05, drops at 0.1",
          (_c("0.05 - 0.01", "acc", {"client.lr": "0.05"}, {"client.lr": "0.01"}),
           _c("0.05 - 0.1", "acc", {"client.lr": "0.05"}, {"client.lr": "0.1"})),
          {"server.lr": "0.5"}),
    Claim("Fig. 5a: a lower server LR helps (client LR 0.05)", "ablation_lr",
          "lower eta helps until updates get too small",
          (_c("eta 0.5 - eta 1", "acc", {"server.lr": "0.5"}, {"server.lr": "1"}),),
          {"client.lr": "0.05"}),
    Claim("Fig. 5a: smaller drops at a lower server LR (client LR 0.05)", "ablation_lr",
          "BWT_f improves as eta falls",
          (_c("BWT_f eta 0.1 - eta 1", "bwt_f", {"server.lr": "0.1"}, {"server.lr": "1"}),),
          {"client.lr": "0.05"}),
    Claim("Fig. 3a: FMTL > sync > async, FedAdam eta 0.5, mean of deltas", "task_order",
          "FMTL best, then sync, then async", _orders(ADAM, "mean")),
    Claim("Fig. 3a: FMTL > sync > async, FedAdam eta 0.5, Eq. 7's sum", "task_order",
          "(the paper's Eq. 7 reads as a sum)", _orders(ADAM, "sum")),
    Claim("Fig. 3a: FMTL > sync > async, FedSGD eta 1, mean of deltas", "task_order",
          "FMTL best, then sync, then async", _orders(SGD, "mean")),
    Claim("Fig. 3a: FMTL > sync > async, FedSGD eta 1, Eq. 7's sum", "task_order",
          "(the paper's Eq. 7 reads as a sum)", _orders(SGD, "sum")),
    Claim("Fig. 3b: async spikes in drift more than FMTL (FedAdam eta 0.5, mean)", "task_order",
          "spikes in async; FMTL deviates only early",
          (_c("peak drift async - FMTL", "drift_peak", {"schedule.order": "async"},
              {"schedule.order": "fmtl"}),),
          {**ADAM, "server.aggregate": "mean"}),
    Claim("Fig. 4a: FedSGD eta 1 drops at phase boundaries, FedAdam eta 0.5 does not",
          "optimizers", "sharp drops with FedSGD eta 1, smooth with FedAdam",
          (_c("worst drop FedAdam - FedSGD", "worst_drop", ADAM, SGD),)),
    Claim("Fig. 4b: FedAdam eta 0.5 spikes less in drift than FedSGD eta 1", "optimizers",
          "FedAdam at eta 0.5 and 0.1 spikes less than FedSGD at eta 1",
          (_c("peak drift FedSGD - FedAdam", "drift_peak", SGD, ADAM),)),
    Claim("Fig. 4b: a lower server LR smooths drift (FedAdam)", "optimizers",
          "lower eta, smaller spikes",
          (_c("peak drift eta 1 - eta 0.5", "drift_peak", {"server.lr": "1"},
              {"server.lr": "0.5"}),
           _c("peak drift eta 0.5 - eta 0.1", "drift_peak", {"server.lr": "0.5"},
              {"server.lr": "0.1"})),
          {"server.optimizer": "fedadam"}),
    Claim("Fig. 5b: more rounds accumulate drift (BWT_f lower at R = 50)",
          "ablation_rounds_epochs", "BWT_f worsens with more rounds",
          tuple(_c(f"BWT_f R 25 - R 50, K = {k}", "bwt_f",
                   {"rounds": "25", "client.local_epochs": str(k)},
                   {"rounds": "50", "client.local_epochs": str(k)}) for k in range(1, 6))),
    Claim("Table 3: FedAdam eta 0.5 beats FedAvg (FedSGD eta 1)", "optimizers",
          "80.04 vs 77.59", (_c("FedAdam - FedSGD", "acc", ADAM, SGD),)),
    Claim("Table 3: FedAdam is the best adaptive optimizer (eta 0.5)", "optimizers",
          "FedAdam 80.04 ahead of FedAdagrad and FedYogi",
          (_c("FedAdam - FedAdagrad", "acc", ADAM, {**ADAM, "server.optimizer": "fedadagrad"}),
           _c("FedAdam - FedYogi", "acc", ADAM, {**ADAM, "server.optimizer": "fedyogi"}))),
    Claim("Table 3: FedSGD's drops shrink as eta falls", "optimizers",
          "BWT_f -5.76 at eta 1 -> -0.63 at eta 0.1",
          (_c("BWT_f eta 0.1 - eta 1", "bwt_f", {"server.lr": "0.1"}, {"server.lr": "1"}),),
          {"server.optimizer": "fedsgd"}),
    Claim("Table 3: FedSGD at eta 0.1 no worse than at eta 1", "optimizers",
          "78.51 vs 77.59",
          (_c("eta 0.1 - eta 1", "acc", {"server.lr": "0.1"}, {"server.lr": "1"}),),
          {"server.optimizer": "fedsgd"}),
    Claim("Fig. 5e: stragglers cost little (p = 0.5 vs none, within 2 points)", "stragglers",
          "accuracy barely changes with the straggler probability",
          (_c("p 0.5 - p 0", "acc", {"participation.straggler_prob": "0.5"},
              {"participation.straggler_prob": "0"}, sign=0, margin=2.0),)),
    Claim("Fig. 5c: more clients hurt (the same images split N ways)", "scalability",
          "accuracy falls as N grows",
          (_c("N 5 - N 40", "acc", {"data.num_clients": "5"}, {"data.num_clients": "40"}),)),
    Claim("Fig. 5d: a lower Dirichlet alpha hurts", "noniid", "accuracy falls as alpha falls",
          (_c("IID - alpha 0.5", "acc", {"data.partition": "iid"},
              {"data.partition": "dirichlet", "data.alpha": "0.5"}),
           _c("alpha 8 - alpha 0.5", "acc", {"data.partition": "dirichlet", "data.alpha": "8"},
              {"data.partition": "dirichlet", "data.alpha": "0.5"}))),
    Claim("Beyond: SCAFFOLD reduces the drops of FedAvg (async)", "drift_correction",
          "(named as the client-side alternative, not tested)",
          (_c("BWT_f SCAFFOLD - SGD", "bwt_f", {"client.algorithm": "scaffold"},
              {"client.algorithm": "sgd"}),),
          {**SGD, "schedule.order": "async", "client.prox_mu": "0"}),
    Claim("Beyond: FedProx (mu 0.01) reduces the drops of FedAvg (async)", "drift_correction",
          "(named as the client-side alternative, not tested)",
          (_c("BWT_f FedProx - SGD", "bwt_f", {"client.algorithm": "fedprox",
                                               "client.prox_mu": "0.01"},
              {"client.algorithm": "sgd", "client.prox_mu": "0"}),),
          {**SGD, "schedule.order": "async"}),
)


def with_round_values(study) -> pd.DataFrame:
    """The study's trials plus `drift_peak` and `worst_drop` (NaN where its rounds or tasks
    are not stored)."""
    trials = study.trials.copy()
    rounds_path, tasks_path = study.folder / "rounds.parquet", study.folder / "tasks.parquet"
    if rounds_path.is_file():
        rounds = pd.read_parquet(rounds_path, columns=["trial_id", "round", "cos_head"])
        by_id = trials.set_index("trial_id")
        q = by_id["rounds"] // by_id["data.num_tasks"]            # rounds per phase
        later = rounds[rounds["round"] >= rounds["trial_id"].map(q)]
        trials["drift_peak"] = trials["trial_id"].map(later.groupby("trial_id")["cos_head"].max())
    if tasks_path.is_file():
        tasks = pd.read_parquet(tasks_path, columns=["trial_id", "round", "task", "accuracy"])
        by_trial = dict(list(tasks.groupby("trial_id")))
        worst = {}
        for trial_id, rounds, num_tasks in zip(trials["trial_id"], trials["rounds"],
                                               trials["data.num_tasks"]):
            q = int(rounds) // int(num_tasks)         # rounds per phase
            if trial_id not in by_trial or q < 1:
                continue
            grid = by_trial[trial_id].pivot_table(index="task", columns="round",
                                                  values="accuracy")
            deltas = [(grid[b] - grid[b - 1]).min() for b in range(q, int(rounds), q)
                      if b in grid and b - 1 in grid]
            worst[trial_id] = min(deltas, default=math.nan)
        trials["worst_drop"] = trials["trial_id"].map(worst)
    return trials


def compare(trials: pd.DataFrame, fixed: dict[str, str], c: Comparison
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
        if c.value not in chosen.columns or not chosen["seed"].is_unique:
            return pd.Series(dtype=float)
        return chosen.set_index("seed")[c.value]
    d = (pick(c.a) - pick(c.b)).dropna()
    n = len(d)
    if n == 0:
        return math.nan, math.nan, 0
    return float(d.mean()), (t975(n - 1) * float(d.std()) / math.sqrt(n) if n > 1 else math.inf), n


def verdict(results: list[tuple[float, float, int]], signs: list[int],
            margins: list[float] | None = None) -> str:
    """HOLDS / FAILS / OPEN from each comparison's (mean, 95% half-width, seeds) and its
    claimed sign (0: within its margin of 0)."""
    holds, fails = [], []
    for (m, h, n), s, margin in zip(results, signs, margins or [0.0] * len(results)):
        if not n:
            holds.append(False)
            continue
        lo, hi = m - h, m + h
        if s == 0:
            holds.append(-margin < lo and hi < margin)
            fails.append(hi < -margin or lo > margin)
        else:
            holds.append(lo * s > 0 if s > 0 else hi * s > 0)
            fails.append(hi < 0 if s > 0 else lo > 0)
    if any(fails):
        return FAILS
    return HOLDS if all(holds) else OPEN


def judge(claim: Claim, folder: Path, cache: dict) -> str:
    """The claim's cell for one results folder: each comparison, then the verdict."""
    key = (folder, claim.study)
    if key not in cache:
        try:
            cache[key] = with_round_values(load_study(folder, claim.study))
        except MissingStudy:
            cache[key] = None
    trials = cache[key]
    if trials is None:
        return "not run"
    results = [compare(trials, claim.fixed, c) for c in claim.comparisons]
    parts = []
    for c, (m, h, n) in zip(claim.comparisons, results):
        k = SCALE.get(c.value, 1.0)
        unit = " (x 1e-3)" if k != 1.0 else ""
        parts.append(f"{c.label}{unit} {m * k:+.2f} ± {h * k:.2f} ({n})" if n else
                     f"{c.label}: not run")
    judged = verdict(results, [c.sign for c in claim.comparisons],
                     [c.margin for c in claim.comparisons])
    return "; ".join(parts) + f": **{judged}**"


def table(folders: list[Path]) -> str:
    cache: dict = {}
    head = "| claim | study | paper | " + " | ".join(f"`{f}`" for f in folders) + " |"
    lines = [head, "|" + "---|" * (3 + len(folders))]
    for claim in CLAIMS:
        cells = [judge(claim, f, cache) for f in folders]
        lines.append(f"| {claim.name} | `{claim.study}` | {claim.paper} | " + " | ".join(cells)
                     + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None, prog: str = "python -m analysis claims") -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("--results", type=Path, nargs="+", default=[Path("results")],
                   help="results folders, one column each (default: results/)")
    args = p.parse_args(argv)
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
