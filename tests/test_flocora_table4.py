"""FLoCoRA Table IV (`flocora_compare`): the table's reductions and same-seed differences, the
figure, and the claim's pairing with the LoRA message no larger than the other method's, all on
a small synthetic study folder (trials.parquet + study.json) whose numbers are worked by hand."""
from __future__ import annotations

import base64
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import claims
from analysis.claims.flocora import matched_lora
from analysis.figures import flocora_table4
from analysis.figures.catalog import make_figure
from analysis.study_tables import load_study
from fcl.intervals import t975
from fcl.manifest import Manifest, write_manifest

SEEDS = (0, 1, 2)
CLIENTS = 10
VARYING = ("model.adapter", "compression.bits", "compression.prune", "compression.prune_server",
           "model.fedpara_gamma", "model.weights", "model.zerofl_sparsity",
           "model.zerofl_mask_ratio")
LEVEL = {"FedAvg": 70.0, "lora32": 69.0, "lora8": 68.0, "lora4": 67.0, "lora2": 66.0,
         "p0.5": 65.0, "p0.8": 64.0, "p0.9": 62.0, "p0.95": 60.0, "fp0.1": 63.0, "fp0.5": 66.0,
         "z0": 61.0, "z0.1": 67.0}
# total bytes (up + down, all clients, whole run): pruning 0.5 at 190 MB lies nearer LoRA FP's
# 200 MB than LoRA 8-bit's 50 MB, but LoRA FP is larger; pruning 0.95 equals LoRA 2-bit's
BYTES = {"FedAvg": 1000e6, "lora32": 200e6, "lora8": 50e6, "lora4": 25e6, "lora2": 12.5e6,
         "p0.5": 190e6, "p0.8": 30e6, "p0.9": 15e6, "p0.95": 12.5e6, "fp0.1": 300e6,
         "fp0.5": 400e6, "z0": 100e6, "z0.1": 250e6}
NOISE = {"lora8": (0.0, 0.5, -0.5)}          # LoRA 8-bit - FedAvg: -2, -1.5, -2.5


def config(key: str) -> dict:
    cfg = {"model.adapter": "full", "compression.bits": 32, "compression.prune": 0.0,
           "compression.prune_server": False, "model.fedpara_gamma": 0.1,
           "model.weights": "w.pt", "model.zerofl_sparsity": 0.0,
           "model.zerofl_mask_ratio": 0.0, "model.lora_rank": 32, "data.num_clients": CLIENTS,
           "data.name": "cifar10"}
    if key.startswith("lora"):
        cfg.update({"model.adapter": "lora", "compression.bits": int(key[4:])})
    elif key.startswith("p"):
        cfg.update({"compression.prune": float(key[1:]), "compression.prune_server": True})
    elif key.startswith("fp"):
        cfg.update({"model.adapter": "fedpara", "model.fedpara_gamma": float(key[2:]),
                    "model.weights": ""})
    elif key.startswith("z"):
        cfg.update({"model.adapter": "zerofl", "model.zerofl_sparsity": 0.9,
                    "model.zerofl_mask_ratio": float(key[1:])})
    return cfg


def trials_frame(level=LEVEL, nbytes=BYTES, noise=NOISE, seeds=SEEDS) -> pd.DataFrame:
    rows = []
    for key in level:
        for seed in seeds:
            acc = level[key] + 10.0 * seed + noise.get(key, (0.0,) * 3)[seed]
            rows.append({"study": "flocora_compare", "trial_id": f"{key}-{seed}",
                         "status": "TERMINATED", "error": "", "preset": "smoke", "seed": seed,
                         **config(key), "acc": acc, "bwt_f": 0.0,
                         "bytes_up": int(nbytes[key] / 2), "bytes_down": int(nbytes[key] / 2),
                         "schema_version": 2})
    return pd.DataFrame(rows)


def write_study(results: Path, trials: pd.DataFrame) -> Path:
    folder = results / "flocora_compare"
    folder.mkdir(parents=True)
    trials.to_parquet(folder / "trials.parquet")
    write_manifest(folder, Manifest("flocora_compare", "smoke", "cifar10", {}, doc="Table IV.",
                                    varying=VARYING, axes={"method": list(VARYING)},
                                    seeds=tuple(sorted(set(trials["seed"]))),
                                    command="tests/test_flocora_table4.py", fcl_git="fixture"))
    return results


def test_table_reductions_and_same_seed_differences_by_hand(tmp_path):
    results = write_study(tmp_path / "results", trials_frame())
    produced, study = make_figure("flocora_table4", results, tmp_path / "out")
    assert study.name == "flocora_compare"
    assert sorted(p.name for p in produced.paths) == [
        "flocora_table4.csv", "flocora_table4.md", "flocora_table4.pdf", "flocora_table4.png"]
    stats = produced.data.set_index("method")
    assert list(stats.index[:5]) == ["FedAvg (full model)", "LoRA r=32, 32-bit (FP)",
                                     "LoRA r=32, 8-bit", "LoRA r=32, 4-bit", "LoRA r=32, 2-bit"]
    assert {"magnitude pruning 0.9", "FedPara gamma 0.1", "ZeroFL s=0.9, mask 0.1"} <= \
        set(stats.index)
    # MB per client: 1000 MB over 10 clients = 100; LoRA 8-bit 50 / 10 = 5, 20x less
    assert stats.loc["FedAvg (full model)", "mb_per_client"] == pytest.approx(100.0)
    assert stats.loc["LoRA r=32, 8-bit", "mb_per_client"] == pytest.approx(5.0)
    assert stats.loc["LoRA r=32, 8-bit", "reduction"] == pytest.approx(20.0)
    assert stats.loc["magnitude pruning 0.5", "reduction"] == pytest.approx(1000 / 190)
    assert stats.loc["FedAvg (full model)", "reduction"] == pytest.approx(1.0)
    # same seeds: LoRA FP is 1 point under FedAvg in every seed, so no spread at all
    assert stats.loc["LoRA r=32, 32-bit (FP)", ["d_acc", "d_ci95", "d_n"]].tolist() == \
        pytest.approx([-1.0, 0.0, 3])
    # LoRA 8-bit: -2, -1.5, -2.5 -> -2 +- t(2) * 0.5 / sqrt(3)
    half = t975(2) * 0.5 / math.sqrt(3)
    assert stats.loc["LoRA r=32, 8-bit", ["d_acc", "d_ci95"]].tolist() == \
        pytest.approx([-2.0, half])
    # ACC over seeds: 70, 80, 90 -> 80 +- 10 (std)
    assert stats.loc["FedAvg (full model)", ["acc_mean", "acc_std", "acc_n"]].tolist() == \
        pytest.approx([80.0, 10.0, 3])
    md = (tmp_path / "out" / "flocora_table4.md").read_text()
    assert md.startswith("FLoCoRA Table IV")
    # 68, 78.5, 87.5: std sqrt((10^2 + 0.5^2 + 9.5^2) / 2) = 9.76
    assert "| LoRA r=32, 8-bit | 78.00 ± 9.76 | -2.00 ± 1.24 (3 seeds) | 5.000 | 20.0x |" in md
    assert "| FedAvg (full model) | 80.00 ± 10.00 | 0 (reference) | 100.000 | 1.0x |" in md
    assert "0.7 MB per client to train a model with 44.7 MB" in md
    assert "ZeroFL reports their baseline accuracy as 80.62%" in md
    assert "stores no values-only bytes" in md
    assert (tmp_path / "out" / "flocora_table4.png").read_bytes()[:4] == b"\x89PNG"


def test_one_seed_is_the_value_alone(tmp_path):
    results = write_study(tmp_path / "results", trials_frame(seeds=(0,)))
    make_figure("flocora_table4", results, tmp_path / "out")
    md = (tmp_path / "out" / "flocora_table4.md").read_text()
    assert "| LoRA r=32, 8-bit | 68.00 (1 seed) | -2.00 (1 seed, no interval) |" in md
    assert " ± " not in md.split("\n\n")[1]          # the table: no spread over one seed


def test_the_figure_draws_paired_differences_whose_bars_fit_the_axis(tmp_path, monkeypatch):
    figs = {}
    real = flocora_table4.save_figure

    def keep(fig, out, name, source):
        figs[name] = fig
        return real(fig, out, name, source)
    monkeypatch.setattr(flocora_table4, "save_figure", keep)
    produced = flocora_table4.table_iv_flocora(load_study(write_study(tmp_path / "r", trials_frame()),
                                                   "flocora_compare"), tmp_path)
    ax = figs["flocora_table4"].axes[0]
    data = produced.data
    others = data[data["kind"] != "FedAvg"]
    # each method's point is its same-seed difference from FedAvg; FedAvg sits at 0
    points = sorted(round(float(c.lines[0].get_ydata()[0]), 6) for c in ax.containers)
    assert points == sorted(round(float(v), 6) for v in [0.0, *others["d_acc"]])
    low = min(0.0, (others["d_acc"] - others["d_ci95"]).min())
    high = max(0.0, (others["d_acc"] + others["d_ci95"]).max())
    ylow, yhigh = ax.get_ylim()
    assert ylow <= low and yhigh >= high                    # every paired bar inside
    assert ylow >= low - 0.05 * (high - low) - 0.5 - 1e-9
    assert yhigh <= high + 0.05 * (high - low) + 0.5 + 1e-9
    assert ax.get_xscale() == "log"
    assert "paired 95% CI over 3 seeds" in figs["flocora_table4"].get_suptitle()
    labels = ax.get_legend_handles_labels()[1]
    assert len(labels) == len(set(labels)) == len(LEVEL)      # every method named once
    # left the upload alone (ZeroFL's sparse message), right both links (its dense download)
    both = figs["flocora_table4"].axes[1]
    for axis, column in ((ax, "up_mb_per_client"), (both, "mb_per_client")):
        xs = sorted(round(float(c.lines[0].get_xdata()[0]), 6) for c in axis.containers)
        assert xs == sorted(round(float(v), 6) for v in data[column])
    assert ax.get_legend() is None and both.get_legend() is not None
    assert [a.get_title() for a in figs["flocora_table4"].axes[:2]] == ["upload only",
                                                                        "both links"]


def claim_on(tmp_path: Path, trials: pd.DataFrame) -> tuple[str, str]:
    claim = next(c for c in claims.CLAIMS if c.study == "flocora_compare")
    return claims.judge(claim, write_study(tmp_path / "results", trials), {})


def test_each_shrunk_message_meets_the_lora_message_its_upload_matches():
    """Uploads (half of BYTES): LoRA 100 / 25 / 12.5 / 6.25 MB; pruning 0.5's 95 MB is 5.3%
    under LoRA FP's, outside the 5%, so it meets 8-bit; pruning 0.95 equals 2-bit."""
    pairs = {comp.label: (comp.a, comp.b) for comp in matched_lora(trials_frame())}
    assert list(pairs) == ["LoRA 8-bit - pruning 0.5 (upload -73.7%)",
                           "LoRA 4-bit - pruning 0.8 (upload -16.7%)",
                           "LoRA 2-bit - pruning 0.9 (upload -16.7%)",
                           "LoRA 2-bit - pruning 0.95 (upload +0.0%)",
                           "LoRA 8-bit - ZeroFL mask 0 (upload -50.0%)",
                           "LoRA FP - ZeroFL mask 0.1 (upload -20.0%)"]
    assert pairs["LoRA 8-bit - pruning 0.5 (upload -73.7%)"][0] == {"model.adapter": "lora",
                                                                  "compression.bits": "8"}
    # a LoRA upload up to 5% above the other's is the same size: matched, not skipped
    nearly = trials_frame(nbytes={**BYTES, "p0.8": 48e6, "p0.5": 196e6})
    labels = [comp.label for comp in matched_lora(nearly)]
    assert labels[:2] == ["LoRA FP - pruning 0.5 (upload +2.0%)",
                          "LoRA 8-bit - pruning 0.8 (upload +4.2%)"]
    # the settings a study stored, whichever they are (the low-rank study's matched ones)
    other = trials_frame(level={**LEVEL, "p0.9565": 64.0}, nbytes={**BYTES, "p0.9565": 48e6})
    assert "LoRA 8-bit - pruning 0.9565 (upload +4.2%)" in \
        [comp.label for comp in matched_lora(other)]


def test_the_claim_holds_where_lora_loses_less_at_every_matched_size(tmp_path):
    cell, verdict = claim_on(tmp_path, trials_frame())
    assert verdict == claims.HOLDS
    # LoRA 8-bit (68 + 0 / 0.5 / -0.5) - pruning 0.5 (65): 3 +- t(2) * 0.5 / sqrt(3)
    assert "LoRA 8-bit - pruning 0.5 (upload -73.7%) +3.00 ± 1.24 (3)" in cell
    assert "LoRA 2-bit - pruning 0.95 (upload +0.0%) +6.00 ± 0.00 (3)" in cell


def test_the_claim_does_not_hold_where_a_pruned_or_zerofl_run_beats_lora(tmp_path):
    cell, verdict = claim_on(tmp_path, trials_frame(level={**LEVEL, "z0.1": 72.0}))
    assert verdict == claims.FAILS and "LoRA FP - ZeroFL mask 0.1 (upload -20.0%) -3.00 ± 0.00 (3)" in cell


def test_the_claim_is_not_resolved_inside_the_seed_spread_or_without_a_match(tmp_path):
    noisy = trials_frame(noise={**NOISE, "p0.9": (-3.0, 7.0, -4.0)})
    cell, verdict = claim_on(tmp_path / "noisy", noisy)
    assert verdict == claims.OPEN and "LoRA 2-bit - pruning 0.9 (upload -16.7%) +4.00 ±" in cell
    smaller = trials_frame(nbytes={**BYTES, "p0.95": 10e6})   # under every LoRA message
    cell, verdict = claim_on(tmp_path / "small", smaller)
    assert verdict == claims.OPEN and "pruning 0.95: no LoRA message as small: not run" in cell


def test_a_folder_without_the_study_reads_not_tested(tmp_path):
    claim = next(c for c in claims.CLAIMS if c.study == "flocora_compare")
    assert claims.judge(claim, tmp_path, {}) == (f"not run: **{claims.UNTESTED}**",
                                                 claims.UNTESTED)


def test_upload_only_reduction_where_the_download_stays_dense(tmp_path):
    """ZeroFL's download is the dense model: over both links it saves little, over the upload
    alone its sparse message counts (FedAvg's upload 50 MB a client, ZeroFL's 5)."""
    trials = trials_frame()
    zerofl = trials["model.zerofl_sparsity"].gt(0)
    fedavg = trials.loc[(trials["model.adapter"] == "full") & ~zerofl
                        & trials["compression.prune"].eq(0), "bytes_down"].iloc[0]
    trials.loc[zerofl, "bytes_up"] = int(fedavg / 10)
    trials.loc[zerofl, "bytes_down"] = fedavg
    produced, _ = make_figure("flocora_table4", write_study(tmp_path / "r", trials), tmp_path)
    stats = produced.data.set_index("method")
    row = stats.loc["ZeroFL s=0.9, mask 0.1"]
    assert row["up_reduction"] == pytest.approx(10.0)
    assert row["reduction"] == pytest.approx(100 / 55)
    assert stats.loc["FedAvg (full model)", "up_reduction"] == pytest.approx(1.0)


def test_values_only_bytes_where_the_trials_store_them(tmp_path):
    trials = trials_frame()
    sparse = trials["compression.prune"].gt(0) | trials["model.zerofl_sparsity"].gt(0)
    trials["values_bytes_up"] = (sparse * 4e6).astype("int64")   # pruned / ZeroFL rows only
    trials["values_bytes_down"] = (sparse * 1e6).astype("int64")
    produced, _ = make_figure("flocora_table4", write_study(tmp_path / "r", trials), tmp_path)
    stats = produced.data.set_index("method")
    # 5 MB over 10 clients = 0.5 MB each; FedAvg's 100 / 0.5 = 200x
    assert stats.loc["magnitude pruning 0.9", "values_mb_per_client"] == pytest.approx(0.5)
    assert stats.loc["magnitude pruning 0.9", "values_reduction"] == pytest.approx(200.0)
    assert math.isnan(stats.loc["LoRA r=32, 8-bit", "values_mb_per_client"])
    md = (tmp_path / "flocora_table4.md").read_text()
    assert "| 1.500 | 66.7x | 0.750 | 66.7x | 0.500 | 200.0x |" in md
    assert "| 5.000 | 20.0x | 2.500 | 20.0x | - | - |" in md


def test_the_dashboard_names_the_methods_as_table_iv_does_in_its_order(tmp_path):
    """The dashboard's view of `flocora_compare` names its settings as Table IV does (not by
    the eight keys of its method axis), in Table IV's order, on the ACC chart and the
    bytes-vs-ACC chart; where two settings would share a name, it keeps the keys."""
    from analysis.dashboard.message_methods import message_method_labels
    from analysis.dashboard.views import study_views
    (view,) = study_views(load_study(write_study(tmp_path / "results", trials_frame()),
                                     "flocora_compare"))
    acc = view.charts[0]
    assert acc["layout"]["xaxis"]["categoryarray"] == [
        "FedAvg (full model)", "LoRA r=32, 32-bit (FP)", "LoRA r=32, 8-bit", "LoRA r=32, 4-bit",
        "LoRA r=32, 2-bit", "magnitude pruning 0.5", "magnitude pruning 0.8",
        "magnitude pruning 0.9", "magnitude pruning 0.95", "FedPara gamma 0.1",
        "FedPara gamma 0.5", "ZeroFL s=0.9, mask 0", "ZeroFL s=0.9, mask 0.1"]
    y = acc["data"][0]["y"]           # plotly's JSON holds the means as base64 float64
    means = dict(zip(acc["data"][0]["x"], np.frombuffer(base64.b64decode(y["bdata"]),
                                                        dtype=y["dtype"])))
    assert means["LoRA r=32, 8-bit"] == pytest.approx(68.0 + 10.0)   # seeds 0-2: + 0, 10, 20
    frontier = {text for trace in view.charts[1]["data"] for text in trace.get("text") or ()
                if text}                         # bytes vs ACC: the frontier's settings named
    assert {"FedAvg (full model)", "LoRA r=32, 8-bit"} <= frontier
    assert frontier <= set(acc["layout"]["xaxis"]["categoryarray"])
    same_name = trials_frame().assign(**{"model.weights": lambda t: t["seed"].astype(str)})
    assert message_method_labels(same_name, [list(VARYING)]) is None
