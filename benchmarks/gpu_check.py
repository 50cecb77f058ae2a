"""`make gpu-check`: the blog's settings on one GPU, prepared for a user's GPU host.

    .venv/bin/python -m benchmarks.gpu_check [--images 1280] [--deadline 480] [--out DIR]

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

    .venv/bin/python -m benchmarks.gpu_check --hypotheses [--rounds 2] [--images 3670] [--deadline 3600]

separates the report's two hypotheses for the blog's 4-GPU times (input-bound against
dispatch-bound) on a host with 4 GPUs: the blog's two 4-GPU runs (fit, and the custom loop with its
whole-epoch graph) from JPEG files decoded every epoch (cache off, as the blog) and from in-memory
tensors, beside single_fit on one GPU, in interleaved rounds (`rounds`, the order balanced).
Input-bound: from tensors both fall to the compute + all-reduce floor and meet.  Dispatch-bound:
fit stays above the custom loop, tensors or not.  Lands in reports/reference/gpu-<model>-hypotheses/.
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

from flowerbench.core.deadline import Deadline, DeadlineExceeded, wait
from flowerbench.core.host import visible_gpus  # (imports no TensorFlow)

REPO = Path(__file__).resolve().parents[1]

PY = sys.executable
RUNS = {"single_fit": ("fit", 1, False), "logical4_fit": ("fit", 4, False),
        "logical4_custom": ("custom", 4, False), "single_fit_mp": ("fit", 1, True)}
# --hypotheses: the blog's 4-GPU runs from files and from in-memory tensors, on 4 real GPUs
HYPOTHESES = {"single_fit": {"loop": "fit", "replicas": 1},
              "mirrored_fit": {"loop": "fit", "replicas": 4},
              "mirrored_custom": {"loop": "custom", "replicas": 4},
              "mirrored_fit_tensors": {"loop": "fit", "replicas": 4, "pipeline": "tensors"},
              "mirrored_custom_tensors": {"loop": "custom", "replicas": 4, "pipeline": "tensors"}}
HYPOTHESES_GPUS = 4


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


def hypotheses_params(images: int, rounds: int) -> dict:
    """The blog's settings on 4 real GPUs (no emulation), its pipeline decoding every JPEG every epoch
    (cache off) and its whole-epoch custom graph, measured in interleaved rounds."""
    p = params_for(images, False, HYPOTHESES)
    p["data"]["cache"] = False
    p["train"]["emulate"] = False
    p["rounds"] = {"count": rounds}
    p["report"]["baseline"] = "single_fit"
    return p


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
    ap.add_argument("--deadline", type=float,
                    help="seconds for the whole check (default 480; with --hypotheses 3600)")
    ap.add_argument("--out", type=Path, help="default: reports/reference/gpu-<model>[-hypotheses]")
    ap.add_argument("--hypotheses", action="store_true",
                    help="input-bound against dispatch-bound: the blog's 4-GPU runs from files and from tensors")
    ap.add_argument("--rounds", type=int, default=2, help="--hypotheses: interleaved rounds (at least 2)")
    a = ap.parse_args()
    a.deadline = a.deadline or (3600.0 if a.hypotheses else 480.0)
    t0 = time.monotonic()
    gpus = visible_gpus()
    if not gpus:
        need = f"{HYPOTHESES_GPUS} GPUs" if a.hypotheses else "one GPU"
        return refuse(f"no NVIDIA GPU visible on this host (nvidia-smi lists none, or CUDA_VISIBLE_DEVICES hides "
                      f"them); this check needs {need} and `make venv GPU=1`. No GPU run was made.")
    if a.hypotheses and len(gpus) < HYPOTHESES_GPUS:
        return refuse(f"--hypotheses needs {HYPOTHESES_GPUS} GPUs (the blog's); this host shows {len(gpus)}. "
                      f"No GPU run was made.")
    if a.hypotheses and a.rounds < 2:
        return refuse("--rounds: at least 2 (an interval needs two rounds)")
    import yaml

    probe = subprocess.run([PY, "-c", "import tensorflow as tf; g = tf.config.list_physical_devices('GPU'); "
                            "print(tf.config.experimental.get_device_details(g[0]).get('device_name', 'GPU') "
                            "if g else '')"], capture_output=True, text=True, timeout=120)
    model = probe.stdout.strip().splitlines()[-1] if probe.stdout.strip() else ""
    if probe.returncode != 0 or not model:
        return refuse("nvidia-smi sees a GPU but TensorFlow does not: install the GPU lock (`make venv GPU=1`, "
                      "requirements-gpu.lock) and check the driver")
    out = a.out or REPO / "reports" / "reference" / ("gpu-" + re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-")
                                                     + ("-hypotheses" if a.hypotheses else ""))
    work = Path(tempfile.mkdtemp(prefix="flowerbench-gpu-check-"))
    deadline = Deadline(a.deadline)
    if a.hypotheses:
        try:
            return hypotheses(a, work, out, model, gpus, deadline, t0)
        finally:
            shutil.rmtree(work, ignore_errors=True)
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


def hypotheses(a, work: Path, out: Path, model: str, gpus: list, deadline: Deadline, t0: float) -> int:
    """fetch, the rounds, the report in a scratch directory; copied to `out` only when all succeeded."""
    import yaml

    try:
        (work / "params.yaml").write_text(yaml.safe_dump(hypotheses_params(a.images, a.rounds), sort_keys=False))
        flowerbench = [PY, "-m", "flowerbench"]
        for step in ("fetch", "rounds", "report"):
            run([*flowerbench, step], work, deadline)
        staged = work / "out"
        staged.mkdir()
        shutil.copytree(work / "results", staged / "results")
        for f in ("report.md", "report.html", "metrics.json"):
            shutil.copy(work / "reports" / f, staged / f)
        shutil.copy(work / "params.yaml", staged / "params.yaml")
        (staged / "command.json").write_text(json.dumps(
            {"command": [PY, *sys.argv], "gpu_model": model, "visible_gpus": gpus, "images": a.images,
             "rounds": a.rounds, "wall_seconds": time.monotonic() - t0, "deadline_seconds": a.deadline},
            indent=2) + "\n")
        if out.exists():
            shutil.rmtree(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(staged), out)
        print(f"[gpu-check] {model}: the hypotheses' {len(HYPOTHESES)} runs x {a.rounds} rounds in "
              f"{time.monotonic() - t0:.0f} s -> {out}")
        return 0
    except (TimeoutError, RuntimeError) as exc:
        print(f"flowerbench gpu-check: error: {exc}; nothing written to {out}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
