"""The one way a measured process starts: host, cores, pin, TensorFlow and its threads, devices, strategy.

    rt = runtime.start(params.train, replicas)                            # `train`: N replicas here
    rt = runtime.start(params.train, 1, core_ids=[0])                     # a probe on the cores it was given
    rt = runtime.start(params.train, n, cluster=(addresses, index),       # one multi-worker worker
                       before_strategy=watchdog)
    rt.strategy, rt.plan, rt.budget, rt.machine

Every process that times something goes through `start`: the `train` stage, the
multi-worker worker, the terms probes, and so the bench's runs of our code.  The
order is fixed, because TensorFlow fixes things when it starts:

  1. the host description (core/host.py, no TensorFlow) and the core ids to plan over;
  2. the core budget (placement.plan) and the affinity mask (placement.pin), before
     TensorFlow is imported: its thread pools size themselves from the mask;
  3. TensorFlow imported (devices.import_tensorflow) with the environment it reads
     at start-up (oneDNN on, its C++ log level);
  4. the devices planned (thread pools, logical devices: before any op) and the
     strategy built (devices.make_strategy: the default strategy, MirroredStrategy,
     or MultiWorkerMirroredStrategy for a cluster).

`core_budget` is steps 1-2 without the pin, for a process that plans a budget it
will hand to another (the bench pins the blog's code to it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Optional

from flowerbench.training import placement
from flowerbench.core import host
from flowerbench.training.placement import CoreBudget
from flowerbench.core.config import TrainParams


@dataclass
class Runtime:
    machine: dict            # the host description (host.describe), recorded with every result
    budget: CoreBudget       # the cores and threads this process has
    plan: Any                # devices.DevicePlan: what the replicas are
    strategy: Any            # the tf.distribute strategy the run builds its variables under
    speed: Optional[dict] = None   # host.speed_index on the pinned cores, before TensorFlow started

    def devices_record(self) -> dict:
        """The fields a result records about where it ran."""
        return {**self.plan.as_dict(), "host": self.machine, "speed_index": self.speed}


def core_budget(train: TrainParams, replicas: int, cores: Optional[int] = None, *,
                core_ids: Optional[list[int]] = None, worker: Optional[int] = None,
                machine: Optional[dict] = None) -> tuple[dict, CoreBudget]:
    """The host and the budget of `replicas` replicas (worker `worker` of a job, when given), planned
    over `core_ids` (default: the host's usable cores).  Nothing is pinned, nothing imports TensorFlow."""
    machine = machine or host.describe()
    ids = host.usable_core_ids(machine) if core_ids is None else list(core_ids)
    return machine, placement.plan(replicas, cores, train, ids, machine["gpu_count"], worker=worker)


def tensorflow_env() -> None:
    """What TensorFlow reads when it starts.  oneDNN kernels: some TF builds leave them off on AMD
    CPUs, a several-fold slower ResNet50 step (docs/performance.md); an explicit user choice wins."""
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def start(train: TrainParams, replicas: int, *, cores: Optional[int] = None,
          core_ids: Optional[list[int]] = None, cluster: Optional[tuple[list[str], int]] = None,
          machine: Optional[dict] = None, before_strategy: Optional[Callable[[], None]] = None,
          speed_index: bool = True) -> Runtime:
    """Start this process's measured run: see the module docstring for the order.

    `cores`: the cores of a one-replica `threads` run (None: replicas x train.cores_per_replica).
    `core_ids`: plan over these cores instead of the host's usable ones (a probe given its slice).
    `cluster`: (worker addresses, this worker's index): one worker of a MultiWorkerMirroredStrategy
    job, one replica each; a local job gives each worker its own slice of the cores.
    `before_strategy`: runs after the devices are planned, just before the strategy is built (the
    multi-worker watchdog starts there: the constructor blocks until every peer joins).
    `speed_index`: time host.speed_index (about 1 s) on the pinned cores first, for the result's
    provenance (the probes, which write no result, skip it)."""
    from flowerbench.training import devices

    if cluster is None:
        machine, budget = core_budget(train, replicas, cores, core_ids=core_ids, machine=machine)
    elif core_ids is not None:   # a worker given its own cores (a probe): one replica on them
        machine, budget = core_budget(train, 1, core_ids=core_ids, machine=machine)
    else:                        # a local job: each worker its own slice of the host; one per host: the first
        addresses, index = cluster
        machine, budget = core_budget(train, len(addresses), machine=machine,
                                      worker=index if devices.local_cluster(addresses) else 0)
    placement.pin(budget)
    speed = host.speed_index() if speed_index else None
    tensorflow_env()
    devices.import_tensorflow()
    if cluster is not None:
        plan = devices.plan_workers(cluster[0], cluster[1], train, budget)
    else:
        plan = devices.plan_devices(replicas, train, budget)
    if before_strategy is not None:
        before_strategy()
    strategy = devices.make_strategy(plan)
    if strategy.num_replicas_in_sync != replicas:
        raise RuntimeError(f"the strategy has {strategy.num_replicas_in_sync} replicas in sync, expected {replicas}")
    return Runtime(machine=machine, budget=budget, plan=plan, strategy=strategy, speed=speed)
