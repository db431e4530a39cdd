"""The drift_correction study's method labels (analysis/labels.py), its figure's numbers (mean
and 95% t-interval over seeds, worked by hand: analysis/figures/drift_correction.py) and its
dashboard charts (analysis/dashboard/methods.py), chosen by the study's variant axis."""
import math
import os
import runpy

import pandas as pd
import pytest

from analysis.dashboard.methods import method_charts
from analysis.dashboard.views import study_views
from analysis.figures.drift_correction import drift_correction
from analysis.labels import method_label
from analysis.methods import METHOD_KEYS
from analysis.study_tables import load_study
from fcl.config import RunConfig
from fcl.manifest import Manifest, write_manifest
from fcl.tune.space import grid_points, trial_overrides, with_overrides

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LABELS = ["FedAvg", "FedProx μ=0.001", "FedProx μ=0.01", "FedProx μ=0.1", "SCAFFOLD",
          "FedAdam", "FedAdam+FedProx μ=0.01", "FedAdam+SCAFFOLD"]


def study_configs():
    study = runpy.run_path(os.path.join(REPO, "studies", "drift_correction.py"))["STUDY"]
    return [with_overrides(RunConfig(), trial_overrides(p)) for p in grid_points(study.space)]


def label(cfg) -> str:
    return method_label(cfg.client.algorithm, cfg.client.prox_mu, cfg.server.optimizer,
                        cfg.server.lr)


def test_the_study_declares_eight_methods_by_two_orders():
    configs = study_configs()
    assert len(configs) == 16
    assert sorted({label(c) for c in configs}) == sorted(LABELS)
    assert {c.schedule.order for c in configs} == {"async", "sync"}


@pytest.fixture
def stored(tmp_path):
    rows = []
    for i, cfg in enumerate(study_configs()):
        for seed in range(3):
            rows.append({"study": "drift_correction", "trial_id": f"t{i}-{seed}",
                         "status": "TERMINATED", "seed": seed, "schema_version": 2,
                         "acc": 70.0 + i + 2 * seed, "bwt_f": -1.0 - 0.5 * i + 0.1 * seed,
                         "bytes_up": 1000, "bytes_down": 1000,
                         "data.name": "fashion_mnist_bundled", "data.root": "",
                         **{k: v for k, v in cfg.to_flat().items() if k != "seed"}})
    folder = tmp_path / "drift_correction"
    folder.mkdir()
    pd.DataFrame(rows).to_parquet(folder / "trials.parquet", index=False)
    write_method_manifest(folder, {"method": list(METHOD_KEYS),
                                   "schedule.order": ["schedule.order"]})
    return tmp_path


def write_method_manifest(folder, axes: dict) -> None:
    """The manifest of the study as declared by `axes` (name -> the keys it sets)."""
    write_manifest(folder, Manifest(
        "drift_correction", "local", "fashion_mnist_bundled", RunConfig().to_flat(),
        varying=tuple(k for keys in axes.values() for k in keys), axes=axes, seeds=(0, 1, 2)))


def test_figure_draws_mean_and_t_interval_over_seeds(stored, tmp_path):
    produced = drift_correction(load_study(stored, "drift_correction"), tmp_path / "fig")
    assert sorted(p.name for p in produced.paths) == [
        "drift_correction.pdf", "drift_correction.png", "drift_correction_table.csv",
        "drift_correction_table.md"]
    d = produced.data
    first = d[(d["method"] == "FedAvg") & (d["schedule.order"] == "async") & (d["metric"] == "acc")]
    # seeds 70, 72, 74: mean 72, std 2, ci95 = t(0.975, 2) * 2 / sqrt(3) = 4.303 * 1.1547
    assert first["mean"].item() == pytest.approx(72.0)
    assert first["ci95"].item() == pytest.approx(4.303 * 2 / math.sqrt(3))
    assert set(d["method"]) == set(LABELS) and len(d) == 8 * 2 * 2
    bars = produced.panels["bwt_f|async"]
    assert bars.index.tolist()[0] == "FedAvg" and bars["mean"].notna().all()
    table = (tmp_path / "fig" / "drift_correction_table.md").read_text()
    assert "| FedAvg | 72.00 ± 4.97 (3) |" in table


def test_dashboard_tab_shows_methods_per_order(stored):
    charts = method_charts(load_study(stored, "drift_correction").trials)
    assert len(charts) == 2
    for chart in charts:
        assert [t.name for t in chart.data] == ["Async FCL", "Sync FCL"]
        assert sorted(chart.data[0].x) == sorted(LABELS)
    views = study_views(load_study(stored, "drift_correction"))
    assert len(views) == 1 and len(views[0].charts) == 2


@pytest.mark.parametrize("axes, methods", [
    ({"method": list(METHOD_KEYS), "schedule.order": ["schedule.order"]}, True),
    ({k: [k] for k in (*METHOD_KEYS, "schedule.order")}, False)])
def test_method_charts_where_one_axis_sets_client_and_server_together(stored, axes, methods):
    """The manifest decides: one variant axis setting client.algorithm and server.optimizer
    makes a comparison of methods; the same keys as separate axes are plain settings."""
    write_method_manifest(stored / "drift_correction", axes)
    (view,) = study_views(load_study(stored, "drift_correction"))
    titles = [c["layout"]["title"]["text"] for c in view.charts]
    assert any("per method" in t for t in titles) == methods
