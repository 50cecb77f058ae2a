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

Cores and threads come from the run's core budget (budget.py): its affinity
mask is set before TensorFlow is imported, its thread pools here, before any op.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from typing import Optional

from .budget import CoreBudget
from .config import TrainParams
from .host import cpu_model, usable_cores, visible_gpus  # noqa: F401  (re-exported)
from .log import get_logger


class DeviceError(RuntimeError):
    """The host cannot provide the requested replicas (one line naming the numbers)."""


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

    def as_dict(self) -> dict:
        """The fields a result records (the replica count comes from the variant)."""
        out = asdict(self)
        out.pop("replicas")
        out.pop("budget")
        out.update(self.budget.as_dict())
        out["device_notes"] = out.pop("notes")
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

            gpus = tf.config.list_physical_devices("GPU")
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


cpu_count = usable_cores  # the cores this process may use (affinity mask, cgroup quota)


def _gpu_memory_mb() -> Optional[int]:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
        return int(out.split()[0])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


# A process reaches a GPU only through one of these device nodes: NVIDIA's driver (/dev/nvidiactl,
# /dev/nvidia0, ...; containers get them mapped in), ROCm's (/dev/kfd) or WSL 2's (/dev/dxg).
GPU_DEVICE_NODES = ("/dev/nvidia*", "/dev/kfd", "/dev/dxg")


def no_gpu_device() -> bool:
    """True when this host has no GPU device node at all, so TensorFlow cannot see a GPU: known
    without starting it (~6 s).  False means a GPU may be there: ask TensorFlow."""
    import glob

    return not any(glob.glob(pattern) for pattern in GPU_DEVICE_NODES)


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

    cores = cpu_count()
    gpus = [] if train.device == "cpu" else tf.config.list_physical_devices("GPU")
    base = dict(replicas=replicas, physical_gpus=len(gpus), cpu_model=cpu_model(), cpu_count=cores,
                thread_policy=train.thread_policy, budget=budget)

    if gpus:
        model = tf.config.experimental.get_device_details(gpus[0]).get("device_name", "unknown GPU")
        if len(gpus) >= replicas:
            for g in gpus:
                tf.config.experimental.set_memory_growth(g, True)
            return DevicePlan(device_kind="gpu", devices=[f"/gpu:{i}" for i in range(replicas)],
                              gpu_model=model, emulated=False, **base)
        if not train.emulate:
            raise DeviceError(f"{replicas} replicas requested but this host has {len(gpus)} GPU(s) "
                              f"({model}); set train.emulate=true to split one GPU into logical GPUs")
        total = _gpu_memory_mb() or 16384
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
    matched = budget.kind == "core_matched"
    note = (f"{replicas} logical CPU devices, each replica on its own {budget.cores_per_replica} core(s) "
            f"({budget.budget_cores} pinned: {budget.affinity}): data parallelism on CPU cores, not a GPU result"
            if matched else
            f"{replicas} logical CPU devices sharing {cores} core(s) ({budget.kind}): emulation, not a GPU result")
    return DevicePlan(device_kind="logical_cpu", devices=[f"/cpu:{i}" for i in range(replicas)],
                      gpu_model=None, emulated=not matched, notes=[note], **base)


def make_strategy(plan: DevicePlan):
    """The default strategy for one replica, MirroredStrategy over the planned devices otherwise."""
    import tensorflow as tf

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
        gpus = import_tensorflow().config.list_physical_devices("GPU")
    from .config import AUTO_MAX_REPLICAS

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
