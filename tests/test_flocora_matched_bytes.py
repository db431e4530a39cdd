"""FLoCoRA Table IV at `flocora-cifar10-lowrank` compares at matched bytes: every baseline row of
`studies/flocora_compare.py` sends, per upload, within 5% of one LoRA row's bytes, counted
from the models (`fcl.communication.params_report`, what `fcl params` prints)."""
from __future__ import annotations

import runpy
from pathlib import Path

import pytest

pytest.importorskip("ray")
from fcl.communication import params_report  # noqa: E402
from fcl.presets import FLOCORA_RECIPE, preset  # noqa: E402

STUDY = runpy.run_path(str(Path(__file__).resolve().parent.parent / "studies"
                           / "flocora_compare.py"))["STUDY"]


def upload(row: dict) -> int:
    cfg = preset("flocora-cifar10-lowrank", {**FLOCORA_RECIPE, **row}, check=False)
    report = params_report(cfg)
    bits = cfg.compression.bits
    return next(m["bytes_up"] for m in reversed(report["messages"]) if m["bits"] == bits)


def test_every_baseline_row_matches_a_lora_row_within_5_percent():
    rows = STUDY.space_for("flocora-cifar10-lowrank")["method"]["grid_search"]
    lora = {r["compression.bits"]: upload(r) for r in rows if r.get("model.adapter") == "lora"}
    assert sorted(lora) == [2, 4, 8, 32]
    baselines = [r for r in rows if r.get("model.adapter") != "lora"
                 and (r.get("compression.prune") or r.get("model.zerofl_sparsity")
                      or r.get("model.adapter") == "fedpara")]
    assert len(baselines) == 7
    for row in baselines:
        sent = upload(row)
        ratio = min(abs(sent / b - 1) for b in lora.values())
        assert ratio <= 0.05, (row, sent, lora)
    # FedAvg's upload is 4.70x LoRA FP's, as FLoCoRA's 4.8x on ResNet-8 (within 3%)
    full = upload({"model.adapter": "full"})
    assert full / lora[32] == pytest.approx(4.8, rel=0.03)
