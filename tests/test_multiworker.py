"""MultiWorkerMirroredStrategy for real: local worker processes on 127.0.0.1."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from flowerbench.core.failpoints import PORTS_ENV, WEIGHTS_ENV
from tests.conftest import cli_env, run_cli, tiny_params, write_params

B = 8  # per worker


def _one_step(workdir, workers: int, batch: int, name: str) -> dict[str, np.ndarray]:
    write_params(workdir / "params.yaml", tiny_params(**{
        "data.max_images": 2 * B, "model.batchnorm": "none", "train.optimizer": "sgd", "train.learning_rate": 0.5,
        "train.batch_size_per_replica": batch, "train.warmup_epochs": 0, "train.epochs": 1,
        "multiworker.workers": workers}))
    dump = workdir / f"{name}.npz"
    proc = run_cli("launch", cwd=workdir, timeout=240, env=cli_env(**{WEIGHTS_ENV: str(dump)}))
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((workdir / "results" / "multiworker_custom.json").read_text())
    assert result["replicas"] == workers and result["global_batch_size"] == 2 * B
    assert result["steps_per_epoch"] == 1 and result["epoch_images"] == [2 * B]
    with np.load(dump) as z:
        return {k: z[k] for k in z.files}


@pytest.mark.slow
def test_two_workers_equal_one_worker_with_twice_the_batch(workdir):
    two = _one_step(workdir, workers=2, batch=B, name="two")
    one = _one_step(workdir, workers=1, batch=2 * B, name="one")
    inits = sorted(k for k in one if k.startswith("init_"))
    for k in inits:
        np.testing.assert_array_equal(one[k], two[k])  # same start
    moved = max(float(np.max(np.abs(one[k.replace("init", "final")] - one[k]))) for k in inits)
    assert moved > 1e-2  # the step did something
    diff = max(float(np.max(np.abs(one[k.replace("init", "final")] - two[k.replace("init", "final")])))
               for k in inits)
    assert diff < 1e-5


@pytest.mark.slow
def test_launch_labels_its_result_restarts_on_a_taken_port_and_runs_the_train_path(workdir):
    """One launch, three guards (they do not interact).  The result is labelled, and each worker was
    pinned to its own core.  The launcher's ports are free when chosen but released before the
    workers bind them (TF's gRPC server refuses port reuse and TF_CONFIG lists every port, so they
    cannot be held): another process can take one in between.  Injected here: the test holds the
    first attempt's port of worker 0.  That worker exits with EX_TEMPFAIL, the launcher kills the
    job, says so in one line, and the second attempt, on fresh ports, writes the result.  And the
    worker is `train` with another strategy: strong scaling splits the global batch, mixed precision
    gets its loss-scale optimizer, and the result records what actually ran."""
    import socket

    from flowerbench.training.devices import EXIT_PORT_TAKEN
    from flowerbench.training.multiworker import free_ports

    write_params(workdir / "params.yaml", tiny_params(**{
        "data.max_images": 16, "train.batch_size_per_replica": 8, "train.scaling": "strong",
        "train.mixed_precision": True, "train.repeats": 2, "multiworker.workers": 2}))

    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    taken = held.getsockname()[1]
    spare, = free_ports(1)
    try:
        proc = run_cli("launch", cwd=workdir, timeout=240, env=cli_env(**{PORTS_ENV: f"{taken},{spare}"}))
    finally:
        held.close()
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert EXIT_PORT_TAKEN == 75
    assert (f"worker 0 could not bind 127.0.0.1:{taken} (taken by another process after it was chosen); "
            f"restarting the 2-worker job with fresh ports (attempt 2 of 3)") in proc.stderr
    assert (f"flowerbench worker: error: worker 0 could not start its gRPC server on 127.0.0.1:{taken}: the port is "
            f"taken by another process") in proc.stderr
    r = json.loads((workdir / "results" / "multiworker_custom.json").read_text())
    assert r["workers"] == 2 and not any(f":{taken}/" in d for d in r["devices"])
    assert [p.name for p in (workdir / "results").iterdir()] == ["multiworker_custom.json"]
    # the labels
    assert r["strategy"] == "MultiWorkerMirroredStrategy"
    assert r["device_kind"] == "local_cpu_workers" and r["loop"] == "custom" and r["gpu_model"] is None
    # each worker pinned to its own core before TensorFlow started, its threads one replica's share
    # (not divided by the worker count again); the chief's mask and pools read back in its process
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) >= 2:
        assert r["budget_kind"] == "core_matched" and r["emulated"] is False
        assert r["budget_affinity"] == cores[:1] and r["readback"]["cpus_allowed_list"] == str(cores[0])
        assert (r["readback"]["intra_op_threads"], r["readback"]["inter_op_threads"]) == (1, 1)
        assert f"[worker 1] core budget core_matched: pinned to [{cores[1]}]" in proc.stderr
    else:
        assert r["budget_kind"] == "oversubscribed" and r["emulated"] is True
    # the training path: what strong scaling, mixed precision and repeats ran
    assert (r["scaling"], r["global_batch_size"], r["batch_size_per_replica"], r["replicas"]) == ("strong", 8, 4, 2)
    assert r["steps_per_epoch"] == 2 and r["epoch_images"] == [16, 16]
    assert r["mixed_precision"] is True and r["dtype_policy"] == "mixed_float16"
    assert r["optimizer_class"] == "LossScaleOptimizer"
    assert len(r["repeat_seconds"]) == 2 and r["started_at"] < r["finished_at"]
    assert r["cross_device_ops"] != "none (single device)" and r["physical_gpus"] == 0


def test_workers_flag_must_match_params(workdir):
    proc = run_cli("launch", "--workers", "3", cwd=workdir, timeout=60)
    assert proc.returncode == 2 and "differs from multiworker.workers=2" in proc.stderr


def test_multiworker_off_drops_its_variant(workdir):
    write_params(workdir / "params.yaml", tiny_params(**{"multiworker.workers": 0}))
    from flowerbench.core.config import load_params

    assert "multiworker_custom" not in [v.name for v in load_params(workdir / "params.yaml").all_variants()]
    proc = run_cli("launch", cwd=workdir, timeout=60)
    assert proc.returncode == 2 and "multiworker.workers: 0 turns the multi-worker job off" in proc.stderr


def test_each_worker_gets_its_own_gpu_and_its_task(monkeypatch):
    """The launcher pins worker i to GPU i (CUDA_VISIBLE_DEVICES), keeps a user's own GPU list,
    refuses fewer GPUs than workers, and leaves CPU hosts alone: checked by environment, no GPU needed."""
    from flowerbench.training.multiworker import JobError, worker_env

    addrs = ["127.0.0.1:1111", "127.0.0.1:2222"]
    envs = [worker_env(i, addrs, ["0", "1", "2"], base={}) for i in range(2)]
    assert [e["CUDA_VISIBLE_DEVICES"] for e in envs] == ["0", "1"]
    assert [json.loads(e["TF_CONFIG"])["task"] for e in envs] == [{"type": "worker", "index": 0},
                                                                  {"type": "worker", "index": 1}]
    assert json.loads(envs[1]["TF_CONFIG"])["cluster"]["worker"] == addrs
    assert "CUDA_VISIBLE_DEVICES" not in worker_env(0, addrs, [], base={})
    with pytest.raises(JobError, match=r"2 workers need one GPU each, but this host shows 1 \(3\)"):
        worker_env(0, addrs, ["3"], base={})


def test_visible_gpus_reads_cuda_visible_devices_then_nvidia_smi(monkeypatch, tmp_path):
    from flowerbench.core.host import visible_gpus

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert visible_gpus() == ["2", "3"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert visible_gpus() == []
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    # A stand-in for the driver's tool (this host has none): two GPUs listed.
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'Tesla V100-SXM2-16GB, 535.104.05'\necho 'Tesla V100-SXM2-16GB, 535.104.05'\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    assert visible_gpus() == ["0", "1"]
    monkeypatch.setenv("PATH", "/nonexistent")
    assert visible_gpus() == []
