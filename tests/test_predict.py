"""The model's arithmetic on recorded inputs (hand-made results and terms; no TensorFlow, no files)."""

from __future__ import annotations

import pytest

from flowerbench import predict
from flowerbench.results import make
from tests.helpers.fakes import STEP, fake_result, fake_terms

def result(name: str, loop: str, replicas: int, seconds: float, pipeline: str = "files", repeats=None, **extra):
    r = fake_result(name, loop, replicas, seconds, "logical_cpu", True)
    r.update(pipeline=pipeline, **extra)
    if repeats:
        n = r["epochs"] * len(repeats)
        r.update(repeat_seconds=repeats, repeat_wall_seconds=repeats, repeats=len(repeats),
                 timed_seconds=sorted(repeats)[len(repeats) // 2],
                 epoch_seconds=[s / r["epochs"] for s in repeats for _ in range(r["epochs"])],
                 epoch_loss=[1.0] * n, epoch_accuracy=[0.5] * n, epoch_images=[r["images_per_epoch"]] * n)
    return make(r)


def measured(results: list) -> dict:
    """What the report hands the model: each variant's seconds and 95 % interval (here over repeats)."""
    from flowerbench.stats import mean_interval

    return {r.variant: (r.timed_seconds, iv["low"], iv["high"])
            for r in results for iv in [mean_interval(r.repeat_seconds)]}


def predictions(results: list, terms) -> list:
    return predict.predictions(results, terms, measured(results))


def runs(mirrored_seconds: float = 50.0, repeats=None, twin: bool = True) -> list:
    out = [result("single_custom", "custom", 1, 64.0), result("mirrored_custom", "custom", 2, mirrored_seconds,
                                                              repeats=repeats)]
    return out + ([result("single_custom_tensors", "custom", 1, 57.6, pipeline="tensors")] if twin else [])


def test_cpu_form_adds_the_terms_and_gpu_form_takes_the_larger():
    e = predict.cpu_epoch(29, 3670, 2, 1, STEP, 1.25, 0.05, 1000.0)
    assert e["compute"] == pytest.approx(9.0) and e["allreduce"] == pytest.approx(1.45)
    assert e["input"] == pytest.approx(1.835) and e["total"] == pytest.approx(12.285)
    assert predict.cpu_epoch(58, 3670, 1, 1, STEP, 1.0, 0.05, 1000.0)["allreduce"] == 0.0  # one replica: none
    g = predict.gpu_epoch(10, 3670, 0.2, 0.02, 1000.0)
    assert g["device"] == pytest.approx(2.2) and g["total"] == g["input"] == pytest.approx(3.67)
    assert g["bound"] == "input"
    assert predict.gpu_epoch(10, 3670, 0.5, 0.02, 1000.0)["bound"] == "compute + all-reduce"


def test_a_prediction_inside_the_widened_interval_holds():
    rows = predictions(runs(repeats=[48.0, 50.0, 52.0]), fake_terms())
    test, check = rows  # the test first, then the N = 1 check
    assert test["variant"] == "mirrored_custom" and test["role"] == "test" and test["twin"] == "single_custom_tensors"
    assert test["predicted_seconds"] == pytest.approx(4 * 12.285)
    assert test["terms_seconds"] == pytest.approx({"compute": 36.0, "allreduce": 5.8, "input": 7.34})
    assert test["error_pct"] == pytest.approx((49.14 - 50) / 50 * 100)
    half = 4.303 * 2 / 3 ** 0.5  # t(0.975, 2) x the standard error of 48, 50, 52
    assert test["measured_low"] == pytest.approx(50 - half, abs=1e-3)
    assert test["window"] == pytest.approx([50 - half - 7.5, 50 + half + 7.5], abs=1e-3) and test["holds"]
    assert check["variant"] == "single_custom" and check["role"].startswith("check of the input term")
    assert check["predicted_seconds"] == pytest.approx(4 * (58 * STEP + 3.67)) and check["holds"]
    v = predict.verdict(rows)
    assert v == {"tests": 1, "predicted": 1, "held": 1, "missed": [], "unpredicted": [], "validated": True}


def test_a_miss_is_measured_per_step_and_fails_validation():
    rows = predictions(runs(mirrored_seconds=70.0), fake_terms())
    test = rows[0]
    assert test["window"] == pytest.approx([59.5, 80.5]) and not test["holds"]  # one repeat: the median +- 15 %
    assert test["error_pct"] == pytest.approx((49.14 - 70) / 70 * 100)
    assert test["missing_per_step_seconds"] == pytest.approx((70 - 49.14) / (4 * 29))
    assert predict.verdict(rows)["missed"] == ["mirrored_custom"] and not predict.verdict(rows)["validated"]


def test_without_a_twin_or_terms_nothing_is_predicted():
    rows = predictions(runs(twin=False), fake_terms())
    assert rows[0]["predicted_seconds"] is None
    assert rows[0]["missing"] == ["no in-memory-tensors twin of the custom loop on one replica's cores"]
    assert predict.verdict(rows)["unpredicted"] == ["mirrored_custom"] and not predict.verdict(rows)["validated"]
    assert predictions(runs(), None) == [] and predictions(runs(), {"skipped": "GPU host"}) == []
    three = [*runs(), result("quad_custom", "custom", 3, 40.0)]
    assert predictions(three, fake_terms())[1]["missing"] == ["no terms for 3 replicas"]


def test_a_multi_worker_job_uses_the_all_reduce_between_processes():
    """Its gradients cross processes: the terms' cross-process all-reduce, where it was measured."""
    job = result("multiworker_custom", "custom", 2, 70.0, workers=2)
    terms = fake_terms()
    local = predict.predict(job, [job, *runs()], terms, measured([job, *runs()]))
    assert local["allreduce_seconds"] == 0.05 and local["allreduce_between_processes"] is False
    terms["allreduce_workers"] = {"2": {"median_seconds": 0.2}}
    across = predict.predict(job, [job, *runs()], terms, measured([job, *runs()]))
    assert across["allreduce_seconds"] == 0.2 and across["allreduce_between_processes"] is True
    assert across["predicted_seconds"] == pytest.approx(4 * (29 * (1.25 * STEP + 0.2) + 1.835))
    # a mirrored run keeps the in-process one
    assert predict.predict(runs()[1], runs(), terms, measured(runs()))["allreduce_seconds"] == 0.05


def test_runs_that_shared_cores_are_not_predicted():
    shared = result("mirrored_custom", "custom", 2, 50.0, budget_kind="oversubscribed", budget_cores=2)
    assert predict.predict(shared, [shared, *runs()[2:]], fake_terms(), measured([shared, *runs()[2:]])) is None
    threads = result("single_fit_threads", "fit", 1, 50.0, budget_kind="threads", budget_cores=2)
    assert predict.predict(threads, [threads], fake_terms(), measured([threads])) is None


def test_the_dispatch_term_extends_the_in_process_runs_only():
    """Measured after the four terms missed: added to in-process multi-replica runs, never to a
    multi-worker job (one replica per process), with its own verdict beside the four terms'."""
    terms = {**fake_terms(), "dispatch": {"2": {"seconds_beyond_terms": 0.02}}}
    job = result("multiworker_custom", "custom", 2, 70.0, workers=2)
    rows = predictions([*runs(), job], terms)
    mirrored = next(r for r in rows if r["variant"] == "mirrored_custom")
    assert mirrored["predicted_with_dispatch_seconds"] == pytest.approx(49.14 + 4 * 29 * 0.02)
    assert mirrored["error_with_dispatch_pct"] == pytest.approx((51.46 - 50) / 50 * 100)
    assert mirrored["holds_with_dispatch"] and mirrored["predicted_seconds"] == pytest.approx(49.14)
    worker = next(r for r in rows if r["variant"] == "multiworker_custom")
    assert "dispatch_seconds" not in worker and not worker["holds"]
    assert predict.verdict(rows, "holds_with_dispatch")["missed"] == ["multiworker_custom"]
    big = {**fake_terms(), "dispatch": {"2": {"seconds_beyond_terms": 0.1}}}
    assert not predictions(runs(), big)[0]["holds_with_dispatch"]  # 60.74 s against 50 +- 7.5
