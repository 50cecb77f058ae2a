"""The blog post under study, in one place: what it ran, the audit of its claims against its own
times, and the model's GPU form applied to its 4-GPU run.

Its published times, its claimed reductions and the model's inputs for its hardware are params
(report.blog_seconds, report.blog_claimed_reduction_pct, report.scaling_model in params.yaml),
so a user can see and change them; what it ran is fixed by its text and lives here.  The GPU
form is predict.gpu_epoch, the model this project tests on its own host; nothing here draws or
writes words (report/blog_explained.py and report/audit.py do).
"""

from __future__ import annotations

import math

from .metrics import reduction_pct
from .predict import gpu_epoch

# Its single-GPU fit() run: the blog's reductions are against it, whatever report.baseline is.
BASELINE = "single_fit"
# What the blog ran (its text): the same for every variant but the GPU count.
HARDWARE = "4x V100"
SETTINGS = {"model": "resnet50", "image_size": 224, "images_per_epoch": 3670, "batch_size_per_replica": 64,
            "warmup_epochs": 1, "epochs": 10, "hardware": "4x NVIDIA V100 (one per replica)", "data": "flower_photos"}
REPLICAS = {"single_fit": 1, "mirrored_fit": 4, "mirrored_custom": 4}
# A bound that explains a time must come within this of it (the report's tie rule for the blog's
# numbers: a gap smaller than this is not evidence of another limit).
EXPLAINS_WITHIN = 0.15


def timed_images() -> int:
    """Images the blog's timed window processes: every image, every timed epoch."""
    return SETTINGS["images_per_epoch"] * SETTINGS["epochs"]


def audit(blog_seconds: dict[str, float], claimed_pct: dict[str, float]) -> list[dict]:
    """Every blog variant with what its own times imply: img/s (images x timed epochs / seconds),
    speedup and reduction vs its single-GPU fit, efficiency (speedup / GPUs), and the claimed
    reduction beside the derived one where the blog claims one."""
    base = blog_seconds[BASELINE]
    rows = []
    for name, secs in blog_seconds.items():
        gpus = REPLICAS.get(name)
        row = {"variant": name, "blog_seconds": secs, "baseline_seconds": base, "gpus": gpus,
               "images_per_second": timed_images() / secs, "speedup": base / secs,
               "efficiency": None if gpus is None else base / secs / gpus,
               "derived_reduction_pct": round(reduction_pct(base, secs), 1),
               "claimed_reduction_pct": claimed_pct.get(name), "discrepancy_pct_points": None}
        if row["claimed_reduction_pct"] is not None:
            row["discrepancy_pct_points"] = round(row["claimed_reduction_pct"] - row["derived_reduction_pct"], 1)
        rows.append(row)
    return rows


def model(blog_seconds: dict[str, float], m) -> dict:
    """The blog's 4-GPU run predicted by the GPU form (predict.gpu_epoch), one row per interconnect x
    input pipeline of `m` (ScalingModelParams).  Weak scaling, as the blog: each GPU does 1/N of every
    epoch at a fixed per-GPU batch, so the compute of all steps is the single-GPU time / N; each step
    adds one ring all-reduce of the fp32 gradients; the host decodes every image of every epoch while
    the GPUs compute, so the slower of the two bounds the run."""
    s = SETTINGS
    t1 = blog_seconds[BASELINE]
    work = timed_images()
    steps = math.ceil(s["images_per_epoch"] / (s["batch_size_per_replica"] * m.gpus)) * s["epochs"]
    compute = t1 / m.gpus
    gradient_mb = m.parameters * 4 / 1e6
    rows = []
    for link, allreduce_s in m.allreduce_seconds_per_step.items():
        for cores, rate in m.blog_input_images_per_second.items():
            e = gpu_epoch(steps, work, compute / steps, allreduce_s, rate)
            rows.append({"interconnect": link, "input": f"blog-era pipeline, {cores}", "compute_seconds": e["device"],
                         "input_seconds": e["input"], "predicted_seconds": e["total"],
                         "efficiency": t1 / (e["total"] * m.gpus), "bound": e["bound"]})
    compute_link = {r["interconnect"]: r["compute_seconds"] for r in rows}
    fastest_compute = min(compute_link.values())
    blog_n = {k: v for k, v in blog_seconds.items() if REPLICAS.get(k, 1) == m.gpus}
    return {"rows": rows, "steps": steps, "compute_seconds": compute, "gradient_mb": gradient_mb,
            "ring_mb_per_step": 2 * (m.gpus - 1) / m.gpus * gradient_mb,
            "images": work, "single_gpu_images_per_second": work / t1,
            "needed_images_per_second": work / fastest_compute,
            "cores_needed_ours": work / fastest_compute / m.ours_input_images_per_second_per_core,
            "blog_implied_images_per_second": {k: work / v for k, v in blog_n.items()},
            "input_seconds": {cores: work / rate for cores, rate in m.blog_input_images_per_second.items()},
            "compute_link_seconds": compute_link, "fastest_compute_seconds": fastest_compute}
