"""95% intervals the driver prints (and `analysis` draws): Student's t over seeds, and, for a
single seed, the binomial interval of an accuracy measured on a finite test set.

Student's t: mean +- t(0.975, n-1) * std / sqrt(n), the usual choice for the 2-10 seeds a study
affords (a normal 1.96 would understate it). One seed has no spread over seeds; its accuracy
still has the sampling noise of its test set: +- 1.96 * sqrt(p (1 - p) / N) over N images.
"""
from __future__ import annotations

import math
import statistics

# t(0.975, df) for df = 1..30; beyond that the normal quantile is close enough.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def t975(df: int) -> float:
    if df < 1:
        return math.nan
    return _T975[df - 1] if df <= len(_T975) else 1.960


def accuracy_interval(accs: list[float], test_images: int) -> tuple[float, float]:
    """(mean, 95% half-width) of accuracies in percent: over seeds (t) with 2 or more, else the
    binomial interval of the one accuracy on `test_images` images (inf without images)."""
    mean = statistics.fmean(accs)
    if len(accs) > 1:
        return mean, t975(len(accs) - 1) * statistics.stdev(accs) / math.sqrt(len(accs))
    if test_images <= 0:
        return mean, math.inf
    p = min(max(mean / 100, 0.0), 1.0)
    return mean, 100 * 1.96 * math.sqrt(p * (1 - p) / test_images)
