"""This host's own arithmetic ceiling, measured the way training runs (oneDNN on, on the cores and
threads it is given: `make bench` pins it to the budget of the runs it is compared with):
float32 matmul and 3x3 convolution GFLOP/s, printed as one JSON line.

    .venv/bin/python benchmarks/ceiling.py [--seconds 3]

`make bench` sets single-replica ResNet50 images/s beside the ceiling they imply:
ResNet50 training costs about 3x its forward pass, 3 x 4.1 GMAC x 2 = 24.6 GFLOP per 224 px image,
scaled by pixel area at other sizes (`images_per_second_ceiling`).
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")  # as training runs (runtime.tensorflow_env)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

RESNET50_TRAIN_GFLOP_224 = 24.6


def images_per_second_ceiling(gflops: float, image_size: int) -> float:
    """Images/s a host of `gflops` could train ResNet50 at `image_size` px if every FLOP were useful."""
    return gflops / (RESNET50_TRAIN_GFLOP_224 * (image_size / 224) ** 2)


def _rate(fn, flop: float, seconds: float) -> float:
    fn().numpy()  # trace and warm up
    n, t0 = 0, time.perf_counter()
    while True:
        out = fn()
        n += 1
        if time.perf_counter() - t0 >= seconds:
            out.numpy()  # the last call has finished before the clock is read
            return flop * n / (time.perf_counter() - t0) / 1e9


def measure(seconds: float, matmul_n: int = 2048, conv_shape=(32, 56, 56, 64)) -> dict:
    import tensorflow as tf

    a = tf.random.uniform((matmul_n, matmul_n))
    b = tf.random.uniform((matmul_n, matmul_n))
    x = tf.random.uniform(conv_shape)
    c = conv_shape[-1]
    w = tf.random.uniform((3, 3, c, c))
    matmul = tf.function(lambda: tf.linalg.matmul(a, b))
    conv = tf.function(lambda: tf.nn.conv2d(x, w, strides=1, padding="SAME"))
    n, h, wd, _ = conv_shape
    return {"matmul_gflops": _rate(matmul, 2.0 * matmul_n ** 3, seconds),
            "conv3x3_gflops": _rate(conv, 2.0 * n * h * wd * c * c * 9, seconds),
            "matmul_n": matmul_n, "conv_shape": list(conv_shape), "seconds_each": seconds,
            "onednn": os.environ.get("TF_ENABLE_ONEDNN_OPTS"), "tensorflow": tf.__version__,
            # what it ran on: the mask it was given and the thread pools TensorFlow was told to use
            "cpus_allowed": sorted(os.sched_getaffinity(0)),
            "thread_env": {k: os.environ.get(k) for k in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")}}


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=3.0, help="per kernel")
    ap.add_argument("--small", action="store_true", help="small shapes (tests)")
    args = ap.parse_args()
    kw = {"matmul_n": 256, "conv_shape": (2, 16, 16, 16)} if args.small else {}
    print(json.dumps(measure(args.seconds, **kw)), flush=True)
