"""Runs that collide or die, on the real pipeline (tiny params): two runs in one checkout, a hard
kill mid-rounds (and the resume) and mid-write.  The pipeline is conftest's `pipeline_repo` (built once per session,
shared with tests/test_dvc.py); every test here puts it back to its committed run."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, VENV_BIN, cli_env, dvc, dvc_status as status, git, read_until

def _dvc_popen(args: list[str], cwd: Path, **extra_env: str) -> subprocess.Popen:
    env = cli_env(DVC_NO_ANALYTICS="1", DVC_SITE_CACHE_DIR=str(cwd / ".dvc" / "tmp" / "site-cache"), **extra_env)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env['PATH']}"
    return subprocess.Popen([str(VENV_BIN / "dvc"), *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)


def _back_to_the_committed_run(repo: Path) -> None:
    git("checkout", "--", ".", cwd=repo)
    git("clean", "-fdq", "--", "results", cwd=repo)      # rounds a test added (r02/ ...)
    dvc("checkout", cwd=repo)
    assert status(repo) == {}


def _make_reproduce(repo: Path) -> subprocess.CompletedProcess:
    env = cli_env(DVC_NO_ANALYTICS="1")
    stamp = VENV_BIN.parent / ".flowerbench-installed"  # the venv exists: make must not rebuild it here
    return subprocess.run(["make", "--no-print-directory", "-f", str(REPO / "Makefile"), "-o", str(stamp),
                           "reproduce", f"VENV={VENV_BIN.parent}"], cwd=repo, capture_output=True, text=True,
                          timeout=120, env=env)


def test_a_second_repro_while_one_runs_stops_at_once(pipeline_repo, tmp_path):
    """Two pipelines in one checkout: a second `dvc repro` stops at once, before running anything,
    with DVC's message naming the run that holds the repo, and a second `make reproduce` stops with
    one line of its own; the first, held at the start of its stage meanwhile, finishes complete."""
    import fcntl

    go = tmp_path / "go"
    lock = pipeline_repo / ".dvc" / "tmp" / "flowerbench-reproduce.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    holder = open(lock, "w")  # what a running `make reproduce` holds
    fcntl.flock(holder, fcntl.LOCK_EX)
    first = _dvc_popen(["repro", "-f", "-s", "report"], pipeline_repo,
                       FLOWERBENCH_FAILPOINT=f"pause:report-start:{go}")
    try:
        read_until(first, first.stdout, "[failpoint] pause at report-start")
        second = dvc("repro", cwd=pipeline_repo, check=False, timeout=120)
        said = second.stdout + second.stderr
        assert second.returncode != 0 and "Running stage" not in said
        # DVC 3 names the run that holds the files: "'<path>' is busy, it is being blocked by:
        # (PID n): .../dvc repro -f -s report"
        assert "is busy, it is being blocked by" in said and f"(PID {first.pid})" in said, said[-2000:]
        # `make reproduce` takes a lock of its own first and says so in one line
        held = _make_reproduce(pipeline_repo)
        assert held.returncode != 0 and "Running stage" not in held.stdout
        assert held.stderr.splitlines()[0] == ("flowerbench: another `make reproduce` holds this checkout "
                                               "(.dvc/tmp/flowerbench-reproduce.lock); wait for it to finish")
        assert "Error 75" in held.stderr  # make's own line after ours
    finally:
        go.touch()
        holder.close()
        out = first.communicate(timeout=300)[0]
    assert first.returncode == 0, out[-3000:]
    assert (pipeline_repo / "reports" / "report.html").stat().st_size > 10_000
    assert status(pipeline_repo) == {}
    _back_to_the_committed_run(pipeline_repo)


@pytest.mark.slow
def test_a_hard_kill_mid_rounds_resumes_where_it_stopped(pipeline_repo):
    """SIGKILL of the (held) rounds stage right after its first round is recorded (two variants, two
    rounds here, to keep it short): DVC keeps the folder (persist: true), the schedule holds that
    round's processes and their results, and the next `dvc repro` measures only round 2 (the kept
    results' bytes unchanged, the order seed the same), then the report."""
    import yaml

    p = yaml.safe_load((pipeline_repo / "params.yaml").read_text())
    p["variants"] = {k: v for k, v in p["variants"].items() if k in ("single_fit", "single_custom")}
    p["sweep"]["replicas"], p["multiworker"]["workers"], p["rounds"]["count"] = [], 0, 2
    (pipeline_repo / "params.yaml").write_text(yaml.safe_dump(p, sort_keys=False))
    rounds = pipeline_repo / "results" / "rounds"
    killed = _dvc_popen(["repro", "-s", "rounds"], pipeline_repo, FLOWERBENCH_FAILPOINT="kill:process-recorded")
    out = killed.communicate(timeout=300)[0]
    assert killed.returncode != 0 and "[failpoint] kill at process-recorded" in out, out[-3000:]
    sched = json.loads((rounds / "schedule.json").read_text())
    assert sched["count"] == 2 and sched["engine"] == 2
    assert [(x["round"], x["variant"]) for x in sched["processes"]] == [(1, v) for v in sched["order"][0]]
    assert not (rounds / "r02").exists()
    kept = {v: (rounds / "r01" / f"{v}.json").read_bytes() for v in sched["order"][0]}
    assert "rounds" in status(pipeline_repo)
    proc = dvc("repro", cwd=pipeline_repo)
    said = proc.stdout + proc.stderr
    assert "resuming: 2 of 4 processes already measured with these inputs" in said, said[-3000:]
    assert "round 1/2" not in said and said.count("[rounds] rounds: round 2/2:") == 1
    assert all((rounds / "r01" / f"{v}.json").read_bytes() == b for v, b in kept.items())
    after = json.loads((rounds / "schedule.json").read_text())
    assert len(after["processes"]) == 4 and after["order_seed"] == sched["order_seed"]
    assert status(pipeline_repo) == {}
    _back_to_the_committed_run(pipeline_repo)


def test_a_kill_mid_write_leaves_the_old_result_and_a_scratch_file_dvc_ignores(pipeline_repo):
    """SIGKILL between writing the temporary file and renaming it over the result (run outside DVC,
    so nothing removed the old result first): the old result is intact, and the stray temporary
    file in results/ (a dependency of the report) is ignored by DVC, so nothing looks changed."""
    result = pipeline_repo / "results" / "rounds" / "r01" / "single_fit.json"
    committed = result.read_bytes()
    env = cli_env(FLOWERBENCH_FAILPOINT="kill:mid-write")
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env['PATH']}"
    # train clears its own output first (a stale result must not pass for a new one): run the
    # report stage's writer instead, which replaces files that exist.
    proc = subprocess.run([str(VENV_BIN / "python"), "-m", "flowerbench", "report"], cwd=pipeline_repo,
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == -9, proc.stderr[-2000:]
    strays = list((pipeline_repo / "reports").glob(".metrics.json.*.tmp"))
    assert strays, "the kill left no scratch file: the checkpoint did not fire mid-write"
    assert json.loads((pipeline_repo / "reports" / "metrics.json").read_text())  # the old one, whole
    _back_to_the_committed_run(pipeline_repo)  # the figures written before the kill, back to the lock's
    stray = pipeline_repo / "results" / "rounds" / "r01" / ".single_fit.json.abc123.tmp"
    stray.write_text('{"half": ')
    try:
        assert result.read_bytes() == committed
        assert status(pipeline_repo) == {}  # .dvcignore: the scratch file is not part of results/
    finally:
        stray.unlink()
        for s in strays:
            s.unlink()
