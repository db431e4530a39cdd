"""Comparisons judged after every batch of seeds without inflating the error rate: a Student's t
interval at each look, at a level that an alpha-spending function hands out, so that the looks
together spend at most `alpha`. `python -m analysis seeds-simulation` replays the rule on the
stored studies; a study's driver does not run it yet (its `--seeds` is a fixed number).

The rule (`SeedRule`): the study runs `first` seeds of every setting, then adds `step` seeds at
a time, up to `most`; these looks are fixed before any trial (n_1 = first, n_2 = first + step,
..., n_K = most). At look k every comparison still open (a same-seed paired difference, "a - b
against a bound") gets the two-sided t-interval over its n_k pairs at level alpha_k =
f(n_k / most) - f(n_{k-1} / most), where f is a spending function with f(0) = 0 and
f(1) = alpha (Lan & DeMets 1983, "Discrete sequential boundaries for clinical trials",
Biometrika 70(3)); it is resolved when that interval excludes the bound, and stays so. A
setting gets the next batch only while one of its comparisons is open.

Why it is valid under peeking: a comparison with no true difference is wrongly resolved at
some look with probability at most sum_k P(wrong at look k) <= sum_k alpha_k = alpha (the
union bound; each look's t-interval is exact for normal differences), whatever the looks'
dependence. Exact group-sequential boundaries would spend less per look; the union bound
needs no joint distribution with an unknown variance, at some loss of power.

Spending functions: `pocock` f(t) = alpha ln(1 + (e - 1) t) spends early (Lan-DeMets'
Pocock-type), `obrien_fleming` f(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)) keeps most of alpha
for the last look. A study with a fixed number of seeds keeps the fixed-n 95% t-interval
(`fcl.intervals`).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from statistics import NormalDist

SPENDING = ("pocock", "obrien_fleming")
OPEN, ABOVE, BELOW = "open", "above", "below"


def spent(t: float, alpha: float, spending: str) -> float:
    """The alpha spent by information fraction t in [0, 1]."""
    if t <= 0:
        return 0.0
    t = min(t, 1.0)
    if spending == "pocock":
        return alpha * math.log(1 + (math.e - 1) * t)
    if spending == "obrien_fleming":
        z = NormalDist().inv_cdf(1 - alpha / 2)
        return 2 - 2 * NormalDist().cdf(z / math.sqrt(t))
    raise ValueError(f"spending={spending}: allowed {', '.join(SPENDING)}")


@dataclass(frozen=True)
class SeedRule:
    """`first` seeds, then `step` more per look while a comparison is open, up to `most`; each
    look at its share of `alpha` (`spending`)."""
    most: int = 10
    first: int = 3
    step: int = 2
    alpha: float = 0.05
    spending: str = "obrien_fleming"

    def __post_init__(self):
        if not 2 <= self.first <= self.most:
            raise ValueError(f"first={self.first}: allowed 2 <= first <= most ({self.most})")
        if self.step < 1:
            raise ValueError(f"step={self.step}: allowed a positive integer")
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha={self.alpha}: allowed 0 < alpha < 1")
        if self.spending not in SPENDING:
            raise ValueError(f"spending={self.spending}: allowed {', '.join(SPENDING)}")

    @property
    def looks(self) -> tuple[int, ...]:
        """Seeds per setting at each look: first, first + step, ..., most."""
        out = list(range(self.first, self.most, self.step))
        return tuple(out + [self.most])

    @property
    def levels(self) -> tuple[float, ...]:
        """alpha_k of each look (two-sided); they sum to `alpha`."""
        fractions = [0.0] + [n / self.most for n in self.looks]
        return tuple(spent(b, self.alpha, self.spending) - spent(a, self.alpha, self.spending)
                     for a, b in zip(fractions, fractions[1:]))

    def describe(self) -> dict:
        return {"rule": "alpha spending over fixed looks, a t-interval per look (union bound)",
                "spending": self.spending, "alpha": self.alpha, "first": self.first,
                "step": self.step, "most": self.most, "looks": list(self.looks),
                "levels": [round(a, 6) for a in self.levels]}


def judge(diffs: list[float], level: float, bound: float = 0.0) -> tuple[str, float, float]:
    """(verdict, mean, half-width) of the two-sided t-interval at `level` over paired
    differences: ABOVE / BELOW where it excludes `bound` on that side, else OPEN."""
    n = len(diffs)
    if n < 2:
        return OPEN, (diffs[0] if diffs else math.nan), math.inf
    mean = sum(diffs) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    half = t_quantile(1 - level / 2, n - 1) * sd / math.sqrt(n)
    if mean - half > bound:
        return ABOVE, mean, half
    if mean + half < bound:
        return BELOW, mean, half
    return OPEN, mean, half


@functools.lru_cache(maxsize=None)
def t_quantile(p: float, df: int) -> float:
    """Student's t quantile (p in (0.5, 1)), by bisection on the CDF (cached: a replay asks
    for the same few levels and seed counts thousands of times)."""
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2


def t_cdf(x: float, df: int) -> float:
    """P(T <= x) for x >= 0: 1 - I_{df / (df + x^2)}(df / 2, 1 / 2) / 2."""
    return 1 - 0.5 * incomplete_beta(df / (df + x * x), df / 2, 0.5)


def incomplete_beta(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction (Lentz's
    method; Numerical Recipes, 3rd ed., section 6.4)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(x, a, b) / a
    return 1 - front * _beta_fraction(1 - x, b, a) / b


def _beta_fraction(x: float, a: float, b: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return h
