"""Tables 3 and 4 of the FCL paper from stored studies, as Markdown (like the paper) and CSV
(tidy: one row per setting, mean/std/ci95/n per metric).

How the paper is read:
- Table 3 "top two optimizers achieving high accuracy and low BWT_f for each dataset": within each
  data set and server learning rate eta, the two optimizers with the highest mean ACC are marked,
  and separately the two with the highest mean BWT_f (the smallest drop). Marked cells are bold.
- Table 4 "model size and communication cost per round (C2S + S2C)": the paper's "Ours" row is
  asynchronous FCL with FedAdam at eta = 0.5, so those trials are used when the study holds them.
  Model size is the trainable task modules (float32 parameters, per task and times T); the frozen
  backbone's size is not in the Parquet. C2S / S2C are the run's bytes up / down divided by R:
  all clients together, exactly what the encoder counted (parameters plus norm statistics).
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from analysis.figures.files import Produced, markdown_table, mean_pm, save_table
from analysis.labels import OPTIMIZER_LABELS, over_seeds
from analysis.seed_stats import seed_summary
from analysis.study_tables import Study, fmt_value, require

METRICS = ("acc", "bwt_f")


def _metric_stats(df: pd.DataFrame, keys: list[str], metrics=METRICS) -> pd.DataFrame:
    """One row per `keys` with `<metric>_mean/_std/_ci95/_n` for each metric (ACC, BWT_f)."""
    out = None
    for m in metrics:
        s = seed_summary(df, keys, m).rename(columns={c: f"{m}_{c}" for c in
                                                     ("mean", "std", "n", "ci95")})
        out = s if out is None else out.merge(s, on=keys, how="outer")
    return out


def _optimizer_rank(name: str) -> int:
    names = list(OPTIMIZER_LABELS)
    return names.index(name) if name in names else len(names)


def table3(study: Study, out: Path) -> Produced:
    """ACC and BWT_f per data set x optimizer x eta (columns eta = 1.0, 0.5, 0.1 as the paper)."""
    trials = study.trials
    require(trials, ("server.optimizer", "server.lr"), "table3: trials.parquet")
    extra = study.varying(trials, exclude=("dataset", "server.optimizer", "server.lr"))
    block = ["dataset", *extra]
    # beside BWT_f (a signed sum, where gains cancel drops): the share of boundary terms that
    # lose more than 5 points (`analysis/forgetting.py`), where the study stores its tasks
    drops = ("drop_share",) if trials.get("drop_share", pd.Series(dtype=float)).notna().any() \
        else ()
    stats = _metric_stats(trials, [*block, "server.optimizer", "server.lr"], (*METRICS, *drops))
    for m in METRICS:     # top two within each data set (and other setting) at each eta
        rank = stats.groupby([*block, "server.lr"], dropna=False)[f"{m}_mean"].rank(
            ascending=False, method="min")
        stats[f"{m}_top2"] = rank <= 2
    stats = stats.sort_values([*block, "server.optimizer", "server.lr"],
                              key=lambda s: s.map(_optimizer_rank) if s.name ==
                              "server.optimizer" else s).reset_index(drop=True)

    etas = sorted(stats["server.lr"].unique(), reverse=True)
    header = ["data set", *extra, "optimizer",
              *[f"ACC η={fmt_value(e)}" for e in etas], *[f"BWT_f η={fmt_value(e)}" for e in etas],
              *[f"drops > 5 (%) η={fmt_value(e)}" for e in etas if drops]]
    rows = []
    for key, g in stats.groupby([*block, "server.optimizer"], dropna=False, sort=False):
        by_eta = g.set_index("server.lr")
        cells = []
        for m in (*METRICS, *drops):
            for e in etas:
                if e not in by_eta.index:
                    cells.append("-")
                    continue
                r = by_eta.loc[e]
                text = mean_pm(r[f"{m}_mean"], r[f"{m}_std"])
                cells.append(f"**{text}**" if r.get(f"{m}_top2", False) else text)
        *blk, opt = key
        rows.append([*map(fmt_value, blk), OPTIMIZER_LABELS.get(opt, opt), *cells])
    drop_note = (" 'drops > 5': the percent of BWT_f's terms (a task trained before a phase "
                 "boundary, at that boundary) that lose more than 5 points; BWT_f's signed sum "
                 "lets gains cancel them." if drops else "")
    md = (f"Table 3 ({study.name}): ACC (%) and BWT_f (points), {over_seeds(stats['acc_n'])}; "
          f"bold = top two per data set and η.{drop_note}\n\n" + markdown_table(header, rows))
    return Produced(save_table(stats, md, out, "table3", study.provenance), stats)


# The FCL paper's Table 4 (CIFAR-100, ResNet-18), quoted beside measured rows, never measured:
# (method, ACC %, BWT_f, model size MB, C2S MB, S2C MB per round). BWT_f is signed as Eq. 10 and
# the measured rows (negative: a drop): Table 4 prints the magnitude, "0.84%", and Table 3 gives
# the same run (CIFAR100, FedAdam, eta 0.5: ACC 80.04) its sign, -0.84.
PAPER_TABLE4 = (("NetTailor + FedAdam, the FCL paper (quoted)", 80.04, -0.84, 90.0, 4.7, 4.7),
                ("FedWeIT, the FCL paper (quoted)", 55.16, math.nan, 75.0, 18.5, 53.5))
METHOD_KEYS = ("model.adapter", "server.optimizer", "server.lr")


def table4(study: Study, out: Path, beside: list[Study] = ()) -> Produced:
    """Accuracy, BWT_f, task-module size and communication per round; from a study of several
    continual methods (`studies/fcl_methods.py`), one row per method (`table4_methods`), with
    the same study stored `beside` (another backbone) under it."""
    trials = study.trials
    if "model.adapter" in trials.columns and trials["model.adapter"].nunique() > 1:
        return table4_methods(study, out, beside)
    require(trials, ("bytes_up", "bytes_down", "rounds", "trainable_params_per_task",
                     "data.num_tasks", "data.num_clients"), "table4: trials.parquet")
    if {"server.optimizer", "server.lr"} <= set(trials.columns):
        paper = trials[(trials["server.optimizer"] == "fedadam") & (trials["server.lr"] == 0.5)]
        trials = paper if len(paper) else trials
    t = trials.assign(
        module_mb=trials["trainable_params_per_task"] * 4 / 1e6,
        modules_mb=trials["trainable_params_per_task"] * 4 * trials["data.num_tasks"] / 1e6,
        c2s_mb_per_round=trials["bytes_up"] / trials["rounds"] / 1e6,
        s2c_mb_per_round=trials["bytes_down"] / trials["rounds"] / 1e6)
    keys = ["dataset", *study.varying(t, exclude=("dataset",))]
    stats = _metric_stats(t, keys)
    size_cols = ("module_mb", "modules_mb", "c2s_mb_per_round", "s2c_mb_per_round",
                 "data.num_tasks", "data.num_clients")
    sizes = t.groupby(keys, dropna=False)[list(size_cols)].mean().reset_index()
    stats = stats.merge(sizes, on=keys)
    header = ["data set", *keys[1:], "ACC (%)", "BWT_f", "task module (MB)",
              "T x modules (MB)", "C2S + S2C per round (MB)"]
    rows = [[*map(fmt_value, (r[k] for k in keys)), mean_pm(r["acc_mean"], r["acc_std"]),
             mean_pm(r["bwt_f_mean"], r["bwt_f_std"]), f"{r['module_mb']:.4f}",
             f"{r['modules_mb']:.4f} (T={int(r['data.num_tasks'])})",
             f"{r['c2s_mb_per_round']:.4f} + {r['s2c_mb_per_round']:.4f} "
             f"(N={int(r['data.num_clients'])})"] for _, r in stats.iterrows()]
    md = (f"Table 4 ({study.name}; FedAdam η=0.5 where present): {over_seeds(stats['acc_n'])}. "
          f"Sizes are float32 trainable task modules (backbone not stored); communication is "
          f"all clients' bytes per round as encoded.\n\n" + markdown_table(header, rows))
    return Produced(save_table(stats, md, out, "table4", study.provenance), stats)


def table4_methods(study: Study, out: Path, beside: list[Study] = ()) -> Produced:
    """Table 4 over methods: per (preset, adapter, server optimizer, eta) ACC, BWT_f, the model
    one client stores and C2S + S2C per round and sampled client, exactly as encoded; the
    paper's two rows quoted under them. `beside`: the same study from other folders (the
    random backbone beside the pretrained one), its rows under the first study's.

    Model size, float32 and a function of the config (`fcl.communication.params_report`):
    "own" is what a client trains and keeps for itself (the backbone, or FedWeIT's B, and every
    task's module: FedWeIT's masks, adaptive kernels, norms and head, counted dense); "with
    KB" adds FedWeIT's knowledge bases, one slot per client for every task but the first, as
    the official code holds them (the other methods keep none: the same number)."""
    from fcl.federated.participation import num_sampled
    parts = []
    for s in (study, *beside):
        trials = s.trials
        require(trials, ("bytes_up", "bytes_down", "rounds", "data.num_clients",
                         "participation.fraction", *METHOD_KEYS), "table4: trials.parquet")
        parts.append(trials.assign(preset=s.manifest.preset or "?"))
    trials = pd.concat(parts, ignore_index=True)
    clients = [num_sampled(f, n) for f, n in zip(trials["participation.fraction"],
                                                 trials["data.num_clients"])]
    per = trials["rounds"] * pd.Series(clients, index=trials.index)
    t = trials.assign(c2s_mb_per_round=trials["bytes_up"] / per / 1e6,
                      s2c_mb_per_round=trials["bytes_down"] / per / 1e6)
    keys = ["preset", "dataset", *METHOD_KEYS]
    stats = _metric_stats(t, keys)
    comm = t.groupby(keys, dropna=False, sort=False)[["c2s_mb_per_round",
                                                      "s2c_mb_per_round"]].mean()
    stats = stats.merge(comm.reset_index(), on=keys)
    order = {p: i for i, p in enumerate(dict.fromkeys(t["preset"]))}
    stats = stats.sort_values("preset", key=lambda c: c.map(order), kind="stable")
    sizes = model_sizes(t, keys)
    stats["model_mb_own"] = [sizes[tuple(r[k] for k in keys)][0]
                             for r in stats.to_dict("records")]
    stats["model_mb"] = [sizes[tuple(r[k] for k in keys)][1] for r in stats.to_dict("records")]
    header = ["method", "preset", "data set", "ACC (%)", "BWT_f", "model size, own (MB)",
              "with KB (MB)", "C2S + S2C per round and client (MB)"]
    rows = [[f"{r['model.adapter']} + {r['server.optimizer']} η={fmt_value(r['server.lr'])}",
             str(r["preset"]), str(r["dataset"]), mean_pm(r["acc_mean"], r["acc_std"]),
             mean_pm(r["bwt_f_mean"], r["bwt_f_std"]), f"{r['model_mb_own']:.3f}",
             f"{r['model_mb']:.3f}", f"{r['c2s_mb_per_round']:.4f} + "
             f"{r['s2c_mb_per_round']:.4f}"] for _, r in stats.iterrows()]
    rows += [[name, "-", "cifar100", f"{a:.2f}", fmt_value(b), f"{size:g}", "-",
              f"{c2s:g} + {s2c:g}"] for name, a, b, size, c2s, s2c in PAPER_TABLE4]
    provenance = "\n".join(s.provenance for s in (study, *beside))
    md = (f"Table 4 ({study.name}): {over_seeds(stats['acc_n'])}; the last two rows are quoted "
          f"from the FCL paper (CIFAR-100, ResNet-18), not measured. BWT_f of FedWeIT compares "
          f"a task across a boundary on the clients that held it before "
          f"(`model.fedweit_bwt_clients`). Model size: what one client stores, float32, dense; "
          f"own = its backbone or B and every task's module; with KB = also FedWeIT's "
          f"knowledge bases. Communication: bytes as encoded, per round and sampled "
          f"client.\n\n" + markdown_table(header, rows))
    return Produced(save_table(stats, md, out, "table4", provenance), stats)


def model_sizes(trials: pd.DataFrame, keys: list[str]) -> dict[tuple, tuple[float, float]]:
    """Per setting of `keys`, the model one client stores in MB, (own, with FedWeIT's knowledge
    bases), from its config (`fcl.communication.params_report`)."""
    from fcl.communication import params_report
    from fcl.config import field_types, from_flat
    config_keys = field_types()
    sizes = {}
    for row in trials.groupby(keys, dropna=False).head(1).to_dict("records"):
        rep = params_report(from_flat({k: v for k, v in row.items()
                                       if k in config_keys and not pd.isna(v)}))
        sizes[tuple(row[k] for k in keys)] = (rep["client_model_bytes_own"] / 1e6,
                                              rep["client_model_bytes"] / 1e6)
    return sizes
