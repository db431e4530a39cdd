"""Honest figures (issue 29): colour scales no narrower than the seeds' spread and one per metric
across a figure, BWT_f on a scale centred at 0, axes inside a metric's domain, FLoCoRA's FedAvg
baseline drawn, and no "mean ± std" over fewer than 2 seeds."""
from __future__ import annotations

import shutil

import pandas as pd
import pytest

from analysis.figures import fcl_paper, flocora, heatmaps
from analysis.figures.catalog import make_figure
from analysis.labels import over_seeds
from analysis.study_tables import load_study
from fcl.manifest import read_manifest, write_manifest
from study_fixture import study_results  # noqa: F401  (the session fixture)


def edited(study_results, tmp_path, study: str, edit) -> object:
    """A copy of a fixture study whose trials `edit` rewrote, loaded."""
    folder = tmp_path / "results" / study
    shutil.copytree(study_results / study, folder)
    trials = pd.read_parquet(folder / "trials.parquet")
    edit(trials).to_parquet(folder / "trials.parquet")
    write_manifest(folder, read_manifest(folder))
    return load_study(tmp_path / "results", study)


def drawn(monkeypatch, module) -> dict:
    """The figures `module` saves, by name, kept open for the test to read."""
    figs, real = {}, module.save_figure

    def keep(fig, out, name, source):
        figs[name] = (fig, source)
        return real(fig, out, name, source)
    monkeypatch.setattr(module, "save_figure", keep)
    return figs


def test_a_difference_inside_the_seed_spread_gets_no_full_contrast(study_results, tmp_path,
                                                                   monkeypatch):
    """Two straggler cells 0.2 points apart with seeds 6 points apart: the ACC scale spans at
    least the widest 95% interval, the BWT_f scale (all gains) is centred at 0."""
    def edit(t):
        cell = (t["participation.straggler_prob"] > 0).astype(float)
        return t.assign(acc=80.0 + 0.2 * cell + 6.0 * t["seed"], bwt_f=0.5 + 0.1 * t["seed"])
    figs = drawn(monkeypatch, heatmaps)
    produced = fcl_paper.fig5e(edited(study_results, tmp_path, "stragglers", edit), tmp_path)
    stats = produced.data.set_index("metric")
    widest = stats.loc["acc", "ci95"].max()
    vmin, vmax = produced.scales["acc"]
    assert vmax - vmin >= 2 * widest - 1e-9 and vmax - vmin > 10 * 0.2
    assert 0.0 <= vmin and vmax <= 100.0
    low, high = produced.scales["bwt_f"]
    assert low == -high and high >= stats.loc["bwt_f", "ci95"].max()
    fig, _ = figs["fig5e"]
    meshes = [ax.collections[0] for ax in fig.axes[:2]]         # the two maps (colour bars after)
    assert [(m.norm.vmin, m.norm.vmax) for m in meshes] == [(vmin, vmax), (low, high)]
    assert meshes[1].get_cmap().name == "RdBu"             # red: drop, blue: gain
    assert "never narrower than the widest 95% interval" in fig.get_suptitle()


def test_one_colour_scale_per_metric_across_the_panels(study_results, tmp_path, monkeypatch):
    """ablation_lr drawn along client LR only: a panel per server LR, one scale per metric."""
    figs = drawn(monkeypatch, heatmaps)
    study = edited(study_results, tmp_path, "ablation_lr",
                   lambda t: t.assign(acc=t["acc"] + 30.0 * (t["server.lr"] == 1.0)))
    produced = heatmaps.heatmaps(study, study.trials, tmp_path, "twopanels", "client.lr", None,
                                 "two panels")
    fig, _ = figs["twopanels"]
    assert len(produced.panels) == 2 * 2                     # 2 panels x (ACC, BWT_f)
    maps = fig.axes[:4]
    assert {(ax.collections[0].norm.vmin, ax.collections[0].norm.vmax) for ax in maps} == {
        produced.scales["acc"], produced.scales["bwt_f"]}
    means = [v for k, p in produced.panels.items() if k.endswith("|acc")
             for v in p.to_numpy().ravel()]
    assert produced.scales["acc"][1] - produced.scales["acc"][0] >= max(means) - min(means) > 25


def test_fig3a_keeps_its_axis_and_intervals_inside_0_to_100(study_results, tmp_path,
                                                            monkeypatch):
    figs = drawn(monkeypatch, fcl_paper)
    fcl_paper.fig3a(load_study(study_results, "task_order"), tmp_path)
    fig, _ = figs["fig3a"]
    for ax in fig.axes:
        assert ax.get_ylim() == (0.0, 100.0)
        for line in ax.lines:                                   # the error bars' ends
            assert line.get_ydata().max() <= 100.0 and line.get_ydata().min() >= 0.0


def test_flocora_fig3_draws_full_model_fedavg_and_fp_in_every_panel(study_results, tmp_path,
                                                                   monkeypatch):
    figs = drawn(monkeypatch, flocora)
    produced, _ = make_figure("flocora_fig3", study_results, tmp_path)
    fig, source = figs["flocora_fig3"]
    for ax in fig.axes:
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert labels[0] == "FedAvg (full model) FP" and any(" FP" in x for x in labels[1:])
        assert 0.0 <= ax.get_ylim()[0] and ax.get_ylim()[1] <= 100.0
    assert "FedAvg drawn from" in source and "flocora_rank_alpha" in source
    assert (produced.data["model.adapter"] == "full").any()
    alone = flocora.fig3_flocora(load_study(study_results, "flocora_quantization"), tmp_path)
    assert not (alone.data["model.adapter"] == "full").any()    # no reference: no FedAvg


@pytest.mark.parametrize("ns, text", [
    ([3, 3], "mean ± std over 3 seeds"), ([2, 3], "mean ± std over 2-3 seeds"),
    ([1, 1], "1 seed: the mean alone"), ([1, 3], "mean ± std over 1-3 seeds; 1-seed points: "
                                                 "the mean alone")])
def test_a_spread_is_named_only_over_two_or_more_seeds(ns, text):
    assert over_seeds(ns) == text


def test_a_one_seed_heatmap_and_table_claim_no_std(study_results, tmp_path, monkeypatch):
    figs = drawn(monkeypatch, heatmaps)
    study = edited(study_results, tmp_path, "scalability", lambda t: t[t["seed"] == 0])
    fcl_paper.fig5c(study, tmp_path)
    fig, _ = figs["fig5c"]
    assert "± std" not in fig.get_suptitle() and "1 seed" in fig.get_suptitle()
    assert not any("±" in t.get_text() for ax in fig.axes for t in ax.texts)


def test_a_heatmap_hatches_cells_it_cannot_tell_from_the_highest():
    import numpy as np
    import pandas as pd

    from analysis.figures.heatmaps import _tied_with_best
    # N 5 leads N 40 by 2.0, 2.2, 1.8 (resolved); N 10 by +1, -1, +0.5 (not resolved)
    acc = {5: [80.0, 82.0, 84.0], 10: [79.0, 83.0, 83.5], 40: [78.0, 79.8, 82.2]}
    df = pd.DataFrame([{"data.num_clients": n, "seed": s, "acc": v}
                       for n, vs in acc.items() for s, v in enumerate(vs)])
    like = pd.DataFrame([[0.0, 0.0, 0.0]], columns=[5, 10, 40], index=[""])
    tied = _tied_with_best(df, ("data.num_clients",), None, "data.num_clients", None, "acc",
                           like)
    assert tied.tolist() == [[False, True, False]]
    one_seed = df[df["seed"] == 0]                   # nothing to pair: nothing is separated
    assert _tied_with_best(one_seed, ("data.num_clients",), None, "data.num_clients", None,
                           "acc", like).tolist() == [[False, True, True]]
    assert np.asarray(tied).dtype == bool


def test_compared_panels_share_one_y_scale_and_partial_points_are_marked():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from analysis.figures.curves import draw_band, partial_seeds, share_y
    fig, (a, b) = plt.subplots(1, 2)
    a.set_ylim(0, 0.2)
    b.set_ylim(-0.1, 1.2)
    share_y([a, b])
    assert a.get_ylim() == b.get_ylim() == (-0.1, 1.2)
    # rounds 1-2 average 5 seeds, round 3 only 3 (a task some seeds' orders do not train)
    stats = pd.DataFrame({"round": [1, 2, 3], "mean": [0.1, 0.2, 0.9], "ci95": [0.01] * 3,
                          "n": [5, 5, 3]})
    assert partial_seeds(stats).tolist() == [False, False, True]
    fig, ax = plt.subplots()
    draw_band(ax, stats, "round", "line")
    solid = ax.lines[0].get_ydata()
    assert list(solid[:2]) == [0.1, 0.2] and pd.isna(solid[2])      # not drawn as the same mean
    hollow = [ln for ln in ax.lines if ln.get_markerfacecolor() == "white"]
    assert len(hollow) == 1 and list(hollow[0].get_ydata()) == [0.9]
    plt.close("all")
