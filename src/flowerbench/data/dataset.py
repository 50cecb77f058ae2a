"""The tf.data input pipeline: images from data/flower_photos, or in-memory tensors.

Files (data.pipeline = files): the sorted file list is shuffled once with the
params seed (the blog's image_dataset_from_directory(seed=123) does the same),
cut to data.max_images, decoded, resized bilinearly to data.image_size,
cached as uint8 after the first pass (4x less memory than float32), reshuffled
every epoch with the seed, batched with the *global* batch size (a distributed
dataset splits each global batch across replicas), and prefetched.

In-memory tensors (data.pipeline = tensors): the same number of images of the same
shape as random in-memory tensors: the input-pipeline ceiling.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from flowerbench.core.paths import IMAGE_SUFFIXES


class DataError(RuntimeError):
    """The image folder is missing or unusable (one line naming it)."""


@dataclass(frozen=True)
class ImageList:
    files: list[str]
    labels: list[int]
    class_names: list[str]


def list_images(root: Path, seed: int, max_images: int | None) -> ImageList:
    """Every image under root/<class>/, in a seeded order, optionally a subset."""
    import numpy as np

    if not root.is_dir():
        raise DataError(f"{root}: image folder not found; run `python -m flowerbench fetch` (or `dvc repro fetch`)")
    class_names = sorted(p.name for p in root.iterdir() if p.is_dir())
    files, labels = [], []
    for label, cls in enumerate(class_names):
        for f in sorted((root / cls).iterdir()):
            if f.is_file() and f.suffix.lower() in IMAGE_SUFFIXES:
                files.append(str(f))
                labels.append(label)
    if len(class_names) < 2 or not files:
        raise DataError(f"{root}: expected >= 2 class folders with images, found {len(class_names)} "
                        f"classes and {len(files)} images")
    order = np.random.default_rng(seed).permutation(len(files))
    if max_images is not None:
        order = order[:max_images]
    return ImageList([files[i] for i in order], [labels[i] for i in order], class_names)


def steps_per_epoch(n_images: int, global_batch_size: int) -> int:
    return math.ceil(n_images / global_batch_size)


def build_dataset(images: ImageList, image_size: int, global_batch_size: int, seed: int,
                  pipeline: str = "files", cache: bool = True, shard_policy: str | None = None):
    """A batched tf.data.Dataset of (float32 image 0..255, int32 label)."""
    import tensorflow as tf

    n = len(images.files)
    labels = tf.constant(images.labels, tf.int32)
    if pipeline == "tensors":
        g = tf.random.Generator.from_seed(seed)
        pixels = tf.cast(g.uniform((n, image_size, image_size, 3), 0, 256, dtype=tf.int32), tf.uint8)
        ds = tf.data.Dataset.from_tensor_slices((pixels, labels))
    else:
        def load(path, label):
            raw = tf.io.read_file(path)
            img = tf.io.decode_image(raw, channels=3, expand_animations=False)
            img = tf.image.resize(img, (image_size, image_size), method="bilinear")
            return tf.saturate_cast(tf.round(img), tf.uint8), label

        ds = tf.data.Dataset.from_tensor_slices((tf.constant(images.files), labels))
        ds = ds.map(load, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        if cache:
            ds = ds.cache()
    ds = ds.shuffle(n, seed=seed, reshuffle_each_iteration=True)
    ds = ds.batch(global_batch_size)
    ds = ds.map(lambda x, y: (tf.cast(x, tf.float32), y), num_parallel_calls=tf.data.AUTOTUNE)
    options = tf.data.Options()
    options.deterministic = True
    # tf.data's autotuning thread wakes on a period that doubles from 10 ms, and freeing an
    # iterator that is not exhausted waits for its next wake-up (docs/performance.md).  AUTOTUNE
    # values then take tf.data's static defaults.
    options.autotune.enabled = False
    quiet_device_iterators()
    if shard_policy is not None:
        options.experimental_distribute.auto_shard_policy = getattr(tf.data.experimental.AutoShardPolicy,
                                                                    shard_policy)
    return ds.with_options(options).prefetch(tf.data.AUTOTUNE)


def quiet_device_iterators() -> bool:
    """Turn tf.data autotuning off on the per-replica datasets a distribution strategy makes too.

    With >= 2 replicas, `strategy.experimental_distribute_dataset` feeds the replicas through a
    MultiDeviceIterator, whose per-device datasets are built inside TensorFlow
    (`multi_device_iterator_ops._create_device_dataset`) without the input's options, so their
    iterators autotune.  Freeing such an iterator waits for its autotune thread's next wake-up,
    whose period doubles while the iterator lives: a whole fit() call returned up to tens of
    seconds after its last epoch (docs/performance.md).  Idempotent; False (and nothing changed)
    where this TensorFlow has no such function."""
    import tensorflow as tf
    from tensorflow.python.data.ops import multi_device_iterator_ops as mdi

    make = getattr(mdi, "_create_device_dataset", None)
    if make is None:
        return False
    if getattr(make, "_flowerbench_quiet", False):
        return True

    def create_device_dataset(*args, **kwargs):
        options = tf.data.Options()
        options.autotune.enabled = False
        return make(*args, **kwargs).with_options(options)

    create_device_dataset._flowerbench_quiet = True
    mdi._create_device_dataset = create_device_dataset
    return True
