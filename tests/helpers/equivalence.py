"""Run in a subprocess (devices are configured once per process): one SGD step of the
distributed code vs the single-device code, printed as JSON.

    python tests/helpers/equivalence.py N[,N] DIR   (N = 1, 2 or 4 replicas -> DIR/r<N>.npz)

Each case starts from the same initial weights and the same global batch of 16
images; N replicas get b' = global / N each.  Uses the project's own model and
loop code (flowerbench.training.network, flowerbench.training.loops) on logical CPU devices.
"""

from __future__ import annotations

import functools
import json
import os
import sys

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 4)

import keras  # noqa: E402

from flowerbench.training.loops import build_optimizer_in_scope, make_epoch_fn, make_train_step  # noqa: E402
from flowerbench.training.network import build_network  # noqa: E402

GLOBAL = 16
rng = np.random.default_rng(0)
X = rng.uniform(0, 255, (GLOBAL, 32, 32, 3)).astype("float32")
Y = rng.integers(0, 5, GLOBAL).astype("int32")
STEPS = 4  # the k-steps cases: an epoch of 4 global batches
X4 = rng.uniform(0, 255, (STEPS * GLOBAL, 32, 32, 3)).astype("float32")
Y4 = rng.integers(0, 5, STEPS * GLOBAL).astype("int32")


@functools.lru_cache(maxsize=None)
def strategy(n: int):
    """One strategy per process: two MirroredStrategy objects reuse collective keys and clash."""
    if n == 1:
        return tf.distribute.get_strategy()
    return tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(n)])


def initial(batchnorm: str):
    keras.utils.set_random_seed(1)
    return build_network("tiny", 32, 5, batchnorm).get_weights()


def one_step(n: int, loop: str, batchnorm: str, scale_batch: int | None = None,
             graph: str = "epoch") -> list[np.ndarray]:
    s = strategy(n)
    with s.scope():
        model = build_network("tiny", 32, 5, batchnorm)
        opt = keras.optimizers.SGD(learning_rate=0.5)
    model.set_weights(initial(batchnorm))
    ds = tf.data.Dataset.from_tensor_slices((X, Y)).batch(GLOBAL)
    if loop == "fit":
        model.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(ds, epochs=1, verbose=0, shuffle=False)
    else:
        build_optimizer_in_scope(s, model, opt)
        # the misscaled case divides by the per-replica batch where the global one belongs
        step = make_train_step(model, opt, scale_batch or GLOBAL)
        make_epoch_fn(s, step, graph)(s.experimental_distribute_dataset(ds))
    return [w.numpy() for w in model.trainable_weights]


def one_epoch_k(n: int, k: int) -> list[np.ndarray]:
    """One epoch of STEPS SGD steps through the custom loop's step graph, k steps per graph call
    (k = 3: a call of 3, then the remainder's call of 1)."""
    s = strategy(n)
    with s.scope():
        model = build_network("tiny", 32, 5, "none")
        opt = keras.optimizers.SGD(learning_rate=0.5)
    model.set_weights(initial("none"))
    build_optimizer_in_scope(s, model, opt)
    ds = tf.data.Dataset.from_tensor_slices((X4, Y4)).batch(GLOBAL)
    make_epoch_fn(s, make_train_step(model, opt, GLOBAL), "step", steps_per_call=k)(
        s.experimental_distribute_dataset(ds))
    return [w.numpy() for w in model.trainable_weights]


CASES = {  # name -> (loop, batchnorm, divisor of the loss; None = the global batch)
    "custom": ("custom", "none", None), "fit": ("fit", "none", None), "custom_step": ("custom_step", "none", None),
    "custom_misscaled": ("custom", "none", "per_replica"),
    "bn_local": ("custom", "local", None), "bn_sync": ("custom", "sync", None),
    "fit_bn_sync": ("fit", "sync", None),
}

if __name__ == "__main__":
    # At most one multi-replica count per process: collective groups of different sizes cannot share
    # a process (the single replica, default strategy, has none and shares one).
    counts, out_dir = [int(n) for n in sys.argv[1].split(",")], sys.argv[2]
    if len([n for n in counts if n > 1]) > 1:
        sys.exit("equivalence.py: one multi-replica count per process")
    for n in counts:
        arrays = {}
        for name, (loop, bn, div) in CASES.items():
            w = one_step(n, loop.split("_")[0], bn, scale_batch=GLOBAL // n if div else None,
                         graph="step" if loop.endswith("_step") else "epoch")
            arrays[name] = np.concatenate([x.ravel() for x in w])
        for k in (1, 3, STEPS):
            arrays[f"epoch_k{k}"] = np.concatenate([x.ravel() for x in one_epoch_k(n, k)])
        init = initial("none")
        arrays["init_trainable"] = np.concatenate([x.ravel() for x in init])
        np.savez(f"{out_dir}/r{n}.npz", **arrays)
        json.dump({k: v.shape[0] for k, v in arrays.items()}, sys.stdout)
