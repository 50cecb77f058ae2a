"""The two training loops of the blog, under one timing protocol.

Protocol (both loops): `warmup_epochs` untimed epochs first (they pay for
tracing, graph optimisation and the first pass through the input pipeline,
which also fills the cache), then `repeats` timed runs of `epochs` epochs.
Each epoch is timed on the host with `time.perf_counter()` from just before
the epoch starts to just after its last step has *finished* (fit: the
`on_epoch_end` callback, which Keras calls after the epoch's results are
ready; custom: after the epoch's reduced numbers are copied to the host), so
neither tracing nor warm-up leaks into the timed numbers.

One input iterator serves every epoch of a run (fit: a repeated dataset with
`steps_per_epoch`; custom_graph=step: one Python iterator).  Keras otherwise
makes a new iterator per epoch and frees the old one on the main thread as the
next epoch starts, a stall inside the timed window (docs/performance.md).  The
epochs are unchanged: the dataset is shuffled and batched before it is repeated.

`step_timing` also times every step (host clock, synchronised on the step's
loss), so `harness_ratio` = timed seconds / sum of step seconds shows what the
loop costs outside the steps themselves.

fit     `model.compile(...)` + `model.fit(...)`; Keras scales the loss by the
        global batch and splits the batch across replicas itself.
custom  the blog's loop: `strategy.run(step)` per global batch, `strategy.reduce(SUM)`,
        the loss scaled by the global batch; `train.custom_graph` says how it is traced:
        `step` (the default: one `tf.function` call per `train.custom_steps_per_call` global
        batches, driven from Python) or `epoch` (the blog's: the whole epoch inside one
        `tf.function`).

k steps per call (`custom_steps_per_call` = k > 1, custom_graph=step): the k steps are unrolled
into one graph at trace time (a Python loop over k batches handed in as arguments; not a
`tf.range` while-loop, the form that runs about 2.7x slower on one CPU replica), so each call
pays the host's dispatch once for k steps.  The steps stay in order (each reads the variables
the one before it wrote: tf.function's automatic control dependencies) and give the update of k
single calls (tests/test_equivalence.py).  An epoch of S steps makes S // k calls of k and one
of S mod k; each size is traced once, in the warm-up (tracing grows with k).  Per-step timing
is lost inside a call, so `step_timing` needs k = 1.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from flowerbench.core.failpoints import checkpoint

EpochHook = Callable[[str, int, int, float, float, float], None]  # phase, i, n, seconds, loss, accuracy


@dataclass
class LoopConfig:
    warmup_epochs: int
    epochs: int
    repeats: int = 1
    jit_compile: bool = False
    steps_per_execution: int = 1
    keras_verbose: int = 0
    custom_graph: str = "epoch"
    step_timing: bool = False
    custom_steps_per_call: int = 1
    # hold.Gate of a held process (measuring/scheduler.py, engine 2): each timed epoch waits for the scheduler's
    # `go` before its clock starts and reports its seconds after; the holds are left out of the
    # whole-call windows (repeat_wall_seconds, repeat_cpu_seconds).  None: nothing waits.
    gate: Optional[object] = None


def _held(cfg: LoopConfig) -> tuple[float, float]:
    """(wall, CPU) seconds the process has been held so far: subtracted from a whole-call window."""
    g = cfg.gate
    return (g.held_seconds, g.held_cpu_seconds) if g is not None else (0.0, 0.0)


@dataclass
class LoopResult:
    warmup_seconds: float = 0.0
    epoch_seconds: list[float] = field(default_factory=list)      # every timed epoch, repeat-major
    epoch_loss: list[float] = field(default_factory=list)
    epoch_accuracy: list[float] = field(default_factory=list)
    epoch_images: list[int] = field(default_factory=list)
    repeat_seconds: list[float] = field(default_factory=list)     # sum of each repeat's epochs
    # Wall time around each repeat's whole call (fit(): set-up and the final iterator teardown
    # included), the window the blog's time.time() measures; the bench compares on it.
    repeat_wall_seconds: list[float] = field(default_factory=list)
    # The process's own CPU clock (every thread of it: time.process_time) over the same windows: each
    # timed epoch, and each repeat's whole call.  Beside wall time, to see whether CPU time is less noisy.
    epoch_cpu_seconds: list[float] = field(default_factory=list)
    repeat_cpu_seconds: list[float] = field(default_factory=list)
    step_seconds: list[float] = field(default_factory=list)       # timed steps (step_timing only)

    @property
    def final_loss(self) -> float:
        return self.epoch_loss[-1]

    @property
    def final_accuracy(self) -> float:
        return self.epoch_accuracy[-1]


def _loss_object():
    import keras

    # reduction=None: one loss per example; the custom loop scales it by the global batch itself.
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)


# --------------------------------------------------------------------------- fit


def known_steps(dataset) -> Optional[int]:
    """Batches per epoch of a finite dataset, or None when tf.data cannot tell."""
    n = int(dataset.cardinality())
    return n if n > 0 else None


def run_fit(strategy, model, optimizer, dataset, n_images: int, cfg: LoopConfig,
            on_epoch: Optional[EpochHook] = None) -> LoopResult:
    """fit() under `strategy`; the optimizer's slots exist already (build_optimizer_in_scope, by the
    caller: fit() meets the same Keras 3 placeholder bug under >= 2 replicas once it loops inside
    tf.function, with steps_per_execution > 1 or jit_compile)."""
    import keras

    model.compile(optimizer=optimizer,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], jit_compile=cfg.jit_compile,
                  steps_per_execution=cfg.steps_per_execution)
    res = LoopResult()

    class EpochTimer(keras.callbacks.Callback):
        def __init__(self, phase: str, total: int):
            super().__init__()
            self.phase, self.total, self.t0, self.seconds, self.steps = phase, total, 0.0, [], []
            if cfg.step_timing:
                self.on_train_batch_begin, self.on_train_batch_end = self._step_begin, self._step_end

        def _step_begin(self, batch, logs=None):
            self.s0 = time.perf_counter()

        def _step_end(self, batch, logs=None):  # Keras has copied the step's logs to the host: it is done
            self.steps.append(time.perf_counter() - self.s0)

        def on_epoch_begin(self, epoch, logs=None):
            if self.phase == "timed" and cfg.gate is not None:
                cfg.gate.wait()
            self.c0, self.t0 = time.process_time(), time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            dt = time.perf_counter() - self.t0
            cpu = time.process_time() - self.c0
            self.seconds.append(dt)
            if self.phase == "timed":
                if cfg.gate is not None:
                    cfg.gate.done(dt, cpu)
                res.step_seconds.extend(self.steps)
                res.epoch_seconds.append(dt)
                res.epoch_cpu_seconds.append(cpu)
                if len(res.epoch_seconds) == 1:
                    checkpoint("after-first-epoch")
                res.epoch_loss.append(float(logs["loss"]))
                res.epoch_accuracy.append(float(logs["accuracy"]))
                res.epoch_images.append(n_images)
            self.steps = []
            if on_epoch:
                on_epoch(self.phase, epoch + 1, self.total, dt, float(logs["loss"]), float(logs["accuracy"]))

    steps = known_steps(dataset)
    data = dataset.repeat() if steps else dataset
    if strategy.num_replicas_in_sync > 1:
        # Distributed once for every fit() call (Keras would redo it at each call, inside the
        # blog's whole-call window); Keras takes a DistributedDataset as it is.
        data = strategy.experimental_distribute_dataset(data)

    def fit(timer: EpochTimer, epochs: int) -> None:
        model.fit(data, epochs=epochs, steps_per_epoch=steps, verbose=cfg.keras_verbose, callbacks=[timer],
                  shuffle=False)

    if cfg.warmup_epochs:
        warm = EpochTimer("warmup", cfg.warmup_epochs)
        fit(warm, cfg.warmup_epochs)
        res.warmup_seconds = sum(warm.seconds)
    for _ in range(cfg.repeats):
        timer = EpochTimer("timed", cfg.epochs)
        (h0, hc0), c0, t0 = _held(cfg), time.process_time(), time.perf_counter()
        fit(timer, cfg.epochs)
        (h1, hc1) = _held(cfg)
        res.repeat_wall_seconds.append(time.perf_counter() - t0 - (h1 - h0))
        res.repeat_cpu_seconds.append(time.process_time() - c0 - (hc1 - hc0))
        res.repeat_seconds.append(sum(timer.seconds))
    return res


# --------------------------------------------------------------------------- custom


def make_train_step(model, optimizer, global_batch_size: int, jit_compile: bool = False):
    """The per-replica step.  Returns (scaled loss, sum of per-example losses, correct, count).

    Gradients from all replicas are *summed* by the all-reduce inside
    `apply_gradients`, so each replica must divide its per-example losses by
    the global batch size (not its own): then the sum of the replicas'
    gradients equals the gradient of the mean loss over the global batch, as on
    one device.  (tests/helpers/equivalence.py shows what the wrong divisor, the
    per-replica batch, does: an update N times too large.)
    """
    import tensorflow as tf

    loss_object = _loss_object()

    def step(x, y):
        with tf.GradientTape() as tape:
            logits = tf.cast(model(x, training=True), tf.float32)
            per_example = loss_object(y, logits)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_batch_size)
            target = optimizer.scale_loss(loss)  # identity unless a LossScaleOptimizer (mixed precision)
        grads = tape.gradient(target, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        correct = tf.reduce_sum(tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), y), tf.float32))
        count = tf.cast(tf.shape(y)[0], tf.float32)
        return loss, tf.reduce_sum(per_example), correct, count

    return tf.function(step, jit_compile=True) if jit_compile else step


def make_epoch_fn(strategy, step, graph: str = "epoch", steps_per_call: int = 1):
    """One epoch over a distributed dataset -> (sum of losses, correct, count).

    graph="epoch": the blog's design, the whole epoch inside one `tf.function`
    (AutoGraph turns the loop into a tf.while_loop).  graph="step": one
    `tf.function` per global batch driven from Python, as Keras' own fit() does
    (much faster on CPU: docs/performance.md).  Both return a callable of one
    signature, `(batches, step_times=None) -> (loss_sum, correct, count)`;
    `step_times` is filled only by graph="step", where steps are visible.
    `steps_per_call` (graph="step"): global batches per graph call, unrolled (module docstring)."""
    if steps_per_call < 1 or (steps_per_call > 1 and graph != "step"):
        raise ValueError(f"steps_per_call {steps_per_call}: a positive count, above 1 only with graph='step'")
    import tensorflow as tf

    def reduced(x, y):
        per_replica = strategy.run(step, args=(x, y))
        _, ls, c, n = (strategy.reduce(tf.distribute.ReduceOp.SUM, t, axis=None) for t in per_replica)
        return ls, c, n

    @tf.function
    def epoch(dist_dataset):
        zero = tf.constant(0.0)
        loss_sum, correct, count = zero, zero, zero
        for x, y in dist_dataset:
            ls, c, n = reduced(x, y)
            loss_sum, correct, count = loss_sum + ls, correct + c, count + n
        return loss_sum, correct, count

    if graph == "epoch":
        return lambda batches, step_times=None: epoch(batches)
    calls = {1: tf.function(reduced)}  # steps per call -> its graph

    def unrolled(*xy):
        """len(xy) // 2 steps in one graph, in order; their sums."""
        totals = [tf.constant(0.0)] * 3
        for i in range(0, len(xy), 2):  # a Python loop: unrolled while tracing
            totals = [t + v for t, v in zip(totals, reduced(xy[i], xy[i + 1]))]
        return tuple(totals)

    def call(group: list):
        if len(group) not in calls:
            calls[len(group)] = tf.function(unrolled)
        return calls[len(group)](*itertools.chain.from_iterable(group))

    def epoch_from_python(batches, step_times: Optional[list] = None):
        """`batches`: a distributed dataset, or the next steps of one long-lived iterator."""
        totals = [tf.constant(0.0)] * 3
        it = iter(batches)
        while True:
            t0 = time.perf_counter()
            group = list(itertools.islice(it, steps_per_call))
            if not group:
                return tuple(totals)
            values = call(group)
            totals = [t + v for t, v in zip(totals, values)]  # stays on device: no sync per call ...
            if step_times is not None:
                values[2].numpy()  # ... unless each step is timed (k = 1): then wait for it
                step_times.append(time.perf_counter() - t0)

    return epoch_from_python


def build_optimizer_in_scope(strategy, model, optimizer):
    """Keras 3 + >= 2 replicas: Adam's slots must exist before the first traced step
    ("You must feed a value for placeholder tensor", keras-team/keras#23085)."""
    with strategy.scope():
        optimizer.build(model.trainable_variables)


def run_custom(strategy, model, optimizer, dataset, global_batch_size: int, cfg: LoopConfig,
               on_epoch: Optional[EpochHook] = None) -> LoopResult:
    """The custom loop under `strategy`; the optimizer's slots exist already (build_optimizer_in_scope)."""
    step = make_train_step(model, optimizer, global_batch_size, jit_compile=cfg.jit_compile)
    epoch_fn = make_epoch_fn(strategy, step, cfg.custom_graph, cfg.custom_steps_per_call)
    res = LoopResult()
    steps = known_steps(dataset)
    if cfg.custom_graph == "step" and steps:
        # One iterator for the whole run (see the module docstring); each epoch takes its steps.
        batches = iter(strategy.experimental_distribute_dataset(dataset.repeat()))

        def run_epoch(timed: bool):
            return epoch_fn(itertools.islice(batches, steps), res.step_seconds if timed and cfg.step_timing else None)
    else:
        # The blog's loop: `for x, y in dataset` inside the tf.function, a fresh pass each call.
        dist = strategy.experimental_distribute_dataset(dataset)

        def run_epoch(timed: bool):
            return epoch_fn(dist)

    def one(phase: str, i: int, total: int) -> tuple[float, float, float, float, int]:
        c0, t0 = time.process_time(), time.perf_counter()
        loss_sum, correct, count = run_epoch(phase == "timed")
        n = float(count.numpy())  # copies to the host: the epoch's work is done before the clock is read
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        loss, acc = float(loss_sum.numpy()) / n, float(correct.numpy()) / n
        if on_epoch:
            on_epoch(phase, i, total, dt, loss, acc)
        return dt, cpu, loss, acc, int(n)

    for i in range(cfg.warmup_epochs):
        res.warmup_seconds += one("warmup", i + 1, cfg.warmup_epochs)[0]
    for _ in range(cfg.repeats):
        total, (h0, hc0), c0, t0 = 0.0, _held(cfg), time.process_time(), time.perf_counter()
        for i in range(cfg.epochs):
            if cfg.gate is not None:
                cfg.gate.wait()
            dt, cpu, loss, acc, n = one("timed", i + 1, cfg.epochs)
            if cfg.gate is not None:
                cfg.gate.done(dt, cpu)
            res.epoch_seconds.append(dt)
            res.epoch_cpu_seconds.append(cpu)
            if len(res.epoch_seconds) == 1:
                checkpoint("after-first-epoch")
            res.epoch_loss.append(loss)
            res.epoch_accuracy.append(acc)
            res.epoch_images.append(n)
            total += dt
        (h1, hc1) = _held(cfg)
        res.repeat_wall_seconds.append(time.perf_counter() - t0 - (h1 - h0))
        res.repeat_cpu_seconds.append(time.process_time() - c0 - (hc1 - hc0))
        res.repeat_seconds.append(total)
    return res
