"""The one training path, shared by the `train` stage and the multi-worker worker.

`train_variant(params, variant, strategy, ...)` builds the data, the model and
the optimizer under the given strategy, runs the variant's loop (training/loops.py) and
returns the result record; the strategy (default, MirroredStrategy,
MultiWorkerMirroredStrategy) is the only thing the callers choose.  `prepare`
holds every check that can run before TensorFlow loads.  The result carries
what produced it: devices and their kind, versions, params, data source, git
commit, host.
"""


from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from flowerbench.core import paths, provenance
from flowerbench.core.config import Params, ParamsError, Variant, resolved_dict
from flowerbench.core.io import OutputError, check_writable, read_json
from flowerbench.core.log import get_logger
from flowerbench.core.results import Result, make as make_result

@dataclass(frozen=True)
class Batches:
    batch_size_per_replica: int
    global_batch_size: int


def batch_sizes(params: Params, replicas: int) -> Batches:
    """weak scaling (the blog): the batch per replica is fixed, the global batch grows.
    strong scaling: the global batch is fixed at train.batch_size_per_replica (the
    single-replica batch) and split across replicas."""
    b = params.train.batch_size_per_replica
    if params.train.scaling == "weak":
        return Batches(b, b * replicas)
    if b % replicas:
        raise ParamsError(f"train.batch_size_per_replica: strong scaling splits the global batch {b} "
                          f"across {replicas} replicas, so it must be divisible by {replicas}")
    return Batches(b // replicas, b)


def check_known_failures(params: Params, variant: Variant) -> None:
    """Refuse, before any work, combinations that Keras 3.15 / TF 2.21 cannot run (measured here)."""
    if variant.replicas > 1 and variant.loop == "fit" and params.train.steps_per_execution > 1:
        raise ParamsError(f"train.steps_per_execution: {params.train.steps_per_execution} with fit() on "
                          f"{variant.replicas} replicas fails in Keras 3 (\"You must feed a value for placeholder "
                          f"tensor\", keras-team/keras#19246); use 1, or the custom loop (one tf.function per epoch)")
    if variant.replicas > 1 and params.train.jit_compile and params.train.device != "gpu":
        raise ParamsError(f"train.jit_compile: XLA cannot use mirrored variables on {variant.replicas} emulated "
                          f"devices (\"Trying to access resource ... located in device CPU:1 from device CPU:0\"); "
                          f"use jit_compile on one replica or on real GPUs (train.device=gpu)")


def log(variant: str, msg: str) -> None:
    get_logger(f"train {variant}").info(msg)


def keras_verbose(mode: str) -> int:
    if mode == "progress":  # Keras bar; `auto` prints our one line per epoch instead
        return 1
    return 0


def epoch_printer(variant: str, mode: str):
    if mode == "quiet":
        return None

    def hook(phase, i, total, seconds, loss, acc):
        log(variant, f"{phase} epoch {i}/{total}: {seconds:.2f}s loss {loss:.4f} accuracy {acc:.3f}")
    return hook


class DataError(RuntimeError):
    """The fetched data's manifest is missing or malformed (one line naming it)."""


def data_provenance(path: Path = paths.MANIFEST) -> dict:
    """What the result records about its data, from the manifest `fetch` wrote beside it; a missing,
    corrupt or incomplete manifest is refused (a result must never say its data is unknown)."""
    try:
        m = read_json(path)
    except OutputError:
        raise DataError(f"{path}: not found; run `dvc repro fetch` (make reproduce does) first") from None
    except ValueError as exc:
        raise DataError(f"{exc}; rerun `dvc repro fetch --force`") from None
    fields = {"source": str, "synthetic": bool, "tree_sha256": str}
    bad = [k for k, kind in fields.items() if not isinstance(m, dict) or not isinstance(m.get(k), kind)]
    if bad:
        raise DataError(f"{path}: field {bad[0]} is missing or of the wrong type; rerun `dvc repro fetch --force`")
    return {"data_source": m["source"], "data_label": m.get("label"), "data_synthetic": m["synthetic"],
            "data_tree_sha256": m["tree_sha256"]}


def configure_tensorflow(params: Params):
    """Seeds, determinism and precision; after the device plan, before any model exists."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(params.seed)
    if params.train.deterministic:
        tf.config.experimental.enable_op_determinism()
    if params.train.mixed_precision:
        keras.mixed_precision.set_global_policy("mixed_float16")


def step_stats(res, step_timing: bool) -> dict:
    """Per-step times and the harness ratio (timed seconds / sum of step seconds), when measured.

    None when step_timing is off, or when the loop has no host-side steps
    (custom_graph=epoch: the whole epoch is one graph call)."""
    steps = res.step_seconds
    if not steps:
        why = "step_timing is off" if not step_timing else "no host-side steps (whole epoch in one tf.function)"
        return {"step_timing": step_timing, "step_seconds": None, "harness_ratio": None, "harness_note": why}
    return {"step_timing": True, "step_seconds": steps, "step_seconds_sum": sum(steps),
            "step_seconds_median": statistics.median(steps),
            "harness_ratio": sum(res.epoch_seconds) / sum(steps), "harness_note": None}


def summarise(variant: Variant, params: Params, batches: Batches, images, res, extra: dict) -> Result:
    """The result record shared by `train` and the multi-worker chief; `extra` describes the devices."""
    from flowerbench.data.dataset import steps_per_epoch

    n_images = len(images.files)
    timed = statistics.median(res.repeat_seconds)
    images_timed = sum(res.epoch_images) / len(res.repeat_seconds)
    out = {
        "variant": variant.name, "workers": variant.workers, "loop": variant.loop, "replicas": variant.replicas,
        "batch_size_per_replica": batches.batch_size_per_replica,
        "global_batch_size": batches.global_batch_size, "scaling": params.train.scaling,
        "image_size": params.data.image_size, "pipeline": params.pipeline_of(variant),
        "model": params.model.arch, "optimizer": params.train.optimizer,
        "images_per_epoch": n_images, "steps_per_epoch": steps_per_epoch(n_images, batches.global_batch_size),
        "warmup_epochs": params.train.warmup_epochs, "epochs": params.train.epochs,
        "repeats": params.train.repeats, "warmup_seconds": res.warmup_seconds,
        "epoch_seconds": res.epoch_seconds, "epoch_loss": res.epoch_loss, "epoch_accuracy": res.epoch_accuracy,
        "epoch_images": res.epoch_images, "repeat_seconds": res.repeat_seconds,
        "repeat_wall_seconds": res.repeat_wall_seconds,
        "epoch_cpu_seconds": res.epoch_cpu_seconds, "repeat_cpu_seconds": res.repeat_cpu_seconds,
        "timed_seconds": timed, "images_per_second": images_timed / timed,
        "final_loss": res.final_loss, "final_accuracy": res.final_accuracy,
        "mixed_precision": params.train.mixed_precision, "jit_compile": params.train.jit_compile,
        "steps_per_execution": params.train.steps_per_execution, "custom_graph": params.train.custom_graph,
        "custom_steps_per_call": params.train.custom_steps_per_call if variant.loop == "custom" else None,
        "num_classes": len(images.class_names), "class_names": images.class_names,
        "onednn": os.environ.get("TF_ENABLE_ONEDNN_OPTS"),
        **step_stats(res, params.train.step_timing),
    }
    out.update(extra)
    out.update(data_provenance())
    out.update(params=resolved_dict(params), versions=provenance.versions(), **provenance.git_state(),
               **provenance.host())
    return make_result(out)


def proc_status(field: str) -> Optional[str]:
    """A field of /proc/self/status (Linux), e.g. Cpus_allowed_list: '0-1'."""
    try:
        with open("/proc/self/status", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def clear_output(out_path: Path) -> None:
    check_writable(out_path.parent)          # fail now, not after an hour of training
    out_path.unlink(missing_ok=True)         # a stale result must never pass for this run's


def prepare(params: Params, variant: Variant):
    """What is checked before TensorFlow loads: the variant can run and the data holds at least
    one global batch.  -> (batches, images)"""
    from flowerbench.data.dataset import list_images

    batches = batch_sizes(params, variant.replicas)
    check_known_failures(params, variant)
    data_provenance()                        # the manifest, checked before any work
    images = list_images(paths.FLOWERS, params.seed, params.data.max_images)
    if len(images.files) < batches.global_batch_size:
        # Keras builds a multi-replica fit() from the first global batch; a partial one fails deep in
        # TensorFlow (AddN shape mismatch), and a single-device run would time no full step.
        raise ParamsError(f"train.batch_size_per_replica: one global batch of {variant.name} "
                          f"({batches.batch_size_per_replica} x {variant.replicas} replicas = {batches.global_batch_size}) "
                          f"needs at least {batches.global_batch_size} images, but the data has "
                          f"{len(images.files)} (data.max_images: {params.data.max_images})")
    return batches, images


def train_variant(params: Params, variant: Variant, strategy, batches: Batches, images, devices: dict,
                  shard_policy: Optional[str] = None, on_ready: Optional[Callable] = None,
                  show_epochs: bool = True, gate=None):
    """The one training path: data, model, optimizer and loop under `strategy` -> (result, model).

    Every strategy (default, MirroredStrategy, MultiWorkerMirroredStrategy) goes through here;
    `devices` describes what the strategy runs on and goes into the result.  `on_ready(model)`
    runs once the model's and the optimizer's variables exist on every replica (the multi-worker
    watchdog stands down there).  `gate` (hold.Gate): a held process, released one timed epoch at a
    time by the measuring engine (loops.LoopConfig.gate)."""
    from flowerbench.data.dataset import build_dataset
    from flowerbench.training.devices import cross_device_ops_name, strategy_name
    from flowerbench.training.loops import LoopConfig, build_optimizer_in_scope, run_custom, run_fit
    from flowerbench.training.network import build_network, make_optimizer

    if strategy.num_replicas_in_sync != variant.replicas:
        raise RuntimeError(f"{variant.name}: the strategy has {strategy.num_replicas_in_sync} replicas, "
                           f"the variant {variant.replicas}")
    started = provenance.now()
    configure_tensorflow(params)
    dataset = build_dataset(images, params.data.image_size, batches.global_batch_size, params.seed,
                            pipeline=params.pipeline_of(variant), cache=params.data.cache, shard_policy=shard_policy)
    with strategy.scope():
        model = build_network(params.model.arch, params.data.image_size, len(images.class_names),
                            batchnorm=params.model.batchnorm)
        optimizer = make_optimizer(params.train.optimizer, params.train.learning_rate)
        if params.train.mixed_precision and variant.loop == "custom":
            import keras
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    build_optimizer_in_scope(strategy, model, optimizer)
    if on_ready:
        on_ready(model)
    cfg = LoopConfig(params.train.warmup_epochs, params.train.epochs, params.train.repeats,
                     params.train.jit_compile, params.train.steps_per_execution,
                     keras_verbose(params.train.verbose), params.train.custom_graph, params.train.step_timing,
                     params.train.custom_steps_per_call, gate)
    hook = epoch_printer(variant.name, params.train.verbose) if show_epochs else None
    t0 = time.perf_counter()
    if variant.loop == "fit":
        res = run_fit(strategy, model, optimizer, dataset, len(images.files), cfg, hook)
    else:
        res = run_custom(strategy, model, optimizer, dataset, batches.global_batch_size, cfg, hook)
    import tensorflow as tf

    extra = {**devices, "strategy": strategy_name(strategy), "cross_device_ops": cross_device_ops_name(strategy),
             "stage_seconds": time.perf_counter() - t0, "started_at": started, "finished_at": provenance.now(),
             "parameter_count": int(model.count_params()), "tf_built_with_cuda": tf.test.is_built_with_cuda(),
             # what the process really ran with, read back after training (the budget says what was set)
             "readback": {"cpus_allowed_list": proc_status("Cpus_allowed_list"),
                          "intra_op_threads": tf.config.threading.get_intra_op_parallelism_threads(),
                          "inter_op_threads": tf.config.threading.get_inter_op_parallelism_threads()},
             "optimizer_class": type(getattr(model, "optimizer", None) or optimizer).__name__,  # fit: as compiled
             "dtype_policy": model.dtype_policy.name if hasattr(model, "dtype_policy") else None}
    return summarise(variant, params, batches, images, res, extra), model
