"""Plan the replicas of one run: physical GPUs, logical GPUs on one chip, or logical CPUs.

`plan_devices(replicas, train)` must run before any other TensorFlow op: the
logical-device split and the thread pools can only be set while the runtime is
still uninitialised.  The returned `DevicePlan` says honestly what the replicas
are (`device_kind`: gpu | logical_gpu | cpu | logical_cpu) and is copied into
every result, so a CPU emulation can never be mistaken for a GPU run.

Rules (train.device = auto):
  * the host has >= replicas GPUs        -> one replica per GPU, kind `gpu`;
  * it has fewer GPUs (but at least one) -> error naming the numbers, unless
    train.emulate: then the first GPU is split into `replicas` logical GPUs
    (kind `logical_gpu`: they share one chip, so scaling numbers are not
    multi-GPU numbers);
  * no GPU                                -> one CPU (`cpu`) for 1 replica, or
    `replicas` logical CPU devices (`logical_cpu`) if train.emulate.
train.device = gpu refuses to fall back to the CPU; train.device = cpu ignores GPUs.

A worker of a multi-worker job (TF_CONFIG) is planned by `plan_workers`: one
replica per worker process, kind `local_cpu_workers` / `local_gpu_workers` (or
without `local_` on several hosts).  `make_strategy(plan)` is the one place that
builds a strategy: the default one, MirroredStrategy, MultiWorkerMirroredStrategy.
`tensorflow_gpus` is the one place that asks TensorFlow for GPUs (core/host.py asks the
driver and the device nodes, for what must run without TensorFlow).

Cores and threads come from the run's core budget (placement.py): its affinity
mask is set before TensorFlow is imported, its thread pools here, before any op.
Every measured process gets here through runtime.start.
"""

from __future__ import annotations

import os
import sys
from dataclasses import asdict, dataclass, field
from typing import Optional

from flowerbench.training.placement import CoreBudget
from flowerbench.core.config import TrainParams
from flowerbench.core.host import cpu_model, gpu_memory_mb, no_gpu_device, usable_cores
from flowerbench.core.log import get_logger
from flowerbench.core.results import CoreKind


class DeviceError(RuntimeError):
    """The host cannot provide the requested replicas (one line naming the numbers)."""


# A worker exits with this when its gRPC server cannot bind the port TF_CONFIG gives it
# (EX_TEMPFAIL): the launcher then restarts the job with fresh ports.
EXIT_PORT_TAKEN = 75


class PortTaken(DeviceError):
    """A multi-worker worker could not bind the port its cluster spec gives it."""
    exit_code = EXIT_PORT_TAKEN


@dataclass
class DevicePlan:
    replicas: int
    device_kind: str                  # gpu | logical_gpu | cpu | logical_cpu
    devices: list[str]
    physical_gpus: int
    gpu_model: Optional[str]
    cpu_model: str
    cpu_count: int
    thread_policy: str
    budget: CoreBudget
    emulated: bool
    notes: list[str] = field(default_factory=list)
    workers: Optional[int] = None     # a multi-worker job: its worker count (one replica each)
    cluster: list[str] = field(default_factory=list)   # ... its workers' addresses (TF_CONFIG)
    worker_index: Optional[int] = None                 # ... and this worker's place among them

    def as_dict(self) -> dict:
        """The fields a result records (the replica count comes from the variant)."""
        out = asdict(self)
        out.pop("replicas")
        out.pop("budget")
        out.update(self.budget.as_dict())
        out["device_notes"] = out.pop("notes")
        out.pop("cluster")
        out.pop("worker_index")
        if self.workers is None:
            out.pop("workers")
        return out


# TensorFlow's C++ start-up lines, written to fd 2 before absl logging starts (so
# TF_CPP_MIN_LOG_LEVEL cannot hide them) or at ERROR level on a host without a GPU driver
# (cuInit ... UNKNOWN ERROR (303)): they read like failures to a newcomer and say nothing the
# stage does not say itself.
STARTUP_NOISE = ("All log messages before absl::InitializeLog()", "oneDNN custom operations are on",
                 "Could not find cuda drivers", "failed call to cuInit", "Unable to register cu",
                 "computation placer already registered", "TF-TRT Warning", "absl::InitializeLog")


def import_tensorflow():
    """Import TensorFlow and look for GPUs with its start-up lines filtered out; say in one line
    what was found.  Anything else TensorFlow printed is passed on."""
    import tempfile
    import time

    t0 = time.perf_counter()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            import tensorflow as tf

            gpus = tensorflow_gpus()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            for line in captured.read().decode("utf-8", "replace").splitlines():
                if line.strip() and not any(n in line for n in STARTUP_NOISE):
                    print(line, file=sys.stderr)
    found = f"{len(gpus)} GPU(s)" if gpus else "no GPU found, CPU only"
    get_logger("tensorflow").info(f"TensorFlow {tf.__version__} ready in {time.perf_counter() - t0:.1f}s; {found}")
    return tf


def tensorflow_gpus(train: Optional[TrainParams] = None) -> list:
    """The GPUs TensorFlow sees ([] under train.device=cpu): the one place that asks TensorFlow.
    (core/host.py asks the driver and the device nodes, for what must run without TensorFlow.)"""
    import tensorflow as tf

    return [] if train is not None and train.device == "cpu" else tf.config.list_physical_devices("GPU")


def gpu_model(gpus: list) -> Optional[str]:
    import tensorflow as tf

    return tf.config.experimental.get_device_details(gpus[0]).get("device_name", "unknown GPU") if gpus else None


def refuse_without_gpus(replicas: int, train: TrainParams, why: str) -> None:
    """On a host without GPUs: refuse `train.device=gpu`, and more than one replica unless emulated."""
    if train.device == "gpu":
        raise DeviceError(f"train.device=gpu but {why} ({replicas} replica(s) requested); "
                          f"install tensorflow[and-cuda] or use device=auto|cpu")
    if replicas > 1 and not train.emulate:
        raise DeviceError(f"{replicas} replicas requested but this host has 0 GPUs ({why}); "
                          f"set train.emulate=true to run them as logical CPU devices")


def refuse_before_tensorflow(replicas: int, train: TrainParams) -> None:
    """plan_devices' refusals, made before TensorFlow starts where the host has no GPU device."""
    if train.device != "cpu" and no_gpu_device():
        refuse_without_gpus(replicas, train, "this host has no GPU device (/dev/nvidia*, /dev/kfd, /dev/dxg)")


def apply_threads(budget: CoreBudget) -> None:
    """Set TensorFlow's thread pools to the budget's (before any op); 0 leaves TensorFlow's default."""
    import tensorflow as tf

    if budget.intra_op_threads:
        tf.config.threading.set_intra_op_parallelism_threads(budget.intra_op_threads)
    if budget.inter_op_threads:
        tf.config.threading.set_inter_op_parallelism_threads(budget.inter_op_threads)


def plan_devices(replicas: int, train: TrainParams, budget: CoreBudget) -> DevicePlan:
    """Configure TensorFlow's devices for `replicas` replicas within `budget` and describe them."""
    import tensorflow as tf

    cores = usable_cores()
    gpus = tensorflow_gpus(train)
    base = dict(replicas=replicas, physical_gpus=len(gpus), cpu_model=cpu_model(), cpu_count=cores,
                thread_policy=train.thread_policy, budget=budget)

    if gpus:
        model = gpu_model(gpus)
        if len(gpus) >= replicas:
            for g in gpus:
                tf.config.experimental.set_memory_growth(g, True)
            return DevicePlan(device_kind="gpu", devices=[f"/gpu:{i}" for i in range(replicas)],
                              gpu_model=model, emulated=False, **base)
        if not train.emulate:
            raise DeviceError(f"{replicas} replicas requested but this host has {len(gpus)} GPU(s) "
                              f"({model}); set train.emulate=true to split one GPU into logical GPUs")
        total = gpu_memory_mb() or 16384
        per = max(1024, int(total * 0.9) // replicas)
        tf.config.set_logical_device_configuration(
            gpus[0], [tf.config.LogicalDeviceConfiguration(memory_limit=per)] * replicas)
        return DevicePlan(device_kind="logical_gpu", devices=[f"/gpu:{i}" for i in range(replicas)],
                          gpu_model=model, emulated=True,
                          notes=[f"{replicas} logical GPUs of {per} MB on one {model}: they share one chip"],
                          **base)

    refuse_without_gpus(replicas, train, "TensorFlow sees no GPU on this host")
    apply_threads(budget)
    if replicas == 1:
        return DevicePlan(device_kind="cpu", devices=["/cpu:0"], gpu_model=None, emulated=False, **base)
    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * replicas)
    matched = budget.kind == CoreKind.CORE_MATCHED
    note = (f"{replicas} logical CPU devices, each replica on its own {budget.cores_per_replica} core(s) "
            f"({budget.budget_cores} pinned: {budget.affinity}): data parallelism on CPU cores, not a GPU result"
            if matched else
            f"{replicas} logical CPU devices sharing {cores} core(s) ({budget.kind}): emulation, not a GPU result")
    return DevicePlan(device_kind="logical_cpu", devices=[f"/cpu:{i}" for i in range(replicas)],
                      gpu_model=None, emulated=not matched, notes=[note], **base)


def local_cluster(addresses: list[str]) -> bool:
    """Every worker of the job is on this host (the local launcher's job, the terms probes)."""
    return all(a.split(":")[0] in ("127.0.0.1", "localhost") for a in addresses)


def plan_workers(addresses: list[str], index: int, train: TrainParams, budget: CoreBudget) -> DevicePlan:
    """Worker `index` of a job of one replica per worker (TF_CONFIG): its thread pools, and what the
    job's replicas are.  One GPU per worker where there are GPUs (the launcher gives each its own)."""
    gpus = tensorflow_gpus(train)
    if not gpus:
        apply_threads(budget)
    n, local = len(addresses), local_cluster(addresses)
    where = "gpu:0" if gpus else "cpu:0"
    if not local:
        note = "multi-host job"
    elif budget.kind == CoreKind.CORE_MATCHED:
        note = (f"{n} worker processes on one host, each pinned to its own {budget.cores_per_replica} core(s) "
                f"(worker {index}: {budget.affinity}): data parallelism on CPU cores over loopback gRPC, "
                f"not a GPU result")
    else:
        note = (f"{n} worker processes on one host sharing {budget.usable_cores} core(s) ({budget.kind}): "
                f"emulation of a multi-host job")
    return DevicePlan(replicas=n, device_kind=("local_" if local else "") + ("gpu_workers" if gpus else "cpu_workers"),
                      devices=[f"{a}/{where}" for a in addresses], physical_gpus=len(gpus), gpu_model=gpu_model(gpus),
                      cpu_model=cpu_model(), cpu_count=budget.usable_cores, thread_policy=train.thread_policy,
                      budget=budget, emulated=local and not gpus and budget.kind != CoreKind.CORE_MATCHED, notes=[note],
                      workers=n, cluster=list(addresses), worker_index=index)


def make_strategy(plan: DevicePlan):
    """The one place strategies are built: the default strategy for one replica, MirroredStrategy over
    the planned devices, or MultiWorkerMirroredStrategy for a worker of a job (plan_workers)."""
    import tensorflow as tf

    if plan.workers is not None:
        # AUTO: NCCL between GPUs, ring on CPUs.  No collective timeout: the multi-worker watchdog
        # guards the join (set-up) only, and a timeout here would also cut every all-reduce inside
        # the timed window; a worker that dies later is caught by the launcher (or the scheduler).
        options = tf.distribute.experimental.CommunicationOptions(
            implementation=tf.distribute.experimental.CommunicationImplementation.AUTO)
        try:
            return tf.distribute.MultiWorkerMirroredStrategy(communication_options=options)
        except tf.errors.UnknownError as exc:
            if "Could not start gRPC server" not in str(exc):
                raise
            i = plan.worker_index
            raise PortTaken(f"worker {i} could not start its gRPC server on {plan.cluster[i]}: the port is "
                            f"taken by another process") from None
    if plan.replicas == 1:
        return tf.distribute.get_strategy()  # as the blog: TF places everything on the first device
    if plan.device_kind == "logical_gpu":
        # Logical GPUs of one chip: NCCL refuses several ranks on one physical GPU, so the
        # all-reduce copies through one device tree instead (recorded as cross_device_ops).
        return tf.distribute.MirroredStrategy(devices=plan.devices,
                                              cross_device_ops=tf.distribute.HierarchicalCopyAllReduce())
    # Real GPUs: NCCL (MirroredStrategy's default); CPU devices: collective all-reduce (ring).
    return tf.distribute.MirroredStrategy(devices=plan.devices)


def strategy_name(strategy) -> str:
    """The public name: tf.distribute.MultiWorkerMirroredStrategy's class is CollectiveAllReduceStrategy."""
    name = type(strategy).__name__
    return {"CollectiveAllReduceStrategy": "MultiWorkerMirroredStrategy"}.get(name, name)


def cross_device_ops_name(strategy) -> str:
    ops = getattr(strategy.extended, "_cross_device_ops", None) or getattr(strategy.extended, "_collective_ops", None)
    return type(ops).__name__ if ops is not None else "none (single device)"


def preflight(params) -> int:
    """Stop before any work if the host cannot run every variant (used by `make reproduce-blog`).
    TensorFlow is asked only where a GPU may be (no_gpu_device)."""
    if params.train.device == "cpu" or no_gpu_device():
        gpus = []
    else:
        import_tensorflow()
        gpus = tensorflow_gpus(params.train)
    from flowerbench.core.config import AUTO_MAX_REPLICAS

    # `auto` on a GPU host means one replica per GPU, up to the blog's 4: ask for 4.
    need = max(AUTO_MAX_REPLICAS if v.replicas == "auto" else v.replicas for v in params.all_variants())
    get_logger("preflight").info(f"{len(gpus)} GPU(s) visible; the variants need up to {need} replica(s)")
    if params.train.device == "gpu" and not gpus:
        raise DeviceError(f"train.device=gpu but this host has no GPU; the blog's run needs {need} GPUs "
                          f"(use a GPU host with tensorflow[and-cuda], or set train.device=auto and train.emulate=true "
                          f"to emulate, which takes hours on a CPU)")
    if len(gpus) < need and not params.train.emulate:
        raise DeviceError(f"the variants need {need} GPUs but this host has {len(gpus)}; "
                          f"set train.emulate=true to run the missing replicas as logical devices "
                          f"(labelled logical_gpu/logical_cpu, never as a {need}-GPU result)")
    return 0
