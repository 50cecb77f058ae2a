"""The model's arithmetic on recorded inputs (hand-made results and terms; no TensorFlow, no files)."""

from __future__ import annotations

import pytest

from flowerbench.perfmodel import judge as predict
from flowerbench.core.results import make
from flowerbench.perfmodel import forms
from flowerbench.perfmodel.termsfile import check_terms
from tests.helpers.fakes import STEP, fake_dispatch, fake_result, fake_terms, fake_workers_allreduce

def result(name: str, loop: str, replicas: int, seconds: float, pipeline: str = "files", repeats=None, **extra):
    r = fake_result(name, loop, replicas, seconds, "logical_cpu", True)
    r.update(pipeline=pipeline, **extra)
    if repeats:
        n = r["epochs"] * len(repeats)
        r.update(repeat_seconds=repeats, repeat_wall_seconds=repeats, repeats=len(repeats),
                 timed_seconds=sorted(repeats)[len(repeats) // 2],
                 epoch_seconds=[s / r["epochs"] for s in repeats for _ in range(r["epochs"])],
                 epoch_loss=[1.0] * n, epoch_accuracy=[0.5] * n, epoch_images=[r["images_per_epoch"]] * n)
        r.update(epoch_cpu_seconds=[s * replicas for s in r["epoch_seconds"]],
                 repeat_cpu_seconds=[s * replicas for s in repeats])
    return make(r)


def measured(results: list) -> dict:
    """What the report hands the model: each variant's seconds and 95 % interval (here over repeats)."""
    from flowerbench.analysis.stats import mean_interval

    return {r.variant: (r.timed_seconds, iv["low"], iv["high"], len(r.repeat_seconds) - 1)
            for r in results for iv in [mean_interval(r.repeat_seconds)]}


def predictions(results: list, terms) -> list:
    return predict.predictions(results, check_terms(terms) if terms else None, measured(results))


def runs(mirrored_seconds: float = 50.0, repeats=None, twin: bool = True) -> list:
    out = [result("single_custom", "custom", 1, 64.0), result("mirrored_custom", "custom", 2, mirrored_seconds,
                                                              repeats=repeats)]
    return out + ([result("single_custom_tensors", "custom", 1, 57.6, pipeline="tensors")] if twin else [])


def test_cpu_form_adds_the_terms_and_gpu_form_takes_the_larger():
    e = forms.cpu_epoch(29, 3670, 2, 1, STEP, 1.25, 0.05, 1000.0)
    assert e["compute"] == pytest.approx(9.0) and e["allreduce"] == pytest.approx(1.45)
    assert e["input"] == pytest.approx(1.835) and e["total"] == pytest.approx(12.285)
    assert forms.cpu_epoch(58, 3670, 1, 1, STEP, 1.0, 0.05, 1000.0)["allreduce"] == 0.0  # one replica: none
    g = forms.gpu_epoch(10, 3670, 0.2, 0.02, 1000.0)
    assert g["device"] == pytest.approx(2.2) and g["total"] == g["input"] == pytest.approx(3.67)
    assert g["bound"] == "input"
    assert forms.gpu_epoch(10, 3670, 0.5, 0.02, 1000.0)["bound"] == "compute + all-reduce"


def test_a_prediction_within_ten_percent_of_the_point_holds():
    rows = predictions(runs(repeats=[48.0, 50.0, 52.0]), fake_terms())
    test, check = rows  # the test first, then the N = 1 check
    assert test["variant"] == "mirrored_custom" and test["role"] == "test" and test["twin"] == "single_custom_tensors"
    assert test["predicted_seconds"] == pytest.approx(4 * 12.285)
    assert test["terms_seconds"] == pytest.approx({"compute": 36.0, "allreduce": 5.8, "input": 7.34})
    assert test["error_pct"] == pytest.approx((49.14 - 50) / 50 * 100)
    half = 4.303 * 2 / 3 ** 0.5  # t(0.975, 2) x the standard error of 48, 50, 52: +-9.9 %, narrow enough
    assert test["measured_low"] == pytest.approx(50 - half, abs=1e-3)
    assert test["measured_half_width_pct"] == pytest.approx(half / 50 * 100, abs=1e-2)
    assert test["verdict"] == "holds"
    assert check["variant"] == "single_custom" and check["role"].startswith("check of the input term")
    assert check["predicted_seconds"] == pytest.approx(4 * (58 * STEP + 3.67))
    assert check["verdict"] == "undetermined"          # one process, no interval: nothing to judge against
    v = predict.scorecard(rows)
    assert {k: v[k] for k in ("tests", "predicted", "held", "missed", "undetermined", "unpredicted", "validated")} \
        == {"tests": 1, "predicted": 1, "held": 1, "missed": [], "undetermined": [], "unpredicted": [],
            "validated": True}
    assert v["mae_pct"] == pytest.approx(1.72) and v["max_abs_error_pct"] == pytest.approx(1.72)


def test_the_verdict_is_an_equivalence_test_and_a_wide_interval_cannot_hold():
    """stats.tost with a +-10 % band around the prediction (log-symmetric): holds when the measured 90 %
    interval lies inside it, MISSED when the measured 95 % interval and the band are disjoint, undetermined
    otherwise.  (The rule before 2026-12-07 called a clear miss "undetermined" whenever the interval was
    wider than +-10 %, and judged a narrow one on the point alone.)"""
    assert predict.judge(50.0, 50.0, 48.0, 52.0, 2) == "holds"
    assert predict.judge(53.0, 50.0, 49.5, 50.5, 2) == "holds"            # 6 % off, measured tightly
    assert predict.judge(60.0, 50.0, 48.0, 52.0, 2) == "MISSED"           # -17 %: the 95 % interval clears the band
    assert predict.judge(40.0, 50.0, 48.0, 52.0, 2) == "MISSED"           # +25 %
    assert predict.judge(56.0, 50.0, 48.0, 52.0, 2) == "undetermined"     # the interval straddles the band's edge
    assert predict.judge(50.0, 50.0, 40.0, 62.5, 2) == "undetermined"     # exact, but measured too loosely
    assert predict.judge(50.0, 50.0, None, None, None) == "undetermined"  # no interval
    # the committed held-out rows the old rule hid: px64 fit and batch16 fit, 2 rounds (df = 1)
    assert predict.judge(21.35, 31.37, 24.70, 39.82, 1) == "MISSED"
    assert predict.judge(21.32, 17.19, 15.54, 19.01, 1) == "MISSED"
    assert predict.judge(20.24, 37.95, 14.63, 98.44, 1) == "undetermined"
    wide = predictions(runs(repeats=[40.0, 50.0, 60.0]), fake_terms())[0]
    assert wide["error_pct"] == pytest.approx(-1.72) and wide["verdict"] == "undetermined"
    v = predict.scorecard([wide])
    assert v["undetermined"] == ["mirrored_custom"] and v["held"] == 0 and not v["validated"]


def test_a_miss_is_measured_per_step_and_fails_validation():
    rows = predictions(runs(repeats=[69.0, 70.0, 71.0]), fake_terms())
    test = rows[0]
    assert test["verdict"] == "MISSED" and test["measured_half_width_pct"] < 10
    assert test["error_pct"] == pytest.approx((49.14 - 70) / 70 * 100)
    assert test["missing_per_step_seconds"] == pytest.approx((70 - 49.14) / (4 * 29))
    assert predict.scorecard(rows)["missed"] == ["mirrored_custom"] and not predict.scorecard(rows)["validated"]


def test_the_null_models_come_from_the_one_replica_run_of_the_same_loop():
    """No speed-up: N replicas take the 1-replica run's time (single_custom, 64 s); linear: that time / N.
    The model beats both on mean absolute error, or the verdict says it does not."""
    job = result("multiworker_custom", "custom", 2, 70.0, workers=2, repeats=[69.0, 70.0, 71.0])
    rows = predictions([*runs(repeats=[48.0, 50.0, 52.0]), job], fake_terms())
    m = next(r for r in rows if r["variant"] == "mirrored_custom")
    assert m["null_source"] == "single_custom"
    assert m["nulls"]["no_speedup"] == {"predicted_seconds": 64.0, "error_pct": pytest.approx(28.0)}
    assert m["nulls"]["linear"] == {"predicted_seconds": 32.0, "error_pct": pytest.approx(-36.0)}
    w = next(r for r in rows if r["variant"] == "multiworker_custom")
    assert w["nulls"]["no_speedup"]["error_pct"] == pytest.approx((64 - 70) / 70 * 100)
    assert "nulls" not in next(r for r in rows if r["variant"] == "single_custom")   # one replica: none
    v = predict.scorecard(rows)
    assert v["mae_pct"] == pytest.approx((1.72 + 29.8) / 2, abs=0.01)
    assert v["null_mae_pct"]["no_speedup"] == pytest.approx((28.0 + 8.571) / 2, abs=0.01)
    assert v["null_mae_pct"]["linear"] == pytest.approx((36.0 + 54.29) / 2, abs=0.01)
    assert v["beats_nulls"] is True and v["max_abs_error_pct"] == pytest.approx(29.8, abs=0.01)
    # a model as far off as no speed-up on both runs does not beat it
    close = [{**r, "error_pct": r["nulls"]["no_speedup"]["error_pct"]} if r.get("nulls") else r for r in rows]
    assert predict.scorecard(close)["beats_nulls"] is False


def test_without_a_twin_or_terms_nothing_is_predicted():
    rows = predictions(runs(twin=False), fake_terms())
    assert rows[0]["predicted_seconds"] is None
    assert rows[0]["missing"] == ["no in-memory-tensors twin of the custom loop on one replica's cores"]
    assert predict.scorecard(rows)["unpredicted"] == ["mirrored_custom"] and not predict.scorecard(rows)["validated"]
    assert predictions(runs(), None) == [] and predictions(runs(), {**fake_terms(), "skipped": "GPU host"}) == []
    three = [*runs(), result("quad_custom", "custom", 3, 40.0)]
    assert predictions(three, fake_terms())[1]["missing"] == ["no terms for 3 replicas"]


def test_a_multi_worker_job_uses_the_all_reduce_between_processes():
    """Its gradients cross processes: the terms' cross-process all-reduce, where it was measured."""
    job = result("multiworker_custom", "custom", 2, 70.0, workers=2)
    terms = fake_terms()
    local = predict.predict(job, [job, *runs()], check_terms(terms), measured([job, *runs()]))
    assert local["allreduce_seconds"] == 0.05 and local["allreduce_between_processes"] is False
    terms["allreduce_workers"] = fake_workers_allreduce(0.2)
    across = predict.predict(job, [job, *runs()], check_terms(terms), measured([job, *runs()]))
    assert across["allreduce_seconds"] == 0.2 and across["allreduce_between_processes"] is True
    assert across["predicted_seconds"] == pytest.approx(4 * (29 * (1.25 * STEP + 0.2) + 1.835))
    # a mirrored run keeps the in-process one
    assert predict.predict(runs()[1], runs(), check_terms(terms), measured(runs()))["allreduce_seconds"] == 0.05


def test_runs_that_shared_cores_are_not_predicted():
    shared = result("mirrored_custom", "custom", 2, 50.0, budget_kind="oversubscribed", budget_cores=2)
    assert predict.predict(shared, [shared, *runs()[2:]], check_terms(fake_terms()), measured([shared, *runs()[2:]])) is None
    threads = result("single_fit_threads", "fit", 1, 50.0, budget_kind="threads", budget_cores=2)
    assert predict.predict(threads, [threads], check_terms(fake_terms()), measured([threads])) is None


def test_the_dispatch_term_extends_the_in_process_runs_only():
    """Measured after the four terms missed: added to in-process multi-replica runs, never to a
    multi-worker job (one replica per process), with its own verdict beside the four terms'."""
    terms = {**fake_terms(), "dispatch": fake_dispatch(0.02)}
    job = result("multiworker_custom", "custom", 2, 70.0, workers=2, repeats=[69.0, 70.0, 71.0])
    rows = predictions([*runs(repeats=[49.5, 50.0, 50.5]), job], terms)
    mirrored = next(r for r in rows if r["variant"] == "mirrored_custom")
    assert mirrored["predicted_with_dispatch_seconds"] == pytest.approx(49.14 + 4 * 29 * 0.02)
    assert mirrored["error_with_dispatch_pct"] == pytest.approx((51.46 - 50) / 50 * 100)
    assert mirrored["verdict_with_dispatch"] == "holds" and mirrored["predicted_seconds"] == pytest.approx(49.14)
    worker = next(r for r in rows if r["variant"] == "multiworker_custom")
    assert "dispatch_seconds" not in worker and worker["verdict"] == "MISSED"
    assert predict.scorecard(rows, "verdict_with_dispatch")["missed"] == ["multiworker_custom"]
    big = {**fake_terms(), "dispatch": fake_dispatch(0.1)}
    assert predictions(runs(repeats=[49.5, 50.0, 50.5]), big)[0]["verdict_with_dispatch"] == "MISSED"  # +21.5 %


def test_every_caller_of_the_cpu_form_gives_the_same_seconds():
    """The report's prediction, a held-out setting's point and the k-steps what-if at k = 1 go through
    the one CPU form (perfmodel/forms.py) with the terms at N looked up once (Terms.at): on the same
    inputs they give the same seconds, the form's own."""
    from flowerbench.perfmodel.heldout import predict_setting
    from flowerbench.perfmodel.ksteps import ksteps

    terms = check_terms(fake_terms())
    row = next(r for r in predictions(runs(repeats=[48.0, 50.0, 52.0]), fake_terms()) if r["role"] == "test")
    s, rate, steps, epochs = row["step_seconds"], row["input_rate_per_core"], row["steps_per_epoch"], row["epochs"]
    images = runs()[1].images_per_epoch
    form = epochs * forms.cpu_epoch(steps, images, 2, 1, s, 1.25, 0.05, rate)["total"]
    setting = predict_setting(terms, (s, s, s), (rate, rate, rate), replicas=2, cores_per_replica=1, steps=steps,
                              images=images, epochs=epochs, dispatch=False)
    what_if = ksteps(terms, s, replicas=2, cores_per_replica=1, steps=steps, images=images, epochs=epochs,
                     input_rate=rate, ks=[1])
    assert row["predicted_seconds"] == pytest.approx(form)
    assert setting["seconds"] == setting["low"] == setting["high"] == pytest.approx(form)
    assert what_if["by_k"]["1"]["seconds"] == pytest.approx(form)
