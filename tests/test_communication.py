"""`fcl params`: parameter counts and bytes per message of FLoCoRA's ResNet-8, worked by hand."""
import json
import subprocess
import sys

import pytest

from fcl.communication import params_report
from fcl.presets import preset


def test_resnet8_r32_message_bytes_by_hand():
    """ResNet-8, CIFAR-10 head, LoRA r = 32 (counts derived in tests/test_lora.py):
    252,768 adapter values + FC weight 2,560 are quantized; norms 2,688 + FC bias 10 = 2,698
    go as float32. Channels with a float32 scale and zero point: per adapter r = 32 (down)
    + O (up), 9 * 32 + 3 * (64 + 128 + 256) = 1,632, + 10 FC rows = 1,642, i.e. 13,136 B.
    32 bits: 258,026 * 4 = 1,032,104 B.    8 bits: 255,328 + 13,136 + 10,792 = 279,256 B.
    4 bits: 127,664 + 13,136 + 10,792 = 151,592 B.  2 bits: 63,832 + ... = 87,760 B.
    (Every quantized tensor has a multiple of 4 values, so packing adds no padding.)
    Full-model FedAvg: 1,227,594 * 4 = 4,910,376 B."""
    rep = params_report(preset("flocora"))
    assert rep["trainable_params"] == 258_026 and rep["buffer_values"] == 0
    assert rep["full_model_bytes"] == 4_910_376
    by_bits = {m["bits"]: m for m in rep["messages"]}
    want = {32: 1_032_104, 8: 279_256, 4: 151_592, 2: 87_760}
    for bits, nbytes in want.items():
        assert by_bits[bits]["bytes_down"] == by_bits[bits]["bytes_up"] == nbytes
        assert by_bits[bits]["ratio_vs_full"] == pytest.approx(4_910_376 / nbytes)
    assert by_bits[8]["quantized_values"] == 255_328 and by_bits[8]["float32_values"] == 2_698
    # flocora: 100 rounds x 10 sampled clients x (one message down + one up)
    assert rep["tcc_bytes"] == 100 * 10 * 2 * 1_032_104
    assert rep["full_fedavg_tcc_bytes"] == 100 * 10 * 2 * 4_910_376


def test_full_model_is_its_own_baseline_and_batchnorm_statistics_count():
    rep = params_report(preset("flocora", {"model.adapter": "full", "model.norm": "batch"}))
    m32 = rep["messages"][0]
    # BatchNorm: the running mean and variance (2 x 1,344 values) travel with the weights
    assert rep["buffer_values"] == 2_688
    assert m32["bytes_down"] == rep["full_model_bytes"] == 4 * (1_227_594 + 2_688)
    assert m32["ratio_vs_full"] == 1.0


def fcl(*args):
    return subprocess.run([sys.executable, "-m", "fcl", *args], capture_output=True, text=True,
                          timeout=300)


def test_params_command_prints_a_table_and_json_and_rejects_bad_bits():
    p = fcl("params", "--preset", "flocora", "--set", "model.lora_rank=16")
    assert p.returncode == 0, p.stderr
    assert "trainable" in p.stdout and "vs full" in p.stdout
    assert [line.split()[0] for line in p.stdout.splitlines()
            if line.strip()[:2] in ("32", "8 ", "4 ", "2 ")] == ["32", "8", "4", "2"]
    j = fcl("params", "--preset", "flocora-local", "--json")
    assert j.returncode == 0 and json.loads(j.stdout)["classes_per_task"] == [10]
    bad = fcl("params", "--preset", "flocora", "--set", "compression.bits=16")
    assert bad.returncode == 2
    assert bad.stderr.strip() == ("error: compression.bits=16: unknown value; "
                                  "allowed: 32, 8, 4, 2")


def test_zerofl_uplink_row_counts_each_conv_kernels_top_k():
    """ZeroFL at s = 0.9, r = 0.1 (upload density 0.2) on ResNet-8: the run's row (the last,
    marked) sends each conv kernel's top ceil(0.2 n) values sparse, the norms and FC dense;
    the downlink is the dense full model. Values only: 4 B per kept value + the dense rest; the
    positions cost at most a bitmap (n / 8 B) plus a 4-byte count per kernel."""
    import math
    from fcl.models.factory import build_model
    cfg = preset("flocora", {"model.adapter": "zerofl", "model.zerofl_sparsity": 0.9,
                             "model.zerofl_mask_ratio": 0.1})
    rep = params_report(cfg)
    row = rep["messages"][-1]
    assert row["top_k"] == pytest.approx(0.2) and "prune" not in row
    model = build_model(cfg.model, (3, 32, 32), [10], cfg.seed)
    convs = [p.numel() for n, p in model.tasks[0].named_parameters() if p.dim() == 4]
    kept = sum(math.ceil(0.2 * n) for n in convs)
    rest = rep["trainable_params"] - sum(convs)
    assert row["values_bytes_up"] == 4 * (kept + rest)
    assert row["values_bytes_up"] < row["bytes_up"] <= \
        row["values_bytes_up"] + sum(math.ceil(n / 8) + 4 for n in convs)
    assert row["bytes_down"] == rep["full_model_bytes"]
    assert rep["tcc_bytes"] == 100 * 10 * (row["bytes_down"] + row["bytes_up"])
    text = subprocess.run([sys.executable, "-m", "fcl", "params", "--preset", "flocora", "--set",
                           "model.adapter=zerofl", "model.zerofl_sparsity=0.9",
                           "model.zerofl_mask_ratio=0.1"], capture_output=True, text=True,
                          timeout=300).stdout
    marked = [line for line in text.splitlines() if line.rstrip().endswith("*")]
    assert [line.split()[0] for line in marked] == ["k0.2"]
