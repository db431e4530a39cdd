"""The regime line under FLoCoRA's figures and tables and their dashboard views
(`analysis/flocora_regime.py`): the ratio comes from the stored bytes of Table III's LoRA, and
says whether it is FLoCoRA's."""
from pathlib import Path

import pandas as pd
import pytest

from analysis.flocora_regime import regime_line, with_regime

REPO = Path(__file__).resolve().parent.parent

FEDAVG = 50_131_200


def rows(**over):
    base = {"model.backbone": "resnet_tiny", "model.width": 16, "model.adapter": "lora",
            "model.lora_rank": 32, "compression.bits": 32, "model.lora_on_head": False,
            "model.lora_train_norms": True, "tcc_bytes": 42_379_520,
            "full_fedavg_bytes": FEDAVG}
    return pd.DataFrame([{**base, **over}])


def test_width_16_is_named_off_the_papers_regime():
    line = regime_line(rows())
    assert line == ("model resnet_tiny width 16: LoRA r 32's messages 1.18x smaller than "
                    "full-model FedAvg's,\nagainst 4.8x on FLoCoRA's ResNet-8 (more than 5% off: "
                    "not the paper's low-rank regime)")


def test_a_ratio_within_5_percent_is_the_papers_regime():
    line = regime_line(rows(**{"model.width": 64, "tcc_bytes": 167_840_000,
                               "full_fedavg_bytes": 788_363_520}))
    assert "4.70x" in line and "width 64" in line and "(within 5%: the paper's" in line


def test_only_table_iii_lora_counts():
    other = pd.concat([rows(**{"model.lora_on_head": True, "tcc_bytes": FEDAVG // 5}),
                       rows(**{"compression.bits": 8, "tcc_bytes": FEDAVG // 17}),
                       rows(**{"model.lora_rank": 8, "tcc_bytes": FEDAVG // 18}),
                       rows(**{"model.adapter": "full", "tcc_bytes": FEDAVG})])
    assert regime_line(other) is None
    assert "1.18x" in regime_line(pd.concat([other, rows()]))


def test_no_line_without_the_columns_it_reads():
    assert regime_line(rows().drop(columns=["full_fedavg_bytes"])) is None
    assert with_regime("drawn from x · commit a", rows().drop(columns=["tcc_bytes"])) == \
        "drawn from x · commit a"
    assert with_regime("drawn from x · commit a", rows()).endswith("\ndrawn from x · commit a")


@pytest.mark.skipif(not (REPO / "results" / "flocora_layers").is_dir()
                    or not (REPO / "results-lowrank" / "flocora_layers").is_dir(),
                    reason="the stored FLoCoRA studies are not in this checkout")
def test_the_dashboard_names_each_stored_flocora_studys_regime():
    """Each view of a stored FLoCoRA study says its regime under its source, the side-by-side
    view one line per folder."""
    from analysis.dashboard.compare import compare_view
    from analysis.dashboard.page import render_page
    from analysis.dashboard.runs import run_set
    from analysis.dashboard.views import study_views
    from analysis.study_tables import load_study
    folders = ("results", "results-lowrank")
    studies = [load_study(REPO / f, "flocora_layers") for f in folders]
    (narrow,), (wide,) = (study_views(s) for s in studies)
    assert narrow.regime == ("model resnet_tiny width 16: LoRA r 32's messages 1.18x smaller "
                             "than full-model FedAvg's, against 4.8x on FLoCoRA's ResNet-8 "
                             "(more than 5% off: not the paper's low-rank regime)",)
    assert wide.regime == ("model resnet_tiny width 64: LoRA r 32's messages 4.70x smaller "
                           "than full-model FedAvg's, against 4.8x on FLoCoRA's ResNet-8 "
                           "(within 5%: the paper's low-rank regime)",)
    side = compare_view(studies, [run_set(s, f) for s, f in zip(studies, folders)],
                        ("rs-0", "rs-1"))
    assert side.regime == ("results: " + narrow.regime[0], "results-lowrank: " + wide.regime[0])
    page = render_page([wide], REPO / "results-lowrank")
    assert f'<p class="source">{wide.source}</p><p class="regime">' in page
    assert "4.70x smaller" in page
