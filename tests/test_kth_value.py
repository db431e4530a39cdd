"""`fcl.federated.kth_value`: the bracketed selection returns exactly torch.kthvalue's value on
every kind of tensor ZeroFL's top-K meets, and `top_k` built on it keeps the same entries, in
the same layout, as the plain kthvalue + where it replaced."""
from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest
import torch

from fcl.federated import kth_value
from fcl.federated.kth_value import flat_view, kth_smallest
from fcl.federated.pruning import top_k, top_k_count


def _benchmark():
    path = Path(__file__).resolve().parent.parent / "benchmarks" / "kth_value.py"
    spec = importlib.util.spec_from_file_location("kth_value_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# top_k as it was (torch.kthvalue over |t|, torch.where): the benchmark's reference
reference_top_k = _benchmark().top_k_by_kthvalue


def tensors() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    n = 3 * kth_value.DIRECT_BELOW
    normal = torch.randn(n, generator=g)
    relu = normal.clamp(min=0)                                 # half the values tie at 0
    coarse = torch.randint(0, 7, (n,), generator=g).float()    # seven values, all tied
    sorted_up = torch.arange(n, dtype=torch.float32)           # every value distinct
    with_nan = normal.clone()
    with_nan[::5] = math.nan
    with_inf = normal.clone()
    with_inf[::3] = math.inf
    return {"normal": normal, "relu": relu, "coarse": coarse, "sorted": sorted_up,
            "nan": with_nan, "inf": with_inf, "bf16 values": normal.bfloat16().float(),
            "constant": torch.full((n,), 2.5), "small": normal[:1000]}


@pytest.mark.parametrize("name", list(tensors()))
def test_kth_smallest_is_kthvalue_at_every_rank_that_matters(name):
    values = tensors()[name]
    n = values.numel()
    ranks = {1, 2, n // 2, n - 1, n, *(n - top_k_count(n, d) + 1 for d in
                                       (0.9, 0.5, 0.18, 0.1, 0.027, 0.014, 1e-4))}
    for m in sorted(ranks):
        want = torch.kthvalue(values, m).values
        got = kth_smallest(values, m)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert (math.isnan(want) and math.isnan(got)) or got.item() == want.item(), (name, m)


def test_a_missed_bracket_falls_back_to_kthvalue(monkeypatch):
    """With a bracket of no width the rank falls outside it at almost every m: the answer is
    still kthvalue's."""
    monkeypatch.setattr(kth_value, "SPREAD", 0.0)
    values = tensors()["normal"]
    for m in (7, 1000, values.numel() // 3):
        assert kth_smallest(values, m).item() == torch.kthvalue(values, m).values.item()


def test_a_bad_rank_is_refused():
    with pytest.raises(ValueError, match=r"m=0; allowed: 1 to 5"):
        kth_smallest(torch.ones(5), 0)


def test_no_draw_from_the_global_rng():
    torch.manual_seed(3)
    state = torch.get_rng_state()
    kth_smallest(torch.randn(2 * kth_value.DIRECT_BELOW, generator=torch.Generator()), 10)
    assert torch.equal(torch.get_rng_state(), state)


def test_flat_view_of_an_nhwc_tensor_is_a_view_of_all_its_values():
    x = torch.randn(4, 8, 5, 5).contiguous(memory_format=torch.channels_last)
    flat = flat_view(x)
    assert flat.data_ptr() == x.data_ptr() and flat.numel() == x.numel()
    assert torch.equal(flat.sort().values, x.reshape(-1).sort().values)


@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_top_k_keeps_what_kthvalue_and_where_kept(layout, dtype):
    """Activations of ZeroFL's layers (after ReLU: ties at 0; a NaN from a diverged step), and
    a kernel: the same entries, bit for bit, in the same strides."""
    g = torch.Generator().manual_seed(1)
    act = torch.randn(8, 64, 16, 16, generator=g).clamp(min=0)
    act[0, 0, 0, :3] = math.nan
    kernel = torch.randn(128, 64, 3, 3, generator=g)
    for t in (act, kernel):
        t = t.to(dtype)
        if layout == "nhwc":
            t = t.contiguous(memory_format=torch.channels_last)
        for density in (0.18, 0.027, 0.5, 1.0):
            want, got = reference_top_k(t, density), top_k(t, density)
            assert got.stride() == want.stride() and got.dtype == want.dtype
            assert torch.equal(got.view(torch.int16 if dtype == torch.bfloat16 else torch.int32),
                               want.view(torch.int16 if dtype == torch.bfloat16 else torch.int32))


def test_a_1x1_kernel_of_an_nhwc_model_keeps_its_strides():
    """A 1x1 conv's weight in a channels_last model has strides that differ only in its size-1
    dims; top_k's output keeps the strides the kthvalue + where version gave it."""
    weight = torch.nn.Conv2d(128, 256, 1).to(memory_format=torch.channels_last).weight.detach()
    want, got = reference_top_k(weight, 0.18), top_k(weight, 0.18)
    assert got.stride() == want.stride() and torch.equal(got, want)


def test_a_zerofl_run_is_the_same_with_every_threshold_bracketed(monkeypatch):
    """A ZeroFL smoke run, its SWAT layers thresholded by kthvalue + where, then by top_k with
    every tensor through the bracket (no tensor small enough to go straight to kthvalue): the
    same losses, drift, bytes and accuracies, round by round."""
    import fcl.methods.zerofl.model as zerofl_model
    from fcl.engine import run
    from fcl.presets import preset
    cfg = preset("smoke", {"rounds": 2, "data.num_tasks": 1, "data.train_per_class": 40,
                           "data.test_per_class": 20, "model.adapter": "zerofl",
                           "model.width": 8, "eval.every": 1, "run.threads": 1,
                           "model.zerofl_sparsity": 0.82, "model.zerofl_mask_ratio": 0.0})

    def numbers(res):
        return repr([[(k, v) for k, v in r.row().items() if k != "wall_s"] for r in res.records]
                    + [res.accuracy.tolist()])

    monkeypatch.setattr(zerofl_model, "top_k", reference_top_k)
    before = numbers(run(cfg))
    monkeypatch.setattr(zerofl_model, "top_k", top_k)
    monkeypatch.setattr(kth_value, "DIRECT_BELOW", 0)
    assert numbers(run(cfg)) == before
