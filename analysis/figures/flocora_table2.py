"""FLoCoRA's Table II "which layers train beside the adapters" from the stored `flocora_layers`
study: one row per layer choice, its trainable parameters, the bytes of the run (up + down, all
rounds and clients), ACC over seeds and the same-seed ACC difference from "FLoCoRA Vanilla"
(95% t-interval, `analysis/paired.py`).

How the paper's rows are read (`studies/flocora_layers.py`): "Vanilla" = adapters on every
convolution and on the final FC, the norms frozen; "+ Norm. Layers" = the norms trained too;
"+ Final FC" = the FC trained itself instead of through an adapter, norms trained (FLoCoRA's
default). Keys: `model.lora_on_head`, `model.lora_train_norms`.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis.figures.files import Produced, markdown_table, mean_pm, same_seed_diff, save_table
from analysis.flocora_regime import with_regime
from analysis.labels import over_seeds
from analysis.paired import paired
from analysis.seed_stats import seed_summary
from analysis.study_tables import Study, require

HEAD, NORMS = "model.lora_on_head", "model.lora_train_norms"
# (adapter on the FC, norms trained) -> the paper's row name, in its order
ROWS = {(True, False): "FLoCoRA Vanilla", (True, True): "+ Norm. Layers",
        (False, True): "+ Final FC"}
VANILLA = {HEAD: "true", NORMS: "false"}


def _row_name(head: bool, norms: bool) -> str:
    return ROWS.get((bool(head), bool(norms)),
                    f"adapter on FC {bool(head)}, norms trained {bool(norms)}")


def table_ii_stats(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per (FC adapter, norms trained): ACC over seeds, the same-seed difference from
    Vanilla (`d_acc`, `d_ci95`, `d_n`; 0 on Vanilla's own row), trainable parameters and MB."""
    t = trials.assign(**{HEAD: trials[HEAD].astype(bool), NORMS: trials[NORMS].astype(bool),
                         "tcc_mb": (trials["bytes_up"] + trials["bytes_down"]) / 1e6})
    keys = [HEAD, NORMS]
    stats = seed_summary(t, keys, "acc").rename(columns={
        "mean": "acc_mean", "std": "acc_std", "ci95": "acc_ci95", "n": "acc_n"})
    sizes = t.groupby(keys)[["trainable_params_per_task", "tcc_mb"]].mean().reset_index()
    stats = stats.merge(sizes, on=keys)
    has_vanilla = ((t[HEAD]) & (~t[NORMS])).any()
    if has_vanilla:
        diff = paired(t, VANILLA, ["acc"], keys).rename(
            columns={"acc diff": "d_acc", "acc ci95": "d_ci95", "acc n": "d_n"})
        stats = stats.merge(diff[[*keys, "d_acc", "d_ci95", "d_n"]], on=keys, how="left")
    else:
        stats = stats.assign(d_acc=float("nan"), d_ci95=float("nan"), d_n=0)
    is_vanilla = stats[HEAD] & ~stats[NORMS]
    stats.loc[is_vanilla, ["d_acc", "d_n"]] = [0.0, 0]
    stats["d_n"] = stats["d_n"].fillna(0).astype(int)
    stats["row"] = [_row_name(h, n) for h, n in zip(stats[HEAD], stats[NORMS])]
    order = {name: i for i, name in enumerate(ROWS.values())}
    stats["_order"] = [order.get(r, len(order)) for r in stats["row"]]
    return stats.sort_values("_order").drop(columns="_order").reset_index(drop=True)


def table_ii_flocora(study: Study, out: Path) -> Produced:
    """FLoCoRA Table II from `flocora_layers` as Markdown + CSV (`flocora_table2`)."""
    require(study.trials, (HEAD, NORMS, "acc", "bytes_up", "bytes_down",
                           "trainable_params_per_task"), "flocora_table2: trials.parquet")
    stats = table_ii_stats(study.trials)
    header = ["layers trained", "adapter on the FC", "norms trained", "trainable parameters",
              "TCC (MB)", "ACC (%)", "ACC - Vanilla, same seeds (95% CI)"]
    rows = [[r["row"], "yes" if r[HEAD] else "no (FC trained)", "yes" if r[NORMS] else "no",
             f"{int(round(r['trainable_params_per_task'])):,}", f"{r['tcc_mb']:.3f}",
             mean_pm(r["acc_mean"], r["acc_std"]),
             same_seed_diff(r, r[HEAD] and not r[NORMS])]
            for _, r in stats.iterrows()]
    md = (f"FLoCoRA Table II ({study.name}): which layers train beside the LoRA adapters; "
          f"trainable parameters of the model, total communication of the run (up + down, all "
          f"rounds and clients), ACC ({over_seeds(stats['acc_n'])}) and its same-seed "
          f"difference from Vanilla (mean and 95% t-interval over the seeds both ran).\n\n"
          + markdown_table(header, rows))
    paths = save_table(stats, md, out, "flocora_table2",
                       with_regime(study.provenance, study.trials))
    return Produced(paths, stats)
