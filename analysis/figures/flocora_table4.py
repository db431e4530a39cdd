"""FLoCoRA's Table IV "FLoCoRA vs magnitude pruning, FedPara and ZeroFL" from the stored
`flocora_compare` study: one row per method, its ACC over seeds, the same-seed ACC difference
from the study's own full-model FedAvg (95% t-interval, `analysis/paired.py`), the bytes each
client sent and received over the run (the study's bytes up + down over its number of clients,
MB) and the reduction against that FedAvg (FedAvg's bytes / the method's). Beside the table,
ACC against MB per client (log x).

Keys: `model.adapter` (`lora`, `full`, `fedpara`), `model.lora_rank`, `compression.bits`,
`compression.prune` (magnitude pruning), `model.fedpara_gamma`, `model.zerofl_sparsity` and
`model.zerofl_mask_ratio` (ZeroFL).
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
from matplotlib import colormaps
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from analysis.figures.curves import panels, tag
from analysis.figures.files import (Produced, markdown_table, mean_pm, same_seed_diff,
                                    save_figure, save_table)
from analysis.flocora_regime import with_regime
from analysis.labels import message_method, over_seeds
from analysis.paired import paired
from analysis.seed_stats import seed_summary
from analysis.study_tables import Study, require

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


def with_methods(trials: pd.DataFrame) -> pd.DataFrame:
    """The trials with `kind`, `method` (in words), `order`, `mb_per_client` (bytes up + down
    over the whole run, all clients, divided by the number of clients, in MB) and
    `up_mb_per_client` (the upload alone: what pruning and ZeroFL compress; their download is
    dense)."""
    named = [message_method(r) for _, r in trials.iterrows()]
    clients = pd.to_numeric(trials["data.num_clients"]) if "data.num_clients" in trials else 1
    return trials.assign(kind=[k for k, _, _ in named], method=[m for _, m, _ in named],
                         order=[o for _, _, o in named],
                         mb_per_client=(trials["bytes_up"] + trials["bytes_down"])
                         / clients / 1e6, up_mb_per_client=trials["bytes_up"] / clients / 1e6)


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
        t.groupby("method")[["mb_per_client", "up_mb_per_client"]].mean().reset_index(),
        on="method")
    fedavg = t[t["kind"] == "FedAvg"]
    if len(fedavg):
        diff = paired(t, {"method": fedavg["method"].iloc[0]}, ["acc"], ("method",))
        diff = diff.rename(columns={"acc diff": "d_acc", "acc ci95": "d_ci95", "acc n": "d_n"})
        stats = stats.merge(diff[["method", "d_acc", "d_ci95", "d_n"]], on="method", how="left")
        base_mb, base_up = fedavg["mb_per_client"].mean(), fedavg["up_mb_per_client"].mean()
    else:
        stats = stats.assign(d_acc=math.nan, d_ci95=math.nan, d_n=0)
        base_mb = base_up = math.nan
    is_base = stats["kind"] == "FedAvg"
    stats.loc[is_base, ["d_acc", "d_n"]] = [0.0, 0]
    stats["d_n"] = stats["d_n"].fillna(0).astype(int)
    stats["fedavg_mb_per_client"] = base_mb
    stats["reduction"] = base_mb / stats["mb_per_client"]
    stats["up_reduction"] = base_up / stats["up_mb_per_client"]
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


MARKERS = {"FedAvg": "*", "LoRA": "o", "pruning": "v", "FedPara": "s", "ZeroFL": "D"}
CMAPS = {"FedAvg": "Greys", "LoRA": "Blues", "pruning": "Oranges", "FedPara": "Greens",
         "ZeroFL": "Purples"}


# the two x axes of the figure: the message alone (what pruning and ZeroFL shrink), and both
# links (what the paper's reduction counts; their download is the dense model)
AXES_X = (("up_mb_per_client", "upload per client over the run (MB, log scale)", "upload only"),
          ("mb_per_client", "total communication per client over the run, up + down (MB, log "
           "scale)", "both links"))


def _draw_table_iv(ax, stats: pd.DataFrame, x: str = "mb_per_client",
                   xlabel: str = AXES_X[1][1], legend: bool = True) -> None:
    """ACC minus FedAvg's of the same seed (mean, bars its paired 95% t-interval: the seed
    spread, which every method shares, cancels; unpaired bars of ± 7-15 points would overlap
    everywhere) against MB per client (`x`: upload or both links), log x; FedAvg at 0 without
    a bar; one marker family per kind, darker for a smaller message within it; the legend
    outside names each."""
    for kind, group in stats.groupby("kind", sort=False):
        cmap = colormaps[CMAPS.get(kind, "Greys")]
        shades = [0.85] if len(group) == 1 else \
            [0.45 + 0.5 * i / (len(group) - 1) for i in range(len(group))]
        for shade, (_, r) in zip(shades, group.iterrows()):
            ref = kind == "FedAvg"
            d = 0.0 if ref else r["d_acc"]
            ci = 0.0 if ref or r["d_n"] < 2 or math.isnan(r["d_ci95"]) else r["d_ci95"]
            ax.errorbar(r[x], d, yerr=ci, marker=MARKERS.get(kind, "x"),
                        markersize=11 if ref else 7, capsize=3, linestyle="none",
                        color="black" if ref else cmap(shade),
                        markeredgecolor="black", markeredgewidth=0.5, label=r["method"])
    ax.axhline(0.0, color="black", linestyle="--", linewidth=0.8, zorder=0)
    others = stats[stats["kind"] != "FedAvg"]
    ci = others["d_ci95"].where(others["d_n"] >= 2).fillna(0.0)
    low = min(0.0, (others["d_acc"] - ci).min()) if len(others) else -1.0
    high = max(0.0, (others["d_acc"] + ci).max()) if len(others) else 1.0
    pad = max(0.05 * (high - low), 0.5)
    ax.set_ylim(low - pad, high + pad)
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set(xlabel=xlabel, ylabel="ACC - FedAvg's, same seed (points)")
    ax.grid(True, which="both", linewidth=0.3, alpha=0.5)
    if legend:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0,
                  title="method (bars: paired 95% CI)", title_fontsize=8)


def table_iv_flocora(study: Study, out: Path) -> Produced:
    """FLoCoRA Table IV from `flocora_compare`: per method ACC over seeds, its same-seed
    difference from this study's FedAvg, MB per client and the reduction against FedAvg, as
    Markdown + CSV (`flocora_table4`); and ACC against MB per client as PNG + PDF."""
    require(study.trials, ("model.adapter", "bytes_up", "bytes_down"),
            "flocora_table4: trials.parquet")
    facets = study.facets(study.trials, (*study.settings, "model.weights"))
    fig, axs = panels(2 * len(facets), width=6.5, height=4.6)
    tables, parts = [], []
    for i, (title, df) in enumerate(facets):
        stats = table_iv_stats(df)
        for ax, (x, xlabel, links) in zip(axs[2 * i:2 * i + 2], AXES_X):
            _draw_table_iv(ax, stats, x, xlabel, legend=x == AXES_X[-1][0])
            ax.set_title(f"{title} · {links}" if title else links)
        tables.append(tag(stats, title))
        values = "values_mb_per_client" in stats
        header = ["method", "ACC (%)", "ACC - FedAvg, same seeds (95% CI)",
                  "MB per client (up + down)", "reduction vs FedAvg (both links)",
                  "MB up per client", "reduction vs FedAvg (upload only)"]
        header += ["values-only MB per client", "values-only reduction"] if values else []
        rows = []
        for _, r in stats.iterrows():
            row = [r["method"], _seeds_text(r["acc_mean"], r["acc_std"], int(r["acc_n"])),
                   same_seed_diff(r, r["kind"] == "FedAvg"), f"{r['mb_per_client']:.3f}",
                   f"{r['reduction']:.1f}x", f"{r['up_mb_per_client']:.3f}",
                   f"{r['up_reduction']:.1f}x"]
            if values:
                v = r["values_mb_per_client"]
                row += ["-", "-"] if math.isnan(v) else \
                    [f"{v:.3f}", f"{r['values_reduction']:.1f}x"]
            rows.append(row)
        parts.append((f"**{title}**\n\n" if title else "") + markdown_table(header, rows))
    data = pd.concat(tables, ignore_index=True)
    seeds = over_seeds(data.loc[data["kind"] != "FedAvg", "d_n"], "and paired 95% CI")
    fig.suptitle(f"FLoCoRA Table IV: ACC minus FedAvg's of the same seed, against the upload "
                 f"and the total communication per client\n({study.name}; {seeds})")
    paths = save_figure(fig, out, "flocora_table4", with_regime(study.provenance, study.trials))
    values_note = "" if "values_mb_per_client" in data else (
        " The trials table stores no values-only bytes (the pruned and ZeroFL messages are "
        "counted in their sparse encoding, positions included; `fcl params` prints the "
        "values-only size of one message).")
    md = (f"FLoCoRA Table IV ({study.name}): ACC ({over_seeds(data['acc_n'])}), its same-seed "
          f"difference from this study's own full-model FedAvg (mean and 95% t-interval over "
          f"the seeds both ran), the bytes each client sent and received over the whole run "
          f"(all rounds; the study's total divided by its number of clients), and how many "
          f"times less than FedAvg that is (FedAvg's bytes / the method's, as the paper "
          f"counts), over both links and over the upload alone (pruning and ZeroFL compress "
          f"only the upload; their download is the dense model).{values_note}\n\n" + "\n".join(parts)
          + "\nThe paper's figures for Table IV, quoted from its text (the table's own numbers "
            "are not in it):\n\n" + "\n\n".join(f"> {q}" for q in TABLE_IV_QUOTES) + "\n")
    paths += save_table(data, md, out, "flocora_table4",
                        with_regime(study.provenance, study.trials))
    return Produced(paths, data)
