"""Aggregate over seeds: mean, sample standard deviation, count and a 95% interval.

The interval is Student's t: mean +- t(0.975, n-1) * std / sqrt(n), the usual choice for the 2-5
seeds a study affords (a normal 1.96 would understate it). With one seed there is no interval
(NaN), and the figures draw the mean alone.
"""
from __future__ import annotations

import math

import pandas as pd

from fcl.intervals import t975  # noqa: F401  (analysis' callers import it from here)


def seed_summary(df: pd.DataFrame, by: list[str], value: str) -> pd.DataFrame:
    """One row per combination of `by`: mean, std, n and ci95 (half-width) of `value` over the
    rows (seeds) in it. NaN values (e.g. rounds where a task was not evaluated) are ignored."""
    vals = pd.to_numeric(df[value], errors="coerce")
    frame = df[by].copy()
    frame["_v"] = vals
    frame = frame[frame["_v"].notna()]
    g = frame.groupby(by, dropna=False, sort=True)["_v"]
    out = g.agg(mean="mean", std="std", n="count").reset_index()
    out["ci95"] = [t975(int(n) - 1) * s / math.sqrt(n) if n > 1 else math.nan
                   for n, s in zip(out["n"], out["std"])]
    return out


def per_trial_round(rounds: pd.DataFrame, value: str, keys: list[str]) -> pd.DataFrame:
    """A round-level metric (stored once per task row) as one row per trial x round."""
    cols = list(dict.fromkeys(["trial_id", "round", *keys, value]))
    return rounds[cols].drop_duplicates(subset=["trial_id", "round"])

