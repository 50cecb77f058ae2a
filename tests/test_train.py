"""Train stage end to end on tiny data: every variant kind, the knobs, and what the result records."""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import cli_env, run_cli, tiny_params, write_params

FIELDS = ("variant", "loop", "replicas", "device_kind", "devices", "gpu_model", "batch_size_per_replica",
          "global_batch_size", "image_size", "images_per_epoch", "steps_per_epoch", "warmup_epochs", "epochs",
          "warmup_seconds", "epoch_seconds", "timed_seconds", "images_per_second", "final_loss", "final_accuracy",
          "data_source", "params", "versions", "git_commit", "hostname", "cpu_count", "cpu_model", "started_at",
          "thread_policy", "intra_op_threads", "inter_op_threads", "cross_device_ops")


def _train(workdir, variant: str, env: dict | None = None, **overrides) -> tuple[dict, str]:
    """(the result, the stage's stderr)"""
    if overrides:
        write_params(workdir / "params.yaml", tiny_params(**overrides))
    proc = run_cli("train", "--variant", variant, cwd=workdir, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((workdir / "results" / f"{variant}.json").read_text()), proc.stderr


@pytest.mark.parametrize("variant,loop,replicas", [("single_fit", "fit", 1), ("mirrored_fit", "fit", 2),
                                                   ("mirrored_custom", "custom", 2)])
def test_blog_variants_record_what_produced_them(workdir, variant, loop, replicas):
    """(single_custom: in test_same_seed_same_training, which runs it twice.)"""
    r, stderr = _train(workdir, variant, env=as_a_user(), **{"train.epochs": 2})
    assert_blog_variant(r, stderr, variant, loop, replicas)


def as_a_user() -> dict:
    """The environment a user runs with, without TF_CPP_MIN_LOG_LEVEL: TensorFlow's C++ start-up
    lines (pre-absl INFO lines, cuInit at ERROR level without a GPU driver) are filtered out, and the
    stage says once, in its own format, what it found.  Every stderr line is a flowerbench line."""
    return cli_env(drop=("TF_CPP_MIN_LOG_LEVEL",))


def assert_blog_variant(r: dict, stderr: str, variant: str, loop: str, replicas: int) -> None:
    """What a 2-epoch run of one of the blog's four variants records, and how it speaks."""
    lines = [l for l in stderr.splitlines() if l.strip()]
    assert [l for l in lines if not l.startswith("[")] == []
    found = [l for l in lines if l.startswith("[tensorflow] TensorFlow ")]
    assert len(found) == 1 and ("no GPU found, CPU only" in found[0] or "GPU(s)" in found[0])
    assert any(l.startswith(f"[train {variant}] timed ") for l in lines)
    missing = [f for f in FIELDS if f not in r]
    assert not missing
    assert (r["variant"], r["loop"], r["replicas"]) == (variant, loop, replicas)
    assert r["device_kind"] == ("cpu" if replicas == 1 else "logical_cpu")
    assert r["devices"] == [f"/cpu:{i}" for i in range(replicas)] and r["gpu_model"] is None
    assert r["global_batch_size"] == 4 * replicas and r["batch_size_per_replica"] == 4
    # 30 images: the last partial batch is counted too.
    assert r["images_per_epoch"] == 30 and r["epoch_images"] == [30, 30]
    assert r["steps_per_epoch"] == -(-30 // (4 * replicas))
    assert len(r["epoch_seconds"]) == 2 and r["timed_seconds"] == pytest.approx(sum(r["epoch_seconds"]))
    assert r["images_per_second"] == pytest.approx(60 / r["timed_seconds"])
    assert r["warmup_seconds"] > 0
    assert 0 < r["final_loss"] < 10 and 0 <= r["final_accuracy"] <= 1
    assert r["data_source"] == "synthetic" and r["data_synthetic"] is True
    assert r["params"]["train"]["epochs"] == 2 and r["versions"]["tensorflow"] == "2.21.0"
    # step timing is off by default (it adds a host sync per step)
    assert r["step_timing"] is False and r["step_seconds"] is None and r["harness_ratio"] is None
    assert r["harness_note"] == "step_timing is off"
    # The core budget, read back inside the child after training: its affinity mask (from
    # /proc/self/status) is one core per replica, and TensorFlow's pools are 1 intra-op thread (one
    # replica's share) and one inter-op thread per replica.
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) >= replicas:
        assert r["budget_kind"] == "core_matched" and r["budget_affinity"] == cores[:replicas]
        assert r["budget_cores"] == replicas and r["cores_per_replica"] == 1 and r["usable_cores"] == len(cores)
        assert cpu_list(r["readback"]["cpus_allowed_list"]) == cores[:replicas]
        assert (r["readback"]["intra_op_threads"], r["readback"]["inter_op_threads"]) == (1, replicas)
        assert (r["intra_op_threads"], r["inter_op_threads"]) == (1, replicas)
        assert r["host"]["usable_cores"] == len(cores)  # the host, not the process's pinned share
    if replicas > 1:
        assert r["thread_policy"] == "per_replica"
        assert r["strategy"] == "MirroredStrategy" and r["cross_device_ops"] == "CollectiveAllReduce"


def cpu_list(text: str) -> list[int]:
    """/proc's Cpus_allowed_list ('0-1', '0,2-3') as core ids."""
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


def test_one_replica_with_the_mirrored_runs_cores_uses_them_as_threads(workdir):
    """`cores: auto` on one replica: the N x c cores of the `replicas: auto` runs, as intra-op threads."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("one core: no N x c cores to give one replica")
    p = tiny_params(**{"train.step_timing": True, "train.epochs": 2})  # (and step timing: they do not interact)
    p["variants"]["single_fit_threads"] = {"loop": "fit", "replicas": 1, "cores": "auto"}
    write_params(workdir / "params.yaml", p)
    r, _ = _train(workdir, "single_fit_threads")
    n = min(4, len(cores))
    assert r["replicas"] == 1 and r["budget_kind"] == "threads" and r["budget_cores"] == n
    assert cpu_list(r["readback"]["cpus_allowed_list"]) == cores[:n]
    assert (r["readback"]["intra_op_threads"], r["readback"]["inter_op_threads"]) == (n, 1)
    assert_step_timing(r)


@pytest.mark.slow
def test_same_seed_same_training(workdir):
    """The blog's single_custom, twice with op determinism on: the first run records what produced
    it (as the other blog variants), and the two give the same losses."""
    a, stderr = _train(workdir, "single_custom", env=as_a_user(), **{"train.deterministic": True, "train.epochs": 2})
    assert_blog_variant(a, stderr, "single_custom", "custom", 1)
    b, _ = _train(workdir, "single_custom")
    assert a["epoch_loss"] == b["epoch_loss"] and a["final_accuracy"] == b["final_accuracy"]


def test_repeats_strong_scaling_mixed_precision_and_k_steps_per_call_in_the_custom_loop(workdir):
    r, _ = _train(workdir, "mirrored_custom", **{"train.scaling": "strong", "train.batch_size_per_replica": 8,
                                                 "train.repeats": 3, "train.epochs": 1,
                                                 "train.mixed_precision": True, "train.custom_steps_per_call": 3})
    assert r["global_batch_size"] == 8 and r["batch_size_per_replica"] == 4 and r["scaling"] == "strong"
    # 30 images in 4 global batches, 3 per graph call and the remainder's 1: every image, every epoch
    assert r["custom_steps_per_call"] == 3 and r["steps_per_epoch"] == 4 and r["epoch_images"] == [30] * 3
    assert len(r["repeat_seconds"]) == 3 and len(r["epoch_seconds"]) == 3
    assert r["timed_seconds"] == pytest.approx(sorted(r["repeat_seconds"])[1])  # the median repeat
    # The whole-call window (the blog's time.time()) holds each repeat's epochs, a little more.
    assert len(r["repeat_wall_seconds"]) == 3
    assert all(w >= s for w, s in zip(r["repeat_wall_seconds"], r["repeat_seconds"]))
    # The process's CPU clock over the same windows: an epoch's CPU time is positive, at most its wall
    # time x the cores the process may use (2 replicas here, one core each), and a repeat's holds its epochs.
    assert len(r["epoch_cpu_seconds"]) == 3 and len(r["repeat_cpu_seconds"]) == 3
    cores = len(r["budget_affinity"]) or os.cpu_count()
    assert all(0 < c <= w * cores * 1.05 + 0.05 for c, w in zip(r["epoch_cpu_seconds"], r["epoch_seconds"]))
    assert all(rc >= c for rc, c in zip(r["repeat_cpu_seconds"], r["epoch_cpu_seconds"]))
    # the speed index, measured on the pinned cores before TensorFlow started (provenance, not host.json)
    assert r["speed_index"]["gflops"] > 0 and r["speed_index"]["low"] <= r["speed_index"]["gflops"]
    assert "speed_index" not in r["host"] and r["host"]["host_schema"] == 2
    # What ran: float16 compute with Keras' loss-scale optimizer wrapping Adam (without it float16
    # gradients underflow); the loss is a real number of the right size (5 classes: ln 5 = 1.61 at chance).
    assert r["mixed_precision"] is True and r["dtype_policy"] == "mixed_float16"
    assert r["optimizer_class"] == "LossScaleOptimizer"
    assert all(0.0 < loss < 20.0 for loss in r["epoch_loss"]), r["epoch_loss"]


MIRRORED_FIT_KNOBS = {"data.pipeline": "tensors", "train.thread_policy": "tf_default", "train.mixed_precision": True}


@pytest.mark.slow   # about 23 s: an XLA-compiled run (XLA on CPU compiles slowly)
def test_knobs_run_on_cpu_at_tiny_size(workdir):
    # XLA and steps_per_execution run on one replica; on emulated replicas they are refused (below).
    # Knobs that do not interact share a run: the in-memory pipeline, TensorFlow's own thread pools
    # and mixed precision share mirrored_fit's step-timing run (test_step_timing_and_harness_ratio),
    # where train.custom_graph's two values run too.
    knobs = {"train.jit_compile": True, "train.steps_per_execution": 3}
    r, _ = _train(workdir, "single_fit", **knobs)
    assert_knobs(r, knobs)


def assert_knobs(r: dict, knobs: dict) -> None:
    for key, value in knobs.items():
        section, leaf = key.split(".")
        assert r["params"][section][leaf] == value, key
    assert r["images_per_epoch"] == 30 and r["timed_seconds"] > 0
    if "data.pipeline" in knobs:
        assert r["pipeline"] == "tensors"
    if "train.thread_policy" in knobs:
        assert r["intra_op_threads"] == 0 and r["inter_op_threads"] == 0
    if "train.jit_compile" in knobs:
        assert (r["jit_compile"], r["steps_per_execution"]) == (True, 3)
    if "train.mixed_precision" in knobs:
        assert r["dtype_policy"] == "mixed_float16"


@pytest.mark.parametrize("knob,variant,needle", [
    ({"train.steps_per_execution": 3}, "mirrored_fit", "keras-team/keras#19246"),
    ({"train.jit_compile": True}, "mirrored_custom", "XLA cannot use mirrored variables on 2 emulated devices")])
def test_known_keras_failures_are_refused_up_front(workdir, knob, variant, needle):
    write_params(workdir / "params.yaml", tiny_params(**knob))
    proc = run_cli("train", "--variant", variant, cwd=workdir, timeout=30)
    assert proc.returncode == 2 and needle in proc.stderr
    assert not (workdir / "results" / f"{variant}.json").exists()


def test_multiworker_variant_is_refused_by_train(workdir):
    proc = run_cli("train", "--variant", "multiworker_custom", cwd=workdir, timeout=30)
    assert proc.returncode == 2 and "runs under `python -m flowerbench launch`" in proc.stderr


@pytest.mark.slow
def test_resnet50_trains_end_to_end(workdir):
    """The default architecture, at the smallest size it accepts."""
    r, _ = _train(workdir, "mirrored_custom", **{"model.arch": "resnet50", "data.max_images": 16})
    assert r["model"] == "resnet50" and r["parameter_count"] > 23_000_000


@pytest.mark.parametrize("variant,graph,knobs", [("mirrored_fit", "epoch", MIRRORED_FIT_KNOBS),
                                                 ("mirrored_custom", "step", {}),
                                                 pytest.param("mirrored_custom", "epoch", {}, marks=pytest.mark.slow)])
def test_step_timing_and_harness_ratio(workdir, variant, graph, knobs):
    """Every timed step is timed once; the epochs hold all 30 images though one iterator serves them
    all.  (The fit loop on one replica: test_one_replica_with_the_mirrored_runs_cores_uses_them_as_threads.)"""
    r, _ = _train(workdir, variant, **{"train.step_timing": True, "train.custom_graph": graph, "train.epochs": 2,
                                       **knobs})
    assert r["custom_graph"] == r["params"]["train"]["custom_graph"] == graph
    assert_knobs(r, knobs)
    if variant == "mirrored_custom" and graph == "epoch":  # the blog's loop has no host-side steps
        assert r["epoch_images"] == [30, 30] and r["step_timing"] is True and r["timed_seconds"] > 0
        assert r["step_seconds"] is None and r["harness_ratio"] is None
        assert "one tf.function" in r["harness_note"]
        return
    assert_step_timing(r)


def assert_step_timing(r: dict) -> None:
    steps = r["steps_per_epoch"]
    assert r["epoch_images"] == [30, 30] and r["step_timing"] is True and r["timed_seconds"] > 0
    assert len(r["step_seconds"]) == 2 * steps and all(s > 0 for s in r["step_seconds"])
    assert r["step_seconds_sum"] == pytest.approx(sum(r["step_seconds"]))
    assert r["step_seconds_sum"] <= r["timed_seconds"]  # the steps lie inside the timed epochs
    assert r["harness_ratio"] == pytest.approx(r["timed_seconds"] / r["step_seconds_sum"])


def test_input_pipeline_has_autotune_off_and_serves_each_image_once_per_epoch(workdir):
    """Autotune off (freeing a live iterator waited for its thread; docs/performance.md); the
    epoch still holds every image exactly once, in batches of the global batch size."""
    from flowerbench.core import paths
    from flowerbench.data.dataset import build_dataset, list_images

    images = list_images(workdir / paths.FLOWERS, 123, None)
    ds = build_dataset(images, 32, 8, 123)
    assert ds.options().autotune.enabled is False and ds.options().deterministic is True
    sizes, labels = [], []
    for x, y in ds:
        sizes.append(int(x.shape[0]))
        labels.extend(int(v) for v in y.numpy())
    assert sizes == [8, 8, 8, 6] and sorted(labels) == sorted(images.labels)


def test_per_replica_iterators_have_autotune_off_too():
    """A strategy's MultiDeviceIterator builds one dataset per replica inside TensorFlow, without the
    input's options: they autotuned, and freeing them made a multi-replica fit() call wait up to
    tens of seconds after its last epoch (docs/performance.md).  quiet_device_iterators() turns it
    off there as well; the iterator still serves the data unchanged."""
    import tensorflow as tf
    from tensorflow.python.data.ops import multi_device_iterator_ops as mdi

    from flowerbench.data.dataset import quiet_device_iterators

    ds = tf.data.Dataset.range(8).batch(2)
    assert quiet_device_iterators() is True and quiet_device_iterators() is True  # idempotent
    it = mdi.OwnedMultiDeviceIterator(ds, ["/cpu:0"])
    assert it._device_iterators[0]._dataset.options().autotune.enabled is False
    assert [[int(v) for v in next(it)[0]] for _ in range(4)] == [[0, 1], [2, 3], [4, 5], [6, 7]]
