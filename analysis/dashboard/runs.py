"""The run data behind the dashboard's run table, run overlay and group-by charts: one "run set"
per study and results folder, embedded once in the page and drawn by its script.

A run set holds every trial stored in `trials.parquet` (failed and early-stopped ones included):
its status (`finished`, `stopped early`, `failed`, `diverged`), the config keys that differ
between its trials (the manifest's `varying` first, then `seed`, then any other), its summary
metrics, and two curves per trial: the mean accuracy over the tasks evaluated at each evaluated
round, and client drift (Eq. 2) at every round. The config every trial shares is stored once
(`fixed`), so the settings diff of any two runs (in one study or across results folders) shows
every key, the differing ones marked.
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from analysis.forgetting import COLUMNS as FORGETTING
from analysis.study_tables import Study, fmt_value, is_config_key
from fcl.manifest import dataset_label
from fcl.results_io import EARLY_STOPPED, ERROR, TERMINATED, as_today

# trials.parquet column -> (the table's label, digits kept); bytes are shown in MB
METRICS = {"acc": ("ACC (%)", 4), "bwt_f": ("BWT_f (points)", 4),
           "mean_drop": ("mean drop at a boundary (points)", 4),
           "drop_share": ("boundary terms dropping > 5 points (%)", 4),
           "forgetting": ("best - final forgetting (points)", 4),
           "drift_mean": ("mean drift", 4), "mb": ("MB sent", 4), "wall_s": ("wall (s)", 3),
           "rounds_done": ("rounds completed", 0)}
PLUMBING = ("data.root", "run.device", "run.threads")
STATUS_WORDS = {TERMINATED: "finished", EARLY_STOPPED: "stopped early", ERROR: "failed"}


def cell(value):
    """A Parquet cell as JSON: numbers to 4 significant digits, text as text, null as None."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return float(f"{value:.4g}")
    return str(value)


def status_of(row: pd.Series) -> str:
    raw = str(row.get("status", ""))
    if raw == EARLY_STOPPED:
        return STATUS_WORDS[raw]
    acc = pd.to_numeric(pd.Series([row.get("acc")]), errors="coerce").iloc[0]
    if raw == ERROR or pd.isna(acc):
        return "failed"
    diverged = row.get("diverged")
    if diverged is not None and not pd.isna(diverged) and bool(diverged):
        return "diverged"
    return STATUS_WORDS.get(raw, raw.lower() or "?")


def setting_keys(raw: pd.DataFrame, varying: tuple[str, ...]) -> list[str]:
    """The config keys whose values differ between the trials: the manifest's first, then
    `seed`, then the rest in column order."""
    differ = [c for c in raw.columns if is_config_key(c) and c not in PLUMBING
              and raw[c].astype(str).nunique(dropna=False) > 1]
    first = [k for k in varying if k in differ and k != "seed"]
    return first + (["seed"] if "seed" in raw else []) + \
        [k for k in differ if k not in first and k != "seed"]


def curves(folder: Path) -> dict[str, dict[str, list]]:
    """trial_id -> {"acc": [[round], [mean accuracy]], "drift": [[round], [drift]]} from
    rounds.parquet (its `mean_acc` where `evaluated`, and `drift`)."""
    path = folder / "rounds.parquet"
    if not path.is_file():
        return {}
    rounds = pd.read_parquet(path)
    evaluated = rounds["evaluated"].fillna(False).astype(bool)
    acc = rounds[evaluated & rounds["mean_acc"].notna()][["trial_id", "round", "mean_acc"]]
    drift = rounds[["trial_id", "round", "drift"]]
    out: dict[str, dict[str, list]] = {}
    for name, frame, col in (("acc", acc, "mean_acc"), ("drift", drift, "drift")):
        for tid, g in frame.sort_values("round").groupby("trial_id", sort=False):
            g = g[pd.to_numeric(g[col], errors="coerce").notna()]
            out.setdefault(str(tid), {})[name] = [[int(r) for r in g["round"]],
                                                  [cell(float(v)) for v in g[col]]]
    return out


def run_set(study: Study, folder_label: str) -> dict:
    """The study's run set (see the module docstring), labelled with its results folder,
    preset and data set. Its config columns are spelled as today's (`as_today`: keys added
    since at their defaults, old bools as `true`/`false`), so folders stored apart compare."""
    raw = as_today(pd.read_parquet(study.folder / "trials.parquet"))
    if "model.weights" in raw:        # a path as its file's name (its folder is the machine's
        # that ran it); a shipped backbone, `fcl:NAME`, as it is
        raw["model.weights"] = raw["model.weights"].map(
            lambda w: Path(w).name if isinstance(w, str) and w else w)
    keys = setting_keys(raw, study.settings)
    fixed = {c: cell(raw[c].iloc[0]) for c in raw.columns
             if is_config_key(c) and c not in keys and c not in PLUMBING}
    measured = [c for c in FORGETTING if c in study.trials and c not in raw]
    if measured:              # computed from tasks.parquet for the completed trials
        raw = raw.merge(study.trials[["trial_id", *measured]], on="trial_id", how="left")
    raw = raw.assign(mb=(pd.to_numeric(raw["bytes_up"], errors="coerce")
                         + pd.to_numeric(raw["bytes_down"], errors="coerce")) / 1e6)
    if "round_reached" in raw:   # a count, as a run's progress line counts: 25 of 25, not 24
        raw = raw.assign(rounds_done=pd.to_numeric(raw["round_reached"], errors="coerce") + 1)
    metrics = [m for m in METRICS if m in raw and pd.to_numeric(raw[m], errors="coerce")
               .notna().any()]
    found = curves(study.folder)
    rows = []
    for _, r in raw.iterrows():
        tid = str(r["trial_id"])
        value = r["acc"] if pd.notna(r.get("acc")) else r.get("acc_reached")
        rows.append({"id": tid, "status": status_of(r),
                     "s": [cell(r[k]) for k in keys],
                     "m": [cell(value) if m == "acc" else cell(r[m]) for m in metrics],
                     **found.get(tid, {})})
    names = raw.get("data.name", pd.Series(["?"] * len(raw)))
    roots = raw.get("data.root", pd.Series([""] * len(raw)))
    datasets = sorted({dataset_label(n, r) for n, r in zip(names, roots)})
    m = study.manifest
    return {"study": study.name, "folder": folder_label, "preset": m.preset or "?",
            "dataset": ", ".join(datasets) or m.dataset or "?", "commit": m.commits,
            "varying": [k for k in study.settings if k in keys and k != "seed"],
            "keys": keys, "metrics": metrics, "metric_labels": [METRICS[k][0] for k in metrics],
            "fixed": fixed, "rows": rows}


def base_differences(sets: list[dict]) -> list[str]:
    """`model.pretrained: False | True`: the shared settings that differ between run sets of
    one study stored in several folders (why their numbers differ), in key order. A key a set
    varies reads `varies` there; a key a set does not hold at all is no difference; values
    compare as they are shown (`False` and `false`, `1000` and `1000.0` are the same)."""
    keys = sorted({k for s in sets for k in s["fixed"]})
    out = []
    for k in keys:
        if k == "seed" or any(k not in s["fixed"] and k not in s["keys"] for s in sets):
            continue
        shown = [shown_value(s["fixed"][k]) if k in s["fixed"] else "varies" for s in sets]
        if len(set(shown)) > 1:
            out.append(f"{k}: " + " | ".join(shown))
    return out


def shown_value(value) -> str:
    """A setting as the side-by-side view writes it: `(none)`, a bool in lower case, a number
    as `fmt_value` spells it."""
    if value is None or value == "":
        return "(none)"
    return str(value).lower() if isinstance(value, bool) else fmt_value(value)
