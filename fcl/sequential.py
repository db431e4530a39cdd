"""Comparisons judged after every batch of seeds without inflating the error rate: a Student's t
interval at each look, at a level that an alpha-spending function hands out, so that the looks
together spend at most `alpha`. `python -m analysis seeds-simulation` replays the rule on the
stored studies; a grid study's driver runs it with `--seeds auto` (`fcl.tune.auto_seeds`).

The rule (`SeedRule`): the study runs `first` seeds of every setting, then adds `step` seeds at
a time, up to `most`; these looks are fixed before any trial (n_1 = first, n_2 = first + step,
..., n_K = most). At look k every comparison still open (a same-seed paired difference, "a - b
against a bound") gets the two-sided t-interval over its n_k pairs at level alpha_k =
f(n_k / most) - f(n_{k-1} / most), where f is a spending function with f(0) = 0 and
f(1) = alpha (Lan & DeMets 1983, "Discrete sequential boundaries for clinical trials",
Biometrika 70(3)); it is resolved when that interval excludes the bound, and stays so. A
setting gets the next batch only while one of its comparisons is open.

Why it is valid under peeking: the per-look levels are set so that a comparison with no true
difference is wrongly resolved by look k with probability f(n_k / most), hence by the last
look with probability alpha. `boundary="simulated"` (the default) computes them from the joint
distribution of the looks' t statistics under no difference: for normal paired differences
that distribution does not depend on the unknown variance, so 200,000 simulated paths give the
boundaries up to Monte Carlo error (the group-sequential t-test of Jennison & Turnbull 2000,
"Group Sequential Methods with Applications to Clinical Trials", ch. 11, with Lan-DeMets
spending). `boundary="union"` uses the spending increments themselves as the levels: by the
union bound valid under any dependence of the looks, but it spends alpha twice where looks
overlap (its last look of 3, 5, 7, 9, 10 seeds is at 0.011 instead of about 0.04).

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
BOUNDARIES = ("simulated", "union")
PATHS = 200_000                  # simulated null paths behind each simulated boundary
OPEN, ABOVE, BELOW = "open", "above", "below"
FUTILE = "futile"                # open, and stopped: it would not resolve by the last look


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
    boundary: str = "simulated"
    futility: float = 0.5          # stop an open comparison whose mean is under this share of
                                   # the half-width it would have at `most` seeds (0: never)

    def __post_init__(self):
        if not 2 <= self.first <= self.most:
            raise ValueError(f"first={self.first}: allowed 2 <= first <= most ({self.most})")
        if self.step < 1:
            raise ValueError(f"step={self.step}: allowed a positive integer")
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha={self.alpha}: allowed 0 < alpha < 1")
        if self.spending not in SPENDING:
            raise ValueError(f"spending={self.spending}: allowed {', '.join(SPENDING)}")
        if not 0 <= self.futility < 1:
            raise ValueError(f"futility={self.futility}: allowed 0 <= futility < 1")
        if self.boundary not in BOUNDARIES:
            raise ValueError(f"boundary={self.boundary}: allowed {', '.join(BOUNDARIES)}")

    @property
    def looks(self) -> tuple[int, ...]:
        """Seeds per setting at each look: first, first + step, ..., most."""
        out = list(range(self.first, self.most, self.step))
        return tuple(out + [self.most])

    @property
    def spent_by_look(self) -> tuple[float, ...]:
        """The alpha each look spends (they sum to `alpha`)."""
        fractions = [0.0] + [n / self.most for n in self.looks]
        return tuple(spent(b, self.alpha, self.spending) - spent(a, self.alpha, self.spending)
                     for a, b in zip(fractions, fractions[1:]))

    @property
    def levels(self) -> tuple[float, ...]:
        """The two-sided level of each look's t-interval: by simulation of the looks' joint
        null distribution, or the spent alpha itself (`boundary="union"`)."""
        if self.boundary == "union":
            return self.spent_by_look
        return simulated_levels(self.looks, self.spent_by_look)

    def verdict(self, diffs: list[float], look: int, bound: float = 0.0) -> str:
        """The verdict on a comparison's paired differences at look `look` (0-based): ABOVE,
        BELOW, OPEN, or FUTILE (open, and its seeds stop: even the half-width the last look
        would have with this spread is more than 1 / `futility` times its distance from the
        bound). Stopping for futility never resolves a comparison, so it cannot raise the
        error rate; it costs the comparisons that would have resolved late."""
        level = self.levels[look]
        verdict, mean, half = judge(diffs, level, bound)
        last = look == len(self.looks) - 1
        if verdict != OPEN or last or not self.futility or not math.isfinite(half):
            return verdict
        n = len(diffs)
        sd = half * math.sqrt(n) / t_quantile(1 - level / 2, n - 1)
        final = t_quantile(1 - self.levels[-1] / 2, self.most - 1) * sd / math.sqrt(self.most)
        return FUTILE if abs(mean - bound) < self.futility * final else OPEN

    def describe(self) -> dict:
        how = ("simulated boundaries of the looks' t statistics" if self.boundary == "simulated"
               else "the spent alpha as each look's level (union bound)")
        return {"rule": f"alpha spending over fixed looks, a t-interval per look: {how}",
                "spending": self.spending, "boundary": self.boundary, "alpha": self.alpha,
                "futility": self.futility, "first": self.first, "step": self.step,
                "most": self.most,
                "looks": list(self.looks), "levels": [round(a, 6) for a in self.levels]}


@functools.lru_cache(maxsize=None)
def simulated_levels(looks: tuple[int, ...], spend: tuple[float, ...], paths: int = PATHS,
                     seed: int = 0) -> tuple[float, ...]:
    """Per look, the two-sided t level whose boundary the null paths still running cross with
    probability `spend[k]` (of all paths): standard normal differences, a path's t statistic
    over its first n_k, the boundary the (spend[k] * paths)-th largest |t| of the paths not yet
    stopped. Seeded: the same levels every time."""
    import numpy as np
    x = np.random.default_rng(seed).standard_normal((paths, looks[-1]))
    running = np.ones(paths, dtype=bool)
    levels = []
    for n, share in zip(looks, spend):
        head = x[:, :n]
        t = np.abs(head.mean(axis=1) / (head.std(axis=1, ddof=1) / math.sqrt(n)))
        left = np.sort(t[running])[::-1]
        k = int(round(share * paths))
        if k == 0 or k >= len(left):       # too few paths to place it: the union's level
            levels.append(share)
            continue
        bound = float(left[k])
        running &= t <= bound
        levels.append(2 * (1 - t_cdf(bound, n - 1)))
    return tuple(levels)


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
