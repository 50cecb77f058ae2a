"""The blog's code, ported to today's Keras and nothing more: the peer `make bench` measures us against.

    python benchmarks/blog_port.py --data DIR --loop fit|custom --replicas N --image-size 32 \
        --batch-size 32 --epochs 2

Written from the seed post.  Changes, each one required by Keras 3 / this host:
  * `Lambda(preprocess_input, input_shape=...)` -> `Input(shape)` then `Lambda(preprocess_input)`
    (a Lambda needs an Input first in Keras 3);
  * `Reduction.NONE` -> `reduction=None`, `reset_states()` -> `reset_state()`;
  * `optimizer.build(model.trainable_variables)` inside `strategy.scope()` before the custom loop
    (keras-team/keras#23085: Adam under >= 2 replicas fails without it);
  * image size, batch size, epochs and the data folder come from the command line, and on a host
    without GPUs the replicas are logical CPU devices (the blog used 4 V100s);
  * the timed seconds and the epoch losses (warm-up first; read from `history` and from the returned
    loss tensors after the clock stops) are printed as one JSON line so the benchmark can read them;
  * `fit(..., verbose=0)`: our runs print no progress bar either, and one written to a pipe only
    slows the blog's side;
  * `--quiet-autotune` (a diagnostic, off by default and never the blog's code): tf.data autotuning
    off on its dataset and on the per-replica datasets a strategy makes (flowerbench's
    dataset.quiet_device_iterators), so that freeing an epoch's iterator does not wait for the
    autotune thread's next wake-up (docs/performance.md, "Multi-replica whole-call wait");
  * `--model tiny` (tests only, never the bench): a two-layer conv net in place of ResNet50, so the
    fast tests can check in seconds that the port still runs both loops and learns.
Everything else is the post's: image_dataset_from_directory(seed=123) with no cache and no
prefetch, ResNet50(weights=None), Adam, one warm-up epoch, time.time() around the timed epochs.
"""

import argparse
import json
import os
import time

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")  # the same kernels our pipeline uses
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
parser.add_argument("--data", required=True)
parser.add_argument("--loop", choices=["fit", "custom"], required=True)
parser.add_argument("--replicas", type=int, default=1)
parser.add_argument("--image-size", type=int, default=224)
parser.add_argument("--batch-size", type=int, default=64)
parser.add_argument("--epochs", type=int, default=10)
parser.add_argument("--model", choices=["resnet50", "tiny"], default="resnet50", help="tiny: fast tests only")
parser.add_argument("--quiet-autotune", action="store_true",
                    help="diagnostic, not the blog's code: tf.data autotuning off (no wait when an iterator is freed)")
args = parser.parse_args()

import tensorflow as tf  # noqa: E402

if args.replicas > 1 and len(tf.config.list_physical_devices("GPU")) < args.replicas:
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * args.replicas)

data_dir = args.data
batch_size = args.batch_size
img_height = img_width = args.image_size
EPOCHS_TO_TRAIN = args.epochs
num_gpus = args.replicas
global_batch_size = batch_size * num_gpus

train_ds = tf.keras.utils.image_dataset_from_directory(
    data_dir, seed=123, image_size=(img_height, img_width), batch_size=global_batch_size)
num_classes = len(train_ds.class_names)
if args.quiet_autotune:
    from flowerbench.data.dataset import quiet_device_iterators

    quiet_options = tf.data.Options()
    quiet_options.autotune.enabled = False
    train_ds = train_ds.with_options(quiet_options)
    quiet_device_iterators()


def get_model():
    if args.model == "tiny":
        return tf.keras.Sequential([
            tf.keras.Input(shape=(img_height, img_width, 3)),
            tf.keras.layers.Rescaling(1.0 / 255),
            tf.keras.layers.Conv2D(8, 3, strides=2, activation="relu"),
            tf.keras.layers.Flatten(),  # (not pooled: it fits 30 images within a few epochs)
            tf.keras.layers.Dense(num_classes),
        ])
    resnet = tf.keras.applications.resnet.ResNet50(
        weights=None, include_top=True, classes=num_classes, classifier_activation=None,
        input_shape=(img_height, img_width, 3))
    return tf.keras.Sequential([
        tf.keras.Input(shape=(img_height, img_width, 3)),
        tf.keras.layers.Lambda(tf.keras.applications.resnet50.preprocess_input),
        resnet,
    ])


def get_compiled_model():
    model = get_model()
    model.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


if num_gpus > 1:
    strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(num_gpus)]
                                              if not tf.config.list_physical_devices("GPU") else None)
else:
    strategy = tf.distribute.get_strategy()

if args.loop == "fit":
    with strategy.scope():
        model = get_compiled_model()
    # Run single epoch of training to avoid cold start affecting time
    warmup = model.fit(train_ds, epochs=1, verbose=0)
    start_time = time.time()
    history = model.fit(train_ds, epochs=EPOCHS_TO_TRAIN, verbose=0)
    seconds = time.time() - start_time
    epoch_loss = [float(x) for x in warmup.history["loss"] + history.history["loss"]]
else:
    with strategy.scope():
        model = get_model()
        optimizer = tf.keras.optimizers.Adam()
        optimizer.build(model.trainable_variables)
        train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")
        loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)

        def loss_fn(labels, predictions):
            per_example_loss = loss_object(labels, predictions)
            return tf.nn.compute_average_loss(per_example_loss, global_batch_size=global_batch_size)

    def train_step(train_x, train_y):
        with tf.GradientTape() as tape:
            y_pred = model(train_x, training=True)
            loss = loss_fn(train_y, y_pred)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        train_accuracy.update_state(train_y, y_pred)
        return loss

    @tf.function
    def distributed_training_epoch(dataset):
        total_loss = 0.0
        num_batches = 0.0
        for train_x, train_y in dataset:
            per_replica_losses = strategy.run(train_step, args=(train_x, train_y))
            total_loss += strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)
            num_batches += 1
        epoch_loss = total_loss / num_batches
        print(f"Epoch loss: {epoch_loss}")
        return epoch_loss

    train_dataset_distributed = strategy.experimental_distribute_dataset(train_ds)
    # Run single epoch of training to avoid cold start affecting time
    train_loss = distributed_training_epoch(train_dataset_distributed)
    train_accuracy.reset_state()
    losses = [train_loss]
    start_time = time.time()
    for epoch in range(EPOCHS_TO_TRAIN):
        train_loss = distributed_training_epoch(train_dataset_distributed)
        train_accuracy.reset_state()
        losses.append(train_loss)
    seconds = time.time() - start_time
    epoch_loss = [float(x) for x in losses]

line = {"timed_seconds": seconds, "final_loss": epoch_loss[-1], "epoch_loss": epoch_loss, "loop": args.loop,
        "replicas": num_gpus, "quiet_autotune": args.quiet_autotune,
        "autotune_enabled": train_ds.options().autotune.enabled is not False}
print(json.dumps(line), flush=True)
