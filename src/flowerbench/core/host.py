"""The machine a run measures, described by what changes a timing: stage `host`.

    python -m flowerbench host        # -> data/host.json (every training stage depends on it)

DVC reruns a stage when a dependency changes, and nothing in the code or the
params describes the hardware: without this file a fresh clone would hand back
the reference host's committed timings as if they were measured here.  The
`host` stage is `always_changed` and cheap (no TensorFlow import); it rewrites
`data/host.json`, and DVC compares the file's hash.  Same machine kind: the
same bytes, nothing reruns.  Another CPU, another core count (`taskset -c 0`
included), another GPU, driver or CUDA build of TensorFlow: every training
stage reruns, then the report.

Fields (docs/pipeline.md, "The host as a dependency"), host schema 2: the CPU's identity
(vendor, family, model and stepping from /proc/cpuinfo; the instruction-set extensions oneDNN
dispatches on, ISA_FLAGS; the L2 and L3 sizes from sysfs), the memory rounded to whole GiB, the
architecture, the usable core *count* (affinity mask and cgroup quota, never the core ids, which
differ between equal machines), the visible GPUs' models, count and driver, and TensorFlow's CUDA
build.  Left out on purpose, because they change on one machine: the CPU's clock (MHz), bogomips,
microcode, the hostname, the boot id, the time, and the model *name* (under virtualisation it is
masked: two CPU generations 2.5x apart both read "AMD EPYC").  Schema 1 held the model name alone:
results and references of schema 1 have an unknown identity (`identity_known`).

A speed index (speed_index: a fixed matrix product timed for about a second) is measured by each
training process and recorded in its result, as provenance: it never goes into data/host.json,
which every measuring stage depends on, or a noisy figure would rerun everything.

Where the files are read from (CPUINFO, MEMINFO, CPU_SYSFS) can be moved with the environment
variables FLOWERBENCH_CPUINFO, FLOWERBENCH_MEMINFO and FLOWERBENCH_CPU_SYSFS: the tests describe a
faked machine this way (another CPU measures again, the same one reuses).
"""

from __future__ import annotations

import ast
import math
import os
import platform
import subprocess
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Optional

HOST_SCHEMA = 2

CPUINFO, MEMINFO = Path("/proc/cpuinfo"), Path("/proc/meminfo")
CPU_SYSFS = Path("/sys/devices/system/cpu")
# The instruction-set extensions oneDNN (and Eigen) choose their kernels by: a CPU with another set
# runs other code.  Only these are kept from /proc/cpuinfo's flags (the rest changes with kernels
# and hypervisors without changing a timing).
ISA_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx_vnni", "avx512f", "avx512cd", "avx512bw", "avx512dq",
             "avx512vl", "avx512ifma", "avx512vbmi", "avx512_vbmi2", "avx512_vnni", "avx512_bf16", "avx512_fp16",
             "avx512_bitalg", "avx512_vpopcntdq", "amx_tile", "amx_bf16", "amx_int8", "amx_fp16")


def _path(env: str, default: Path) -> Path:
    return Path(os.environ.get(env) or default)


def _cpuinfo_first() -> dict[str, str]:
    """The first processor's block of /proc/cpuinfo as key -> value ({} where unreadable)."""
    out: dict[str, str] = {}
    try:
        text = _path("FLOWERBENCH_CPUINFO", CPUINFO).read_text(encoding="utf-8")
    except OSError:
        return out
    for line in text.splitlines():
        if not line.strip():
            if out:
                break
            continue
        key, sep, value = line.partition(":")
        if sep:
            out.setdefault(key.strip(), value.strip())
    return out


def _cache_kib(level: int) -> Optional[int]:
    """The size of cpu0's unified (or data) cache of `level` in KiB, from sysfs; None where absent."""
    for index in sorted(_path("FLOWERBENCH_CPU_SYSFS", CPU_SYSFS).glob("cpu0/cache/index*")):
        try:
            if int((index / "level").read_text()) != level or (index / "type").read_text().strip() == "Instruction":
                continue
            size = (index / "size").read_text().strip().upper()
        except (OSError, ValueError):
            continue
        scale = {"K": 1, "M": 1024, "G": 1024 * 1024}.get(size[-1:], None)
        try:
            return int(size[:-1]) * scale if scale else int(size) // 1024
        except ValueError:
            return None
    return None


def memory_gib() -> Optional[int]:
    """MemTotal rounded to whole GiB (equal machines differ by a few MB), None where unreadable."""
    try:
        for line in _path("FLOWERBENCH_MEMINFO", MEMINFO).read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 ** 2)
    except (OSError, ValueError, IndexError):
        pass
    return None


def cpu_identity() -> dict[str, Any]:
    """What tells one CPU generation from another: vendor, family, model, stepping, the ISA
    extensions of ISA_FLAGS it has, the L2 and L3 sizes (KiB).  No clock, bogomips, microcode or
    model name (module docstring)."""
    info = _cpuinfo_first()

    def number(key: str) -> Optional[int]:
        try:
            return int(info[key], 0)
        except (KeyError, ValueError):
            return None

    flags = set(info.get("flags", "").split())
    return {"vendor": info.get("vendor_id") or platform.processor() or None, "family": number("cpu family"),
            "model": number("model"), "stepping": number("stepping"),
            "isa": [f for f in ISA_FLAGS if f in flags], "l2_kib": _cache_kib(2), "l3_kib": _cache_kib(3)}


def cpu_model() -> str:
    """The CPU's model name as /proc/cpuinfo gives it (masked under virtualisation: provenance only)."""
    return _cpuinfo_first().get("model name") or platform.processor() or platform.machine()


def affinity() -> list[int]:
    """The core ids this process may run on (its affinity mask), sorted."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return list(range(os.cpu_count() or 1))


CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")


def cgroup_cpu_limit(root: Path = CGROUP_ROOT, proc_cgroup: Path = PROC_CGROUP) -> Optional[float]:
    """The CPU quota of this process's cgroup in cores (cgroup v2 cpu.max or v1 cfs_quota), or None.
    `proc_cgroup` lists the process's cgroups (/proc/self/cgroup), `root` is where they are mounted."""
    candidates = []
    try:
        lines = proc_cgroup.read_text(encoding="utf-8").splitlines()
    except OSError:
        lines = []
    for line in lines:
        _, controllers, rel = line.split(":", 2)
        rel = rel.lstrip("/")
        if controllers == "":                        # v2: one unified hierarchy
            candidates.append(("v2", root / rel / "cpu.max"))
            candidates.append(("v2", root / "cpu.max"))
        elif "cpu" in controllers.split(","):        # v1: cpu (or cpu,cpuacct)
            base = root / controllers
            candidates.append(("v1", base / rel))
            candidates.append(("v1", base))
    for kind, place in candidates:
        try:
            if kind == "v2":
                quota, period = place.read_text(encoding="utf-8").split()[:2]
                if quota != "max":
                    return int(quota) / int(period)
            else:
                quota = int((place / "cpu.cfs_quota_us").read_text(encoding="utf-8"))
                period = int((place / "cpu.cfs_period_us").read_text(encoding="utf-8"))
                if quota > 0:
                    return quota / period
        except (OSError, ValueError):
            continue
    return None


def usable_cores(root: Path = CGROUP_ROOT, proc_cgroup: Path = PROC_CGROUP) -> int:
    """How many cores this process can keep busy: its affinity mask, capped by a cgroup quota
    (a quota of 1.5 cores counts as 1: half a core is not a core a replica can own)."""
    count = len(affinity())
    limit = cgroup_cpu_limit(root, proc_cgroup)
    if limit is not None:
        count = min(count, max(1, math.floor(limit)))
    return count


def usable_core_ids(desc: dict[str, Any]) -> list[int]:
    """The ids of the cores a description's `usable_cores` counts: the first of the affinity mask."""
    return affinity()[:desc["usable_cores"]]


def _cuda_visible() -> Optional[list[str]]:
    """The GPU ids CUDA_VISIBLE_DEVICES names (an empty value or -1 hides every GPU); None if unset."""
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given is None:
        return None
    return [g.strip() for g in given.split(",") if g.strip() and g.strip() != "-1"]


def visible_gpus() -> list[str]:
    """The GPU ids this process may use, without importing TensorFlow: CUDA_VISIBLE_DEVICES when
    set, else one per GPU `nvidia-smi` lists; [] without a driver."""
    given = _cuda_visible()
    return given if given is not None else [str(i) for i, _ in enumerate(_nvidia_smi_gpus())]


def _nvidia_smi(query: str, *formats: str) -> Optional[str]:
    """What `nvidia-smi --query-gpu=QUERY` prints (CSV, no header); None without nvidia-smi or a driver."""
    fmt = ",".join(("csv", "noheader", *formats))
    try:
        return subprocess.run(["nvidia-smi", f"--query-gpu={query}", f"--format={fmt}"],
                              capture_output=True, text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def _nvidia_smi_gpus() -> list[tuple[str, str]]:
    """(model, driver) of every GPU the driver shows; [] without nvidia-smi or a driver."""
    out = _nvidia_smi("name,driver_version") or ""
    rows = [tuple(part.strip() for part in line.split(",", 1)) for line in out.splitlines() if "," in line]
    return [(r[0], r[1]) for r in rows]


def gpu_memory_mb() -> Optional[int]:
    """The first GPU's memory as the driver reports it; None without nvidia-smi or a driver."""
    try:
        return int((_nvidia_smi("memory.total", "nounits") or "").split()[0])
    except (ValueError, IndexError):
        return None


# A process reaches a GPU only through one of these device nodes: NVIDIA's driver (/dev/nvidiactl,
# /dev/nvidia0, ...; containers get them mapped in), ROCm's (/dev/kfd) or WSL 2's (/dev/dxg).
GPU_DEVICE_NODES = ("/dev/nvidia*", "/dev/kfd", "/dev/dxg")


def no_gpu_device() -> bool:
    """True when this host has no GPU device node at all, so TensorFlow cannot see a GPU: known
    without starting it (~6 s).  False means a GPU may be there: ask TensorFlow (training/devices.py)."""
    import glob

    return not any(glob.glob(pattern) for pattern in GPU_DEVICE_NODES)


def tensorflow_cuda_build() -> dict[str, Any]:
    """TensorFlow's build facts (CUDA or not, CUDA and cuDNN versions) from its build_info module's
    source, without importing TensorFlow (an import costs ~6 s; this stage must stay cheap)."""
    spec = find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        return {"installed": False}
    path = Path(next(iter(spec.submodule_search_locations))) / "python" / "platform" / "build_info.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return {"installed": True, "build_info": "unreadable"}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "build_info" for t in node.targets):
            value = node.value  # a dict literal, or collections.OrderedDict([(key, value), ...])
            if isinstance(value, ast.Call) and value.args:
                value = value.args[0]
            try:
                info = dict(ast.literal_eval(value))
            except (ValueError, TypeError):
                break
            return {"installed": True, "is_cuda_build": bool(info.get("is_cuda_build", False)),
                    "cuda_version": info.get("cuda_version"), "cudnn_version": info.get("cudnn_version")}
    return {"installed": True, "build_info": "unreadable"}


def describe() -> dict[str, Any]:
    """The host description: byte-identical (as JSON) on machines of one kind."""
    gpus = _nvidia_smi_gpus()
    visible = _cuda_visible()
    if visible is not None:
        gpus = [g for i, g in enumerate(gpus) if str(i) in visible]
    return {
        "host_schema": HOST_SCHEMA,
        "cpu": cpu_identity(),
        "memory_gib": memory_gib(),
        "machine": platform.machine(),
        "usable_cores": usable_cores(),
        "gpu_count": len(gpus),
        "gpu_models": sorted({m for m, _ in gpus}),
        "gpu_driver": sorted({d for _, d in gpus})[0] if gpus else None,
        "tensorflow_build": tensorflow_cuda_build(),
    }


class HostError(RuntimeError):
    """data/host.json is unreadable or not a host description of this schema (one line naming it)."""


# field -> the types a description of HOST_SCHEMA holds there
FIELDS = {"host_schema": int, "cpu": dict, "memory_gib": (int, type(None)), "machine": str, "usable_cores": int, "gpu_count": int,
          "gpu_models": list, "gpu_driver": (str, type(None)), "tensorflow_build": dict}


def load(path: Path) -> dict[str, Any]:
    """A host description written by the `host` stage, checked: JSON, this schema, every field of its
    type, at least one usable core, no more GPU models than GPUs."""
    import json

    try:
        desc = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HostError(f"{path}: not found; run `python -m flowerbench host` (make reproduce does)") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise HostError(f"{path}: not a JSON host description ({exc}); rerun `python -m flowerbench host`") from None
    if not isinstance(desc, dict) or desc.get("host_schema") != HOST_SCHEMA:
        got = desc.get("host_schema") if isinstance(desc, dict) else type(desc).__name__
        raise HostError(f"{path}: host_schema {got!r}, this code reads {HOST_SCHEMA}; "
                        f"rerun `python -m flowerbench host`")
    for key, kind in FIELDS.items():
        if key not in desc or not isinstance(desc[key], kind) or isinstance(desc[key], bool):
            raise HostError(f"{path}: field {key} is missing or of the wrong type; rerun `python -m flowerbench host`")
    if desc["usable_cores"] < 1 or desc["gpu_count"] < 0 or len(desc["gpu_models"]) > desc["gpu_count"]:
        raise HostError(f"{path}: impossible host ({desc['usable_cores']} usable cores, {desc['gpu_count']} GPUs, "
                        f"{len(desc['gpu_models'])} GPU models); rerun `python -m flowerbench host`")
    return desc


def identity_known(desc: dict[str, Any]) -> bool:
    """True for a description of this schema (it tells CPU generations apart); schema 1 held only
    the (maskable) model name: its identity is unknown."""
    return isinstance(desc, dict) and desc.get("host_schema") == HOST_SCHEMA and isinstance(desc.get("cpu"), dict)


def same_identity(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two descriptions of one machine kind: both known and equal (an unknown one matches nothing)."""
    return identity_known(a) and identity_known(b) and a == b


def cpu_label(desc: dict[str, Any]) -> str:
    """The CPU of a description in words: `AuthenticAMD family 25 model 17 stepping 1, AVX-512 (bf16,
    vnni), L2 1 MiB, L3 32 MiB`; schema 1: its model name and "identity unknown"."""
    if not identity_known(desc):
        return f"{desc.get('cpu_model', '?')} (identity unknown: host schema {desc.get('host_schema', '?')})"
    c = desc["cpu"]
    isa = set(c.get("isa", []))
    if "avx512f" in isa:
        subsets = [s for s in ("bf16", "vnni", "fp16") if f"avx512_{s}" in isa]
        vector = "AVX-512" + (f" ({', '.join(subsets)})" if subsets else "")
    else:
        vector = "AVX2" if "avx2" in isa else ("AVX" if "avx" in isa else "no AVX")
    amx = ", AMX" if "amx_tile" in isa else ""

    def size(kib: Optional[int]) -> str:
        return "?" if kib is None else (f"{kib // 1024} MiB" if kib % 1024 == 0 else f"{kib} KiB")

    return (f"{c.get('vendor')} family {c.get('family')} model {c.get('model')} stepping {c.get('stepping')}, "
            f"{vector}{amx}, L2 {size(c.get('l2_kib'))}, L3 {size(c.get('l3_kib'))}")


def label(desc: dict[str, Any]) -> str:
    """One line naming a host description: its CPU (cpu_label), memory, usable cores and GPUs."""
    gpus = (f"{desc['gpu_count']}x {', '.join(desc['gpu_models'])} (driver {desc['gpu_driver']})"
            if desc.get("gpu_count") else "no GPU")
    mem = f", {desc['memory_gib']} GiB" if desc.get("memory_gib") is not None else ""
    return f"{cpu_label(desc)}{mem}, {desc.get('usable_cores', '?')} usable core(s), {gpus}"


def speed_index(seconds: float = 1.0, n: int = 96) -> dict[str, Any]:
    """A fixed matrix product (n x n, float64) repeated for about `seconds`: its median rate in GFLOP/s
    over 5 slices, and the slices' spread.  numpy's einsum without BLAS, so it runs on this thread
    alone, on the cores the process is pinned to (a BLAS pool started before the pin could lend it
    others).  Recorded by each training process before it trains, as provenance (which machine, how
    fast that minute); never part of the host description."""
    import statistics
    import time

    import numpy as np

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))

    def product():
        return np.einsum("ij,jk->ik", a, b, optimize=False)

    product()                                    # first call: set-up, not timed
    rates = []
    for _ in range(5):
        count, t0 = 0, time.perf_counter()
        while (dt := time.perf_counter() - t0) < seconds / 5:
            product()
            count += 1
        rates.append(2.0 * n ** 3 * count / dt / 1e9)
    return {"gflops": round(statistics.median(rates), 3), "low": round(min(rates), 3), "high": round(max(rates), 3),
            "matrix": n, "seconds": seconds, "method": "numpy einsum, no BLAS, one thread"}


def run(out: Path) -> dict[str, Any]:
    """Stage `host`: write the description (only when its bytes change, so the file's mtime and
    DVC's hash stay put on the same machine)."""
    import json

    from flowerbench.core.io import atomic_write
    from flowerbench.core.log import get_logger

    desc = describe()
    text = json.dumps(desc, indent=2, sort_keys=True) + "\n"
    if not out.is_file() or out.read_text(encoding="utf-8") != text:
        atomic_write(out, text)
    get_logger("host").info(f"{label(desc)} -> {out}")
    return desc
