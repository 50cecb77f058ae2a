"""Every file a stage reads, read with a hostile eye: a params file with nothing in it, and a pipeline
file that is corrupt or impossible (a result, the terms, the host description, the data's manifest),
is refused in one line naming the file, and nothing is written."""

from __future__ import annotations

import json

import pytest

from flowerbench.core.config import ParamsError, load_params
from tests.conftest import assert_clean_failure, assert_tensorflow_not_loaded, run_cli, tree_snapshot
from tests.faults.conftest import report_fails
from tests.helpers.fakes import TEST_HOST, fake_terms


@pytest.mark.parametrize("text", ["", "\n", "# only a comment\n", "{}\n"])
def test_a_params_file_with_nothing_in_it_is_refused(tmp_path, text):
    (tmp_path / "params.yaml").write_text(text)
    with pytest.raises(ParamsError, match=r"params.yaml: the params file is empty \(no keys\)"):
        load_params(tmp_path / "params.yaml")


def test_a_stage_refuses_an_empty_params_file_before_any_work(workdir):
    (workdir / "params.yaml").write_text("")
    before = tree_snapshot(workdir)
    proc = run_cli("train", "--variant", "single_fit", cwd=workdir, timeout=60)
    assert_clean_failure(proc, 2, "params.yaml: the params file is empty (no keys)", before, (workdir,))
    assert_tensorflow_not_loaded(proc)


def _terms(report_dir, **changes) -> None:
    terms = fake_terms()
    for dotted, value in changes.items():
        *keys, last = dotted.split(".")
        node = terms
        for k in keys:
            node = node[k]
        node[last] = value
    (report_dir / "results" / "model-terms.json").write_text(json.dumps(terms))


def test_the_report_refuses_a_negative_allreduce_time(report_dir):
    _terms(report_dir, **{"allreduce.2.median_seconds": -0.05})
    report_fails(report_dir, "results/model-terms.json: allreduce.2.median_seconds: Input should be greater "
                             "than 0, got -0.05 (rerun `dvc repro terms`)")


@pytest.mark.parametrize("change,needle", [
    ({"input.median_rate": float("nan")}, "input.median_rate: Input should be a finite number"),
    ({"contention.2.factor": 0}, "contention.2.factor: Input should be greater than 0, got 0"),
    ({"step_alone.interval_seconds": [0.3, 0.2]}, "step_alone: interval_seconds [0.3, 0.2] is not an interval"),
    ({"replicas": [2, 3]}, "no contention for 3 replicas, allreduce for 3 replicas"),
])
def test_the_report_refuses_impossible_terms(report_dir, change, needle):
    _terms(report_dir, **change)
    report_fails(report_dir, needle)


def test_the_report_refuses_a_host_description_that_is_not_json(report_dir):
    (report_dir / "data" / "host.json").write_text("AMD EPYC, 2 cores\n")
    report_fails(report_dir, "data/host.json: not a JSON host description")


def test_the_report_refuses_an_impossible_host_description(report_dir):
    (report_dir / "data" / "host.json").write_text(json.dumps({**TEST_HOST, "usable_cores": 0}))
    report_fails(report_dir, "data/host.json: impossible host (0 usable cores, 0 GPUs, 0 GPU models)")
    (report_dir / "data" / "host.json").write_text(json.dumps({**TEST_HOST, "usable_cores": "2"}))
    report_fails(report_dir, "data/host.json: field usable_cores is missing or of the wrong type")


@pytest.mark.parametrize("change,needle", [
    ({"timed_seconds": 500.0}, "timed_seconds 500.0 lies outside its repeats [60.0]"),
    ({"repeat_seconds": [-60.0], "repeat_wall_seconds": [-60.0], "timed_seconds": -60.0}, "no timed epochs"),
    ({"epoch_seconds": [15.0, 15.0, -1.0, 31.0]}, "a time or rate is zero or negative"),
    ({"global_batch_size": 100}, "global_batch_size 100 is not batch_size_per_replica 64 x 2 replicas"),
    ({"repeats": 2}, "1 repeat and 4 epoch time(s) for 2 repeat(s) of 4 epoch(s)"),
])
def test_the_report_refuses_an_impossible_result(report_dir, change, needle):
    path = report_dir / "results" / "rounds" / "r01" / "mirrored_fit.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    report_fails(report_dir, f"results/rounds/r01/mirrored_fit.json: {needle}")


@pytest.mark.parametrize("text,needle", [
    ("{ truncated", "data/manifest.json: not valid JSON"),
    (json.dumps({"source": "synthetic", "synthetic": True}), "data/manifest.json: field tree_sha256 is missing"),
])
def test_train_refuses_a_corrupt_manifest_before_tensorflow(workdir, text, needle):
    (workdir / "data" / "manifest.json").write_text(text)
    proc = run_cli("train", "--variant", "single_fit", cwd=workdir, timeout=60)
    assert_clean_failure(proc, 1, needle)
    assert_tensorflow_not_loaded(proc)
    assert not (workdir / "results" / "single_fit.json").exists()
