"""Paired differences over seeds: each setting of a study against one reference setting, seed by
seed, so that the spread between seeds (a seed fixes the partition and the initialisation of
every setting alike) cancels out of the comparison.

    python -m analysis paired flocora_quantization --ref compression.bits=32
    python -m analysis paired flocora_rank_alpha --ref model.adapter=full --value acc bwt_f

For every setting (the config keys the study's manifest says it varies, seed aside) it prints,
per value, the mean of (setting - reference) over the seeds both ran, its 95% t-interval
half-width and the number of seeds, as a Markdown table. The reference must match one setting.
A study folder whose manifest is missing or disagrees with its files is refused in one line
(`analysis/study_folder.py`), exit code 2. Seeds whose trials ran on several kinds of machine
are named on stderr (`analysis/machine_mix.py`).
"""
from __future__ import annotations

import argparse
import math
import sys

import pandas as pd

from analysis.machine_mix import note
from analysis.output_paths import path_problem
from analysis.seed_stats import t975
from analysis.study_tables import (MissingStudy, SchemaError, fmt_value, load_study,
                                   varying_settings)
from fcl.cli_args import EXIT_USAGE


def matches(column: pd.Series, text: str) -> pd.Series:
    """Rows whose value reads as `text` (512 matches 512.0; strings compare as they are)."""
    if pd.api.types.is_bool_dtype(column):
        return column == (text.lower() in ("1", "true", "yes"))
    if pd.api.types.is_numeric_dtype(column):
        try:
            return pd.to_numeric(column) == float(text)
        except ValueError:
            return pd.Series(False, index=column.index)
    return column.astype(str) == text


def paired(trials: pd.DataFrame, ref: dict[str, str], values: list[str],
           study_keys: tuple[str, ...] | None = None) -> pd.DataFrame:
    """One row per setting other than the reference: for each value, mean / ci95 / n of the
    per-seed difference to the reference. `study_keys`: the keys the study varies
    (`Study.settings`; None: every config column that varies)."""
    keys = varying_settings(trials, keys=study_keys)    # seeds are what the pairs are made of
    unknown = [k for k in ref if k not in trials.columns]
    if unknown:
        raise ValueError(f"--ref {unknown[0]}: not a column of trials.parquet; allowed: "
                         f"{', '.join(keys)}")
    is_ref = pd.Series(True, index=trials.index)
    for key, text in ref.items():
        is_ref &= matches(trials[key], text)
    settings = trials.loc[is_ref, keys].drop_duplicates()
    if len(settings) != 1:
        raise ValueError(f"--ref {' '.join(f'{k}={v}' for k, v in ref.items())}: matches "
                         f"{len(settings)} settings; allowed: exactly one (add keys of "
                         f"{', '.join(keys)})")
    base = trials[is_ref].set_index("seed")[values]
    if not base.index.is_unique:
        raise ValueError("--ref: the reference has several trials per seed; allowed: one")
    rows = []
    for setting, group in trials[~is_ref].groupby(keys, dropna=False, sort=True):
        diff = group.set_index("seed")[values].sub(base).dropna(how="all")
        row = dict(zip(keys, setting if isinstance(setting, tuple) else (setting,)))
        for v in values:
            d = diff[v].dropna()
            n = len(d)
            row[f"{v} diff"] = d.mean() if n else math.nan
            row[f"{v} ci95"] = t975(n - 1) * d.std() / math.sqrt(n) if n > 1 else math.nan
            row[f"{v} n"] = n
        rows.append(row)
    return pd.DataFrame(rows)


def markdown(table: pd.DataFrame, values: list[str]) -> str:
    keys = [c for c in table.columns if not c.endswith((" diff", " ci95", " n"))]
    head = "| " + " | ".join(keys + [f"{v} - ref (95% CI, n)" for v in values]) + " |"
    lines = [head, "|" + "---|" * (len(keys) + len(values))]
    for _, r in table.iterrows():
        cells = [fmt_value(r[k]) for k in keys]
        cells += [f"{r[f'{v} diff']:+.2f} ± {r[f'{v} ci95']:.2f} ({int(r[f'{v} n'])})"
                  for v in values]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None, prog: str = "python -m analysis paired") -> int:
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("study", help="a study stored under --results (e.g. flocora_quantization)")
    p.add_argument("--ref", nargs="+", required=True, metavar="KEY=VALUE",
                   help="the reference setting, by the config keys that pick it out")
    p.add_argument("--value", nargs="+", default=["acc"], help="columns to compare (acc)")
    p.add_argument("--results", default="results")
    args = p.parse_args(argv)
    long = path_problem(args.results, "--results")        # is_dir() raises on it
    if long:
        print(f"error: {long}", file=sys.stderr)
        return EXIT_USAGE
    try:
        ref = dict(pair.split("=", 1) for pair in args.ref)
    except ValueError:
        print(f"error: --ref {' '.join(args.ref)}: not KEY=VALUE pairs", file=sys.stderr)
        return EXIT_USAGE
    try:
        study = load_study(args.results, args.study)
        bad = [v for v in args.value if v not in study.trials.columns]
        if bad:
            raise ValueError(f"--value {bad[0]}: not a column of trials.parquet; allowed: "
                             "acc, bwt_f, ...")
        table = paired(study.trials, ref, args.value, study.settings)
    except (MissingStudy, SchemaError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_USAGE
    mixed = note(args.study, study.trials)
    if mixed:
        print(mixed, file=sys.stderr)
    print(markdown(table, args.value))
    return 0
