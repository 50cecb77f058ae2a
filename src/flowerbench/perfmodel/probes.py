"""The model's terms, each measured in a pinned process (`python -m flowerbench probe KIND`).

The `terms` stage (perfmodel/terms.py) starts these children, pinned to the cores the runs
they explain had, and reads the one JSON line each prints on stdout:

  * replica: one replica's training step (custom loop, in-memory tensors, the run's
    per-replica batch) on its own cores.  The stage starts N of them side by side,
    one per replica's cores.  Each builds and traces its step, says `ready` (on
    stderr) and waits for a command on stdin.  The first gets `solo` while the
    others wait idle: it times its step alone and the input pipeline alone
    (data/dataset.py, the run's image size, cache setting and batch: images/s), and says
    `ready` again.  Then all get `go` and time their steps at once (contention);
  * allreduce: the all-reduce of the model's gradients (one tensor per trainable
    variable, the model's real shapes) across N replicas, through the strategy's
    own cross-device ops, as training builds it (training/devices.py); seconds per call.
    With TF_CONFIG set, the process is one worker of an N-worker job and the
    all-reduce crosses processes (MultiWorkerMirroredStrategy, as the launcher's);
  * mirrored: N replicas' step driven from one process (the custom loop's own
    per-step function on in-memory tensors): what the in-process runs pay beyond
    one replica's step, contention and the all-reduce is the rest of it (dispatch).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

from flowerbench.core.config import Params


def _wait_for(*commands: str) -> str:
    """Say `ready` and wait for one of `commands` on stdin."""
    print("ready", file=sys.stderr, flush=True)
    got = sys.stdin.readline().strip()
    if got not in commands:
        raise RuntimeError(f"probe: expected {' or '.join(commands)} on stdin, got {got or 'end of input'}")
    return got


def _times(fn, count: int) -> list[float]:
    out = []
    for _ in range(count):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _model_and_batch(params: Params, strategy, batch: int):
    """The run's model and optimizer under `strategy` (optimizer built in its scope), seeded as a run
    is, and one in-memory global batch of `batch` random images -> (model, optimizer, x, y)."""
    import tensorflow as tf

    from flowerbench.training.loops import build_optimizer_in_scope
    from flowerbench.training.network import build_network, make_optimizer

    tf.keras.utils.set_random_seed(params.seed)
    with strategy.scope():
        model = build_network(params.model.arch, params.data.image_size, 5, batchnorm=params.model.batchnorm)
        optimizer = make_optimizer(params.train.optimizer, params.train.learning_rate)
    build_optimizer_in_scope(strategy, model, optimizer)
    g = tf.random.Generator.from_seed(params.seed)
    x = g.uniform((batch, params.data.image_size, params.data.image_size, 3), 0, 255)
    y = g.uniform((batch,), 0, 5, dtype=tf.int32)
    return model, optimizer, x, y


def _allreduce_timer(strategy, variables, replicas: int):
    """A warmed-up, checked callable that all-reduces every replica's copy of `variables` (the model's
    gradients' shapes) once, through the strategy's own cross-device ops."""
    import tensorflow as tf

    @tf.function
    def reduce_all():
        def on_replica():
            grads = [tf.identity(v) for v in variables]
            summed = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, grads)
            # one scalar that needs every reduced tensor (none can be pruned), read once per call
            return tf.add_n([tf.reshape(g, [-1])[0] for g in summed])
        return strategy.run(on_replica)

    def once():
        return float(strategy.experimental_local_results(reduce_all())[0].numpy())

    firsts = [float(tf.reshape(v, [-1])[0]) for v in variables]
    got, expected = once(), replicas * sum(firsts)
    if abs(got - expected) > 1e-4 * max(1.0, replicas * sum(abs(x) for x in firsts)):
        raise RuntimeError(f"probe allreduce: the sum over {replicas} replicas is {got}, expected {expected}")
    once()
    return once


def _allreduce_record(strategy, variables, replicas: int, seconds: list[float]) -> dict:
    import tensorflow as tf

    from flowerbench.training.devices import cross_device_ops_name

    return {"seconds": seconds, "replicas": replicas, "tensors": len(variables),
            "parameters": int(sum(int(tf.size(v)) for v in variables)),
            "cross_device_ops": cross_device_ops_name(strategy), "strategy": type(strategy).__name__}


def allreduce(params: Params, strategy, replicas: int, count: int) -> dict:
    """Seconds per all-reduce of the model's gradient shapes across `replicas` replicas."""
    from flowerbench.training.network import build_network

    with strategy.scope():
        model = build_network(params.model.arch, params.data.image_size, 5, batchnorm=params.model.batchnorm)
    once = _allreduce_timer(strategy, model.trainable_variables, replicas)
    _wait_for("go")
    return _allreduce_record(strategy, model.trainable_variables, replicas, _times(once, count))


def input_epochs(params: Params, batch: int, epochs: int) -> dict:
    """Seconds per epoch of the input pipeline alone (after one epoch that fills the cache, if any)."""
    from flowerbench.core import paths
    from flowerbench.data.dataset import build_dataset, list_images

    images = list_images(paths.FLOWERS, params.seed, params.data.max_images)
    ds = build_dataset(images, params.data.image_size, batch, params.seed, cache=params.data.cache)

    def epoch():
        for x, _ in ds:
            pass
        x.numpy()

    epoch()
    return {"seconds": _times(epoch, epochs), "images": len(images.files), "cache": params.data.cache,
            "image_size": params.data.image_size}


def replica(params: Params, strategy, batch: int, count: int, input_epochs_: int) -> dict:
    """One replica's step (custom loop, in-memory tensors, batch `batch`): alone when told `solo`
    (with the input pipeline alone before it), then side by side with the others on `go`."""
    import tensorflow as tf

    from flowerbench.training.loops import make_train_step

    model, optimizer, x, y = _model_and_batch(params, strategy, batch)
    fn = tf.function(make_train_step(model, optimizer, batch))

    def once():
        fn(x, y)[0].numpy()

    once()
    once()
    out = {"batch": batch}
    if _wait_for("solo", "go") == "solo":   # (the step first, straight after its warm-up)
        out["alone_seconds"] = _times(once, count)
        out["input"] = input_epochs(params, batch, input_epochs_)
        _wait_for("go")
    out["seconds"] = _times(once, count)
    return out


def mirrored(params: Params, strategy, replicas: int, batch: int, count: int) -> dict:
    """N replicas in this one process (MirroredStrategy planned as `train` plans it): first the
    all-reduce of the model's gradient shapes alone, then the whole step through the custom loop's
    own per-step function (loops.make_epoch_fn, graph="step": strategy.run, the all-reduce, the
    reductions) on in-memory tensors.  One strategy for both: two in a process clash."""
    import tensorflow as tf

    from flowerbench.training.loops import make_epoch_fn, make_train_step

    global_batch = batch * replicas
    model, optimizer, x, y = _model_and_batch(params, strategy, global_batch)
    reduce_once = _allreduce_timer(strategy, model.trainable_variables, replicas)
    epoch = make_epoch_fn(strategy, make_train_step(model, optimizer, global_batch), "step")
    one = next(iter(strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensors((x, y)))))
    epoch([one, one])                        # trace and warm up
    _wait_for("go")
    reduced = _allreduce_record(strategy, model.trainable_variables, replicas, _times(reduce_once, count))
    seconds: list[float] = []
    epoch([one] * count, step_times=seconds)  # each step synced and timed by the loop itself
    return {"seconds": seconds, "replicas": replicas, "batch": batch, "allreduce": reduced}


def main(params: Params, kind: str, cores: list[int], replicas: int, count: int, batch: int,
         input_epochs_: int) -> int:
    """The probe's process, started on `cores` as the runs the terms explain start (runtime.start):
    one replica on its cores (replica); N replicas planned as `train` plans them (mirrored, allreduce);
    or, with TF_CONFIG set, one worker of an N-worker job (allreduce across processes, as the
    launcher's).  One JSON line out."""
    from flowerbench.training import runtime
    from flowerbench.core.host import affinity

    cluster = None
    if os.environ.get("TF_CONFIG"):
        from flowerbench.training.multiworker import read_tf_config

        cluster = read_tf_config()
    rt = runtime.start(params.train, replicas if kind != "replica" else 1, core_ids=cores, cluster=cluster,
                       speed_index=False)
    if kind == "allreduce":
        out = allreduce(params, rt.strategy, replicas, count)
    elif kind == "mirrored":
        out = mirrored(params, rt.strategy, replicas, batch, count)
    else:
        out = replica(params, rt.strategy, batch, count, input_epochs_)
    out.update(kind=kind, cores=affinity(), median_seconds=statistics.median(out["seconds"]))
    print(json.dumps(out), flush=True)
    return 0
