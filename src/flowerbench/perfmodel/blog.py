"""The blog post under study, in one place: what it ran, the audit of its claims against its own
times, and the model's GPU form applied to its 4-GPU run.

Its published times, its claimed reductions and the model's inputs for its hardware are params
(report.blog_seconds, report.blog_claimed_reduction_pct, report.scaling_model in params.yaml),
so a user can see and change them; what it ran is fixed by its text and lives here.  The GPU
form is forms.gpu_epoch, the model this project tests on its own host; nothing here draws or
writes words (report/blog_explained.py and report/audit.py do).
"""

from __future__ import annotations

import math

from flowerbench.analysis.metrics import reduction_pct
from flowerbench.perfmodel.forms import gpu_epoch

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
    """The blog's 4-GPU run predicted by the GPU form (forms.gpu_epoch), one row per interconnect x
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


def tie_pct(errors_pct: list[float]) -> float:
    """The report's one tie rule for the blog's numbers: a bound within this many % of a time explains
    it, and two times closer than this are not told apart.  The larger of EXPLAINS_WITHIN and the
    largest error the same model made on this host (a bound cannot be trusted closer than that)."""
    return max([EXPLAINS_WITHIN * 100.0, *(abs(e) for e in errors_pct)])


def _within(predicted_range: tuple[float, float], seconds: float, tie: float) -> bool:
    lo, hi = predicted_range
    return lo * (1 - tie / 100.0) <= seconds <= hi * (1 + tie / 100.0)


def hypotheses(blog_seconds: dict[str, float], model_out: dict, tie: float) -> dict:
    """Input-bound against dispatch-bound, on the blog's 4-GPU numbers and one tie rule.

    Compute + all-reduce alone (C, from the GPU form) is the floor both share.  Input-bound: every
    epoch decodes every JPEG on the host, so fit and the custom loop take the input time alike
    (the blog-era pipeline on 1-2 cores) and their ratio is 1.  Dispatch-bound: the host's work per
    step call (fit: one tf.function call per step; the blog's custom loop: one per epoch) adds
    S x d to C, so fit is slower by S x (d_fit - d_custom) and the custom loop sits near C.  d is
    what the blog's times leave above C: no GPU measured it here, so it is an upper bound from the
    residual, not a prediction.  What separates them: the same runs fed in-memory tensors."""
    compute = (min(model_out["compute_link_seconds"].values()), max(model_out["compute_link_seconds"].values()))
    inputs = (min(model_out["input_seconds"].values()), max(model_out["input_seconds"].values()))
    steps = model_out["steps"]
    fit, custom = blog_seconds.get("mirrored_fit"), blog_seconds.get("mirrored_custom")
    out: dict = {"tie_pct": tie, "compute_seconds": compute, "input_seconds": inputs, "steps": steps, "runs": {}}
    for name, t in (("mirrored_fit", fit), ("mirrored_custom", custom)):
        if t is None:
            continue
        out["runs"][name] = {
            "seconds": t,
            "compute_explains": _within(compute, t, tie),
            "compute_gap_pct": (compute[1] - t) / t * 100.0,     # the nearer (slower-link) bound
            "input_explains": _within(inputs, t, tie),
            "residual_per_step_seconds": (max(0.0, t - compute[1]) / steps, max(0.0, t - compute[0]) / steps)}
    if fit is not None and custom is not None:
        ratio = fit / custom
        out["fit_over_custom"] = ratio
        out["fit_slower_pct"] = (ratio - 1) * 100
        out["ratio_is_a_tie"] = abs(ratio - 1.0) * 100.0 <= tie
        # input-bound predicts a ratio of 1; dispatch-bound predicts fit slower: both hold when the
        # measured ratio is a tie with 1, only dispatch when it is not
        out["input_bound_consistent"] = out["ratio_is_a_tie"] and all(
            r["input_explains"] for r in out["runs"].values())
        out["dispatch_bound_consistent"] = ratio >= 1.0 and out["runs"]["mirrored_custom"]["compute_explains"]
    return out


def explained(blog_seconds: dict[str, float], m, test_errors_pct: list[float]) -> dict:
    """The blog's 4-GPU run explained (what the report's section shows): the GPU form's rows (model),
    the tie rule from this host's test errors (tie_pct) and the two hypotheses judged by it."""
    out = model(blog_seconds, m)
    tie = tie_pct(test_errors_pct)
    compute = list(out["compute_link_seconds"].values())
    floor = max(compute)
    blog_n = out["blog_implied_images_per_second"]
    names = sorted(blog_n, key=lambda k: blog_seconds[k])
    rates = m.blog_input_images_per_second
    return {"model": out, "tie_pct": tie, "hypotheses": hypotheses(blog_seconds, out, tie),
            # the compute + all-reduce floor against the blog's N-GPU times, and their decoding rates
            "floor_seconds": (min(compute), floor), "runs": names,
            "floor_gap_pct": {k: (floor - blog_seconds[k]) / blog_seconds[k] * 100 for k in names},
            "floor_explains": [k for k in names if blog_seconds[k] <= (1 + tie / 100.0) * floor],
            "pipeline_rates": (min(rates.values()), max(rates.values())),
            "rates_within_pipeline": all(min(rates.values()) <= blog_n[k] <= max(rates.values()) for k in names),
            # this host's test errors, nearest and furthest from zero (how sure the model is)
            "test_errors_pct": None if not test_errors_pct else (min(test_errors_pct, key=abs),
                                                                 max(test_errors_pct, key=abs),
                                                                 min(test_errors_pct), max(test_errors_pct))}
