"""The core budget of a run: which cores it may use and how many threads it runs.

Replicas that share cores cannot speed anything up, so on a CPU host every
replica brings its own `train.cores_per_replica` (c) cores:

  * a run of N replicas gets N x c cores (its affinity mask) and the same-budget
    baseline, one replica, gets c: `core_matched`.  Inside one MirroredStrategy
    process the replicas share one mask and one intra-op pool, so the mask
    enforces the *total* budget: intra-op threads = c (each op), inter-op = N
    (one op per replica side by side);
  * a variant with `cores: auto` is one replica given the N x c cores of the
    mirrored runs, used through intra-op threads: `threads` (would threads have
    used these cores better than replicas?);
  * a run that does not fit the usable cores shares them: `oversubscribed`,
    today's emulation, labelled so and kept out of speed-up and efficiency;
  * on a GPU host nothing is pinned (one replica per GPU): `gpu`;
    train.thread_policy=tf_default pins nothing either: `shared`.

`replicas: auto` (and multiworker.workers: auto) resolves, at run time, to the
largest N <= 4 (the blog's GPUs) for which N x c fits the usable cores; on a
host where that N would be 1, to 2 oversubscribed replicas.  The mask is set
with os.sched_setaffinity before TensorFlow is imported (its thread pools size
themselves from the mask), by `pin()`.  Nothing here imports TensorFlow.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from typing import Optional

from flowerbench.core.config import AUTO_MAX_REPLICAS, ParamsError, TrainParams, Variant
from flowerbench.core.results import CoreKind


@dataclass(frozen=True)
class CoreBudget:
    kind: CoreKind             # how the replicas sit on the cores
    cores_per_replica: int     # c (train.cores_per_replica)
    budget_cores: int          # cores this run may use: N x c, c, or all usable ones (oversubscribed)
    affinity: list[int]        # the mask set before TensorFlow starts ([] = left alone)
    usable_cores: int
    intra_op_threads: int      # 0 = TensorFlow's default
    inter_op_threads: int

    def as_dict(self) -> dict:
        return {f"budget_{k}" if k in ("kind", "affinity") else k: v for k, v in asdict(self).items()}


def on_gpus(train: TrainParams, gpus: int) -> bool:
    """The replicas run on GPUs (one each): no core budget applies."""
    return bool(gpus) and train.device != "cpu"


def most_matched(train: TrainParams, usable: int) -> int:
    """The most replicas (up to the blog's 4) that fit `usable` cores at c = train.cores_per_replica each."""
    return min(AUTO_MAX_REPLICAS, usable // train.cores_per_replica)


def replica_cores(train: TrainParams, usable_ids: list[int], replicas: int) -> list[list[int]]:
    """Each replica's own c cores (the first replicas x c usable ones): a worker's or a probe's slice."""
    c = train.cores_per_replica
    return [usable_ids[i * c:(i + 1) * c] for i in range(replicas)]


def auto_replicas(train: TrainParams, usable: int, gpus: int) -> int:
    """What `replicas: auto` means on this host."""
    if on_gpus(train, gpus):
        return max(2, min(AUTO_MAX_REPLICAS, gpus))       # one per GPU (one GPU: 2 logical GPUs, labelled)
    fits = most_matched(train, usable)
    return fits if fits >= 2 else 2                        # 1 would not be data parallel: oversubscribe


def resolve(variant: Variant, train: TrainParams, usable: int, gpus: int, sweep: bool = False) -> Variant:
    """The variant with its replica count (and `cores: auto`) resolved for this host.  A sweep
    point that does not fit the usable cores is refused: the sweep measures scaling, core-matched."""
    n_auto = auto_replicas(train, usable, gpus)
    n = n_auto if variant.replicas == "auto" else variant.replicas
    cores = variant.cores
    if cores == "auto":
        cores = n_auto * train.cores_per_replica
    c = train.cores_per_replica
    if sweep and not on_gpus(train, gpus) and n * c > usable:
        raise ParamsError(f"sweep.replicas: {n} replicas x {c} core(s) per replica need {n * c} cores, but this "
                          f"host has {usable} usable; the sweep is core-matched, so drop the point or run it on a "
                          f"bigger host")
    return variant.model_copy(update={"replicas": n, "cores": cores})


def plan(replicas: int, cores: Optional[int], train: TrainParams, usable_ids: list[int], gpus: int,
         worker: Optional[int] = None) -> CoreBudget:
    """The budget of one process: a run of `replicas` replicas (or worker `worker` of a
    `replicas`-worker job, one replica each) given `cores` cores (None: replicas x c)."""
    c, usable = train.cores_per_replica, len(usable_ids)
    if on_gpus(train, gpus):
        return CoreBudget(CoreKind.GPU, c, usable, [], usable, 0, 0)
    if train.thread_policy == "tf_default":
        return CoreBudget(CoreKind.SHARED, c, usable, [], usable, 0, 0)
    total = replicas * c if cores is None else cores
    if total > usable:  # cores shared: as many threads as there are cores, split over the replicas
        share = max(1, usable // replicas)
        inter = 1 if worker is not None else replicas  # a worker process holds one replica
        return CoreBudget(CoreKind.OVERSUBSCRIBED, c, usable, list(usable_ids), usable, share, inter)
    if worker is not None:  # one replica per process, each on its own c cores
        mine = replica_cores(train, usable_ids, worker + 1)[worker]
        return CoreBudget(CoreKind.CORE_MATCHED, c, c, mine, usable, c, 1)
    mask = usable_ids[:total]
    if replicas == 1 and total > c:
        return CoreBudget(CoreKind.THREADS, c, total, mask, usable, total, 1)
    return CoreBudget(CoreKind.CORE_MATCHED, c, total, mask, usable, c if replicas > 1 else total, replicas)


def pin(budget: CoreBudget) -> None:
    """Set this process's affinity mask (before TensorFlow is imported: its pools size from it), on
    every thread it already has: sched_setaffinity(0) sets the calling thread's alone, and a thread
    pool started earlier (numpy's OpenBLAS, imported while the data are listed) would keep the whole
    host's cores (seen 2026-12-07: two pinned workers' BLAS threads met on both cores)."""
    if not budget.affinity:
        return
    os.sched_setaffinity(0, budget.affinity)
    for tid in _threads():
        try:
            os.sched_setaffinity(tid, budget.affinity)
        except OSError:          # a thread that ended meanwhile
            pass


def _threads() -> list[int]:
    """The ids of this process's threads (/proc/self/task; [] where there is none)."""
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return []


def thread_env(budget: CoreBudget) -> dict[str, str]:
    """The budget's thread pools as the environment TensorFlow reads at start-up, for a process that
    does not set them itself (the blog's code in the bench); {} leaves TensorFlow's defaults."""
    if not budget.intra_op_threads:
        return {}
    return {"TF_NUM_INTRAOP_THREADS": str(budget.intra_op_threads),
            "TF_NUM_INTEROP_THREADS": str(budget.inter_op_threads)}
