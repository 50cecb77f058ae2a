"""The performance model judged: its predictions of this host's runs against their measurements.

Pure arithmetic on recorded inputs (results and results/model-terms.json).  The forms are
forms.py's (docs/model.md writes them out with every input); here, per run of N replicas:

  s_loop   one replica's step on in-memory tensors, from the twin run of the same loop
           (timed seconds / (epochs x steps)): compute with the loop's own overhead;
  the terms at N (termsfile.Terms.at): contention, the all-reduce, the dispatch term.

A prediction is judged by the equivalence test (`judge`, stats.tost): it holds when the
measured 90 % interval lies inside +-10 % of the prediction (a band symmetric on the log
scale), misses when the measured 95 % interval and that band are disjoint, and is
undetermined otherwise.
Beside it, two null models from the 1-replica run of the same loop in the same rounds:
"no speed-up" (N replicas take one replica's time) and "linear" (one replica's time / N);
the model has to beat both on mean absolute error.  The four terms above are the model as first written; where the
in-process runs missed, a fifth was measured (terms' `dispatch`: N replicas'
step driven from one process, less the four) and the report shows both.  The 1-replica runs are the model's inputs (their twins) or checks
of the input term (N = 1 with files), never tests of it.
"""

from __future__ import annotations

import math
from typing import Optional

from flowerbench.analysis import stats as S
from flowerbench.core.results import CoreKind, Result
from flowerbench.perfmodel.forms import cpu_seconds
from flowerbench.perfmodel.termsfile import Terms

TOLERANCE_PCT = 10.0  # the band around a prediction (log-symmetric): judge
MAE_TARGET_PCT, MAX_TARGET_PCT = 10.0, 20.0   # the model's summary targets: mean and largest absolute error
HOLDS, MISSED, UNDETERMINED = "holds", "MISSED", "undetermined"
VERDICT_CODE = {HOLDS: 1, MISSED: -1, UNDETERMINED: 0}   # metrics.json holds numbers only


def half_width_pct(median: float, low: Optional[float], high: Optional[float]) -> Optional[float]:
    """The measured interval's wider side, in % of the point; None without an interval."""
    if low is None or high is None:
        return None
    return max(median - low, high - median) / median * 100.0


def judge_test(predicted: float, median: float, low: Optional[float], high: Optional[float], df: Optional[float],
               tolerance_pct: float = TOLERANCE_PCT) -> dict:
    """The equivalence test (stats.tost) of a prediction against its measurement: the measured point
    and its log-symmetric 95 % interval [low, high] with `df` degrees of freedom give the standard
    error; the band is +-tolerance around the prediction, symmetric on the log scale."""
    if low is None or high is None or not df:
        return S.tost(math.log(median / predicted), None, None, tolerance_pct)
    _, se = S.se_from_interval(low, high, df)
    return S.tost(math.log(median / predicted), se, df, tolerance_pct)


def judge(predicted: float, median: float, low: Optional[float], high: Optional[float], df: Optional[float],
          tolerance_pct: float = TOLERANCE_PCT) -> str:
    """holds when the measured 90 % interval lies inside +-tolerance of the prediction; MISSED when
    the measured 95 % interval and that band are disjoint; undetermined otherwise, and without an
    interval (judge_test, stats.tost: one rule for the A/B and the model)."""
    return {S.EQUIVALENT: HOLDS, S.DIFFERENT: MISSED}.get(
        judge_test(predicted, median, low, high, df, tolerance_pct)["verdict"], UNDETERMINED)


def error_pct(predicted: float, measured: float) -> float:
    return (predicted - measured) / measured * 100.0


def twin_of(r: Result, results: list[Result]) -> Optional[Result]:
    """The in-memory-tensors run of r's loop on one replica's cores (the compute term's source)."""
    for t in results:
        if (t.pipeline == "tensors" and t.replicas == 1 and t.loop == r.loop and t.workers is None
                and t.custom_graph == r.custom_graph and t.batch_size_per_replica == r.batch_size_per_replica
                and t.image_size == r.image_size and t.budget_kind == CoreKind.CORE_MATCHED
                and t.budget_cores == t.cores_per_replica == r.cores_per_replica):
            return t
    return None


def one_replica_of(r: Result, results: list[Result]) -> Optional[Result]:
    """The 1-replica run of r's loop from files on one replica's cores, at r's batch per replica (weak
    scaling) or at r's global batch (strong scaling: one replica takes the whole of it): the null
    models' source."""
    batch = r.global_batch_size if r.scaling == "strong" else r.batch_size_per_replica
    return next((o for o in results if _is_check(o) and o.loop == r.loop and o.custom_graph == r.custom_graph
                 and o.global_batch_size == batch and o.image_size == r.image_size
                 and o.cores_per_replica == r.cores_per_replica), None)


def nulls(r: Result, results: list[Result], measured: dict[str, tuple]) -> dict:
    """The two models that know nothing, from the 1-replica run of the same loop (same rounds):
    "no speed-up" (N replicas take its time) and "linear" (its time / N), each with its signed error."""
    one = one_replica_of(r, results)
    if one is None or r.replicas == 1:
        return {}
    t1, median = measured[one.variant][0], measured[r.variant][0]
    # weak scaling (the blog's): each replica keeps its batch, so an epoch has 1/N of the steps;
    # strong: the same steps, each replica 1/N of each.  Linear is 1/N of the time either way
    out = {"no_speedup": t1, "linear": t1 / r.replicas}
    return {"null_source": one.variant,
            "nulls": {k: {"predicted_seconds": v, "error_pct": error_pct(v, median)} for k, v in out.items()}}


def _is_test(r: Result) -> bool:
    return r.replicas > 1 and r.budget_kind == CoreKind.CORE_MATCHED and r.pipeline == "files"


def _is_check(r: Result) -> bool:
    return (r.replicas == 1 and r.workers is None and r.pipeline == "files" and r.budget_kind == CoreKind.CORE_MATCHED
            and r.budget_cores == r.cores_per_replica)


def predict(r: Result, results: list[Result], terms: Terms, measured: dict[str, tuple]) -> Optional[dict]:
    """The row of r: predicted vs measured, per term.  None for runs the model does not cover.
    `measured`: variant -> (seconds, 95 % low, high), the report's own numbers (metrics: over rounds)."""
    if not (_is_test(r) or _is_check(r)):
        return None
    row = {"variant": r.variant, "loop": r.loop, "replicas": r.replicas, "workers": r.workers,
           "role": "test" if _is_test(r) else "check of the input term (a model input, not a test)"}
    twin = twin_of(r, results)
    missing = ([] if twin else [f"no in-memory-tensors twin of the {r.loop} loop on one replica's cores"]) + (
        [f"no terms for {r.replicas} replicas"] if not terms.covers(r.replicas) else []) + (
        ["no input term"] if terms.input is None else [])
    if missing:
        return {**row, "predicted_seconds": None, "missing": missing}
    step_s = measured[twin.variant][0] / (twin.epochs * twin.steps_per_epoch)
    # a multi-worker job's all-reduce crosses processes: its own term where it was measured; (a worker
    # of an N-worker job decodes its n / N images on its own c cores: the same input term)
    at = terms.at(r.replicas, workers=bool(r.workers))
    rate = terms.input.median_rate
    e = r.epochs
    run = cpu_seconds(at, steps=r.steps_per_epoch, images=r.images_per_epoch, epochs=e,
                      cores_per_replica=r.cores_per_replica, step_s=step_s, input_rate_per_core=rate)
    predicted = run["seconds"]
    median, low, high, df = measured[r.variant]
    extended = {}
    if at.dispatch is not None:   # measured after the four terms missed the in-process runs (docs/model.md)
        with_d = cpu_seconds(at, steps=r.steps_per_epoch, images=r.images_per_epoch, epochs=e,
                             cores_per_replica=r.cores_per_replica, step_s=step_s, input_rate_per_core=rate,
                             dispatch_s=at.dispatch_seconds)["seconds"]
        verdict_d = judge(with_d, median, low, high, df)
        extended = {"dispatch_seconds": at.dispatch_seconds, "predicted_with_dispatch_seconds": with_d,
                    "error_with_dispatch_pct": error_pct(with_d, median),
                    "verdict_with_dispatch": verdict_d, "verdict_with_dispatch_code": VERDICT_CODE[verdict_d]}
    verdict = judge(predicted, median, low, high, df)
    return {**row, **extended, "twin": twin.variant, "step_seconds": step_s, "contention": at.contention,
            "allreduce_seconds": at.allreduce_seconds, "allreduce_between_processes": at.allreduce_between_processes,
            "input_rate_per_core": rate, "epochs": e, "steps_per_epoch": r.steps_per_epoch,
            "terms_seconds": {k: run[k] for k in ("compute", "allreduce", "input")},
            "predicted_seconds": predicted, "measured_seconds": median,
            "measured_low": low, "measured_high": high,
            "measured_half_width_pct": half_width_pct(median, low, high),
            "error_pct": error_pct(predicted, median), "verdict": verdict, "verdict_code": VERDICT_CODE[verdict],
            "missing_per_step_seconds": (median - predicted) / (e * r.steps_per_epoch),
            **nulls(r, results, measured)}


def predictions(results: list[Result], terms: Optional[Terms], measured: dict[str, tuple]) -> list[dict]:
    """Every covered run's row, the tests first; [] without terms (or terms skipped on this host)."""
    if not terms or terms.skipped:
        return []
    rows = [row for r in results if (row := predict(r, results, terms, measured))]
    return sorted(rows, key=lambda row: row["role"] != "test")


def predicted_tests(rows: list[dict]) -> list[dict]:
    """The rows that test the model (multi-replica runs) and got a prediction."""
    return [r for r in rows if r["role"] == "test" and r.get("predicted_seconds") is not None]


def _mae(errors: list[float]) -> Optional[float]:
    return sum(abs(x) for x in errors) / len(errors) if errors else None


def scorecard(rows: list[dict], key: str = "verdict") -> dict:
    """How the model did on the tests: held / missed / undetermined / could not predict, its mean and
    largest absolute error on the point, and the null models' mean absolute errors on the same runs.
    key="verdict_with_dispatch": the same with the dispatch term where it was measured (the four terms'
    prediction elsewhere)."""
    tests = [r for r in rows if r["role"] == "test"]
    done = predicted_tests(rows)
    with_d = key == "verdict_with_dispatch"

    def err(r: dict) -> float:
        return r["error_with_dispatch_pct"] if with_d and "error_with_dispatch_pct" in r else r["error_pct"]

    says = {r["variant"]: r.get(key, r["verdict"]) for r in done}
    errors = [err(r) for r in done]
    with_nulls = [r for r in done if r.get("nulls")]
    null_mae = {k: _mae([r["nulls"][k]["error_pct"] for r in with_nulls]) for k in ("no_speedup", "linear")}
    mae = _mae(errors)
    model_on_nulls = _mae([err(r) for r in with_nulls])
    return {"tests": len(tests), "predicted": len(done),
            "held": sum(v == HOLDS for v in says.values()),
            "missed": [v for v, x in says.items() if x == MISSED],
            "undetermined": [v for v, x in says.items() if x == UNDETERMINED],
            "unpredicted": [r["variant"] for r in tests if r.get("predicted_seconds") is None],
            "mae_pct": mae, "max_abs_error_pct": max((abs(x) for x in errors), default=None),
            "null_mae_pct": null_mae, "nulls_runs": len(with_nulls),
            "beats_nulls": (bool(with_nulls) and all(m is not None and model_on_nulls < m for m in null_mae.values())),
            "validated": bool(done) and len(done) == len(tests) and all(v == HOLDS for v in says.values())}
