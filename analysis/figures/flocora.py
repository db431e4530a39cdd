"""FLoCoRA's Fig. 2, Fig. 3, Table III and Table IV from the stored FLoCoRA studies.

Keys: `model.adapter` (`lora`, or `full` = the FedAvg baseline training the whole
model), `model.lora_rank`, `model.lora_alpha`, `compression.bits` (32 = full precision).

How the paper is read:
- Fig. 2 "accuracy vs rank for alpha = 2r and 16r vs FedAvg": final ACC against r for each ratio
  alpha / r the study holds; non-LoRA trials are drawn as horizontal bands (mean +- 95% CI).
- Fig. 3 "accuracy over rounds, FedAvg, FP and quantized": the mean accuracy over tasks at every
  evaluated round, one curve per adapter x bit width, one panel per payload; the full-precision
  run (the same run for both payloads) is drawn in each, and so is full-model FedAvg (black,
  dashed) from `flocora_rank_alpha` where that study is stored and ran the same recipe.
- Table III "TCC": total communication cost of the run, bytes up + bytes down over all rounds and
  clients (scales and zero points included, as the encoder counts them). The reduction factor is
  against full-model FedAvg of the same run, as the paper's: the bytes FedAvg of the whole model
  sends (`full_fedavg_bytes`, counted by the encoder in every trial); its ACC is the row of
  `flocora_rank_alpha`'s FedAvg trials where stored.
- Table IV "FLoCoRA vs magnitude pruning, FedPara and ZeroFL" (`flocora_compare`): one row per
  method, its ACC over seeds, the same-seed ACC difference from the study's own full-model FedAvg
  (95% t-interval, `analysis/paired.py`), the bytes each client sent and received over the run
  (the study's bytes up + down over its number of clients, MB) and the reduction against that
  FedAvg (FedAvg's bytes / the method's). Beside the table, ACC against MB per client (log x).
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
from matplotlib import colormaps
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from analysis.figures.curves import VALUE_RANGE, clip_axis, curve_stats, draw_band, panels, tag
from analysis.figures.files import Produced, markdown_table, mean_pm, save_figure, save_table
from analysis.labels import adapter_label, bits_label, over_seeds
from analysis.paired import paired
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
    data = pd.concat(summaries, ignore_index=True)
    fig.suptitle(f"FLoCoRA Fig. 2: accuracy vs rank ({study.name}; "
                 f"{over_seeds(data['n'], 'and 95% CI')})")
    paths = save_figure(fig, out, "flocora_fig2", study.provenance)
    return Produced(paths, data)


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
    return Produced(save_figure(fig, out, "flocora_fig3", source), data)


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
    paths = save_table(stats, md, out, "flocora_table3", source)
    return Produced(paths, stats.reset_index(drop=True))


# --- Table IV: every way to shrink the message, side by side (`flocora_compare`) ---------------

KINDS = ("FedAvg", "LoRA", "pruning", "FedPara", "ZeroFL")
PRUNE, SPARSITY, MASK = "compression.prune", "model.zerofl_sparsity", "model.zerofl_mask_ratio"
GAMMA = "model.fedpara_gamma"
# the paper's own words on Table IV (its prose; the table's numbers are not in its text)
TABLE_IV_QUOTES = (
    "For this experiment, we reproduced the setup proposed by [12, 4], where we have 100 "
    "clients, training for 1 local epoch a ResNet-18 model, with an LDA parameter of 1.0, for "
    "700 communication rounds.",
    "ZeroFL reports their baseline accuracy as 80.62%, in our work we use the baseline as in "
    "Table III.",
    "FLoCoRA achieves less accuracy degradation for smaller messages, compared to conventional "
    "methods. The same is observed when FLoCoRA is combined with quantization, a reduction "
    "between 18.6-63.9 times with 4% accuracy loss for a case where we spend 0.7 MB per client "
    "to train a model with 44.7 MB.",
)


def _number(row: pd.Series, key: str, default: float = 0.0) -> float:
    value = row.get(key, default)
    try:
        value = float(value)
    except (TypeError, ValueError):
        return default
    return default if math.isnan(value) else value


def table_iv_method(row: pd.Series) -> tuple[str, str, tuple]:
    """(kind, the method in words, its place in the table) of one `flocora_compare` trial:
    `FedAvg (full model)`, `LoRA r=32, 8-bit`, `magnitude pruning 0.9`, `FedPara gamma 0.1`,
    `ZeroFL s=0.9, mask 0.1`; kinds in `KINDS` order, fewer bits / more pruning later."""
    adapter = str(row["model.adapter"])
    if adapter == "lora":
        bits = int(_number(row, BITS, 32.0))
        text = "32-bit (FP)" if bits >= 32 else f"{bits}-bit"
        return "LoRA", f"LoRA r={int(_number(row, 'model.lora_rank'))}, {text}", (1, -bits)
    if adapter == "fedpara":
        gamma = _number(row, GAMMA)
        return "FedPara", f"FedPara gamma {fmt_value(gamma)}", (3, gamma)
    if adapter == "full" and _number(row, SPARSITY) > 0:
        s, r = _number(row, SPARSITY), _number(row, MASK)
        return "ZeroFL", f"ZeroFL s={fmt_value(s)}, mask {fmt_value(r)}", (4, s, r)
    if adapter == "full" and _number(row, PRUNE) > 0:
        p = _number(row, PRUNE)
        return "pruning", f"magnitude pruning {fmt_value(p)}", (2, p)
    if adapter == "full":
        return "FedAvg", "FedAvg (full model)", (0,)
    return adapter, adapter_label(adapter), (5, adapter)


def with_methods(trials: pd.DataFrame) -> pd.DataFrame:
    """The trials with `kind`, `method` (in words), `order` and `mb_per_client`: bytes up +
    down over the whole run, all clients, divided by the number of clients, in MB."""
    named = [table_iv_method(r) for _, r in trials.iterrows()]
    clients = pd.to_numeric(trials["data.num_clients"]) if "data.num_clients" in trials else 1
    return trials.assign(kind=[k for k, _, _ in named], method=[m for _, m, _ in named],
                         order=[o for _, _, o in named],
                         mb_per_client=(trials["bytes_up"] + trials["bytes_down"])
                         / clients / 1e6)


VALUES_ONLY = ("values_bytes_up", "values_bytes_down")   # the sparse messages' values alone


def table_iv_stats(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per method: ACC over seeds (mean, std, ci95, n), the same-seed ACC difference
    from this study's FedAvg (`d_acc`, its 95% t-interval `d_ci95`, `d_n` seeds), MB per client
    and the reduction against FedAvg (FedAvg's bytes / the method's; `values_mb_per_client`
    and `values_reduction` where trials.parquet stores the values-only bytes)."""
    t = with_methods(trials)
    acc = seed_summary(t, ["method"], "acc").rename(columns={
        "mean": "acc_mean", "std": "acc_std", "ci95": "acc_ci95", "n": "acc_n"})
    first = t.drop_duplicates("method").set_index("method")[["kind", "order"]]
    stats = acc.join(first, on="method").merge(
        t.groupby("method")["mb_per_client"].mean().reset_index(), on="method")
    fedavg = t[t["kind"] == "FedAvg"]
    if len(fedavg):
        diff = paired(t, {"method": fedavg["method"].iloc[0]}, ["acc"], ("method",))
        diff = diff.rename(columns={"acc diff": "d_acc", "acc ci95": "d_ci95", "acc n": "d_n"})
        stats = stats.merge(diff[["method", "d_acc", "d_ci95", "d_n"]], on="method", how="left")
        base_mb = fedavg["mb_per_client"].mean()
    else:
        stats = stats.assign(d_acc=math.nan, d_ci95=math.nan, d_n=0)
        base_mb = math.nan
    is_base = stats["kind"] == "FedAvg"
    stats.loc[is_base, ["d_acc", "d_n"]] = [0.0, 0]
    stats["d_n"] = stats["d_n"].fillna(0).astype(int)
    stats["fedavg_mb_per_client"] = base_mb
    stats["reduction"] = base_mb / stats["mb_per_client"]
    if all(c in t for c in VALUES_ONLY):
        sparse = t[t["kind"].isin(("pruning", "ZeroFL"))]
        clients = pd.to_numeric(sparse["data.num_clients"]) if "data.num_clients" in sparse \
            else 1
        values = sparse[list(VALUES_ONLY)].sum(axis=1) / clients / 1e6
        vmb = values.groupby(sparse["method"]).mean().rename("values_mb_per_client")
        stats = stats.join(vmb, on="method")
        stats["values_reduction"] = base_mb / stats["values_mb_per_client"]
    return stats.sort_values("order").drop(columns="order").reset_index(drop=True)


def _seeds_text(mean: float, std: float, n: int) -> str:
    return mean_pm(mean, std) if n >= 2 else f"{mean:.2f} (1 seed)"


def _diff_text(r: pd.Series) -> str:
    if r["kind"] == "FedAvg":
        return "0 (reference)"
    if not r["d_n"]:
        return "-"
    if r["d_n"] < 2:
        return f"{r['d_acc']:+.2f} (1 seed, no interval)"
    return f"{r['d_acc']:+.2f} ± {r['d_ci95']:.2f} ({int(r['d_n'])} seeds)"


MARKERS = {"FedAvg": "*", "LoRA": "o", "pruning": "v", "FedPara": "s", "ZeroFL": "D"}
CMAPS = {"FedAvg": "Greys", "LoRA": "Blues", "pruning": "Oranges", "FedPara": "Greens",
         "ZeroFL": "Purples"}


def _draw_table_iv(ax, stats: pd.DataFrame) -> None:
    """ACC (mean, 95% t-interval bars) against MB per client, log x; one marker family per
    kind, darker for a smaller message within it; the legend outside the axes names each."""
    for kind, group in stats.groupby("kind", sort=False):
        cmap = colormaps[CMAPS.get(kind, "Greys")]
        shades = [0.85] if len(group) == 1 else \
            [0.45 + 0.5 * i / (len(group) - 1) for i in range(len(group))]
        for shade, (_, r) in zip(shades, group.iterrows()):
            ci = r["acc_ci95"] if r["acc_n"] >= 2 and not math.isnan(r["acc_ci95"]) else 0.0
            ax.errorbar(r["mb_per_client"], r["acc_mean"], yerr=ci, marker=MARKERS.get(kind, "x"),
                        markersize=11 if kind == "FedAvg" else 7, capsize=3, linestyle="none",
                        color="black" if kind == "FedAvg" else cmap(shade),
                        markeredgecolor="black", markeredgewidth=0.5, label=r["method"])
    base = stats[stats["kind"] == "FedAvg"]
    if len(base):
        ax.axhline(base["acc_mean"].iloc[0], color="black", linestyle="--", linewidth=0.8,
                   zorder=0)
    ci = stats["acc_ci95"].where(stats["acc_n"] >= 2).fillna(0.0)
    low, high = (stats["acc_mean"] - ci).min(), (stats["acc_mean"] + ci).max()
    pad = max(0.05 * (high - low), 0.5)
    ax.set_ylim(max(low - pad, VALUE_RANGE["mean_acc"][0]),
                min(high + pad, VALUE_RANGE["mean_acc"][1]))
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set(xlabel="total communication per client over the run, up + down (MB, log scale)",
           ylabel="ACC (%)")
    ax.grid(True, which="both", linewidth=0.3, alpha=0.5)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
              title="method (dashed: FedAvg's ACC)", title_fontsize=8)


def table_iv_flocora(study: Study, out: Path) -> Produced:
    """FLoCoRA Table IV from `flocora_compare`: per method ACC over seeds, its same-seed
    difference from this study's FedAvg, MB per client and the reduction against FedAvg, as
    Markdown + CSV (`flocora_table4`); and ACC against MB per client as PNG + PDF."""
    require(study.trials, ("model.adapter", "bytes_up", "bytes_down"),
            "flocora_table4: trials.parquet")
    facets = study.facets(study.trials, (*study.settings, "model.weights"))
    fig, axs = panels(len(facets), width=6.5, height=4.6)
    tables, parts = [], []
    for ax, (title, df) in zip(axs, facets):
        stats = table_iv_stats(df)
        _draw_table_iv(ax, stats)
        ax.set_title(title)
        tables.append(tag(stats, title))
        values = "values_mb_per_client" in stats
        header = ["method", "ACC (%)", "ACC - FedAvg, same seeds (95% CI)",
                  "MB per client (up + down)", "reduction vs FedAvg"]
        header += ["values-only MB per client", "values-only reduction"] if values else []
        rows = []
        for _, r in stats.iterrows():
            row = [r["method"], _seeds_text(r["acc_mean"], r["acc_std"], int(r["acc_n"])),
                   _diff_text(r), f"{r['mb_per_client']:.3f}", f"{r['reduction']:.1f}x"]
            if values:
                v = r["values_mb_per_client"]
                row += ["-", "-"] if math.isnan(v) else \
                    [f"{v:.3f}", f"{r['values_reduction']:.1f}x"]
            rows.append(row)
        parts.append((f"**{title}**\n\n" if title else "") + markdown_table(header, rows))
    data = pd.concat(tables, ignore_index=True)
    seeds = over_seeds(data["acc_n"], "and 95% CI")
    fig.suptitle(f"FLoCoRA Table IV: ACC against total communication per client\n"
                 f"({study.name}; {seeds})")
    paths = save_figure(fig, out, "flocora_table4", study.provenance)
    values_note = "" if "values_mb_per_client" in data else (
        " The trials table stores no values-only bytes (the pruned and ZeroFL messages are "
        "counted in their sparse encoding, positions included; `fcl params` prints the "
        "values-only size of one message).")
    md = (f"FLoCoRA Table IV ({study.name}): ACC ({over_seeds(data['acc_n'])}), its same-seed "
          f"difference from this study's own full-model FedAvg (mean and 95% t-interval over "
          f"the seeds both ran), the bytes each client sent and received over the whole run "
          f"(all rounds; the study's total divided by its number of clients), and how many "
          f"times less than FedAvg that is (FedAvg's bytes / the method's, as the paper "
          f"counts).{values_note}\n\n" + "\n".join(parts)
          + "\nThe paper's figures for Table IV, quoted from its text (the table's own numbers "
            "are not in it):\n\n" + "\n\n".join(f"> {q}" for q in TABLE_IV_QUOTES) + "\n")
    paths += save_table(data, md, out, "flocora_table4", study.provenance)
    return Produced(paths, data)
