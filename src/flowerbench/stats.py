"""The statistics every comparison in the report uses: one estimator, one rule, one variance split.

Pure arithmetic on numbers (no results, no files), so each piece is tested on recorded rounds:

  * `paired(base, other)`: a speed-up measured as paired ratios, one per round (a run against its
    baseline from the same round), summarised by the geometric mean with the 95 % t-interval of the
    mean log ratio over rounds.  The point and the interval come from the same log ratios, so the
    point is always the centre of its interval (on the log scale).
  * `verdict(estimate)`: the one rule for "faster", "slower" and "not distinguishable": the interval
    lies above 1, below 1, or holds 1 (or there is no interval: one round).
  * `components(...)`: the variance of log epoch times split into between rounds (processes),
    between repeats in one process and between epochs in one repeat (Kalibera & Jones, ISMM 2013).
  * `rounds_needed`, `per_level`: the counts those components call for.
  * `agree(a, b, k)`: two measurements of one paired ratio agree when their difference lies within
    the Bonferroni-corrected interval of the difference (k numbers compared).

Student's t quantiles are computed (regularised incomplete beta, bisection), not read from a table.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Optional, Sequence

CONFIDENCE = 0.95
FASTER, SLOWER, UNDECIDED = "faster", "slower", "not distinguishable"


# --------------------------------------------------------------------------- Student's t


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


# --------------------------------------------------------------------------- paired ratios


@dataclass(frozen=True)
class Estimate:
    """A ratio from n rounds: geometric mean and its 95 % interval (None for n = 1)."""
    point: float
    low: Optional[float]
    high: Optional[float]
    n: int
    log_mean: float
    log_sd: Optional[float]     # sd of the log ratios over rounds (None for n = 1)

    @property
    def half_width_pct(self) -> Optional[float]:
        """The interval's half-width as a share of the point: exp(t * se) - 1, in %."""
        return None if self.high is None else (self.high / self.point - 1.0) * 100.0

    @property
    def log_se(self) -> Optional[float]:
        return None if self.log_sd is None else self.log_sd / self.n ** 0.5

    @classmethod
    def itself(cls, n: int) -> "Estimate":
        """A run against itself: exactly 1, no interval (never a fake one)."""
        return cls(1.0, None, None, n, 0.0, None)

    def scaled(self, by: float) -> "Estimate":
        """The same estimate divided by a constant (an efficiency: a speed-up over N)."""
        return Estimate(self.point / by, None if self.low is None else self.low / by,
                        None if self.high is None else self.high / by, self.n, self.log_mean - math.log(by),
                        self.log_sd)

    def as_dict(self) -> dict:
        return {**asdict(self), "half_width_pct": self.half_width_pct}


def from_logs(logs: Sequence[float]) -> Estimate:
    n = len(logs)
    if n == 0:
        raise ValueError("no rounds to estimate from")
    m = statistics.fmean(logs)
    if n == 1:
        return Estimate(math.exp(m), None, None, 1, m, None)
    sd = statistics.stdev(logs)
    half = t975(n - 1) * sd / n ** 0.5
    return Estimate(math.exp(m), math.exp(m - half), math.exp(m + half), n, m, sd)


def geometric(values: Sequence[float]) -> Estimate:
    """Positive values over rounds (seconds): their geometric mean and its 95 % interval, the same
    estimator as a paired ratio's."""
    return from_logs([math.log(x) for x in values])


def paired(numerator: Sequence[float], denominator: Sequence[float]) -> Estimate:
    """numerator[i] / denominator[i] per round i (a speed-up: baseline seconds over the run's), as one
    estimate over the rounds."""
    if len(numerator) != len(denominator):
        raise ValueError(f"paired ratios need one value of each per round: {len(numerator)} against "
                         f"{len(denominator)}")
    if min([*numerator, *denominator], default=1.0) <= 0:
        raise ValueError("paired ratios need positive times")
    return from_logs([math.log(a / b) for a, b in zip(numerator, denominator)])


def verdict(est: Estimate) -> str:
    """The one rule: faster when the whole interval of the speed-up lies above 1, slower when below,
    otherwise (or without an interval) not distinguishable."""
    if est.low is None:
        return UNDECIDED
    if est.low > 1.0:
        return FASTER
    if est.high < 1.0:
        return SLOWER
    return UNDECIDED


def rounds_needed(log_sd: float, target_pct: float, most: int = 200) -> Optional[int]:
    """The fewest rounds n >= 2 whose 95 % half-width t(n-1) * sd / sqrt(n) is at most target_pct %
    (on the ratio scale), for a spread of log ratios `log_sd`; None beyond `most`."""
    goal = math.log1p(target_pct / 100.0)
    for n in range(2, most + 1):
        if t975(n - 1) * log_sd / n ** 0.5 <= goal:
            return n
    return None


# --------------------------------------------------------------------------- A/B agreement


def agree(a: Estimate, b: Estimate, compared: int) -> dict:
    """Do two measurements of one ratio agree?  Their log means differ by d; the difference's standard
    error is sqrt(se_a^2 + se_b^2) with Welch's degrees of freedom; they agree when |d| is within the
    two-sided (1 - 0.05 / compared) t-interval (Bonferroni over the `compared` numbers), so a clean
    pair passes all of them at least 95 % of the time."""
    if a.log_se is None or b.log_se is None:
        return {"agree": None, "difference_pct": (b.point / a.point - 1) * 100, "limit_pct": None}
    va, vb = a.log_se ** 2, b.log_se ** 2
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (a.n - 1) + vb ** 2 / (b.n - 1)) if va + vb > 0 else float(a.n + b.n - 2)
    t = t_quantile(1.0 - (1.0 - CONFIDENCE) / (2 * compared), df)
    d = b.log_mean - a.log_mean
    return {"agree": abs(d) <= t * se, "difference_pct": math.expm1(d) * 100, "limit_pct": math.expm1(t * se) * 100,
            "t": t, "df": df}


# --------------------------------------------------------------------------- where the variance lives


def _var(xs: Sequence[float]) -> Optional[float]:
    return statistics.variance(xs) if len(xs) >= 2 else None


def components(runs: Sequence[Sequence[Sequence[float]]]) -> dict:
    """Variance components of log epoch seconds for one variant: runs[round][repeat][epoch].

    Method of moments for the nested design (Kalibera & Jones 2013, "T_i^2"): epochs within a
    repeat (S1^2), repeat means within a round, round means; each level's component is its observed
    variance less what the level below contributes to it, clipped at 0.  A level with one member per
    parent (one repeat per process) cannot be told apart from the level above: it is None and the
    level above holds both.  Returns the components (variances of log seconds) and the counts."""
    logs = [[[math.log(e) for e in rep if e > 0] for rep in rnd] for rnd in runs]
    logs = [[rep for rep in rnd if rep] for rnd in logs]
    logs = [rnd for rnd in logs if rnd]
    within_repeat = [v for rnd in logs for rep in rnd if (v := _var(rep)) is not None]
    s1 = statistics.fmean(within_repeat) if within_repeat else None
    n1 = statistics.fmean([len(rep) for rnd in logs for rep in rnd]) if logs else 0
    rep_means = [[statistics.fmean(rep) for rep in rnd] for rnd in logs]
    within_round = [v for rnd in rep_means if (v := _var(rnd)) is not None]
    s2 = statistics.fmean(within_round) if within_round else None
    n2 = statistics.fmean([len(rnd) for rnd in rep_means]) if rep_means else 0
    s3 = _var([statistics.fmean(rnd) for rnd in rep_means])
    epoch = s1
    repeat = None if s2 is None else max(0.0, s2 - (s1 or 0.0) / n1)
    # a round mean's variance: T3 + (T2 + T1/n1)/n2; with one repeat per round, T2 stays in T3
    below = (s2 if s2 is not None else (s1 or 0.0) / n1) / n2 if n2 else 0.0
    rnd = None if s3 is None else max(0.0, s3 - below)
    return {"rounds": len(logs), "repeats_per_round": n2, "epochs_per_repeat": n1,
            "epoch": epoch, "repeat": repeat, "round": rnd}


def pooled_components(per_variant: dict[str, dict]) -> dict:
    """The components averaged over variants (each a variance of log seconds), with their relative
    standard deviations (sqrt of a variance of logs ~ a relative sd)."""
    out: dict = {}
    for level in ("epoch", "repeat", "round"):
        values = [c[level] for c in per_variant.values() if c.get(level) is not None]
        v = statistics.fmean(values) if values else None
        out[level] = {"variance": v, "sd_pct": None if v is None else math.sqrt(v) * 100, "variants": len(values)}
    return out


def per_level(upper_cost_s: float, lower_cost_s: float, lower_var: Optional[float],
              upper_var: Optional[float], most: int = 20) -> int:
    """How many repetitions of the lower level to run per repetition of the upper one, at the least
    cost for a given precision: sqrt((upper cost / lower cost) x (lower variance / upper variance)),
    rounded up (two-stage sampling; Kalibera & Jones's r_i).  An upper level with no variance of its
    own gives `most` (all the repetitions below it); a lower one with none gives 1."""
    if not lower_var or lower_cost_s <= 0:
        return 1
    if not upper_var:
        return most
    return max(1, min(most, math.ceil(math.sqrt(upper_cost_s / lower_cost_s * lower_var / upper_var))))
