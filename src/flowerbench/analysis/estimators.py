"""What one process contributes to a comparison: its time, by one estimator chosen on the data.

A process runs `train.epochs` timed epochs (per repeat) after its warm-up; the comparisons need one
number per process.  The candidates (ESTIMATORS), each in seconds of one timed call of `epochs` epochs:

  median_settled   the median epoch x epochs, a first epoch more than SETTLE_TOLERANCE slower than the
                   median of the rest left out (the rule used until 2026-12-07; it only ever shortens)
  median           the median epoch x epochs, every epoch kept
  mean             the mean epoch x epochs (the sum of a repeat's epochs)
  whole_call       the wall time around the whole timed call (the blog's window: fit()'s set-up and
                   teardown included), the median over repeats

`choose(measurements)` picks the one with the smallest between-process variance of its log over
the committed measurements: for each measurement and variant, the variance over its processes, pooled
with their degrees of freedom.  The process is the unit of replication (its own speed varies
0.04-0.11 of log time), so this is the variance every interval carries.  `python -m flowerbench
estimators` prints the table; CHOSEN holds the choice and docs/performance.md the numbers behind it.
The whole-call ratio is reported beside the chosen one in every report.
"""

from __future__ import annotations

import math
import statistics
from typing import Callable, Iterable, Optional

from flowerbench.core.results import Result

# A first timed epoch this much slower than the median of the process's later epochs is still warming
# up (the median_settled estimator leaves it out; the report counts how often, and what it changes).
SETTLE_TOLERANCE = 0.10


def settled_epochs(r: Result) -> tuple[list[float], int]:
    """The process's timed epochs with a leading unsettled one left out (at most one, and only with
    at least two after it): (epochs kept, epochs dropped)."""
    e = list(r.epoch_seconds)
    if len(e) >= 3 and e[0] > (1.0 + SETTLE_TOLERANCE) * statistics.median(e[1:]):
        return e[1:], 1
    return e, 0


def _median_settled(r: Result) -> float:
    return statistics.median(settled_epochs(r)[0]) * r.epochs


def _median(r: Result) -> float:
    return statistics.median(r.epoch_seconds) * r.epochs


def _mean(r: Result) -> float:
    return statistics.fmean(r.epoch_seconds) * r.epochs


def _whole_call(r: Result) -> float:
    return statistics.median(r.repeat_wall_seconds)


def _cpu_mean(r: Result) -> Optional[float]:
    """The process's CPU time over its timed epochs (mean epoch x epochs); None before schema 6."""
    return None if r.epoch_cpu_seconds is None else statistics.fmean(r.epoch_cpu_seconds) * r.epochs


ESTIMATORS: dict[str, Callable[[Result], float]] = {
    "median_settled": _median_settled, "median": _median, "mean": _mean, "whole_call": _whole_call}
WORDS = {"median_settled": "median settled epoch x epochs", "median": "median epoch x epochs",
         "mean": "mean epoch x epochs (the sum of the timed epochs)",
         "whole_call": "the whole timed call (the blog's window)",
         "cpu": "the process's CPU time over its timed epochs"}

# Chosen by `choose` on the five committed measurements of 2026-12-07 (17 rounds; docs/performance.md,
# "One estimator, chosen by the data"): the smallest pooled between-process sd of the four.
CHOSEN = "mean"


def process_seconds(r: Result, estimator: str = CHOSEN) -> float:
    """The one number a process contributes to a comparison, by `estimator` (default: CHOSEN)."""
    if estimator == "cpu":
        cpu = _cpu_mean(r)
        if cpu is None:
            raise ValueError(f"{r.variant}: no CPU times recorded (result schema {r.schema_version})")
        return cpu
    return ESTIMATORS[estimator](r)


def pooled_process_variance(measurements: Iterable[dict[str, list[Result]]], estimator: str) -> dict:
    """The variance of log process time between the processes of one variant in one measurement, pooled
    over variants and measurements with their degrees of freedom.  `measurements`: each a mapping
    variant -> its processes (one per round).  -> {variance, sd, df, groups}"""
    ss = df = groups = 0
    for m in measurements:
        for runs in m.values():
            logs = [math.log(process_seconds(r, estimator)) for r in runs]
            if len(logs) >= 2:
                ss += statistics.variance(logs) * (len(logs) - 1)
                df += len(logs) - 1
                groups += 1
    v = ss / df if df else None
    return {"variance": v, "sd": None if v is None else math.sqrt(v), "df": df, "groups": groups}


def choose(measurements: list[dict[str, list[Result]]]) -> dict:
    """Every estimator's pooled between-process sd over `measurements`, and the smallest."""
    table = {name: pooled_process_variance(measurements, name) for name in ESTIMATORS}
    known = {k: v for k, v in table.items() if v["sd"] is not None}
    best = min(known, key=lambda k: known[k]["sd"]) if known else None
    return {"estimators": table, "chosen": best}


def settle_bias(measurements: list[dict[str, list[Result]]]) -> dict:
    """What the warm-up rule does: how many processes it dropped a first epoch of, and the mean log
    ratio of median_settled over median (it can only shorten a time)."""
    rs = [r for m in measurements for runs in m.values() for r in runs]
    dropped = sum(settled_epochs(r)[1] for r in rs)
    logs = [math.log(_median_settled(r) / _median(r)) for r in rs]
    return {"processes": len(rs), "dropped": dropped,
            "mean_log_ratio": statistics.fmean(logs) if logs else None}
