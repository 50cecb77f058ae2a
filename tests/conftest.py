"""Shared fixtures: a tiny stand-in data set in a temporary working directory, params files, a CLI runner.

Stages run for real (TensorFlow, DVC) in subprocesses, because TensorFlow's
devices can be configured only once per process.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
TINY_COUNTS = {"daisy": 6, "dandelion": 6, "roses": 6, "sunflowers": 6, "tulips": 6}


# The measurement lock (measuring/hostlock.py) is host-wide; the tests' tiny measurements take one of their
# own, one per test process (each xdist worker sets its own), so that `make test` beside a reference
# run never waits for it and the two workers' pipelines never wait for each other.
_LOCK_DIR = tempfile.mkdtemp(prefix="flowerbench-test-lock-")
atexit.register(shutil.rmtree, _LOCK_DIR, True)
os.environ["FLOWERBENCH_MEASURE_LOCK"] = str(Path(_LOCK_DIR) / "measure.lock")


def tiny_params(**overrides) -> dict:
    """Params for seconds-long runs: 32 px, 30 images, the tiny model, 1 warm-up + 1 epoch, 1 repeat,
    1 round (headline and secondary)."""
    p = {
        "seed": 123,
        "data": {"source": "synthetic", "image_size": 32, "max_images": 30, "standin_px": 32},
        "model": {"arch": "tiny"},
        "train": {"batch_size_per_replica": 4, "warmup_epochs": 1, "epochs": 1, "repeats": 1, "verbose": "quiet"},
        "variants": {"single_fit": {"loop": "fit", "replicas": 1},
                     "mirrored_fit": {"loop": "fit", "replicas": 2},
                     "single_custom": {"loop": "custom", "replicas": 1},
                     "mirrored_custom": {"loop": "custom", "replicas": 2}},
        "sweep": {"replicas": [], "loops": ["custom"]},
        "multiworker": {"workers": 2, "deadline_s": 120, "join_timeout_s": 60},
        "rounds": {"count": 1},
        "secondary": {"count": 1},
    }
    for dotted, value in overrides.items():
        node = p
        *parents, leaf = dotted.split(".")
        for k in parents:
            node = node.setdefault(k, {})
        node[leaf] = value
    return p


def write_params(path: Path, params: dict) -> Path:
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


@pytest.fixture(scope="session")
def tiny_data(tmp_path_factory) -> Path:
    """data/ with a 30-image stand-in and its manifest, made by the real fetch code."""
    from flowerbench.data import fetch, standin

    root = tmp_path_factory.mktemp("tinydata")
    flowers = root / "data" / "flower_photos"
    standin.generate(flowers, seed=123, px=32, counts=TINY_COUNTS)
    quarantine = root / "data" / "quarantine"
    quarantine.mkdir()
    counts, bad, _ = fetch.validate_images(flowers, quarantine)
    manifest = {"source": "synthetic", "synthetic": True, "label": "synthetic stand-in (NOT the real flower_photos)",
                "counts": counts, "total": sum(counts.values()), "quarantined": bad,
                "tree_sha256": fetch.tree_digest(flowers)}
    (root / "data" / "manifest.json").write_text(json.dumps(manifest))
    return root / "data"


@pytest.fixture(scope="session")
def rendered(tiny_data, tmp_path_factory) -> Path:
    """Hand-made results for every variant (helpers/fakes.py) and the good report rendered from them,
    once per worker: the fault tests break its inputs, the numbers tests read it back."""
    from tests.helpers.fakes import fake_results

    root = tmp_path_factory.mktemp("rendered")
    shutil.copytree(tiny_data, root / "data")
    write_params(root / "params.yaml", tiny_params())
    fake_results(root / "results")
    ok = report_in_process(root)
    assert ok.returncode == 0, ok.stderr[-2000:]
    return root


@pytest.fixture
def workdir(tmp_path, tiny_data, monkeypatch) -> Path:
    """A working directory holding a copy of the tiny data and tiny params.yaml."""
    shutil.copytree(tiny_data, tmp_path / "data")
    write_params(tmp_path / "params.yaml", tiny_params())
    monkeypatch.chdir(tmp_path)
    return tmp_path


CLI = (sys.executable, "-m", "flowerbench")


def cli_env(drop: tuple[str, ...] = (), **extra: str) -> dict:
    """The environment every CLI test runs with: no debug tracebacks, TensorFlow's C++ log quiet
    (unless `drop` removes the setting), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k != "FLOWERBENCH_DEBUG"}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    for k in drop:
        env.pop(k, None)
    return {**env, **extra}


def run_cli(*args: str, cwd: Path | None = None, timeout: float = 240, env: dict | None = None,
            **kw) -> subprocess.CompletedProcess:
    """`python -m flowerbench ARGS` in a subprocess; fails the test if it outlives `timeout`."""
    return subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=env or cli_env(), **kw)


def report_in_process(cwd: Path) -> subprocess.CompletedProcess:
    """`python -m flowerbench report` in this test's process: the same `cli.main`, with its exit code,
    log lines and error line captured as the subprocess would give them.  It spares each render the
    import of matplotlib, seaborn and pandas (1.3 s of CPU); test_report's same-bytes test checks that
    it writes exactly what the command writes in a process of its own."""
    import logging
    import signal

    from flowerbench import cli
    from flowerbench.core.log import ROOT

    logger = logging.getLogger(ROOT)
    handlers = logger.handlers[:]
    signals = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}  # entry.run sets both
    logger.handlers = []                     # cli.main's setup() binds a handler to the redirected stderr
    try:
        return run_in_process(CLI, cli.main, ["report"], cwd)
    finally:
        logger.handlers = handlers
        for s, handler in signals.items():
            signal.signal(s, handler)


def run_in_process(command: tuple[str, ...], main, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """`main(args)` in this process as `command ARGS` would run in `cwd`: its exit code, stdout and
    stderr captured; the working directory restored afterwards."""
    import contextlib
    import io

    out, err, here = io.StringIO(), io.StringIO(), os.getcwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(args)
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess([*command, *args], rc, out.getvalue(), err.getvalue())


def start_cli(*args: str, cwd: Path | None = None, env: dict | None = None, **kw) -> subprocess.Popen:
    """The same command, started in the background with stderr piped (for signal and kill tests)."""
    return subprocess.Popen([*CLI, *args], cwd=cwd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            env=env or cli_env(), **kw)


def read_until(proc: subprocess.Popen, stream, marker: str, timeout: float = 180) -> list[str]:
    """Lines of `stream` (proc's stdout or stderr) up to the first holding `marker`; if the process
    ends or `timeout` passes first, its process group is killed and the test fails."""
    import os
    import signal
    import time

    seen, t0 = [], time.monotonic()
    while time.monotonic() - t0 < timeout:
        line = stream.readline()
        if not line and proc.poll() is not None:
            break
        seen.append(line)
        if marker in line:
            return seen
    if proc.poll() is None:
        os.killpg(os.getpgid(proc.pid), signal.SIGKILL)
    raise AssertionError(f"never saw {marker!r}:\n{''.join(seen)[-3000:]}")


def assert_tensorflow_not_loaded(proc: subprocess.CompletedProcess) -> None:
    """The run stopped before TensorFlow was imported: the stage logs one `[tensorflow] TensorFlow
    <version> ready` line right after the import, and it is absent."""
    assert "[tensorflow] TensorFlow" not in proc.stderr, proc.stderr[-2000:]


def error_lines(proc: subprocess.CompletedProcess) -> list[str]:
    """The flowerbench error lines on stderr (TensorFlow's own log lines filtered out)."""
    return [l for l in proc.stderr.splitlines() if l.startswith("flowerbench")]


def tree_snapshot(*dirs: Path) -> dict[str, bytes]:
    out = {}
    for d in dirs:
        if d.exists():
            for f in sorted(d.rglob("*")):
                if f.is_file():
                    out[str(f)] = f.read_bytes()
    return out


def assert_clean_failure(proc: subprocess.CompletedProcess, rc: int | None, needle: str,
                         before: dict[str, bytes] | None = None, dirs: tuple[Path, ...] = ()) -> str:
    """Non-zero exit (exactly `rc` if given), one flowerbench error line containing `needle`,
    and the output trees in `dirs` byte-identical to `before` (nothing new, nothing half-written)."""
    assert proc.returncode != 0, proc.stderr[-2000:]
    if rc is not None:
        assert proc.returncode == rc, (proc.returncode, proc.stderr[-2000:])
    lines = error_lines(proc)
    assert len(lines) == 1, proc.stderr[-2000:]
    assert needle in lines[0], lines[0]
    if before is not None:
        after = tree_snapshot(*dirs)
        assert after == before, sorted(set(after) ^ set(before)) or "contents changed"
    return lines[0]


# --------------------------------------------------------------------------- DVC and git, for real

VENV_BIN = Path(sys.executable).parent
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]


# Commands that only read the repo run in the test's process, through DVC's own entry point
# (`dvc.cli.main`, as DVC's test suite calls it): the same parser, command and output, without the
# 1.3 s a `dvc` process spends starting.  Whatever runs stages or writes (repro, exp run, checkout,
# push, pull) stays a subprocess, as a user runs it.
READ_ONLY_DVC = (("status",), ("metrics", "show"), ("plots", "show"), ("exp", "show"), ("exp", "diff"),
                 ("stage", "list"))


def dvc(*args: str, cwd: Path, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess:
    env = cli_env()
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env['PATH']}"
    env["DVC_NO_ANALYTICS"] = "1"
    env["DVC_SITE_CACHE_DIR"] = str(cwd / ".dvc" / "tmp" / "site-cache")
    if any(args[:len(cmd)] == cmd for cmd in READ_ONLY_DVC):
        proc = _dvc_in_process(list(args), cwd, env)
    else:
        proc = subprocess.run([str(VENV_BIN / "dvc"), *args], cwd=cwd, capture_output=True, text=True,
                              timeout=timeout, env=env)
    if check:
        assert proc.returncode == 0, (args, (proc.stdout + proc.stderr)[-4000:])
    return proc


def dvc_status(repo: Path) -> dict:
    """`dvc status --json` minus the host stage's permanent entry: the host stage is always_changed,
    so this asserts that its entry is exactly "always changed" (else it is kept and shows up in the
    caller's comparison) and {} means every other stage is up to date."""
    from flowerbench.core.lockfile import pending_stages

    return pending_stages(json.loads(dvc("status", "--json", cwd=repo).stdout or "{}"))


def _dvc_in_process(args: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess:
    """`dvc ARGS` by `dvc.cli.main` in this process, in `cwd` and `env` (DVC_TEST as in DVC's own
    tests: its JSON written to the captured stdout, no analytics), both restored afterwards."""
    import warnings
    from unittest import mock

    from dvc.cli import main

    with mock.patch.dict(os.environ, {**env, "DVC_TEST": "1"}, clear=True), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # DVC's own, which its CLI never shows
        return run_in_process(("dvc",), main, args, cwd)


def git(*args: str, cwd: Path) -> str:
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout



def _build_pipeline(repo: Path) -> None:
    """A git repo with the real dvc.yaml, code and lock, tiny params, reproduced and committed."""
    from flowerbench.core.config import resolved_dict, validate

    for item in ("dvc.yaml", "src", ".dvc/config", ".dvc/.gitignore", ".dvc/plots", ".gitignore", ".dvcignore",
                 "data/.gitignore", "reports/.gitignore", "requirements.lock",
                 # the report reads the committed held-out predictions and their validation, and the
                 # reference runs it pools its variance with, as a clone has them
                 "predictions/heldout.json", "reports/validation/validation.json", "reports/reference"):
        src = REPO / item
        if src.is_dir():
            shutil.copytree(src, repo / item, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            (repo / item).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, repo / item)
    # The terms stage is left out of this copy: its seven processes would lengthen the serial build
    # every pipeline test waits for; tests/test_terms.py runs its command on its own, in parallel.
    stages = yaml.safe_load((repo / "dvc.yaml").read_text())
    del stages["stages"]["terms"]
    (repo / "dvc.yaml").write_text(yaml.safe_dump(stages, sort_keys=False))
    params = tiny_params(**{"data.standin_px": 32, "data.max_images": 64, "sweep": {"replicas": [2], "loops": ["fit"]}})
    params["variants"]["mirrored_fit"]["replicas"] = params["variants"]["mirrored_custom"]["replicas"] = 4
    # DVC needs every key a stage declares to be present: write the fully resolved params.
    write_params(repo / "params.yaml", resolved_dict(validate(params)))
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "code", cwd=repo)
    dvc("repro", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "run", cwd=repo)


def shared_dir(tmp_path_factory, worker_id: str) -> Path:
    """The folder every xdist worker of this run sees (the run's base temp dir)."""
    return tmp_path_factory.getbasetemp() if worker_id == "master" else tmp_path_factory.getbasetemp().parent


def once_per_run(tmp_path_factory, worker_id: str, name: str, build) -> Path:
    """A directory `build(path)` fills once per test run, whatever the number of xdist workers:
    the first to arrive (a worker, or the background builder started at collection) builds it under
    a file lock, into a scratch folder renamed into place, so a failed build leaves nothing that
    looks done and the next to arrive builds it again; the others wait and reuse it."""
    return build_once(shared_dir(tmp_path_factory, worker_id), name, build)


def build_once(shared: Path, name: str, build) -> Path:
    from filelock import FileLock

    done = shared / name
    with FileLock(str(shared / f"{name}.lock")):
        if not done.exists():
            scratch = shared / f"{name}.building"
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir()
            build(scratch)
            scratch.rename(done)
    return done


@pytest.fixture(scope="session")
def pipeline_built(tmp_path_factory, worker_id) -> Path:
    """The tiny pipeline, reproduced and committed (see _build_pipeline), built once per test run
    (once_per_run).  Never changed: tests work on copies."""
    return once_per_run(tmp_path_factory, worker_id, "pipeline-built", _build_pipeline)


def copy_pipeline(built: Path, dest: Path) -> Path:
    shutil.copytree(built, dest, symlinks=True, dirs_exist_ok=True)
    return dest


@pytest.fixture(scope="session")
def pipeline_repo(pipeline_built, tmp_path_factory) -> Path:
    """A copy of the tiny pipeline for this xdist worker: its tests run one after another on it, and
    each test that changes it puts it back."""
    return copy_pipeline(pipeline_built, tmp_path_factory.mktemp("pipeline"))


# --------------------------------------------------------------------------- shared builds, early

# What several tests share and takes a minute to build: fixture name -> (folder, "module:function").
SHARED_BUILDS = {"pipeline_built": ("pipeline-built", "tests.conftest:_build_pipeline"),
                 "steps": ("equivalence-steps", "tests.test_equivalence:_one_step_each")}


def build_in_background(shared: str, name: str, target: str) -> None:
    """Entry point of the background builder process (see pytest_collection_modifyitems)."""
    import importlib

    module, func = target.split(":")
    build_once(Path(shared), name, getattr(importlib.import_module(module), func))


def pytest_collection_modifyitems(config, items):
    """The tests that wait for a shared build run last, and the builds start now, in background
    processes (one per build, from one xdist worker or the lone pytest process): the other tests
    keep both cores busy meanwhile, instead of a worker waiting a minute on the build's lock."""
    def needs(item) -> list[str]:
        return [f for f in SHARED_BUILDS if f in getattr(item, "fixturenames", ())]

    # (stable: the same order on every worker; a test with a copy of its own, the experiments test,
    # first among them: it is the longest)
    items.sort(key=lambda item: (bool(needs(item)), "pipeline_repo" in getattr(item, "fixturenames", ())))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "master")
    wanted = {f for item in items for f in needs(item)}  # (fixturenames hold what fixtures need, too)
    if worker not in ("master", "gw0") or not wanted or config.option.collectonly:
        return
    shared = shared_dir(config._tmp_path_factory, worker)  # pytest's own TempPathFactory (tmp_path's)
    for fixture in sorted(wanted):
        name, target = SHARED_BUILDS[fixture]
        subprocess.Popen([sys.executable, "-c", "import sys; from tests.conftest import build_in_background as b; "
                          "b(*sys.argv[1:])", str(shared), name, target], cwd=REPO, env=cli_env(),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
