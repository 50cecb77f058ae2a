"""Student's t, computed (regularised incomplete beta, bisection), not read from a table, and the
median-mean-interval summary the terms stage writes.  Pure arithmetic: imported by analysis/stats.py (the
analysis) and by perfmodel/terms.py (a measuring stage), so that neither stage's code holds the other's.
"""

from __future__ import annotations

import math
import statistics
from typing import Optional, Sequence

CONFIDENCE = 0.95


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with df degrees of freedom (0.5 < p < 1), to 1e-10."""
    if not 0.5 < p < 1.0 or df <= 0:
        raise ValueError(f"t_quantile: need 0.5 < p < 1 and df > 0, got p={p}, df={df}")
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
        if hi - lo < 1e-10:
            break
    return (lo + hi) / 2.0


def t975(df: float) -> float:
    """The two-sided 95 % multiplier."""
    return t_quantile(0.5 + CONFIDENCE / 2, df)


def mean_interval(values: Sequence[float]) -> dict:
    """Median, mean and the 95 % t-interval of the mean; no interval for n = 1 (never a fake one)."""
    n = len(values)
    mean = statistics.fmean(values)
    out = {"n": n, "median": statistics.median(values), "mean": mean, "low": None, "high": None, "se": None}
    if n >= 2:
        se = statistics.stdev(values) / n ** 0.5
        out.update(se=se, low=mean - t975(n - 1) * se, high=mean + t975(n - 1) * se)
    return out


def median_interval(values: Sequence[float]) -> tuple[float, Optional[float], Optional[float]]:
    """The median and the 95 % t-interval of the mean (mean_interval): (median, low, high), the
    interval None for one value."""
    iv = mean_interval(values)
    return iv["median"], iv["low"], iv["high"]
