"""Held-out settings (perfmodel/heldout.py): the settings file, one setting's prediction and its interval from
the terms' own intervals, and the freeze check on a real git repository (no TensorFlow)."""

from __future__ import annotations

import pytest

from flowerbench.perfmodel import forms, heldout, judge as predict
from flowerbench.perfmodel.ksteps import ksteps
from flowerbench.perfmodel.termsfile import check_terms
from tests.conftest import REPO
from tests.helpers.fakes import fake_dispatch, fake_terms
from tests.helpers.git import git


def test_the_committed_settings_load_and_name_what_they_change():
    h = heldout.load(REPO / "heldout.yaml")
    assert h.rounds >= 2 and h.tolerance_pct == 10
    assert len(h.settings) >= 6                       # the floor
    assert heldout.overrides(h.settings["px224"]) == {"data.image_size": 224, "data.max_images": 128}
    assert heldout.overrides(h.settings["input_on"]) == {"data.cache": False, "data.standin_px": 512}
    assert heldout.overrides(h.settings["strong"]) == {"train.scaling": "strong"}


@pytest.mark.parametrize("text, message", [
    ("settings: {a: {image_size: 16}}", "settings.a.image_size: Input should be greater than or equal to 32"),
    ("settings: {a: {colour: red}}", "settings.a.colour: Extra inputs are not permitted"),
    ("rounds: 1\nsettings: {a: {}}", "rounds: Input should be greater than or equal to 2"),
    ("settings: {}", "settings: Dictionary should have at least 1 item"),
    ("settings: [", "not YAML"),
])
def test_a_bad_settings_file_is_refused_in_one_line_naming_the_key(tmp_path, text, message):
    f = tmp_path / "heldout.yaml"
    f.write_text(text)
    with pytest.raises(heldout.HeldOutError) as exc:
        heldout.load(f)
    assert str(exc.value).startswith(f"{f}: ") and message in str(exc.value) and "\n" not in str(exc.value)


def test_a_setting_is_predicted_with_the_reference_terms_carried_over():
    """Its own one-replica step and input rate, the reference's contention and all-reduce: the CPU
    form, as forms.cpu_epoch; the interval spans the terms' own intervals, the point inside it."""
    terms = fake_terms()   # kappa_2 1.25, a_2 50 ms, rho 1000 img/s per core
    step, rate = (0.5, 0.45, 0.55), (2000.0, 1800.0, 2200.0)
    p = heldout.predict_setting(check_terms(terms), step, rate, replicas=2, cores_per_replica=1, steps=10, images=640,
                                epochs=3, dispatch=False)
    e = forms.cpu_epoch(10, 640, 2, 1, 0.5, 1.25, 0.05, 2000.0)
    assert p["seconds"] == pytest.approx(3 * e["total"])
    assert p["terms_seconds"] == pytest.approx({"compute": 3 * 10 * 1.25 * 0.5, "allreduce": 3 * 10 * 0.05,
                                                "input": 3 * 640 / 4000, "dispatch": 0.0})
    lo = 3 * forms.cpu_epoch(10, 640, 2, 1, 0.45, 1.25, 0.05, 2200.0)["total"]
    hi = 3 * forms.cpu_epoch(10, 640, 2, 1, 0.55, 1.25, 0.05, 1800.0)["total"]
    assert (p["low"], p["high"]) == (pytest.approx(lo), pytest.approx(hi)) and lo < p["seconds"] < hi
    # an in-process run carries the dispatch term, its spread the whole step's
    terms["dispatch"] = fake_dispatch(0.1)
    d = heldout.predict_setting(check_terms(terms), step, rate, replicas=2, cores_per_replica=1, steps=10, images=640,
                                epochs=3, dispatch=True)
    assert d["seconds"] == pytest.approx(p["seconds"] + 3 * 10 * 0.1)
    assert d["high"] == pytest.approx(hi + 3 * 10 * 0.2) and d["low"] == pytest.approx(lo + 3 * 10 * 0.05)
    one = heldout.predict_setting(check_terms(terms), step, rate, replicas=1, cores_per_replica=1, steps=20, images=640,
                                  epochs=3, dispatch=True)
    assert one["terms_seconds"]["allreduce"] == one["terms_seconds"]["dispatch"] == 0.0
    assert one["seconds"] == pytest.approx(3 * (20 * 0.5 + 640 / 2000))


def test_predictions_must_be_committed_and_clean_before_anything_is_measured(tmp_path):
    repo = tmp_path
    git(repo, "init", "-q")
    f = repo / "predictions" / "heldout.json"
    with pytest.raises(heldout.FrozenError, match="no predictions file"):
        heldout.frozen(f, repo)
    f.parent.mkdir()
    f.write_text('{"px64": 12.0}\n')
    with pytest.raises(heldout.FrozenError, match="not committed"):
        heldout.frozen(f, repo)
    git(repo, "add", "predictions/heldout.json")
    with pytest.raises(heldout.FrozenError, match="not committed"):     # staged is not committed
        heldout.frozen(f, repo)
    git(repo, "commit", "-qm", "predictions")
    first = heldout.frozen(f, repo)
    assert first["predictions_sha256"] == heldout.sha256(f) and first["predictions_commit"] == first["head"]
    f.write_text('{"px64": 11.0}\n')                                       # changed after the freeze
    with pytest.raises(heldout.FrozenError, match="changed since HEAD"):
        heldout.frozen(f, repo)
    f.write_text('{"px64": 12.0}\n')
    (repo / "other").write_text("x")
    git(repo, "add", "other")
    git(repo, "commit", "-qm", "later work")
    later = heldout.frozen(f, repo)      # a later commit keeps the predictions' own commit
    assert later["predictions_commit"] == first["predictions_commit"] != later["head"]


def test_k_steps_per_call_pay_the_dispatch_term_once_per_call():
    """The what-if, predicted before it is built: S/k calls an epoch, each paying d once; the rest of
    the epoch as the CPU form has it.  k must divide the steps."""
    terms = check_terms({**fake_terms(), "dispatch": fake_dispatch(0.25)})
    p = ksteps(terms, 0.6, replicas=2, cores_per_replica=1, steps=15, images=960, epochs=3,
                       input_rate=20000.0, ks=[1, 3, 5, 15])
    rest = forms.cpu_epoch(15, 960, 2, 1, 0.6, 1.25, 0.05, 20000.0)["total"]
    assert p["by_k"]["1"]["seconds"] == pytest.approx(3 * (rest + 15 * 0.25))
    assert p["by_k"]["15"]["seconds"] == pytest.approx(3 * (rest + 0.25))
    assert p["by_k"]["5"]["calls_per_epoch"] == 3 and p["by_k"]["1"]["over_smallest_k"] == 1.0
    assert p["by_k"]["15"]["over_smallest_k"] == pytest.approx((rest + 0.25) / (rest + 15 * 0.25))
    one = ksteps(terms, 0.6, replicas=1, cores_per_replica=1, steps=30, images=960, epochs=3,
                         input_rate=20000.0, ks=[1, 30])
    assert one["by_k"]["30"]["seconds"] == one["by_k"]["1"]["seconds"]     # one replica: no dispatch term
    with pytest.raises(ValueError, match=r"k must divide the 15 steps per epoch; \[4\] do not"):
        ksteps(terms, 0.6, replicas=2, cores_per_replica=1, steps=15, images=960, epochs=3,
                       input_rate=20000.0, ks=[1, 4])


def test_the_ksteps_prediction_is_written_from_the_committed_terms_and_rounds(tmp_path):
    import json
    import subprocess
    import sys

    out = tmp_path / "ksteps.json"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.ksteps", "--out", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    p = json.loads(out.read_text())
    by_k = p["n_replicas"]["by_k"]
    assert sorted(by_k, key=int) == ["1", "3", "5", "15"] and p["n_replicas"]["steps_per_epoch"] == 15
    assert by_k["1"]["seconds"] > by_k["3"]["seconds"] > by_k["15"]["seconds"]   # fewer calls, less dispatch
    assert p["terms_sha256"] == heldout.sha256(REPO / "results" / "model-terms.json")
    assert len({v["seconds"] for v in p["one_replica"]["by_k"].values()}) == 1    # no dispatch on one replica


def _ksteps_module():
    from benchmarks import ksteps

    return ksteps


def test_the_ksteps_measurement_is_judged_against_the_prediction_and_the_blogs_code():
    """benchmarks/ksteps.py --measure's analysis on recorded runs (the runs are ResNet50 processes,
    minutes each): each k's seconds on the point against the prediction, the ratio to k = 1 paired
    inside each round, ours / the blog's code paired on the blog's window with the target on the
    whole interval, and the table that says so."""
    ks = _ksteps_module()
    prediction = {"n_replicas": {"by_k": {"1": {"seconds": 40.0, "over_smallest_k": 1.0},
                                          "15": {"seconds": 30.0, "over_smallest_k": 0.75}}}}
    timed = {1: [41.0, 41.5, 40.5], 15: [35.0, 35.5, 34.5]}   # k = 15: 0.85 of k = 1 in every round

    def run(t, call=None):
        return {"timed_seconds": t, "call_seconds": call or t + 1.0, "warmup_seconds": 60.0}

    runs = {f"ours_custom_N_k{k}": [run(t) for t in v] for k, v in timed.items()}
    runs["blog_custom_N"] = [run(None, c) for c in (44.0, 47.0, 41.0)]
    runs["ours_fit_1"] = [run(None, c) for c in (30.0, 31.0, 29.0)]
    runs["blog_fit_1"] = [run(None, c) for c in (50.0, 52.0, 49.0)]
    runs["blog_custom_N_tuned"] = [run(None, c) for c in (60.0, 61.0, 59.0)]   # slower: not the blog's fastest
    runs["blog_fit_1_tuned"] = [run(None, c) for c in (20.0, 21.0, 19.0)]      # faster: judged against this one
    out = ks.analyse(runs, prediction, [1, 15])
    k1, k15 = out["by_k"]
    assert k1["measured_seconds"] == pytest.approx((41.0 * 41.5 * 40.5) ** (1 / 3))
    assert k1["error_pct"] == pytest.approx((40.0 / k1["measured_seconds"] - 1) * 100)
    assert k1["verdict"] == predict.HOLDS                        # -2.4 %, the interval within +-10 %
    assert k15["error_pct"] < -10 and k15["verdict"] == predict.MISSED
    ratios = [35 / 41, 35.5 / 41.5, 34.5 / 40.5]
    assert k15["measured_over_k1"]["point"] == pytest.approx((ratios[0] * ratios[1] * ratios[2]) ** (1 / 3))
    assert k15["ratio_error_pct"] == pytest.approx((0.75 / k15["measured_over_k1"]["point"] - 1) * 100)
    assert "measured_over_k1" not in k1
    peers = {(r["budget"], r["ours"], r["blog_setting"].split()[0]): r for r in out["ours_over_blog"]}
    assert len(peers) == 6 and {r["blog_fastest"] for r in out["ours_over_blog"]} == {True, False}
    fit = peers["1 x c", "fit()", "TF"]
    assert fit["point"] == pytest.approx(((30 / 50) * (31 / 52) * (29 / 49)) ** (1 / 3)) and fit["meets"]
    assert not fit["blog_fastest"]
    fit_tuned = peers["1 x c", "fit()", "tuned"]
    assert fit_tuned["blog_fastest"] and fit_tuned["point"] > 1.4 and not fit_tuned["meets"]
    k1_peer = peers["N x c", "custom loop, k = 1", "TF"]
    assert k1_peer["blog_fastest"] and not peers["N x c", "custom loop, k = 1", "tuned"]["blog_fastest"]
    assert k1_peer["low"] < 1.0 < k1_peer["high"] and not k1_peer["meets"]   # a tie is no target met
    md = ks.markdown({"date": "2026-12-07", "cpu_model": "AMD EPYC", "usable_cores": 2, "git_commit": "abc",
                      "data_source": "synthetic stand-in (NOT the real flower_photos)", "replicas": 2,
                      "settings": {"images": 960, "image_size": 32, "batch": 32, "epochs": 3, "rounds": 3},
                      "steps_per_epoch_N": 15, "ks": [1, 15], "prediction": {"commit": "4be7859abc",
                                                                              "committed_at": "2026-12-07"},
                      **out})
    assert "no GPU (a CPU run" in md and "NOT the real flower_photos" in md and "4be7859abc" in md
    assert f"| 15 | 1 | 30.0 | {k15['measured_seconds']:.1f} [" in md and "| MISSED |" in md
    assert "| 1 x c | fit() | fit() | tuned as ours (our thread pools, oneDNN on) | yes |" in md
    assert "| NO |" in md and "| no |" in md
