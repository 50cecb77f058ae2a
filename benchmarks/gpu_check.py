"""`make gpu-check`: the blog's settings on one GPU, prepared for a user's GPU host.

    .venv/bin/python benchmarks/gpu_check.py [--images 1280] [--deadline 480] [--out DIR]

Needs one NVIDIA GPU and the GPU lock (`make venv GPU=1`).  Without a GPU it refuses at once, in
one line, before TensorFlow is imported.  With one, in a scratch directory: the stand-in at the
real photos' typical size (320 px JPEGs), the blog's settings (ResNet50, 224 px, 64 per replica,
1 warm-up + 2 timed epochs), and these runs, each `python -m flowerbench train` in its own process:

  single_fit       fit() on the one GPU                                 (device kind gpu)
  logical4_fit     fit() on 4 logical GPUs carved from that GPU         (logical_gpu: one chip)
  logical4_custom  the custom loop on the same 4 logical GPUs           (logical_gpu)
  single_fit_mp    single_fit with mixed precision (mixed_float16)      (gpu)

then the report.  Everything lands in reports/reference/gpu-<model>/ (results, report, figures,
command.json with the exact command, the params and the wall time).  The whole check has a
deadline (default 8 min, TensorFlow start-up included): past it every run is killed.
No GPU run of this script has been made by the project yet.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from flowerbench.deadline import Deadline, DeadlineExceeded, wait  # noqa: E402
from flowerbench.host import visible_gpus  # noqa: E402  (imports no TensorFlow)

PY = sys.executable
RUNS = {"single_fit": ("fit", 1, False), "logical4_fit": ("fit", 4, False),
        "logical4_custom": ("custom", 4, False), "single_fit_mp": ("fit", 1, True)}


def refuse(msg: str) -> int:
    print(f"flowerbench gpu-check: error: {msg}", file=sys.stderr)
    return 2


def params_for(images: int, mixed_precision: bool, variants: dict) -> dict:
    return {"seed": 123,
            "data": {"source": "synthetic", "standin_px": 320, "image_size": 224, "max_images": images},
            "model": {"arch": "resnet50"},
            "train": {"batch_size_per_replica": 64, "warmup_epochs": 1, "epochs": 2, "repeats": 1,
                      "device": "gpu", "emulate": True, "mixed_precision": mixed_precision,
                      "custom_graph": "epoch", "verbose": "quiet"},
            "variants": variants, "sweep": {"replicas": []}, "multiworker": {"workers": 0},
            "report": {"baseline": next(iter(variants))}}


def run(cmd: list[str], cwd: Path, deadline: Deadline) -> None:
    if deadline.expired():
        raise TimeoutError("the check's deadline passed before this run started")
    proc = subprocess.Popen(cmd, cwd=cwd, start_new_session=True)
    try:
        rc, = wait([proc], deadline)
    except DeadlineExceeded:
        raise TimeoutError(f"{' '.join(cmd[2:])} ran past the check's deadline and was killed") from None
    if rc != 0:
        raise RuntimeError(f"{' '.join(cmd[2:])} failed with exit code {rc}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=1280)
    ap.add_argument("--deadline", type=float, default=480.0, help="seconds for the whole check")
    ap.add_argument("--out", type=Path, help="default: reports/reference/gpu-<model>")
    a = ap.parse_args()
    t0 = time.monotonic()
    gpus = visible_gpus()
    if not gpus:
        return refuse("no NVIDIA GPU visible on this host (nvidia-smi lists none, or CUDA_VISIBLE_DEVICES hides "
                      "them); this check needs one GPU and `make venv GPU=1`. No GPU run was made.")
    import yaml

    probe = subprocess.run([PY, "-c", "import tensorflow as tf; g = tf.config.list_physical_devices('GPU'); "
                            "print(tf.config.experimental.get_device_details(g[0]).get('device_name', 'GPU') "
                            "if g else '')"], capture_output=True, text=True, timeout=120)
    model = probe.stdout.strip().splitlines()[-1] if probe.stdout.strip() else ""
    if probe.returncode != 0 or not model:
        return refuse("nvidia-smi sees a GPU but TensorFlow does not: install the GPU lock (`make venv GPU=1`, "
                      "requirements-gpu.lock) and check the driver")
    out = a.out or REPO / "reports" / "reference" / ("gpu-" + re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-"))
    work = Path(tempfile.mkdtemp(prefix="flowerbench-gpu-check-"))
    deadline = Deadline(a.deadline)
    try:
        main_variants = {n: {"loop": loop, "replicas": r} for n, (loop, r, mp) in RUNS.items() if not mp}
        mp_variants = {n: {"loop": loop, "replicas": r} for n, (loop, r, mp) in RUNS.items() if mp}
        (work / "params.yaml").write_text(yaml.safe_dump(params_for(a.images, False, main_variants), sort_keys=False))
        (work / "params-mp.yaml").write_text(yaml.safe_dump(params_for(a.images, True, mp_variants), sort_keys=False))
        flowerbench = [PY, "-m", "flowerbench"]
        run([*flowerbench, "fetch"], work, deadline)
        for name, (_, _, mp) in RUNS.items():
            run([*flowerbench, "train", "--variant", name, "--params", "params-mp.yaml" if mp else "params.yaml"],
                work, deadline)
        run([*flowerbench, "report"], work, deadline)
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        shutil.copytree(work / "results", out / "results")
        for f in ("report.md", "report.html", "metrics.json"):
            shutil.copy(work / "reports" / f, out / f)
        shutil.copytree(work / "reports" / "figures", out / "figures")
        shutil.copy(work / "params.yaml", out / "params.yaml")
        shutil.copy(work / "params-mp.yaml", out / "params-mp.yaml")
        (out / "command.json").write_text(json.dumps(
            {"command": [PY, *sys.argv], "gpu_model": model, "visible_gpus": gpus, "images": a.images,
             "wall_seconds": time.monotonic() - t0, "deadline_seconds": a.deadline}, indent=2) + "\n")
        print(f"[gpu-check] {model}: {len(RUNS)} runs in {time.monotonic() - t0:.0f} s -> {out}")
        return 0
    except (TimeoutError, RuntimeError) as exc:
        print(f"flowerbench gpu-check: error: {exc}; nothing written to {out}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
