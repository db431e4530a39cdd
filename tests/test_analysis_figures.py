"""analysis/figures/ (`python -m analysis figures`): every figure/table from real (tiny) study
Parquet, numbers checked against the fixture, skipping and schema errors, the manifest read."""
from __future__ import annotations

import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis.figures import fcl_paper, fcl_paper_tables, flocora, heatmaps
from analysis.figures.catalog import FIGURES, main, make_figure
from analysis.seed_stats import seed_summary
from analysis.study_tables import MissingStudy, SchemaError, load_study
from fcl.manifest import read_manifest, write_manifest
from fcl.results_io import ERROR
from study_fixture import STUDIES, study_results  # noqa: F401  (the session fixture)

REPO = Path(__file__).resolve().parent.parent


def _trials(results: Path, study: str) -> pd.DataFrame:
    return pd.read_parquet(results / study / "trials.parquet")


def restamp(folder: Path) -> None:
    """The folder's manifest rewritten with its files' new hashes (a test edited them)."""
    write_manifest(folder, read_manifest(folder))


FIXTURE_STUDIES = {*STUDIES, "flocora_rank_alpha", "flocora_quantization"}
PAPER_FIGURES = sorted(n for n, f in FIGURES.items() if FIXTURE_STUDIES & set(f.studies))


def test_the_fixture_covers_every_paper_figure_and_table():
    assert len(PAPER_FIGURES) == 14      # FCL 3a 3b 4a 4b 5a-e T3 T4; FLoCoRA F2 F3 T-III


@pytest.mark.parametrize("name", PAPER_FIGURES)
def test_each_figure_writes_its_files(study_results, tmp_path, name):
    produced, study = make_figure(name, study_results, tmp_path)
    assert study.name in FIGURES[name].studies
    exts = sorted(p.suffix for p in produced.paths)
    assert exts in ([".csv", ".pdf", ".png"], [".csv", ".md"])     # figures: + their numbers
    for path in produced.paths:
        head = path.read_bytes()[:8]
        assert path.stat().st_size > (200 if path.suffix in (".png", ".pdf") else 50)
        assert {".png": head.startswith(b"\x89PNG"), ".pdf": head.startswith(b"%PDF"),
                ".csv": b"," in path.read_bytes().splitlines()[0],
                ".md": head.startswith(b"Table") or head.startswith(b"FLoCoRA")}[path.suffix]
    assert len(produced.data) > 0


def test_seed_summary_t_interval_by_hand():
    df = pd.DataFrame({"k": ["a", "a", "a", "b"], "v": [1.0, 2.0, 3.0, 5.0]})
    s = seed_summary(df, ["k"], "v").set_index("k")
    assert s.loc["a", "mean"] == 2.0 and s.loc["a", "std"] == 1.0 and s.loc["a", "n"] == 3
    assert s.loc["a", "ci95"] == pytest.approx(4.303 / math.sqrt(3))     # t(0.975, 2) = 4.303
    assert math.isnan(s.loc["b", "ci95"])                                # one seed: no interval


def test_bands_stay_inside_the_range_of_their_metric():
    """A cosine distance near 0 with a wide seed interval: its band stops at 0, not below."""
    import matplotlib.pyplot as plt

    from analysis.figures.curves import VALUE_RANGE, draw_band
    stats = pd.DataFrame({"round": [0, 1, 2], "mean": [0.001, 0.01, 0.002],
                          "ci95": [0.02, 0.05, 0.01]})
    fig, ax = plt.subplots()
    draw_band(ax, stats, "round", "clipped", bounds=VALUE_RANGE["cos_head"])
    draw_band(ax, stats, "round", "raw")
    clipped, raw = (c.get_paths()[0].vertices[:, 1] for c in ax.collections)
    plt.close(fig)
    assert clipped.min() == 0.0 and clipped.max() == pytest.approx(0.06)
    assert raw.min() == pytest.approx(-0.04)


def test_fig5a_heatmap_cells_equal_fixture_means(study_results, tmp_path):
    produced = fcl_paper.fig5a(load_study(study_results, "ablation_lr"), tmp_path)
    trials = _trials(study_results, "ablation_lr")
    for metric in ("acc", "bwt_f"):
        want = trials.groupby(["server.lr", "client.lr"])[metric].mean().unstack()
        got = produced.panels[metric]
        assert got.shape == (2, 2)
        pd.testing.assert_frame_equal(got, want, check_names=False)


def test_heatmap_cells_on_numbers_worked_by_hand(study_results, tmp_path):
    """Seed 0 gets 10*i, seed 1 gets 10*i + 2 in cell i: each cell shows 10*i + 1 ± sqrt(2)."""
    folder = tmp_path / "results" / "stragglers"
    shutil.copytree(study_results / "stragglers", folder)
    trials = pd.read_parquet(folder / "trials.parquet")
    cell = trials["participation.straggler_prob"].rank(method="dense").astype(int) - 1
    trials["acc"] = 10.0 * cell + 2.0 * trials["seed"]
    trials["bwt_f"] = -(cell + 1.0) - trials["seed"]
    trials.to_parquet(folder / "trials.parquet")
    restamp(folder)
    produced = fcl_paper.fig5e(load_study(tmp_path / "results", "stragglers"), tmp_path)
    assert produced.panels["acc"].to_numpy().tolist() == [[1.0, 11.0]]
    assert produced.panels["bwt_f"].to_numpy().tolist() == [[-1.5, -2.5]]
    stds = produced.data[produced.data["metric"] == "acc"]["std"]
    assert np.allclose(stds, math.sqrt(2))


def test_heatmap_cells_mark_the_seeds_that_diverged(study_results, tmp_path, monkeypatch):
    folder = tmp_path / "results" / "stragglers"
    shutil.copytree(study_results / "stragglers", folder)
    trials = pd.read_parquet(folder / "trials.parquet")
    prob = trials["participation.straggler_prob"]
    first_cell = prob == prob.min()
    trials["diverged"] = first_cell & (trials["seed"] == trials["seed"].max())
    trials.to_parquet(folder / "trials.parquet")
    restamp(folder)
    texts = []
    real_save = heatmaps.save_figure

    def save(fig, *args, **kwargs):
        texts.extend(t.get_text() for ax in fig.axes for t in ax.texts)
        texts.append(fig._suptitle.get_text())
        return real_save(fig, *args, **kwargs)
    monkeypatch.setattr(heatmaps, "save_figure", save)
    fcl_paper.fig5e(load_study(tmp_path / "results", "stragglers"), tmp_path)
    marked = [t for t in texts if t.endswith("\n1 diverged")]
    assert len(marked) == 2                     # the ACC and the BWT_f cell of that setting
    assert "'N diverged': seeds whose run diverged" in texts[-1]


def test_fig5d_shows_iid_as_alpha_inf_first(study_results, tmp_path):
    produced = fcl_paper.fig5d(load_study(study_results, "noniid"), tmp_path)
    assert list(produced.panels["acc"].columns) == [math.inf, 1.0]
    trials = _trials(study_results, "noniid")
    iid = trials[trials["data.partition"] == "iid"]["acc"].mean()
    assert produced.panels["acc"].iloc[0, 0] == pytest.approx(iid)


def test_fig3a_bars_are_last_round_task_accuracy(study_results, tmp_path):
    produced = fcl_paper.fig3a(load_study(study_results, "task_order"), tmp_path)
    rounds = pd.read_parquet(study_results / "task_order" / "tasks.parquet")
    last = rounds[rounds["round"] == rounds["rounds"] - 1]
    want = last.groupby(["schedule.order", "task"])["accuracy"].mean()
    got = produced.data.set_index(["schedule.order", "task"])["mean"]
    assert len(got) == 3 * 2
    pd.testing.assert_series_equal(got.sort_index(), want.sort_index(), check_names=False)


def test_fig4_follows_task_0_for_fedsgd_and_fedadam_only(study_results, tmp_path):
    for fig in (fcl_paper.fig4a, fcl_paper.fig4b):
        produced = fig(load_study(study_results, "optimizers"), tmp_path)
        assert set(produced.data["server.optimizer"]) == {"fedsgd", "fedadam"}
    rounds = pd.read_parquet(study_results / "optimizers" / "tasks.parquet")
    one = rounds[(rounds["task"] == 0) & (rounds["server.optimizer"] == "fedsgd")
                 & (rounds["server.lr"] == 1.0)].dropna(subset=["accuracy"])
    want = one.groupby("round")["accuracy"].mean()
    produced = fcl_paper.fig4a(load_study(study_results, "optimizers"), tmp_path)
    d = produced.data
    got = d[(d["server.optimizer"] == "fedsgd") & (d["server.lr"] == 1.0)].set_index("round")
    pd.testing.assert_series_equal(got["mean"], want, check_names=False)


def test_figures_number_tasks_from_0_as_fcl_does(study_results, tmp_path, monkeypatch):
    # the CLI, the Parquet `task` column and fcl.load_model(...)[t] count from 0: labels too
    drawn, real = {}, fcl_paper.save_figure

    def keep(fig, out, name, source):
        drawn[name] = fig
        return real(fig, out, name, source)
    monkeypatch.setattr(fcl_paper, "save_figure", keep)
    fcl_paper.fig3a(load_study(study_results, "task_order"), tmp_path)
    fcl_paper.fig4a(load_study(study_results, "optimizers"), tmp_path)
    fcl_paper.fig4b(load_study(study_results, "optimizers"), tmp_path)
    ticks = [t.get_text() for t in drawn["fig3a"].axes[0].get_xticklabels()]
    assert ticks == ["T0", "T1"]
    assert drawn["fig4a"].axes[0].get_ylabel() == "accuracy of task 0 (%)"
    assert "task 0 over rounds" in drawn["fig4a"].get_suptitle()
    assert drawn["fig4b"].axes[0].get_ylabel() == "cosine distance, task 0 head"


def test_table3_numbers_and_top_two_match_fixture(study_results, tmp_path):
    fcl_paper_tables.table3(load_study(study_results, "optimizers"), tmp_path)
    table = pd.read_csv(tmp_path / "table3.csv")
    trials = _trials(study_results, "optimizers")
    g = trials.groupby(["server.optimizer", "server.lr"])
    for (opt, lr), row in table.set_index(["server.optimizer", "server.lr"]).iterrows():
        assert row["acc_mean"] == pytest.approx(g["acc"].mean()[(opt, lr)])
        assert row["bwt_f_mean"] == pytest.approx(g["bwt_f"].mean()[(opt, lr)])
        assert row["acc_n"] == 2
    for lr, block in table.groupby("server.lr"):
        second = sorted(block["acc_mean"], reverse=True)[1]
        assert set(block[block["acc_top2"]]["server.optimizer"]) == set(
            block[block["acc_mean"] >= second]["server.optimizer"])
    md = (tmp_path / "table3.md").read_text()
    assert md.count("**") == 2 * int(table["acc_top2"].sum() + table["bwt_f_top2"].sum())


def test_table4_communication_per_round(study_results, tmp_path):
    fcl_paper_tables.table4(load_study(study_results, "optimizers"), tmp_path)
    table = pd.read_csv(tmp_path / "table4.csv")
    trials = _trials(study_results, "optimizers")
    paper = trials[(trials["server.optimizer"] == "fedadam") & (trials["server.lr"] == 0.5)]
    assert len(table) == 1
    assert table["c2s_mb_per_round"][0] == pytest.approx((paper["bytes_up"] / 4 / 1e6).mean())
    assert table["acc_mean"][0] == pytest.approx(paper["acc"].mean())
    assert table["modules_mb"][0] == pytest.approx(
        paper["trainable_params_per_task"].iloc[0] * 4 * 2 / 1e6)


def test_flocora_table3_tcc_and_reduction_against_full_model_fedavg(study_results, tmp_path):
    produced = flocora.table_iii_flocora(
        load_study(study_results, "flocora_quantization"), tmp_path)
    trials = _trials(study_results, "flocora_quantization")
    tcc = ((trials["bytes_up"] + trials["bytes_down"]) / 1e6).groupby(
        trials["compression.bits"]).mean()
    got = produced.data.set_index("compression.bits")
    assert list(got.index) == [32, 8, 2]
    assert np.allclose(got["tcc_mb"], tcc.loc[[32, 8, 2]])
    # FedAvg of the whole model sends more than LoRA at full precision: every ratio is > 1
    fedavg_mb = (trials["full_fedavg_bytes"] / 1e6).mean()
    assert np.allclose(got["reduction"], fedavg_mb / tcc.loc[[32, 8, 2]])
    fedavg = _trials(study_results, "flocora_rank_alpha").query("`model.adapter` == 'full'")
    assert (got["reduction"] > 1).all()
    # through the catalog, FedAvg's own row (from flocora_rank_alpha) heads the table at 1.0x
    with_ref, _ = make_figure("flocora_table3", study_results, tmp_path)
    full = with_ref.data[with_ref.data["model.adapter"] == "full"]
    assert len(full) == 1 and full["reduction"].iloc[0] == pytest.approx(1.0)
    assert full["acc_mean"].iloc[0] == pytest.approx(fedavg["acc"].mean())
    assert "FedAvg drawn from" in (tmp_path / "flocora_table3.md").read_text()


def test_flocora_fig2_lines_per_alpha_ratio_and_a_fedavg_band(study_results, tmp_path):
    produced = flocora.fig2_flocora(
        load_study(study_results, "flocora_rank_alpha"), tmp_path)
    lora = produced.data[produced.data["model.adapter"] == "lora"]
    assert sorted(lora["alpha_ratio"].unique()) == [2.0, 16.0]
    assert sorted(lora["model.lora_rank"].unique()) == [4, 8]
    assert (produced.data["model.adapter"] == "full").sum() == 1


def test_flocora_fig2_pairs_each_lora_setting_with_fedavg_of_the_same_seed(study_results,
                                                                           tmp_path):
    study = load_study(study_results, "flocora_rank_alpha")
    produced = flocora.fig2_flocora(study, tmp_path)
    pairs = produced.data[produced.data["model.adapter"] == "lora - full"]
    t = study.trials
    fedavg = t[t["model.adapter"] == "full"].set_index("seed")["acc"]
    assert len(pairs) == len(t[t["model.adapter"] == "lora"].groupby(
        ["model.lora_rank", "model.lora_alpha"]))
    for _, row in pairs.iterrows():
        alpha = row["alpha_ratio"] * row["model.lora_rank"]
        own = t[(t["model.adapter"] == "lora") & (t["model.lora_rank"] == row["model.lora_rank"])
                & (t["model.lora_alpha"] == alpha)].set_index("seed")["acc"]
        diff = (own - fedavg).dropna()
        assert row["d_acc"] == pytest.approx(diff.mean()) and row["d_n"] == len(diff)


def test_missing_studies_are_skipped_with_one_line_each(study_results, tmp_path, capsys):
    results = tmp_path / "results"
    shutil.copytree(study_results / "ablation_lr", results / "ablation_lr")
    assert main(["--results", str(results), "--out", str(tmp_path / "figs")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    skips = [line for line in err if line.startswith("skip ")]
    assert len(skips) == len(FIGURES) - 1
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == [
        "fig5a.csv", "fig5a.pdf", "fig5a.png"]


def test_wrong_schema_is_one_clear_error(study_results, tmp_path, capsys):
    folder = tmp_path / "results" / "ablation_lr"
    shutil.copytree(study_results / "ablation_lr", folder)
    pd.read_parquet(folder / "trials.parquet").drop(columns=["bwt_f"]).to_parquet(
        folder / "trials.parquet")
    restamp(folder)
    assert main(["--only", "fig5a", "--results", str(tmp_path / "results"),
                 "--out", str(tmp_path / "figs")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "bwt_f" in err[0]
    (folder / "trials.parquet").write_text("not parquet")
    with pytest.raises(SchemaError, match="trials.parquet is not readable Parquet"):
        load_study(tmp_path / "results", "ablation_lr")
    with pytest.raises(MissingStudy):
        load_study(tmp_path / "results", "noniid")


def test_failed_trials_are_left_out(study_results, tmp_path):
    folder = tmp_path / "results" / "scalability"
    shutil.copytree(study_results / "scalability", folder)
    trials = pd.read_parquet(folder / "trials.parquet")
    bad = trials.iloc[[0]].assign(trial_id="failed", status=ERROR, error="boom", acc=np.nan)
    pd.concat([trials, bad]).to_parquet(folder / "trials.parquet")
    restamp(folder)
    study = load_study(tmp_path / "results", "scalability")
    assert study.failed == 1 and len(study.trials) == len(trials)
    trials.assign(status=ERROR, acc=np.nan).to_parquet(folder / "trials.parquet")
    restamp(folder)
    with pytest.raises(MissingStudy, match="no completed trial"):
        load_study(tmp_path / "results", "scalability")


def test_python_m_analysis_figures_runs_from_the_repo_root(study_results, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "analysis", "figures", "--only", "fig5c",
                           "--results", str(study_results), "--out", str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "fig5c.png").is_file() and (tmp_path / "fig5c.pdf").is_file()
    assert "scalability · preset smoke · data set " in proc.stdout \
        and "commit fixture)" in proc.stdout


def test_one_command_line_refuses_an_unknown_command():
    proc = subprocess.run([sys.executable, "-m", "analysis", "plots"], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("error: plots: not a command; allowed: figures, dashboard, "
                                   "paired, claims, flocora_table1, provenance, "
                                   "seeds-simulation, report")


def test_a_study_reads_its_manifest_and_states_what_it_was_drawn_from(study_results):
    study = load_study(study_results, "ablation_lr")
    assert study.manifest is not None and study.settings == ("client.lr", "server.lr")
    assert study.drawn_from() == (f"preset smoke · data set {study.manifest.dataset} · "
                                  "commit fixture")
    assert study.doc.startswith("Fig. 5") and not study.is_search
    assert load_study(study_results, "search").is_search


def test_settings_come_from_the_manifest_not_from_every_column(study_results, tmp_path):
    """A config column that differs between trials but is not a key the study varies (here
    `eval.batch_size`, changed by hand) makes no panel; without a manifest the folder is
    refused (nothing is inferred from the columns)."""
    folder = tmp_path / "results" / "scalability"
    shutil.copytree(study_results / "scalability", folder)
    trials = pd.read_parquet(folder / "trials.parquet")
    trials["eval.batch_size"] = np.where(trials["seed"] == 0, 64, 128)
    trials.to_parquet(folder / "trials.parquet")
    restamp(folder)
    declared = fcl_paper.fig5c(load_study(tmp_path / "results", "scalability"), tmp_path)
    assert set(declared.data["panel"]) == {""}
    (folder / "study.json").unlink()            # as results stored before manifests
    with pytest.raises(SchemaError, match="no study.json .* and --resume .* or --fresh"):
        load_study(tmp_path / "results", "scalability")


def test_parquet_replaced_after_its_manifest_is_one_clear_error(study_results, tmp_path):
    folder = tmp_path / "results" / "noniid"
    shutil.copytree(study_results / "noniid", folder)
    trials = pd.read_parquet(folder / "trials.parquet")
    trials.iloc[:-1].to_parquet(folder / "trials.parquet")       # a row lost, manifest kept
    with pytest.raises(SchemaError, match=rf"noniid: refused: trials.parquet has "
                                          rf"{len(trials) - 1} rows, study.json says "
                                          rf"{len(trials)} \(replaced or half-written"):
        load_study(tmp_path / "results", "noniid")
