"""The m-th smallest of many values, exactly `torch.kthvalue`'s, in a few vectorized passes.

ZeroFL's sparse training (`fcl.methods.zerofl`) takes a top-K threshold of every conv's input
activations at every step; on one CPU thread (a trial's) `torch.kthvalue` over a million values
costs more than the convolution it thresholds. On a CPU, `kth_smallest` brackets the answer
instead (elsewhere it is `torch.kthvalue`: the bracket's host syncs would cost a GPU more):

    sample   S values at fixed pseudo-random positions (a generator of its own, seeded by the
             tensor's size: the same positions every call, no draw from torch's global RNG)
    bracket  lo, hi = the sample's order statistics around rank m / n, 5 standard errors of a
             sample quantile apart on each side
    select   below = #{v < lo}; the m-th smallest is the (m - below)-th of {lo <= v <= hi}
             when that rank falls inside the bracket, torch.kthvalue of the few values there;
             otherwise (a bracket missed, NaN at the rank) torch.kthvalue of all the values

so the result is always the value `torch.kthvalue(values, m)` returns (a value of the tensor,
NaN sorted above everything), and the bracket only decides how fast. `python
benchmarks/kth_value.py` times both on ZeroFL's layer shapes.
"""
from __future__ import annotations

import functools
import math

import torch

SAMPLE = 8192              # sample size: the bracket holds about 2 x 5 sqrt(q (1 - q) / S) of n
DIRECT_BELOW = 8 * SAMPLE  # smaller tensors go straight to torch.kthvalue
SPREAD = 5.0               # half-width of the bracket, in standard errors of the sample quantile


@functools.lru_cache(maxsize=64)
def _sample_positions(n: int, device: torch.device) -> torch.Tensor:
    generator = torch.Generator().manual_seed(n)
    return torch.randint(0, n, (SAMPLE,), generator=generator).to(device)


def kth_smallest(values: torch.Tensor, m: int) -> torch.Tensor:
    """The m-th smallest (1-based) of the 1-D tensor `values`, as a 0-d tensor: the value
    `torch.kthvalue(values, m).values` is (module docstring)."""
    n = values.numel()
    if not 1 <= m <= n:
        raise ValueError(f"kth_smallest: m={m}; allowed: 1 to {n}")
    if n < DIRECT_BELOW or values.device.type != "cpu":
        return torch.kthvalue(values, m).values
    sample = values[_sample_positions(n, values.device)].sort().values
    q = m / n
    half = SPREAD * math.sqrt(q * (1 - q) / SAMPLE) + 2 / SAMPLE
    lo_at, hi_at = math.floor((q - half) * SAMPLE), math.ceil((q + half) * SAMPLE)
    below, keep = 0, None
    if lo_at >= 0:
        lo = sample[lo_at]
        below = int(torch.count_nonzero(values < lo))
        keep = values >= lo
    if hi_at < SAMPLE:
        under_hi = values <= sample[hi_at]
        keep = under_hi if keep is None else keep.logical_and_(under_hi)
    inside = values if keep is None else values[keep]   # one compaction, of the bracket only
    rank = m - below
    if 1 <= rank <= inside.numel():
        return torch.kthvalue(inside, rank).values
    return torch.kthvalue(values, m).values


def flat_view(t: torch.Tensor) -> torch.Tensor:
    """`t`'s values as one 1-D tensor in memory order: a view where `t` is dense in any dim
    order (an NHWC activation is not copied back to NCHW as `reshape(-1)` would); a selection
    does not care about the order."""
    order = sorted(range(t.dim()), key=lambda d: t.stride(d), reverse=True)
    return t.permute(order).reshape(-1)
