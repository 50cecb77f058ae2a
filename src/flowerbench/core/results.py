"""The result model: what one training run writes to results/<variant>.json.

Written by training (the `train` stage and the multi-worker chief) and read by
the report and the bench, all through `Result`: one typed, versioned record.
A file of another `schema_version`, with a missing or unknown field, or with a
value of the wrong type is a one-line `ResultError` naming the file, never a
silent `.get()` default.  docs/training.md lists the fields.
"""

from __future__ import annotations

import math
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, model_validator

from flowerbench.core.records import read_record

# 6: the process's CPU time over the timed windows (epoch_cpu_seconds, repeat_cpu_seconds) and the
# speed index measured before training (speed_index, host.speed_index); `host` of host schema 2.
# 5: the core budget (training/placement.py): budget_kind, cores_per_replica, budget_cores, budget_affinity,
# usable_cores; readback (the mask and thread pools read back in the process).
# 4: `host`, the host description (core/host.py) of the machine that measured the run; the report
# compares it with the machine it is rendered on.
# 3: data.pipeline `synthetic` renamed `tensors` (the stand-in data set alone is "synthetic").
# 2: the multi-worker worker writes the same record as `train` (optimizer_class, dtype_policy,
# workers, real start/finish times); 1 was the first release.
SCHEMA_VERSION = 6
# Read as well: the committed references of schema 5 (reports/reference/), which lack the CPU times and
# the speed index (None there) and whose `host` is of host schema 1 (identity unknown).
READABLE_SCHEMAS = (5, 6)


class ResultError(RuntimeError):
    """A results file is missing, unreadable, of another schema version or malformed (one line)."""


class CoreKind(StrEnum):
    """How a run's replicas sit on the host's cores: its core budget's kind (training/placement.py)."""
    CORE_MATCHED = "core_matched"       # each replica on c cores of its own (N x c pinned)
    THREADS = "threads"                 # one replica given N x c cores: the thread-count control
    OVERSUBSCRIBED = "oversubscribed"   # more replicas x c than usable cores: they share them all
    GPU = "gpu"                         # replicas on GPUs, the host's cores left alone
    SHARED = "shared"                   # train.thread_policy tf_default: nothing pinned, TF's own threads


class Result(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)

    schema_version: int
    # what ran
    variant: str
    loop: Literal["fit", "custom"]
    replicas: int
    workers: Optional[int] = None
    batch_size_per_replica: int
    global_batch_size: int
    scaling: Literal["weak", "strong"]
    image_size: int
    pipeline: Literal["files", "tensors"]
    model: str
    optimizer: str
    optimizer_class: str
    dtype_policy: Optional[str]
    mixed_precision: bool
    jit_compile: bool
    steps_per_execution: int
    custom_graph: Literal["epoch", "step"]
    # the custom loop's global batches per graph call (train.custom_steps_per_call); None: fit(), or a
    # result written before the key existed (then 1)
    custom_steps_per_call: Optional[int] = None
    parameter_count: int
    num_classes: int
    class_names: list[str]
    # images and the timing protocol
    images_per_epoch: int
    steps_per_epoch: int
    warmup_epochs: int
    epochs: int
    repeats: int
    warmup_seconds: float
    epoch_seconds: list[float]
    epoch_loss: list[float]
    epoch_accuracy: list[float]
    epoch_images: list[int]
    repeat_seconds: list[float]
    repeat_wall_seconds: list[float]
    epoch_cpu_seconds: Optional[list[float]] = None   # the process's CPU clock (all threads) over each timed
    repeat_cpu_seconds: Optional[list[float]] = None  # epoch, and over each repeat's whole call (None: schema 5)
    timed_seconds: float
    images_per_second: float
    final_loss: float
    final_accuracy: float
    step_timing: bool
    step_seconds: Optional[list[float]]
    step_seconds_sum: Optional[float] = None
    step_seconds_median: Optional[float] = None
    harness_ratio: Optional[float]
    harness_note: Optional[str]
    stage_seconds: float
    # devices
    device_kind: str
    devices: list[str]
    emulated: bool
    device_notes: list[str]
    gpu_model: Optional[str]
    physical_gpus: int
    cpu_model: str
    cpu_count: int
    thread_policy: str
    budget_kind: CoreKind                     # how its replicas sit on the cores (training/placement.py)
    cores_per_replica: int
    budget_cores: int
    budget_affinity: list[int]
    usable_cores: int
    intra_op_threads: int
    inter_op_threads: int
    readback: dict[str, Any]  # Cpus_allowed_list and TF's thread pools, read back in the process after training
    strategy: str
    cross_device_ops: str
    onednn: Optional[str]
    tf_built_with_cuda: bool
    # data and provenance
    data_source: Optional[str]
    data_label: Optional[str]
    data_synthetic: Optional[bool]
    data_tree_sha256: Optional[str]
    params: dict[str, Any]
    versions: dict[str, Optional[str]]
    git_commit: Optional[str]
    git_dirty: Optional[bool]
    git_changed: Optional[list[str]]
    host: dict[str, Any]      # host.describe(): what changes a timing (CPU identity, usable cores, GPUs, CUDA build)
    # host.speed_index() measured by this process before TensorFlow started: GFLOP/s of a fixed matrix
    # product (provenance: which machine and how fast that minute; never in data/host.json)
    speed_index: Optional[dict[str, Any]] = None
    hostname: str
    platform: str
    argv: list[str]
    started_at: str
    finished_at: str

    @model_validator(mode="after")
    def _timed(self) -> "Result":
        if self.schema_version not in READABLE_SCHEMAS:
            raise ValueError(f"schema_version {self.schema_version}, this code reads {SCHEMA_VERSION}")
        if self.schema_version >= 6 and (self.epoch_cpu_seconds is None or self.repeat_cpu_seconds is None):
            raise ValueError("no CPU times of the timed epochs (epoch_cpu_seconds, repeat_cpu_seconds)")
        if not self.epoch_seconds or not self.timed_seconds > 0:
            raise ValueError(f"no timed epochs (timed_seconds={self.timed_seconds})")
        numbers = [self.timed_seconds, self.images_per_second, self.final_loss, self.warmup_seconds,
                   *self.epoch_seconds, *self.epoch_loss]
        if not all(math.isfinite(x) for x in numbers):
            raise ValueError("a timing or loss is not a finite number")
        # what no run can have written: the report would compute speed-ups and intervals from it
        if min(self.replicas, self.epochs, self.repeats, self.images_per_epoch, self.batch_size_per_replica) < 1:
            raise ValueError("replicas, epochs, repeats, images and the batch must each be at least 1")
        if self.global_batch_size != self.batch_size_per_replica * self.replicas:
            raise ValueError(f"global_batch_size {self.global_batch_size} is not batch_size_per_replica "
                             f"{self.batch_size_per_replica} x {self.replicas} replicas")
        cpu = (len(self.repeat_cpu_seconds or self.repeat_seconds), len(self.epoch_cpu_seconds or self.epoch_seconds))
        if (len(self.repeat_seconds), len(self.repeat_wall_seconds), len(self.epoch_seconds), *cpu) != (
                self.repeats, self.repeats, self.repeats * self.epochs, self.repeats, self.repeats * self.epochs):
            raise ValueError(f"{len(self.repeat_seconds)} repeat and {len(self.epoch_seconds)} epoch time(s) for "
                             f"{self.repeats} repeat(s) of {self.epochs} epoch(s)")
        times = [*self.epoch_seconds, *self.repeat_seconds, *self.repeat_wall_seconds, self.images_per_second]
        if min(times) <= 0 or self.warmup_seconds < 0:
            raise ValueError("a time or rate is zero or negative")
        if not min(self.repeat_seconds) <= self.timed_seconds <= max(self.repeat_seconds):
            raise ValueError(f"timed_seconds {self.timed_seconds} lies outside its repeats {self.repeat_seconds}")
        return self

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def make(record: dict[str, Any]) -> Result:
    """Build the record a run is about to write; a mistake here is a bug, so it raises at once."""
    return Result.model_validate({"schema_version": SCHEMA_VERSION, **record})


def load(path: Path) -> Result:
    return read_record(path, Result, ResultError, schema=SCHEMA_VERSION, readable=READABLE_SCHEMAS,
                       missing="results file not found; run `dvc repro` first")
