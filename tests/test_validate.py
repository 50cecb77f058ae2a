"""Held-out validation (perfmodel/validate.py): a setting's workspace params, the verdicts and null models on
recorded rounds, the refusals of the freeze, and (slow) predict-heldout then validate for real on
tiny data in a git repository: probes, the commit, the rounds, the report."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from flowerbench.perfmodel import heldout as H, validate as V
from flowerbench.analysis import rounds as R
from flowerbench.core.config import validate as validate_params
from tests.conftest import run_cli, tiny_params, write_params
from tests.helpers.fakes import add_result, fake_result, fake_results, fake_terms, per_round, write_rounds
from tests.helpers.git import git


def test_a_setting_runs_each_loop_on_one_replica_and_on_n_with_its_keys_changed():
    s = H.Setting(image_size=48, batch_size_per_replica=2, loops=("custom",))
    p = H.setting_params(tiny_params(), s, replicas=2, rounds=3)
    checked = validate_params(p)
    assert (checked.data.image_size, checked.train.batch_size_per_replica, checked.rounds.count) == (48, 2, 3)
    assert {v.name: (v.loop, v.replicas) for v in checked.all_variants()} == {
        "single_custom": ("custom", 1), "mirrored_custom": ("custom", 2)}
    assert checked.multiworker.workers == 0 and checked.report.baseline == "single_custom"
    assert tiny_params()["data"]["image_size"] == 32           # the base params are not changed


def _measured(tmp_path, mirrored: float, single: float, drift=(1.0, 1.02, 0.98)) -> R.Rounds:
    records = {"single_custom": per_round(fake_result("single_custom", "custom", 1, single, "cpu", True), drift),
               "mirrored_custom": per_round(fake_result("mirrored_custom", "custom", 2, mirrored, "logical_cpu",
                                                        True), drift)}
    write_rounds(tmp_path, records)
    return R.load(list(records), tmp_path / "rounds")


def test_each_frozen_prediction_is_judged_on_the_point_beside_the_null_models(tmp_path):
    measured = _measured(tmp_path, mirrored=50.0, single=80.0)
    frozen = {"predictions": {"custom": {"seconds": 53.0, "low": 48.0, "high": 58.0}}}
    row, = V.judge_setting("px48", frozen, measured, tolerance=10.0)
    assert row["measured_seconds"] == pytest.approx(50.0, rel=1e-3) and row["rounds"] == 3
    assert row["error_pct"] == pytest.approx(6.0, abs=0.1) and row["verdict"] == "holds"
    assert row["nulls"]["no_speedup"]["error_pct"] == pytest.approx(60.0, abs=0.1)
    assert row["nulls"]["linear"]["error_pct"] == pytest.approx(-20.0, abs=0.1)
    far = V.judge_setting("px56", {"predictions": {"custom": {"seconds": 40.0, "low": 38.0, "high": 42.0}}},
                          measured, 10.0)[0]
    assert far["verdict"] == "MISSED"
    s = H.summary([row, far])
    assert s["held"] == 1 and s["missed"] == ["px56 custom"] and s["mae_pct"] == pytest.approx(13.0, abs=0.1)
    assert s["null_mae_pct"] == pytest.approx({"no_speedup": 60.0, "linear": 20.0}, abs=0.1)
    assert s["beats_nulls"] is True and s["max_abs_error_pct"] == pytest.approx(20.0, abs=0.1)
    loose = _measured(tmp_path / "loose", mirrored=50.0, single=80.0, drift=(1.0, 1.4, 0.7))
    assert V.judge_setting("x", frozen, loose, 10.0)[0]["verdict"] == "undetermined"


def test_strong_scaling_takes_its_null_from_one_replica_at_the_same_global_batch(tmp_path):
    """Strong scaling: 2 replicas of 32 against 1 replica of 64 (the same global batch); a 1-replica
    run at another global batch is no source, and a setting without a source is refused, named."""
    single = fake_result("single_custom", "custom", 1, 80.0, "cpu", True)
    mirrored = fake_result("mirrored_custom", "custom", 2, 50.0, "logical_cpu", True)
    single["scaling"] = mirrored["scaling"] = "strong"
    mirrored["batch_size_per_replica"], mirrored["global_batch_size"] = 32, 64
    write_rounds(tmp_path, {"single_custom": per_round(single), "mirrored_custom": per_round(mirrored)})
    frozen = {"predictions": {"custom": {"seconds": 53.0, "low": 48.0, "high": 58.0}}}
    row, = V.judge_setting("strong", frozen, R.load(["single_custom", "mirrored_custom"], tmp_path / "rounds"), 10.0)
    assert row["null_source"] == "single_custom"
    assert row["nulls"]["no_speedup"]["error_pct"] == pytest.approx(60.0, abs=0.1)
    assert row["nulls"]["linear"]["error_pct"] == pytest.approx(-20.0, abs=0.1)
    single["batch_size_per_replica"] = single["global_batch_size"] = 32     # not the same work per step
    write_rounds(tmp_path / "other", {"single_custom": per_round(single), "mirrored_custom": per_round(mirrored)})
    with pytest.raises(RuntimeError, match="setting strong: no 1-replica run of the custom loop"):
        V.judge_setting("strong", frozen, R.load(["single_custom", "mirrored_custom"], tmp_path / "other/rounds"),
                        10.0)


HELDOUT = {"rounds": 2, "tolerance_pct": 10,
           "settings": {"px48": {"about": "a larger image, from stand-ins of its own", "image_size": 48,
                                 "standin_px": 40, "loops": ["custom"]},
                        "batch2": {"batch_size_per_replica": 2, "loops": ["custom"]}}}


def _repo(workdir):
    """The tiny workdir as a git repository with the reference's rounds (the custom twin among them),
    terms and heldout.yaml committed."""
    fake_results(workdir / "results")
    twin = fake_result("single_custom_tensors", "custom", 1, 57.6, "cpu", True)
    twin["pipeline"] = "tensors"
    add_result(workdir / "results", twin)
    p = tiny_params()
    p["variants"]["single_custom_tensors"] = {"loop": "custom", "replicas": 1, "pipeline": "tensors"}
    p["multiworker"] = {"workers": 2}
    write_params(workdir / "params.yaml", p)
    terms = fake_terms()
    terms["dispatch"] = {"2": {"seconds_beyond_terms": 0.01, "median_seconds": 0.4, "interval_seconds": [0.39, 0.42],
                               "cores": [0, 1]}}
    (workdir / "results" / "model-terms.json").write_text(json.dumps(terms))
    (workdir / "heldout.yaml").write_text(yaml.safe_dump(HELDOUT))
    git(workdir, "init", "-q")
    git(workdir, "add", "params.yaml", "heldout.yaml", "results")
    git(workdir, "commit", "-qm", "reference")


def test_validate_refuses_until_the_predictions_are_committed_and_their_inputs_unchanged(workdir):
    _repo(workdir)
    proc = run_cli("validate", cwd=workdir)
    assert proc.returncode == 3 and "validate: error: predictions/heldout.json: no predictions file" in proc.stderr
    (workdir / "predictions").mkdir()
    (workdir / "predictions" / "heldout.json").write_text(json.dumps(
        {"schema_version": H.PREDICTIONS_SCHEMA, "heldout_sha256": H.sha256(workdir / "heldout.yaml"),
         "terms_sha256": H.sha256(workdir / "results" / "model-terms.json")}))
    proc = run_cli("validate", cwd=workdir)
    assert proc.returncode == 3 and "not committed; commit the predictions before measuring" in proc.stderr
    git(workdir, "add", "predictions")
    git(workdir, "commit", "-qm", "predictions")
    (workdir / "heldout.yaml").write_text(yaml.safe_dump({**HELDOUT, "tolerance_pct": 25}))   # moved the goalposts
    proc = run_cli("validate", cwd=workdir)
    assert proc.returncode == 3 and "heldout.yaml: not the settings the predictions were made from" in proc.stderr
    assert not (workdir / "reports" / "validation").exists() and not (workdir / ".dvc").exists()


@pytest.mark.slow
def test_predict_then_validate_for_real_on_tiny_data(workdir):
    """predict-heldout probes each setting in its own workspace and writes predictions from the
    reference's terms; once they are committed, validate measures both settings in two rounds and
    judges every prediction, each row carrying the predictions' sha256 and commit."""
    _repo(workdir)
    proc = run_cli("predict-heldout", cwd=workdir, timeout=400)
    assert proc.returncode == 0, proc.stderr
    pred = json.loads((workdir / "predictions" / "heldout.json").read_text())
    assert set(pred["settings"]) == {"px48", "batch2"} and pred["replicas"] == 2
    px = pred["settings"]["px48"]
    assert px["overrides"] == {"data.image_size": 48, "data.standin_px": 40} and px["probe"]["batch"] == 4
    p = px["predictions"]["custom"]
    assert p["low"] <= p["seconds"] <= p["high"] and p["carried"]["contention"] == 1.25
    assert pred["settings"]["batch2"]["probe"]["batch"] == 2
    assert pred["settings"]["batch2"]["steps_per_epoch"] == 8     # 30 images, global batch 2 x 2: 7.5
    heldout_ws = workdir / ".dvc" / "tmp" / "heldout"
    own = heldout_ws / "px48" / "data" / "flower_photos"          # fetched there: its stand-ins are 40 px
    assert own.is_dir() and not own.is_symlink()
    assert json.loads((heldout_ws / "px48" / "data" / "manifest.json").read_text())["total"] > 30
    linked = heldout_ws / "batch2" / "data" / "flower_photos"      # the repo's data, read in place
    assert linked.is_symlink() and linked.resolve() == (workdir / "data" / "flower_photos").resolve()
    git(workdir, "add", "predictions")
    git(workdir, "commit", "-qm", "the predictions, before the runs")
    proc = run_cli("validate", cwd=workdir, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr
    out = json.loads((workdir / "reports" / "validation" / "validation.json").read_text())
    assert sorted((r["setting"], r["loop"], r["rounds"]) for r in out["rows"]) == [("batch2", "custom", 2),
                                                                                    ("px48", "custom", 2)]
    sha = H.sha256(workdir / "predictions" / "heldout.json")
    assert all(r["predictions_sha256"] == sha and r["predictions_commit"] == out["frozen"]["head"]
               for r in out["rows"])
    assert all(r["measured_seconds"] > 0 and r["verdict"] in ("holds", "MISSED", "undetermined") for r in out["rows"])
    assert out["measured_commits"] == [out["frozen"]["head"]]     # the rounds ran at HEAD, before the judging
    assert out["measured_from"] < out["measured_to"] < out["judged_at"]
    assert (proc.returncode == 0) == (out["summary"]["held"] == 2)
    md = (workdir / "reports" / "validation" / "validation.md").read_text()
    assert "| px48 | custom |" in md and "Null models" in md and "null models on the same runs: no speed-up" in md
    ws = workdir / ".dvc" / "tmp" / "heldout" / "batch2"
    assert yaml.safe_load((ws / "params.yaml").read_text())["train"]["batch_size_per_replica"] == 2
    shutil.rmtree(ws / "results")           # (a rerun measures again where the rounds are gone)


def test_the_committed_validation_rejudged_by_the_equivalence_test(tmp_path):
    """The committed held-out validation (2 rounds per setting, df = 1) judged again from its recorded
    numbers, without the terms: px64 fit and batch16 fit, whose measured 95 % intervals clear the +-10 %
    band around their predictions, are MISSED; the other 10 are undetermined; none holds."""
    import shutil

    from tests.conftest import REPO

    shutil.copy(REPO / "reports" / "validation" / "validation.json", tmp_path / "validation.json")
    shutil.copy(REPO / "predictions" / "heldout.json", tmp_path / "heldout.json")
    assert V.rejudge(tmp_path / "validation.json", tmp_path / "heldout.json") == 1
    out = json.loads((tmp_path / "validation.json").read_text())
    s = out["summary"]
    assert sorted(s["missed"]) == ["batch16 fit", "px64 fit"] and s["held"] == 0 and len(s["undetermined"]) == 10
    assert all(r["df"] == r["rounds"] - 1 == 1 for r in out["rows"])
    assert out["rule"] == V.RULE and "undetermined" in json.dumps(out["rejudged_from"]["verdicts"])
    md = (tmp_path / "validation.md").read_text()
    assert "| px64 | fit |" in md and "MISSED" in md and "90 % interval" in md
    # a re-judgement of other predictions than the ones judged is refused
    (tmp_path / "heldout.json").write_text("{}")
    with pytest.raises(H.FrozenError, match="judged predictions"):
        V.rejudge(tmp_path / "validation.json", tmp_path / "heldout.json")
