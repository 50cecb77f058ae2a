"""The statistics every comparison in the report uses: one estimator, one rule, one variance split.

Pure arithmetic on numbers (no results, no files), so each piece is tested on recorded rounds:

  * `paired(base, other)`: a speed-up measured as paired ratios, one per round (a run against its
    baseline from the same round), summarised by the geometric mean with the 95 % t-interval of the
    mean log ratio over rounds.  The point and the interval come from the same log ratios, so the
    point is always the centre of its interval (on the log scale).
  * `direction(estimate)`: the one rule for "faster", "slower" and "not distinguishable": the interval
    lies above 1, below 1, or holds 1 (or there is no interval: one round).
  * `components(...)`: the variance of log epoch times split into between rounds (processes),
    between repeats in one process and between epochs in one repeat (Kalibera & Jones, ISMM 2013).
  * `rounds_needed`, `per_level`: the counts those components call for.
  * `welch(...)`: the standard error and degrees of freedom of a difference of two independent means.
  * `tost(...)`: the one equivalence test (two one-sided tests) for every "does it match" question:
    equivalent when the 90 % interval of a log difference lies inside a band symmetric on the log
    scale, different when the 95 % interval (Bonferroni-corrected where any of several may differ)
    lies wholly outside it, otherwise undetermined.  The A/B and the held-out verdicts both use it.
  * `random_effects(groups)`: a one-way random-effects model over measurements (runs) of one
    quantity: the pooled within-run variance (df summed) and the between-run component.

Student's t quantiles are computed (regularised incomplete beta, bisection), not read from a table.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Optional, Sequence

from flowerbench.core.tdist import CONFIDENCE, mean_interval, t975, t_cdf, t_quantile  # noqa: F401

FASTER, SLOWER, UNDECIDED = "faster", "slower", "not distinguishable"


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
    df: Optional[float] = None  # of log_sd: n - 1 from this run alone, more when pooled over runs

    @property
    def dof(self) -> Optional[float]:
        return self.df if self.df is not None else (self.n - 1 if self.n >= 2 else None)

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
                        self.log_sd, self.df)

    def as_dict(self) -> dict:
        return {**asdict(self), "half_width_pct": self.half_width_pct}


def from_logs(logs: Sequence[float], pooled: Optional[tuple[float, float]] = None) -> Estimate:
    """The geometric mean of exp(logs) and its 95 % t-interval; `pooled` = (sd, df): use that sd of one
    log value (a pooled within-run sd, random_effects) and its df instead of this run's own."""
    n = len(logs)
    if n == 0:
        raise ValueError("no rounds to estimate from")
    m = statistics.fmean(logs)
    if pooled is not None and pooled[1] and pooled[1] >= 1:
        sd, df = pooled
    elif n == 1:
        return Estimate(math.exp(m), None, None, 1, m, None)
    else:
        sd, df = statistics.stdev(logs), None
    half = t975(df if df is not None else n - 1) * sd / n ** 0.5
    return Estimate(math.exp(m), math.exp(m - half), math.exp(m + half), n, m, sd, df)


def logs_of(numerator: Sequence[float], denominator: Sequence[float]) -> list[float]:
    """log(numerator[i] / denominator[i]) per round: a paired ratio's values (checked)."""
    if len(numerator) != len(denominator):
        raise ValueError(f"paired ratios need one value of each per round: {len(numerator)} against "
                         f"{len(denominator)}")
    if min([*numerator, *denominator], default=1.0) <= 0:
        raise ValueError("paired ratios need positive times")
    return [math.log(a / b) for a, b in zip(numerator, denominator)]


def geometric(values: Sequence[float]) -> Estimate:
    """Positive values over rounds (seconds): their geometric mean and its 95 % interval, the same
    estimator as a paired ratio's."""
    return from_logs([math.log(x) for x in values])


def paired(numerator: Sequence[float], denominator: Sequence[float],
           pooled: Optional[tuple[float, float]] = None) -> Estimate:
    """numerator[i] / denominator[i] per round i (a speed-up: baseline seconds over the run's), as one
    estimate over the rounds; `pooled`: (sd, df) of a pooled within-run spread (from_logs)."""
    return from_logs(logs_of(numerator, denominator), pooled)


def direction(est: Estimate) -> str:
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


def independent_ratio(a: Estimate, b: Estimate) -> Estimate:
    """a / b for two estimates from independent processes (no round pairs them): the log means'
    difference, its standard error the two added (welch), its df Welch-Satterthwaite's.  `n` is the
    smaller count, and log_sd is the se scaled back by it, so log_se and the interval agree."""
    n = min(a.n, b.n)
    m = a.log_mean - b.log_mean
    if a.log_se is None or b.log_se is None:
        return Estimate(math.exp(m), None, None, n, m, None)
    se, df = welch(a.log_se ** 2, a.dof, b.log_se ** 2, b.dof)
    half = t975(df) * se
    return Estimate(math.exp(m), math.exp(m - half), math.exp(m + half), n, m, se * n ** 0.5, df)


# --------------------------------------------------------------------------- two independent means


def welch(var_a: float, df_a: float, var_b: float, df_b: float) -> tuple[float, float]:
    """The standard error of a difference of two independent means, from each mean's variance
    (var = sd^2 / n) and its degrees of freedom, and the difference's degrees of freedom
    (Welch-Satterthwaite; their sum where both variances are 0)."""
    total = var_a + var_b
    df = total ** 2 / (var_a ** 2 / df_a + var_b ** 2 / df_b) if total > 0 else df_a + df_b
    return math.sqrt(total), df


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


# --------------------------------------------------------------------------- equivalence


EQUIVALENT, DIFFERENT, UNDETERMINED = "equivalent", "different", "undetermined"
EQUIVALENCE_PCT = 90      # the interval tost reads for "equivalent" (1 - 2 alpha at alpha = 0.05), in %


def tost(log_diff: float, se: Optional[float], df: Optional[float], band_pct: float, alpha: float = 0.05,
         alpha_differs: float = 0.05) -> dict:
    """The one equivalence test, on the log scale (two one-sided tests, Schuirmann 1987).

    `log_diff`: the measured log difference (log B - log A, or log measured - log predicted), `se` its
    standard error with `df` degrees of freedom; the band is +-log(1 + band_pct / 100), symmetric on the
    log scale.  -> verdict:
      * EQUIVALENT when the (1 - 2 alpha) interval (90 %) lies inside the band;
      * DIFFERENT when the (1 - alpha_differs) interval (95 %; pass alpha / k when any of k may differ,
        Bonferroni) lies wholly outside it;
      * UNDETERMINED otherwise, and without an interval (se or df missing).
    `shift`: the (1 - alpha_differs) interval excludes 0, a detectable difference (it may still be
    inside the band)."""
    band = math.log1p(band_pct / 100.0)
    out = {"log_diff": log_diff, "difference_pct": math.expm1(log_diff) * 100.0, "band_pct": band_pct,
           "se": se, "df": df, "verdict": UNDETERMINED, "shift": None,
           "equivalence_interval_pct": None, "difference_interval_pct": None}
    if se is None or df is None or df <= 0 or not math.isfinite(se):
        return out
    t_eq, t_diff = t_quantile(1.0 - alpha, df), t_quantile(1.0 - alpha_differs / 2.0, df)
    eq = (log_diff - t_eq * se, log_diff + t_eq * se)
    diff = (log_diff - t_diff * se, log_diff + t_diff * se)
    if -band <= eq[0] and eq[1] <= band:
        verdict = EQUIVALENT
    elif diff[0] > band or diff[1] < -band:
        verdict = DIFFERENT
    else:
        verdict = UNDETERMINED
    return {**out, "verdict": verdict, "shift": diff[0] > 0 or diff[1] < 0,
            "equivalence_interval_pct": [math.expm1(x) * 100.0 for x in eq],
            "difference_interval_pct": [math.expm1(x) * 100.0 for x in diff]}


def se_from_interval(low: float, high: float, df: float, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """(log point, standard error) of a log-symmetric interval [low, high] at `confidence` with `df`:
    what a committed 95 % interval says of its own spread (the 90 % one follows from it)."""
    lo, hi = math.log(low), math.log(high)
    return (lo + hi) / 2.0, (hi - lo) / 2.0 / t_quantile(0.5 + confidence / 2.0, df)


# --------------------------------------------------------------------------- pooling runs


def random_effects(groups: Sequence[Sequence[float]]) -> dict:
    """A one-way random-effects model over runs of one quantity: groups[run] = its values (log ratios
    per round, or log times per process).  -> the pooled within-run variance (df = sum of n_j - 1 over
    runs with two values or more), the between-run component (method of moments, (MSB - MSW) / n0,
    clipped at 0; None with one run), and the F statistic with its p value (a diagnostic, never a gate)."""
    gs = [list(g) for g in groups if len(g) >= 1]
    ss_w = sum(statistics.variance(g) * (len(g) - 1) for g in gs if len(g) >= 2)
    df_w = sum(len(g) - 1 for g in gs)
    within = ss_w / df_w if df_w else None
    out = {"runs": len(gs), "values": sum(len(g) for g in gs), "within": within,
           "within_sd": None if within is None else math.sqrt(within), "df_within": df_w,
           "between": None, "between_sd": None, "f": None, "p": None}
    k, total = len(gs), sum(len(g) for g in gs)
    if k < 2 or within is None:
        return out
    grand = statistics.fmean([x for g in gs for x in g])
    ms_b = sum(len(g) * (statistics.fmean(g) - grand) ** 2 for g in gs) / (k - 1)
    n0 = (total - sum(len(g) ** 2 for g in gs) / total) / (k - 1)
    between = max(0.0, (ms_b - within) / n0)
    f = ms_b / within if within > 0 else None
    p = None if f is None else 1.0 - f_cdf(f, k - 1, df_w)
    return {**out, "between": between, "between_sd": math.sqrt(between), "f": f, "p": p}


def f_cdf(x: float, d1: float, d2: float) -> float:
    """The cumulative F distribution (regularised incomplete beta)."""
    from flowerbench.core.tdist import _betainc

    return 0.0 if x <= 0 else _betainc(d1 / 2.0, d2 / 2.0, d1 * x / (d1 * x + d2))
