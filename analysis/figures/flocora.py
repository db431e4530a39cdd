"""FLoCoRA's Fig. 2, Fig. 3 and Table III from the stored FLoCoRA studies.

Keys: `model.adapter` (`lora`, or `full` = the FedAvg baseline training the whole
model), `model.lora_rank`, `model.lora_alpha`, `compression.bits` (32 = full precision).

How the paper is read:
- Fig. 2 "accuracy vs rank for alpha = 2r and 16r vs FedAvg": final ACC against r for each ratio
  alpha / r the study holds; non-LoRA trials are drawn as horizontal bands (mean +- 95% CI).
- Fig. 3 "accuracy over rounds, FP vs quantized": the mean accuracy over tasks at every evaluated
  round, one curve per adapter x bit width.
- Table III "TCC": total communication cost of the run, bytes up + bytes down over all rounds and
  clients (scales and zero points included, as the encoder counts them). The reduction factor is
  against the FedAvg (`full`) trials at 32 bits of the same data set when present, otherwise
  against the widest LoRA setting.
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
from matplotlib.ticker import MaxNLocator

from analysis.figures.curves import VALUE_RANGE, curve_stats, draw_band, panels, tag
from analysis.figures.files import Produced, markdown_table, mean_pm, save_figure, save_table
from analysis.labels import adapter_label, bits_label
from analysis.seed_stats import per_trial_round, seed_summary
from analysis.study_tables import Study, fmt_value, require

LORA_KEYS = ("model.adapter", "model.lora_rank", "model.lora_alpha")
BITS = "compression.bits"
PAYLOAD = "compression.payload"      # values (the paper) or delta: a column of Table III


def fig2_flocora(study: Study, out: Path) -> Produced:
    """Final accuracy against LoRA rank, one line per alpha / r, baselines as bands."""
    trials = study.trials
    require(trials, LORA_KEYS, "flocora_fig2: trials.parquet")
    trials = trials.assign(alpha_ratio=trials["model.lora_alpha"] / trials["model.lora_rank"])
    axes = ("model.adapter", "model.lora_rank", "model.lora_alpha", "alpha_ratio")
    facets = study.facets(trials, axes)
    fig, axs = panels(len(facets), width=5.5)
    summaries = []
    for ax, (title, df) in zip(axs, facets):
        on = df["model.adapter"] == "lora"
        stats = seed_summary(df[on], ["alpha_ratio", "model.lora_rank"], "acc")
        for ratio, s in stats.groupby("alpha_ratio"):
            ax.errorbar(s["model.lora_rank"], s["mean"], yerr=s["ci95"].fillna(0), marker="o",
                        capsize=3, label=f"FLoCoRA α={fmt_value(ratio)}r")
        summaries.append(tag(stats.assign(**{"model.adapter": "lora"}), title))
        base = seed_summary(df[~on], ["model.adapter"], "acc")
        for _, b in base.iterrows():
            line = ax.axhline(b["mean"], linestyle="--", color="black",
                              label=f"{adapter_label(b['model.adapter'])} "
                                    f"({b['model.adapter']})")
            ci = 0 if math.isnan(b["ci95"]) else b["ci95"]
            ax.axhspan(b["mean"] - ci, b["mean"] + ci, color=line.get_color(), alpha=0.1)
        summaries.append(tag(base, title))
        if on.any():
            ranks = sorted(df.loc[on, "model.lora_rank"].unique())
            ax.set_xscale("log", base=2)
            ax.set_xticks(ranks, [fmt_value(r) for r in ranks])
            ax.minorticks_off()
        ax.set(xlabel="LoRA rank r", ylabel="ACC (%)", title=title)
        ax.legend(fontsize=8)
    fig.suptitle(f"FLoCoRA Fig. 2: accuracy vs rank ({study.name}; mean, 95% CI over seeds)")
    paths = save_figure(fig, out, "flocora_fig2", study.provenance)
    return Produced(paths, pd.concat(summaries, ignore_index=True))


def _config_label(key: tuple) -> str:
    adapter, rank, bits = key
    r = "" if adapter != "lora" or rank is None or (isinstance(rank, float) and math.isnan(rank)) \
        else f" r={int(rank)}"
    return f"{adapter_label(adapter)}{r} {bits_label(bits)}"


def fig3_flocora(study: Study, out: Path) -> Produced:
    """Mean accuracy over tasks at every evaluated round, FP vs quantized."""
    rounds = study.need_rounds("flocora_fig3")
    require(rounds, (*LORA_KEYS, BITS, "mean_acc"), "flocora_fig3: rounds.parquet")
    lines = ["model.adapter", "model.lora_rank", BITS]
    settings = [c for c in rounds.columns if "." in c or c in ("rounds", "dataset")]
    df = per_trial_round(rounds, "mean_acc", settings)
    df = df[df["mean_acc"].notna()]
    facets = study.facets(df, (*lines, "model.lora_alpha"))
    fig, axs = panels(len(facets), width=6.0)
    summaries = []
    for ax, (title, sub) in zip(axs, facets):
        curves = curve_stats(sub, lines, "mean_acc")
        for key in sorted(curves, key=lambda k: (k[0] != "full", -float(k[2]))):
            draw_band(ax, curves[key], "round", _config_label(key),
                      bounds=VALUE_RANGE["mean_acc"])
            summaries.append(tag(curves[key], title))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set(xlabel="round", ylabel="mean accuracy over tasks (%)", title=title)
        ax.legend(fontsize=8)
    fig.suptitle(f"FLoCoRA Fig. 3: accuracy over rounds, FP vs quantized ({study.name})")
    paths = save_figure(fig, out, "flocora_fig3", study.provenance)
    return Produced(paths, pd.concat(summaries, ignore_index=True))


def table_iii_flocora(study: Study, out: Path) -> Produced:
    """TCC (MB) and ACC per adapter x rank x bit width, with the reduction factor."""
    trials = study.trials
    require(trials, (*LORA_KEYS, BITS, "bytes_up", "bytes_down"),
            "flocora_table3: trials.parquet")
    t = trials.assign(tcc_mb=(trials["bytes_up"] + trials["bytes_down"]) / 1e6)
    if PAYLOAD not in t:
        t = t.assign(**{PAYLOAD: "values"})
    keys = ["dataset", *[k for k in study.varying(t, exclude=("dataset",))
                         if k not in (*LORA_KEYS, BITS, PAYLOAD)], *LORA_KEYS, PAYLOAD, BITS]
    acc = seed_summary(t, keys, "acc")
    tcc = t.groupby(keys, dropna=False)["tcc_mb"].mean().rename("tcc_mb").reset_index()
    stats = acc.merge(tcc, on=keys).rename(columns={"mean": "acc_mean", "std": "acc_std",
                                                   "ci95": "acc_ci95", "n": "acc_n"})
    block = keys[:keys.index("model.adapter")]
    reductions = []
    for _, g in stats.groupby(block, dropna=False, sort=False):
        ref = g[(g["model.adapter"] == "full") & (g[BITS] >= 32)]
        ref_tcc = ref["tcc_mb"].max() if len(ref) else g["tcc_mb"].max()
        reductions.append(ref_tcc / g["tcc_mb"])
    stats["reduction"] = pd.concat(reductions)
    stats = stats.sort_values([*block, "model.adapter", "model.lora_rank", PAYLOAD, BITS],
                              ascending=[*[True] * len(block), True, True, False, False])
    header = [*block, "method", "r", "α", "payload", "bits", "ACC (%)", "TCC (MB)", "reduction"]
    rows = [[*(fmt_value(r[k]) for k in block), adapter_label(r["model.adapter"]),
             fmt_value(r["model.lora_rank"]) if r["model.adapter"] == "lora" else "-",
             fmt_value(r["model.lora_alpha"]) if r["model.adapter"] == "lora" else "-",
             r[PAYLOAD], bits_label(r[BITS]), mean_pm(r["acc_mean"], r["acc_std"]),
             f"{r['tcc_mb']:.3f}", f"{r['reduction']:.1f}x"] for _, r in stats.iterrows()]
    md = (f"FLoCoRA Table III ({study.name}): total communication cost (up + down, all rounds and "
          f"clients) and ACC, mean ± std over seeds.\n\n" + markdown_table(header, rows))
    paths = save_table(stats, md, out, "flocora_table3", study.provenance)
    return Produced(paths, stats.reset_index(drop=True))
