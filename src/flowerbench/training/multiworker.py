"""Multi-worker training with MultiWorkerMirroredStrategy, and a local launcher with deadlines.

    python -m flowerbench launch [--workers N]        # N local workers -> results/multiworker_custom.json
    TF_CONFIG=... python -m flowerbench worker        # one worker (what Slurm / Kubernetes run, see deploy/)

Keras 3 `fit()` does not run under MultiWorkerMirroredStrategy
(keras-team/keras#20585), so the multi-worker variant uses the blog's custom
loop, which does.

Hang-proofing.  A worker whose peers never come blocks inside the strategy
constructor and ignores SIGTERM, so:
  * each worker starts a watchdog *process* before building the strategy (the
    blocked constructor holds the GIL, so no thread or signal handler of the
    worker could run); if the collective set-up has not finished within
    `multiworker.join_timeout_s` it prints which peers did not answer and
    SIGKILLs the worker;
  * the launcher starts every worker in its own process group, watches them,
    and on the first failure, on `multiworker.deadline_s`, or on its own
    SIGINT/SIGTERM sends SIGKILL to every group that is still alive.
Only the chief writes a result, into a private temp dir; the launcher moves it
to results/ atomically after *every* worker exited 0, so a failed job leaves
no result file.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

from flowerbench.core import paths
from flowerbench.core.config import MULTIWORKER_VARIANT as VARIANT, Params, ParamsError
from flowerbench.core.deadline import Deadline, DeadlineExceeded, guarded, wait
from flowerbench.training.devices import EXIT_PORT_TAKEN
from flowerbench.core.failpoints import forced_ports
from flowerbench.core.host import visible_gpus
from flowerbench.core.io import check_writable, write_json
from flowerbench.core.log import get_logger, setup as setup_logging


class JobError(RuntimeError):
    """A multi-worker job failed (one line naming the worker)."""


def log(who: str, msg: str) -> None:
    get_logger(who).info(msg)


# --------------------------------------------------------------------------- worker


def read_tf_config() -> tuple[list[str], int]:
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        raise JobError("TF_CONFIG is not set; run workers with `python -m flowerbench launch` or see deploy/")
    try:
        cfg = json.loads(raw)
        workers = list(cfg["cluster"]["worker"])
        index = int(cfg["task"]["index"])
        if cfg["task"].get("type", "worker") != "worker" or not 0 <= index < len(workers):
            raise ValueError(f"task {cfg['task']} does not name one of {len(workers)} workers")
    except (ValueError, KeyError, TypeError) as exc:
        raise JobError(f"TF_CONFIG: not a valid worker cluster spec ({exc})") from None
    return workers, index


def _answers(address: str, timeout: float = 0.5) -> bool:
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except OSError:
        return False


def start_watchdog(workers: list[str], index: int, timeout_s: float) -> subprocess.Popen:
    """A separate watchdog process: the strategy constructor blocks while holding the GIL,
    so neither a Python thread nor a signal handler of this process can run.  The
    watchdog waits on a pipe; if we do not close it within `timeout_s`, it names the
    peers that do not answer and SIGKILLs us.  If we die first, the pipe closes and
    it exits."""
    code = "from flowerbench.training.multiworker import watchdog_child; watchdog_child()"
    return subprocess.Popen([sys.executable, "-c", code, str(os.getpid()), str(timeout_s), str(index),
                             json.dumps(workers)], stdin=subprocess.PIPE)


def watchdog_child() -> None:
    import select

    setup_logging()
    parent, timeout_s, index, workers = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
    ready, _, _ = select.select([sys.stdin], [], [], timeout_s)
    if ready:  # the worker closed the pipe (joined) or died
        return
    missing = [f"worker {i} at {a}" for i, a in enumerate(workers) if i != index and not _answers(a)]
    who = ", ".join(missing) or "every peer accepts connections (a peer may be stuck)"
    log(f"worker {index}", f"error: collective set-up did not finish within {timeout_s:g}s "
        f"(multiworker.join_timeout_s); not answering: {who}; killing worker {index}")
    print(f"flowerbench worker: error: worker {index} could not join: no answer from {who} within "
          f"{timeout_s:g}s", file=sys.stderr, flush=True)
    try:
        os.kill(parent, signal.SIGKILL)
    except ProcessLookupError:
        pass


def worker_main(params: Params, variant_name: str = VARIANT, out: Optional[str] = None) -> int:
    """One worker: read TF_CONFIG, start the process (runtime.start: its slice of the cores, TensorFlow,
    the watchdog, then a MultiWorkerMirroredStrategy) and run the same training path as `train`
    (trainer.train_variant); the chief writes the result."""
    from flowerbench.core import failpoints
    from flowerbench.training import runtime, trainer

    variant = params.variant(variant_name)
    if variant.loop != "custom":
        raise ParamsError(f"variant: {variant.name} uses loop {variant.loop!r}; multi-worker runs the custom "
                          f"loop only (Keras 3 fit() fails under MultiWorkerMirroredStrategy, keras#20585)")
    workers, index = read_tf_config()
    if variant.replicas == "auto":  # the launcher (or the scheduler) resolved it: one task per worker
        variant = variant.model_copy(update={"replicas": len(workers), "workers": len(workers)})
    if len(workers) != variant.replicas:
        raise JobError(f"TF_CONFIG names {len(workers)} workers, multiworker.workers is {variant.replicas}")
    who = f"worker {index}"
    chief = index == 0 and out is not None
    if chief:
        trainer.clear_output(Path(out))
    batches, images = trainer.prepare(params, variant)
    watchdog: list[subprocess.Popen] = []
    # Each local worker owns its own slice of the cores (one replica's share), pinned before TensorFlow
    # is imported; the watchdog starts just before the strategy's constructor, which blocks until
    # every peer has joined.
    rt = runtime.start(params.train, len(workers), cluster=(workers, index), before_strategy=lambda: watchdog.append(
        start_watchdog(workers, index, params.multiworker.join_timeout_s)))
    cores = rt.budget
    log(who, f"core budget {cores.kind}: pinned to {cores.affinity or 'nothing'}, threads intra "
        f"{cores.intra_op_threads or 'default'} / inter {cores.inter_op_threads or 'default'}")

    def joined(model) -> None:
        watchdog[0].stdin.close()  # variables exist on every worker: the collectives are up
        watchdog[0].wait()
        log(who, f"joined {len(workers)}-worker job; global batch {batches.global_batch_size}")
        failpoints.keep_weights("init", model)

    result, model = trainer.train_variant(params, variant, rt.strategy, batches, images, rt.devices_record(),
                                           shard_policy="DATA", on_ready=joined, show_epochs=index == 0)
    if chief:
        failpoints.keep_weights("final", model)
        write_json(Path(out), result.as_dict())
    log(who, f"done: timed {result.timed_seconds:.2f}s")
    return 0


# --------------------------------------------------------------------------- launcher


def free_ports(n: int) -> list[int]:
    """n ports the OS has just handed out.  They are released before the workers bind them (TF's
    gRPC server turns port reuse off, and TF_CONFIG must list every port up front, so they cannot
    be held): another process may take one in between, which the launcher survives by restarting."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def worker_env(index: int, addresses: list[str], gpus: list[str], base: Optional[dict] = None) -> dict:
    """Worker `index`'s environment: its TF_CONFIG and, on a host with a GPU per worker, its own GPU
    (CUDA_VISIBLE_DEVICES, so every worker sees exactly one, as on separate hosts).  Fewer GPUs
    than workers is refused (they would share or fight over one); no GPU: CPU workers."""
    env = dict(os.environ if base is None else base)
    env["TF_CONFIG"] = json.dumps({"cluster": {"worker": addresses}, "task": {"type": "worker", "index": index}})
    if gpus:
        if len(gpus) < len(addresses):
            raise JobError(f"{len(addresses)} workers need one GPU each, but this host shows {len(gpus)} "
                           f"({', '.join(gpus)}); set multiworker.workers <= {len(gpus)}")
        env["CUDA_VISIBLE_DEVICES"] = gpus[index]
    return env


# A port taken between free_ports() and the worker's bind: restart the whole job with fresh ports.
PORT_ATTEMPTS = 3


def launch_main(params: Params, workers: Optional[int] = None, params_path: str = "params.yaml",
                results_dir: Path = paths.RESULTS, out: Optional[Path] = None) -> int:
    n = params.multiworker.workers if workers is None else workers
    if n == "auto":
        from flowerbench.training import placement
        from flowerbench.core import host

        machine = host.describe()
        n = placement.auto_replicas(params.train, machine["usable_cores"], machine["gpu_count"])
    if params.multiworker.workers == 0:
        raise ParamsError("multiworker.workers: 0 turns the multi-worker job off; set it to N >= 1 to launch one")
    if n < 1:
        raise ParamsError(f"--workers: must be >= 1, got {n}")
    if params.multiworker.workers != "auto" and n != params.multiworker.workers:
        raise ParamsError(f"--workers: {n} differs from multiworker.workers={params.multiworker.workers}; "
                          f"change the params (it names the variant's replica count)")
    out = Path(out) if out is not None else paths.result_path(VARIANT, results_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    check_writable(out.parent)
    out.unlink(missing_ok=True)
    deadline = Deadline(params.multiworker.deadline_s)
    scratch = Path(tempfile.mkdtemp(prefix=".launch-", dir=out.parent))
    tmp_out = scratch / out.name
    cmd = [sys.executable, "-m", "flowerbench.commands.worker", "--params", params_path, "--variant", VARIANT,
           "--out", str(tmp_out)]
    try:
        gpus = visible_gpus()
        for attempt in range(1, PORT_ATTEMPTS + 1):
            ports = (forced_ports() if attempt == 1 else None) or free_ports(n)
            addresses = [f"127.0.0.1:{p}" for p in ports]
            taken = _run_job(cmd, addresses, gpus, deadline)
            if taken is None:
                break
            if attempt == PORT_ATTEMPTS:
                raise JobError(f"worker {taken} could not bind {addresses[taken]} on {PORT_ATTEMPTS} attempts "
                               f"with fresh ports each time (another process keeps taking them); no result written")
            log("launch", f"worker {taken} could not bind {addresses[taken]} (taken by another process after it "
                f"was chosen); restarting the {n}-worker job with fresh ports (attempt {attempt + 1} of "
                f"{PORT_ATTEMPTS})")
        if not tmp_out.is_file():
            raise JobError(f"chief (worker 0) exited 0 but wrote no result to {tmp_out}")
        os.replace(tmp_out, out)
        log("launch", f"{n} workers finished in {deadline.seconds - deadline.left():.1f}s -> {out}")
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_job(cmd: list[str], addresses: list[str], gpus: list[str], deadline: Deadline) -> Optional[int]:
    """Start one worker per address and wait for all of them: None when every worker exited 0, the
    index of a worker that could not bind its port (the job can be retried), JobError otherwise."""
    procs: list[subprocess.Popen] = []
    try:
        with guarded(procs, deadline):
            for i in range(len(addresses)):
                # Own process group: a SIGKILL to the group takes the worker and anything it forked.
                procs.append(subprocess.Popen(cmd, env=worker_env(i, addresses, gpus), start_new_session=True))
                log("launch", f"started worker {i} pid {procs[-1].pid} at {addresses[i]}")
            codes = wait(procs, deadline)
    except DeadlineExceeded as exc:
        raise JobError(f"job exceeded multiworker.deadline_s={deadline.seconds:g}s; killed worker(s) "
                       f"{', '.join(map(str, exc.alive)) or 'none (all had ended)'}; no result written") from None
    failed = [(i, c) for i, c in enumerate(codes) if c not in (None, 0)]
    if not failed:
        return None
    i, c = failed[0]
    if c == EXIT_PORT_TAKEN:
        return i
    how = f"killed by signal {-c}" if c < 0 else f"exited with code {c}"
    raise JobError(f"worker {i} ({addresses[i]}) {how}; stopped the other worker(s); no result written")
