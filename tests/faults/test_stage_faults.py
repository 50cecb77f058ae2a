"""Train, report and multi-worker faults: clear exit codes, no result that looks real, no hang."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from flowerbench.core.results import SCHEMA_VERSION
from tests.faults.conftest import report_fails
from tests.conftest import (assert_clean_failure, assert_tensorflow_not_loaded, cli_env, read_until,
                            report_in_process, run_cli, start_cli, tiny_params, tree_snapshot, write_params)

LONG = {"train.epochs": 400, "train.verbose": "auto"}  # long enough to interrupt mid-epoch


def _as_from_a_terminal() -> None:
    # A shell's background job (`cmd &` without job control) starts with SIGINT ignored, which its
    # children inherit and Python then keeps; Ctrl-C at a terminal finds the default disposition.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(args: list[str], cwd: Path, env: dict | None = None) -> subprocess.Popen:
    return start_cli(*args, cwd=cwd, env=env, start_new_session=True, preexec_fn=_as_from_a_terminal)


def _wait_for(proc: subprocess.Popen, marker: str, timeout: float = 120) -> list[str]:
    return read_until(proc, proc.stderr, marker, timeout)


@pytest.mark.slow
def test_signal_mid_epoch_leaves_no_result_and_rerun_completes(workdir):
    """Ctrl-C, then a SIGTERM on the next run: each stops the stage with its own exit code and word,
    leaving no result and no temp file; then a rerun completes."""
    write_params(workdir / "params.yaml", tiny_params(**LONG))
    for sig, rc, word in ((signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")):
        proc = _start(["train", "--variant", "single_custom"], workdir)
        _wait_for(proc, "timed epoch 2/400")
        proc.send_signal(sig)
        try:
            rest = proc.communicate(timeout=60)[1]
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        assert proc.returncode == rc, (word, rest[-2000:])
        assert f"flowerbench train: {word}" in rest
        assert not (workdir / "results" / "single_custom.json").exists()
        assert not [p for p in (workdir / "results").iterdir()]  # no temp file either
    write_params(workdir / "params.yaml", tiny_params())
    again = run_cli("train", "--variant", "single_custom", cwd=workdir)
    assert again.returncode == 0, again.stderr[-2000:]
    assert json.loads((workdir / "results" / "single_custom.json").read_text())["epochs"] == 1


def test_output_dir_not_writable(workdir):
    (workdir / "results").write_text("a file where the results folder should be\n")
    proc = run_cli("train", "--variant", "single_fit", cwd=workdir)
    assert_clean_failure(proc, 1, "results: output directory is not writable")
    assert_tensorflow_not_loaded(proc)  # checked before TensorFlow is even imported
    assert (workdir / "results").read_text().startswith("a file")


def test_missing_data_folder(workdir):
    shutil.rmtree(workdir / "data" / "flower_photos")
    proc = run_cli("train", "--variant", "single_fit", cwd=workdir)
    assert_clean_failure(proc, 1, "data/flower_photos: image folder not found; run `python -m flowerbench fetch`")
    assert not (workdir / "results" / "single_fit.json").exists()


# --------------------------------------------------------------------------- report

def test_report_missing_results_file(report_dir):
    (report_dir / "results" / "rounds" / "r01" / "mirrored_custom.json").unlink()
    report_fails(report_dir, "results/rounds/r01/mirrored_custom.json: results file not found")


def test_report_results_not_json(report_dir):
    (report_dir / "results" / "rounds" / "r01" / "single_custom.json").write_text("{ truncated")
    report_fails(report_dir, "results/rounds/r01/single_custom.json: not valid JSON")


def _edit_result(report_dir, name: str, edit) -> None:
    path = report_dir / "results" / "rounds" / "r01" / f"{name}.json"
    r = json.loads(path.read_text())
    edit(r)
    path.write_text(json.dumps(r))


def test_report_results_missing_field(report_dir):
    _edit_result(report_dir, "mirrored_fit", lambda r: r.pop("timed_seconds"))
    report_fails(report_dir, "results/rounds/r01/mirrored_fit.json: missing field timed_seconds (written by an older or "
                              "broken run? rerun `dvc repro`)")


@pytest.mark.parametrize("edit,needle", [
    (lambda r: r.update(schema_version=SCHEMA_VERSION - 2),
     f"schema_version {SCHEMA_VERSION - 2}, this code reads {SCHEMA_VERSION} (written by another version"),
    (lambda r: r.pop("schema_version"), f"schema_version None, this code reads {SCHEMA_VERSION}"),
    (lambda r: r.update(colour="blue"), "unknown field colour (written by another version of flowerbench?"),
    (lambda r: r.update(replicas="two"), "replicas: Input should be a valid integer"),
    (lambda r: r.update(loop="while"), "loop: Input should be 'fit' or 'custom'"),
    (lambda r: r.update(epoch_seconds=[]), "no timed epochs"),
], ids=["old-schema", "no-schema", "unknown-field", "wrong-type", "bad-loop", "no-epochs"])
def test_report_refuses_a_foreign_or_malformed_result(report_dir, edit, needle):
    """Every result goes through the one result model: another schema version, an unknown or
    mistyped field is one line naming the file, and the previous report stays as it was."""
    _edit_result(report_dir, "mirrored_fit", edit)
    report_fails(report_dir, f"results/rounds/r01/mirrored_fit.json: {needle}")


@pytest.mark.parametrize("field,value,needle", [
    ("git_commit", "0123456789abcdef", "results from 2 different git commits: abc: single_fit, "),
    ("data_tree_sha256", "f" * 64, "results from 2 different data trees: "),
])
def test_report_labels_results_from_another_commit_or_data(report_dir, field, value, needle):
    """A result left from another commit or another data set is never mixed in silently: the
    report names it in a WARNING banner and in the log."""
    _edit_result(report_dir, "mirrored_fit", lambda r: r.update({field: value}))
    proc = report_in_process(report_dir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    md = (report_dir / "reports" / "report.md").read_text()
    head = md.split("## Headline")[0]
    assert f"WARNING: {needle}" in head and "mirrored_fit" in head.split(needle)[1].split("\n")[0]
    assert needle in proc.stderr


def test_report_mixed_param_sets_warns_and_names_them(report_dir):
    path = report_dir / "results" / "rounds" / "r01" / "mirrored_fit.json"
    r = json.loads(path.read_text())
    r["params"]["train"]["epochs"] = 7
    path.write_text(json.dumps(r))
    proc = report_in_process(report_dir)
    assert proc.returncode == 0
    assert "warning: results from different param sets: mirrored_fit differ from single_fit" in proc.stderr
    assert "WARNING: results from different param sets: mirrored_fit" in (report_dir / "reports" / "report.md").read_text()
    assert json.loads((report_dir / "reports" / "metrics.json").read_text())["warnings"]


# --------------------------------------------------------------------------- multi-worker

@pytest.mark.slow
def test_worker_that_dies_stops_the_job(workdir):
    write_params(workdir / "params.yaml", tiny_params(**LONG, **{"multiworker.deadline_s": 100}))
    t0 = time.monotonic()
    proc = _start(["launch"], workdir)
    lines = _wait_for(proc, "timed epoch 2/400")
    pids = {int(l.split("pid ")[1].split()[0]): int(l.split("worker ")[1].split()[0])
            for l in lines if "started worker" in l}
    victim = next(p for p, i in pids.items() if i == 1)
    os.kill(victim, signal.SIGKILL)
    try:
        err = proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 1
    assert time.monotonic() - t0 < 100
    assert "worker 1 (127.0.0.1:" in err and "killed by signal 9" in err
    for pid in pids:  # every worker is gone
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not (workdir / "results" / "multiworker_custom.json").exists()
    assert not [p for p in (workdir / "results").iterdir()]


@pytest.mark.slow   # about 19 s: a worker waits out its join deadline, then TF's teardown
def test_worker_that_never_joins(workdir):
    """One worker of a 2-worker cluster alone: it names the missing peer and exits within the join deadline."""
    write_params(workdir / "params.yaml", tiny_params(**{"multiworker.join_timeout_s": 4}))
    env = cli_env()
    from flowerbench.training.multiworker import free_ports
    a, b = free_ports(2)
    env["TF_CONFIG"] = json.dumps({"cluster": {"worker": [f"127.0.0.1:{a}", f"127.0.0.1:{b}"]},
                                   "task": {"type": "worker", "index": 0}})
    t0 = time.monotonic()
    proc = run_cli("worker", "--out", "results/x.json", cwd=workdir, env=env, timeout=60)
    assert proc.returncode == -signal.SIGKILL  # killed by its watchdog
    assert time.monotonic() - t0 < 30
    assert f"not answering: worker 1 at 127.0.0.1:{b}" in proc.stderr
    assert f"flowerbench worker: error: worker 0 could not join: no answer from worker 1 at 127.0.0.1:{b}" \
        in proc.stderr
    assert not (workdir / "results" / "x.json").exists()


def test_launcher_deadline_kills_everything(workdir):
    write_params(workdir / "params.yaml", tiny_params(**LONG, **{"multiworker.deadline_s": 8, "multiworker.join_timeout_s": 7}))
    t0 = time.monotonic()
    proc = run_cli("launch", cwd=workdir, timeout=60)
    assert time.monotonic() - t0 < 30
    assert_clean_failure(proc, 1, "job exceeded multiworker.deadline_s=8s; killed worker(s) 0, 1")
    assert not (workdir / "results" / "multiworker_custom.json").exists()


def test_worker_without_tf_config(workdir):
    proc = run_cli("worker", cwd=workdir, timeout=60)
    assert_clean_failure(proc, 1, "TF_CONFIG is not set")


def _file_size_limit(limit: int):
    """A preexec_fn: no file this process writes may grow past `limit` bytes (Python ignores
    SIGXFSZ, so the write fails with EFBIG, "File too large", as on a full disk)."""
    import resource

    def apply():
        _as_from_a_terminal()
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_report_on_a_full_disk_names_the_file_and_keeps_the_old_report(report_dir):
    before = tree_snapshot(report_dir / "reports")
    proc = run_cli("report", cwd=report_dir, timeout=120, preexec_fn=_file_size_limit(30_000))
    line = assert_clean_failure(proc, 1, "cannot write output (File too large)", before, (report_dir / "reports",))
    assert "reports/" in line
    assert not list((report_dir / "reports").glob(".*.tmp")) and not list((report_dir / "reports").glob(".*-*"))


def test_train_on_a_full_disk_names_the_result_and_writes_nothing(workdir):
    proc = run_cli("train", "--variant", "single_fit", cwd=workdir, timeout=240, preexec_fn=_file_size_limit(2_000))
    assert_clean_failure(proc, 1, "results/single_fit.json: cannot write output (File too large)")
    assert not (workdir / "results" / "single_fit.json").exists()
    assert not list((workdir / "results").glob(".single_fit.json.*"))


def test_terms_with_a_probe_that_dies_names_it_and_writes_nothing(workdir):
    """A probe killed as it starts: the terms stage says which, in one line, kills the others, and
    leaves no terms file (an old one is removed first: it must not pass for this run's)."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("one core: no multi-replica terms to measure")
    (workdir / "results").mkdir()
    old = workdir / "results" / "model-terms.json"
    old.write_text("{}")
    proc = run_cli("terms", cwd=workdir, timeout=120, env=cli_env(FLOWERBENCH_FAILPOINT="kill:probe-start"))
    assert_clean_failure(proc, 1, f"probe replica on cores {cores[0]} exited before it was ready (rc -9): "
                                  f"[failpoint] kill at probe-start")
    assert not old.exists() and list((workdir / "results").iterdir()) == []
