"""Reading stored studies: the two steps of `analysis.study_tables.load_study` that cost the most,
each as it is against as it was, on every stored study.

    python benchmarks/analysis_load.py [--results results results-pretrained ...] [--reps 3]

- `fcl.results_io.methods_as_today` (each stored table's method names as today's registry spells
  them) looks up each distinct model config once; it was one lookup per row, and a rounds table
  repeats its trial's config on every row.
- `analysis.forgetting.forgetting_columns` (mean drop, drop share, forgetting per trial) cuts the
  per-task rounds to the four columns it reads before splitting them per trial, and fills the
  accuracy matrix from numpy arrays; it split the whole rounds table (every setting merged in)
  and ran pandas' dropna and groupby per trial.

Each pair runs interleaved, best of `--reps`, its outputs checked equal (`DataFrame.equals`).
Prints one line per step: the tables, the seconds both ways and the ratio.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analysis import forgetting  # noqa: E402
from analysis.study_tables import per_task_rounds  # noqa: E402
from fcl import forgetting as measures  # noqa: E402
from fcl.methods.registry import method_of  # noqa: E402
from fcl.results_io import methods_as_today  # noqa: E402

FOLDERS = ("results", "results-pretrained", "results-drift", "results-lowrank")


def methods_row_by_row(rows: pd.DataFrame) -> pd.DataFrame:
    """`methods_as_today` as it was: `method_of` on every row."""
    if "model.adapter" not in rows or not len(rows):
        return rows
    model = rows[[c for c in rows if c.startswith("model.")]].to_dict("records")
    names = [method_of(row).name for row in model]
    if names == rows["model.adapter"].tolist():
        return rows
    out = rows.copy()
    out["model.adapter"] = pd.Series(names, index=rows.index, dtype=rows["model.adapter"].dtype)
    return out


def forgetting_by_pandas(trials: pd.DataFrame, tasks: pd.DataFrame) -> pd.DataFrame:
    """`forgetting_columns` as it was: the whole table split per trial, pandas per trial."""
    by_trial = dict(list(tasks.groupby("trial_id")))
    rows = []
    for trial_id, rounds, num_tasks in zip(trials["trial_id"], trials["rounds"],
                                           trials["data.num_tasks"]):
        rows.append({"trial_id": trial_id, **_measures_by_pandas(by_trial.get(trial_id),
                                                                 int(rounds), int(num_tasks))})
    return pd.DataFrame(rows, columns=["trial_id", *forgetting.COLUMNS])


def _measures_by_pandas(tasks: pd.DataFrame | None, rounds: int, num_tasks: int) -> dict:
    q = rounds // num_tasks if num_tasks else 0
    if tasks is None or q < 1 or rounds // q < 2:
        return dict.fromkeys(forgetting.COLUMNS, math.nan)
    A = np.full((num_tasks, rounds), math.nan)
    acc = tasks.dropna(subset=["accuracy"])
    A[acc["task"].to_numpy(int), acc["round"].to_numpy(int)] = acc["accuracy"].to_numpy(float)
    updated = tasks[tasks["reports"] > 0].groupby("task")["round"].min()
    first = [float(updated.get(t, math.inf)) for t in range(num_tasks)]
    changes = measures.boundary_changes(A, q, first,
                                        forgetting._held(tasks, num_tasks, rounds))
    return {"mean_drop": measures.mean_drop(changes), "drop_share": measures.drop_share(changes),
            "forgetting": measures.forgetting(A, first, q)}


def stored_tables(folders: list[str]) -> list[pd.DataFrame]:
    return [pd.read_parquet(p) for f in folders for p in sorted((ROOT / f).rglob("*.parquet"))
            if ".tune" not in p.parts]


def forgetting_inputs(folders: list[str]) -> list[tuple[pd.DataFrame, pd.DataFrame]]:
    """(trials, per-task rounds with every setting merged in, as `load_study` passes them)."""
    out = []
    for f in folders:
        for tasks_file in sorted((ROOT / f).rglob("tasks.parquet")):
            folder = tasks_file.parent
            trials = pd.read_parquet(folder / "trials.parquet")
            rounds = per_task_rounds(folder)
            if rounds is None or "data.num_tasks" not in trials:
                continue
            settings = [c for c in trials if "." in c and c not in rounds]
            rounds = rounds.merge(trials[["trial_id", *settings]], on="trial_id", how="left")
            out.append((trials, rounds.rename(columns={"task_reports": "reports"})))
    return out


def timed(fn, inputs) -> tuple[float, list]:
    t0 = time.perf_counter()
    out = [fn(*args) for args in inputs]
    return time.perf_counter() - t0, out


def compare(name: str, old, new, inputs, reps: int) -> bool:
    t_old, t_new = math.inf, math.inf
    for _ in range(reps):                     # interleaved: load drifts hit both alike
        a, out_old = timed(old, inputs)
        b, out_new = timed(new, inputs)
        t_old, t_new = min(t_old, a), min(t_new, b)
    equal = all(x.equals(y) for x, y in zip(out_old, out_new))
    print(f"{name}: {len(inputs)} tables, {t_old:.2f} s as it was, {t_new:.2f} s as it is, "
          f"{t_old / t_new:.1f}x; outputs equal: {'yes' if equal else 'NO'}")
    return equal


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--results", nargs="+", default=list(FOLDERS))
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args(argv)
    tables = [(t,) for t in stored_tables(args.results) if "model.adapter" in t]
    ok = compare("methods_as_today", methods_row_by_row, methods_as_today, tables, args.reps)
    ok &= compare("forgetting_columns", forgetting_by_pandas, forgetting.forgetting_columns,
                  forgetting_inputs(args.results), args.reps)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
