"""MultiWorkerMirroredStrategy for real: local worker processes on 127.0.0.1."""

from __future__ import annotations

import json

import numpy as np

from tests.conftest import run_cli, tiny_params, write_params

B = 8  # per worker


def _one_step(workdir, workers: int, batch: int, name: str) -> dict[str, np.ndarray]:
    write_params(workdir / "params.yaml", tiny_params(**{
        "data.max_images": 2 * B, "model.batchnorm": "none", "train.optimizer": "sgd", "train.learning_rate": 0.5,
        "train.batch_size_per_replica": batch, "train.warmup_epochs": 0, "train.epochs": 1,
        "multiworker.workers": workers}))
    dump = workdir / f"{name}.npz"
    proc = run_cli("launch", f"--worker-arg=--dump-weights={dump}", cwd=workdir, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((workdir / "results" / "multiworker_custom.json").read_text())
    assert result["replicas"] == workers and result["global_batch_size"] == 2 * B
    assert result["steps_per_epoch"] == 1 and result["epoch_images"] == [2 * B]
    with np.load(dump) as z:
        return {k: z[k] for k in z.files}


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


def test_launch_writes_a_labelled_result(workdir):
    proc = run_cli("launch", cwd=workdir, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads((workdir / "results" / "multiworker_custom.json").read_text())
    assert r["strategy"] == "MultiWorkerMirroredStrategy" and r["workers"] == 2
    assert r["device_kind"] == "local_cpu_workers" and r["emulated"] is True
    assert r["loop"] == "custom" and r["gpu_model"] is None
    assert not [p.name for p in (workdir / "results").iterdir() if p.name != "multiworker_custom.json"]


def test_workers_flag_must_match_params(workdir):
    proc = run_cli("launch", "--workers", "3", cwd=workdir, timeout=60)
    assert proc.returncode == 2 and "differs from multiworker.workers=2" in proc.stderr


def test_workers_run_the_same_training_path_strong_scaling_and_mixed_precision(workdir):
    """The worker is `train` with another strategy: strong scaling splits the global batch, mixed
    precision gets its loss-scale optimizer, and the result records what actually ran."""
    write_params(workdir / "params.yaml", tiny_params(**{
        "data.max_images": 16, "train.batch_size_per_replica": 8, "train.scaling": "strong",
        "train.mixed_precision": True, "train.repeats": 2, "multiworker.workers": 2}))
    proc = run_cli("launch", cwd=workdir, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads((workdir / "results" / "multiworker_custom.json").read_text())
    assert (r["scaling"], r["global_batch_size"], r["batch_size_per_replica"], r["replicas"]) == ("strong", 8, 4, 2)
    assert r["steps_per_epoch"] == 2 and r["epoch_images"] == [16, 16]
    assert r["mixed_precision"] is True and r["dtype_policy"] == "mixed_float16"
    assert r["optimizer_class"] == "LossScaleOptimizer"
    assert len(r["repeat_seconds"]) == 2 and r["started_at"] < r["finished_at"]
    assert r["cross_device_ops"] != "none (single device)" and r["physical_gpus"] == 0


def test_multiworker_off_drops_its_variant(workdir):
    write_params(workdir / "params.yaml", tiny_params(**{"multiworker.workers": 0}))
    from flowerbench.config import load_params

    assert "multiworker_custom" not in [v.name for v in load_params(workdir / "params.yaml").all_variants()]
    proc = run_cli("launch", cwd=workdir, timeout=60)
    assert proc.returncode == 2 and "multiworker.workers: 0 turns the multi-worker job off" in proc.stderr
