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

Fields (docs/pipeline.md, "The host as a dependency"): the CPU model and
architecture; the usable core *count* (affinity mask and cgroup quota, never
the core ids, which differ between equal machines); the visible GPUs' models,
count and driver; TensorFlow's CUDA build.  Left out on purpose: the hostname
and the time (they differ on every machine and every run), and the memory size
(equal machines report MemTotal a few MB apart, and it does not change these
timings unless the run swaps).
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

HOST_SCHEMA = 1


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


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
    without starting it (~6 s).  False means a GPU may be there: ask TensorFlow (devices.py)."""
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
        "cpu_model": cpu_model(),
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
FIELDS = {"host_schema": int, "cpu_model": str, "machine": str, "usable_cores": int, "gpu_count": int,
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


def label(desc: dict[str, Any]) -> str:
    """One line naming a host description: `AMD EPYC, 2 usable cores, no GPU`."""
    gpus = (f"{desc['gpu_count']}x {', '.join(desc['gpu_models'])} (driver {desc['gpu_driver']})"
            if desc.get("gpu_count") else "no GPU")
    return f"{desc.get('cpu_model', '?')}, {desc.get('usable_cores', '?')} usable core(s), {gpus}"


def run(out: Path) -> dict[str, Any]:
    """Stage `host`: write the description (only when its bytes change, so the file's mtime and
    DVC's hash stay put on the same machine)."""
    import json

    from .io import atomic_write
    from .log import get_logger

    desc = describe()
    text = json.dumps(desc, indent=2, sort_keys=True) + "\n"
    if not out.is_file() or out.read_text(encoding="utf-8") != text:
        atomic_write(out, text)
    get_logger("host").info(f"{label(desc)} -> {out}")
    return desc
