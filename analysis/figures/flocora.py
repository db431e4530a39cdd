"""FLoCoRA's Fig. 2, Fig. 3 and Table III from the stored FLoCoRA studies.

Keys: `model.adapter` (`lora`, or `full` = the FedAvg baseline training the whole
model), `model.lora_rank`, `model.lora_alpha`, `compression.bits` (32 = full precision).

How the paper is read:
- Fig. 2 "accuracy vs rank for alpha = 2r and 16r vs FedAvg": final ACC against r for each ratio
  alpha / r the study holds; non-LoRA trials are drawn as horizontal bands (mean +- 95% CI); and,
  where the study ran FedAvg, a row below of each setting's ACC minus FedAvg's of the same seed
  (paired 95% t-interval), the comparison the paper's claim makes.
- Fig. 3 "accuracy over rounds, FedAvg, FP and quantized": the mean accuracy over tasks at every
  evaluated round, one curve per adapter x bit width, one panel per payload; the full-precision
  run (the same run for both payloads) is drawn in each, and so is full-model FedAvg (black,
  dashed) from `flocora_rank_alpha` where that study is stored and ran the same recipe.
- Table III "TCC": total communication cost of the run, bytes up + bytes down over all rounds and
  clients (scales and zero points included, as the encoder counts them). The reduction factor is
  against full-model FedAvg of the same run, as the paper's: the bytes FedAvg of the whole model
  sends (`full_fedavg_bytes`, counted by the encoder in every trial); its ACC is the row of
  `flocora_rank_alpha`'s FedAvg trials where stored.
- Table IV: `analysis.figures.flocora_table4`.
"""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import MaxNLocator

from analysis.figures.curves import VALUE_RANGE, clip_axis, curve_stats, draw_band, panels, tag
from analysis.figures.files import Produced, markdown_table, mean_pm, save_figure, save_table
from analysis.flocora_regime import with_regime
from analysis.labels import adapter_label, bits_label, over_seeds
from analysis.paired import paired
from analysis.seed_stats import per_trial_round, seed_summary
from analysis.study_tables import Study, fmt_value, require

LORA_KEYS = ("model.adapter", "model.lora_rank", "model.lora_alpha")
BITS = "compression.bits"
PAYLOAD = "compression.payload"      # values (the paper) or delta: a column of Table III


def fig2_flocora(study: Study, out: Path) -> Produced:
    """Final accuracy against LoRA rank, one line per alpha / r, baselines as bands (top row);
    below, where the study holds full-model FedAvg, each LoRA setting's ACC minus FedAvg's of
    the same seed with its paired 95% t-interval (the seed spread every setting shares cancels:
    the top row's unpaired bands overstate how uncertain a comparison with FedAvg is)."""
    trials = study.trials
    require(trials, LORA_KEYS, "flocora_fig2: trials.parquet")
    trials = trials.assign(alpha_ratio=trials["model.lora_alpha"] / trials["model.lora_rank"])
    axes = ("model.adapter", "model.lora_rank", "model.lora_alpha", "alpha_ratio")
    facets = study.facets(trials, axes)
    has_fedavg = bool((trials["model.adapter"] == "full").any())
    fig, grid = plt.subplots(1 + has_fedavg, len(facets), figsize=(5.5 * len(facets),
                             3.6 * (1 + has_fedavg)), squeeze=False)
    summaries = []
    for col, (title, df) in enumerate(facets):
        ax = grid[0][col]
        summaries += _draw_fig2_acc(ax, df, title)
        if has_fedavg:
            summaries += _draw_fig2_paired(grid[1][col], df, title, study.settings)
    data = pd.concat(summaries, ignore_index=True)
    fig.suptitle(f"FLoCoRA Fig. 2: accuracy vs rank ({study.name}; "
                 f"{over_seeds(data['n'].dropna(), 'and 95% CI')})")
    paths = save_figure(fig, out, "flocora_fig2", with_regime(study.provenance, study.trials))
    return Produced(paths, data)


def _rank_axis(ax, df: pd.DataFrame) -> None:
    ranks = sorted(df.loc[df["model.adapter"] == "lora", "model.lora_rank"].unique())
    if ranks:
        ax.set_xscale("log", base=2)
        ax.set_xticks(ranks, [fmt_value(r) for r in ranks])
        ax.minorticks_off()


def _draw_fig2_acc(ax, df: pd.DataFrame, title: str) -> list[pd.DataFrame]:
    """ACC against rank per alpha / r (mean, unpaired 95% CI), other adapters as bands."""
    on = df["model.adapter"] == "lora"
    stats = seed_summary(df[on], ["alpha_ratio", "model.lora_rank"], "acc")
    for ratio, s in stats.groupby("alpha_ratio"):
        ax.errorbar(s["model.lora_rank"], s["mean"], yerr=s["ci95"].fillna(0), marker="o",
                    capsize=3, label=f"FLoCoRA α={fmt_value(ratio)}r")
    base = seed_summary(df[~on], ["model.adapter"], "acc")
    for _, b in base.iterrows():
        line = ax.axhline(b["mean"], linestyle="--", color="black",
                          label=f"{adapter_label(b['model.adapter'])} ({b['model.adapter']})")
        ci = 0 if math.isnan(b["ci95"]) else b["ci95"]
        ax.axhspan(b["mean"] - ci, b["mean"] + ci, color=line.get_color(), alpha=0.1)
    _rank_axis(ax, df)
    ax.set(xlabel="LoRA rank r", ylabel="ACC (%)", title=title)
    ax.legend(fontsize=8)
    return [tag(stats.assign(**{"model.adapter": "lora"}), title), tag(base, title)]


def _draw_fig2_paired(ax, df: pd.DataFrame, title: str, keys: tuple[str, ...]
                      ) -> list[pd.DataFrame]:
    """ACC minus FedAvg's of the same seed per rank and alpha / r, paired 95% t-interval."""
    lora = df[df["model.adapter"].isin(("lora", "full"))]
    if not (lora["model.adapter"] == "full").any():
        ax.set_visible(False)
        return []
    diff = paired(lora, {"model.adapter": "full"}, ["acc"],
                  tuple(k for k in keys if k in lora))
    diff = diff[diff["model.adapter"] == "lora"].assign(
        alpha_ratio=lambda d: d["model.lora_alpha"] / d["model.lora_rank"])
    for ratio, s in diff.sort_values("model.lora_rank").groupby("alpha_ratio"):
        ci = s["acc ci95"].where(s["acc n"] >= 2).fillna(0)
        ax.errorbar(s["model.lora_rank"], s["acc diff"], yerr=ci, marker="o", capsize=3,
                    label=f"FLoCoRA α={fmt_value(ratio)}r")
    ax.axhline(0.0, color="black", linestyle="--", linewidth=0.8,
               label="FedAvg (full), the same seed")
    _rank_axis(ax, df)
    ax.set(xlabel="LoRA rank r", ylabel="ACC - FedAvg's, same seed (points)",
           title=f"{title}{', ' if title else ''}paired 95% CI")
    ax.legend(fontsize=8)
    table = diff.rename(columns={"acc diff": "d_acc", "acc ci95": "d_ci95", "acc n": "d_n"})
    return [tag(table[["alpha_ratio", "model.lora_rank", "d_acc", "d_ci95", "d_n"]]
                .assign(**{"model.adapter": "lora - full"}), title)]


def _config_label(key: tuple) -> str:
    adapter, rank, bits = key
    r = "" if adapter != "lora" or rank is None or (isinstance(rank, float) and math.isnan(rank)) \
        else f" r={int(rank)}"
    return f"{adapter_label(adapter)}{r} {bits_label(bits)}"


NOT_RECIPE = ("seed", "model.adapter", "model.lora_rank", "model.lora_alpha")


def fedavg_reference(study: Study, refs: dict[str, Study] | None) -> Study | None:
    """The reference study (`flocora_rank_alpha`) whose full-model FedAvg trials ran the same
    recipe as `study` (every config key but the adapter's, the message's and the machine's
    agrees), or None."""
    ours = study.trials
    for ref in (refs or {}).values():
        if "model.adapter" not in ref.trials or not (ref.trials["model.adapter"] == "full").any():
            continue
        full = ref.trials[ref.trials["model.adapter"] == "full"]
        keys = [k for k in full.columns if "." in k or k == "rounds"]
        keys = [k for k in keys if k in ours and k not in NOT_RECIPE
                and not k.startswith(("compression.", "run.", "eval.batch"))]
        if all(set(full[k].astype(str)) == set(ours[k].astype(str)) for k in keys):
            return ref
    return None


def _mean_acc(study: Study) -> pd.DataFrame:
    rounds = study.need_rounds("flocora_fig3")
    require(rounds, (*LORA_KEYS, "mean_acc"), f"flocora_fig3: {study.folder}/rounds.parquet")
    settings = [c for c in rounds.columns if "." in c or c in ("rounds", "dataset")]
    df = per_trial_round(rounds, "mean_acc", settings)
    return df[df["mean_acc"].notna()]


def fig3_flocora(study: Study, out: Path, refs: dict[str, Study] | None = None) -> Produced:
    """Mean accuracy over tasks at every evaluated round: FedAvg, FP and quantized LoRA."""
    df = _mean_acc(study)
    require(df, (BITS,), "flocora_fig3: rounds.parquet")
    if PAYLOAD in df:        # at 32 bits both payloads are the same run: drawn in each panel
        fp = df[df[BITS] >= 32]
        others = set(df[PAYLOAD]) - set(fp[PAYLOAD])
        df = pd.concat([df, *(fp.assign(**{PAYLOAD: p}) for p in sorted(others))])
    ref = fedavg_reference(study, refs)
    fedavg = None if ref is None else _mean_acc(ref).query("`model.adapter` == 'full'")
    lines = ["model.adapter", "model.lora_rank", BITS]
    facets = study.facets(df, (*lines, "model.lora_alpha"))
    fig, axs = panels(len(facets), width=6.0)
    summaries = []
    for ax, (title, sub) in zip(axs, facets):
        if fedavg is not None:
            stats = curve_stats(fedavg, [], "mean_acc")[()]
            draw_band(ax, stats, "round", "FedAvg (full model) FP", VALUE_RANGE["mean_acc"],
                      color="black", linestyle="--")
            summaries.append(tag(stats.assign(**{"model.adapter": "full"}), title))
        curves = curve_stats(sub, lines, "mean_acc")
        for key in sorted(curves, key=lambda k: (k[0] != "full", -float(k[2]))):
            draw_band(ax, curves[key], "round", _config_label(key), VALUE_RANGE["mean_acc"])
            summaries.append(tag(curves[key], title))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set(xlabel=f"round (evaluated at {len(set(sub['round']))} rounds)",
               ylabel="mean accuracy over tasks (%)", title=title)
        ax.legend(fontsize=8)
    low, high = min(ax.get_ylim()[0] for ax in axs), max(ax.get_ylim()[1] for ax in axs)
    for ax in axs:                   # one y axis for every panel, inside 0-100
        ax.set_ylim(low, high)
        clip_axis(ax, VALUE_RANGE["mean_acc"])
    data = pd.concat(summaries, ignore_index=True)
    fig.suptitle(f"FLoCoRA Fig. 3: accuracy over rounds, FedAvg vs FP vs quantized LoRA "
                 f"({study.name}; {over_seeds(data['n'], 'and 95% band')})")
    source = study.provenance + ("" if ref is None else f"; FedAvg {ref.provenance}")
    return Produced(save_figure(fig, out, "flocora_fig3", with_regime(source, study.trials)),
                    data)


def _fedavg_mb(t: pd.DataFrame, keys: list[str]) -> pd.Series:
    """Per row of `keys`, the MB full-model FedAvg sends in the same run: `full_fedavg_bytes`
    (results stored before it: the `full` trials' own TCC, else the widest setting's)."""
    if "full_fedavg_bytes" in t:
        return t.groupby(keys, dropna=False)["full_fedavg_bytes"].mean() / 1e6
    tcc = t.groupby(keys, dropna=False)["tcc_mb"].mean()
    full = t[t["model.adapter"] == "full"]["tcc_mb"]
    return pd.Series(full.max() if len(full) else tcc.max(), index=tcc.index)


def table_iii_flocora(study: Study, out: Path, refs: dict[str, Study] | None = None
                      ) -> Produced:
    """TCC (MB) and ACC per adapter x rank x bit width, and how many times less than
    full-model FedAvg each sends (its row from `flocora_rank_alpha` where stored)."""
    require(study.trials, (*LORA_KEYS, BITS, "bytes_up", "bytes_down"),
            "flocora_table3: trials.parquet")
    ref = fedavg_reference(study, refs)
    t = study.trials if ref is None else pd.concat(
        [study.trials, ref.trials[ref.trials["model.adapter"] == "full"]], ignore_index=True)
    t = t.assign(tcc_mb=(t["bytes_up"] + t["bytes_down"]) / 1e6)
    if PAYLOAD not in t:
        t = t.assign(**{PAYLOAD: "values"})
    keys = ["dataset", *[k for k in study.varying(t, exclude=("dataset",))
                         if k not in (*LORA_KEYS, BITS, PAYLOAD)], *LORA_KEYS, PAYLOAD, BITS]
    acc = seed_summary(t, keys, "acc")
    tcc = t.groupby(keys, dropna=False)["tcc_mb"].mean().rename("tcc_mb").reset_index()
    stats = acc.merge(tcc, on=keys).rename(columns={"mean": "acc_mean", "std": "acc_std",
                                                   "ci95": "acc_ci95", "n": "acc_n"})
    fedavg = _fedavg_mb(t, keys).rename("fedavg_mb").reset_index()
    stats = stats.merge(fedavg, on=keys)
    stats["reduction"] = stats["fedavg_mb"] / stats["tcc_mb"]
    block = keys[:keys.index("model.adapter")]
    stats = stats.sort_values([*block, "model.adapter", "model.lora_rank", PAYLOAD, BITS],
                              ascending=[*[True] * len(block), True, True, False, False])
    header = [*block, "method", "r", "α", "payload", "bits", "ACC (%)", "TCC (MB)",
              "reduction vs FedAvg"]
    rows = [[*(fmt_value(r[k]) for k in block), adapter_label(r["model.adapter"]),
             fmt_value(r["model.lora_rank"]) if r["model.adapter"] == "lora" else "-",
             fmt_value(r["model.lora_alpha"]) if r["model.adapter"] == "lora" else "-",
             r[PAYLOAD] if r["model.adapter"] == "lora" else "-", bits_label(r[BITS]),
             mean_pm(r["acc_mean"], r["acc_std"]),
             f"{r['tcc_mb']:.3f}", f"{r['reduction']:.1f}x"] for _, r in stats.iterrows()]
    fedavg_from = "" if ref is None else f" FedAvg's row: {ref.name}."
    md = (f"FLoCoRA Table III ({study.name}): total communication cost (up + down, all rounds and "
          f"clients), how many times less than full-model FedAvg sends in the same run, and "
          f"ACC ({over_seeds(stats['acc_n'])}).{fedavg_from}\n\n" + markdown_table(header, rows))
    source = study.provenance + ("" if ref is None else f"; FedAvg {ref.provenance}")
    paths = save_table(stats, md, out, "flocora_table3", with_regime(source, study.trials))
    return Produced(paths, stats.reset_index(drop=True))
