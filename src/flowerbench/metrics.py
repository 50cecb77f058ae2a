"""The report's numbers, computed from results alone: no files, no figures, no text.

Speedup, reduction and scaling efficiency per variant, the blog's claims
re-derived from its own times, the input-pipeline ceiling, the tidy per-epoch
table, the `dvc plots` data and the numbers-only `reports/metrics.json`.
"""

from __future__ import annotations

from typing import Any

from . import paths
from .results import Result

# Params that must agree between results for their timings to be comparable.
COMPARABLE = ("seed", "data", "model", "train")
# The blog's own baseline, its single-GPU fit() run: its claimed reductions are against it,
# whatever report.baseline this run compares against.
BLOG_BASELINE = "single_fit"


def reduction_pct(baseline_s: float, s: float) -> float:
    return (1.0 - s / baseline_s) * 100.0


def mixed_params(results: list[Result]) -> list[str]:
    """Variants whose comparable params differ from the first result's (`train.verbose` aside)."""
    def key(r: Result) -> dict:
        p = dict(r.params)
        p["train"] = {k: v for k, v in p.get("train", {}).items() if k != "verbose"}
        return {k: p.get(k) for k in COMPARABLE}
    ref = key(results[0])
    return [r.variant for r in results[1:] if key(r) != ref]


def blog_audit(blog_seconds: dict[str, float], claimed_pct: dict[str, float]) -> list[dict]:
    """The blog's claimed reductions re-derived from its own times."""
    base = blog_seconds[BLOG_BASELINE]
    rows = []
    for name, claimed in claimed_pct.items():
        derived = round(reduction_pct(base, blog_seconds[name]), 1)
        rows.append({"variant": name, "blog_seconds": blog_seconds[name], "baseline_seconds": base,
                     "claimed_reduction_pct": claimed, "derived_reduction_pct": derived,
                     "discrepancy_pct_points": round(claimed - derived, 1)})
    return rows


def compute_metrics(results: list[Result], baseline: str) -> dict[str, dict]:
    """Per variant: timed seconds, img/s, speedup and reduction vs `baseline` and vs the
    single-replica run of the same loop and input, and scaling efficiency (speedup / replicas).
    KeyError if the baseline has no result (the caller names it)."""
    by = {r.variant: r for r in results}
    base_t = by[baseline].timed_seconds
    singles: dict[tuple[str, str], Result] = {}
    for r in results:  # declared variants come first, so a declared single run wins over a sweep's
        if r.replicas == 1:
            singles.setdefault((r.loop, r.pipeline), r)
    out = {}
    for r in results:
        t = r.timed_seconds
        m: dict[str, Any] = {"loop": r.loop, "replicas": r.replicas, "device_kind": r.device_kind,
                             "timed_seconds": round(t, 6), "images_per_second": round(r.images_per_second, 6),
                             "speedup_vs_baseline": round(base_t / t, 6),
                             "reduction_vs_baseline_pct": round(reduction_pct(base_t, t), 6)}
        single = singles.get((r.loop, r.pipeline))
        if single is not None:
            s = single.timed_seconds / t
            m.update(single_same_loop=single.variant, speedup_vs_single_same_loop=round(s, 6),
                     reduction_vs_single_same_loop_pct=round(reduction_pct(single.timed_seconds, t), 6),
                     scaling_efficiency=round(s / r.replicas, 6))
        out[r.variant] = m
    return out


def input_ceiling(results: list[Result]) -> list[dict]:
    """Each synthetic-input result beside the files result it shadows (same loop, replicas, batch).

    real / synthetic near 1 means the JPEG pipeline keeps up with the model; well above 1
    means training waits for input (bench target: <= 1.05)."""
    same = ("loop", "replicas", "global_batch_size", "custom_graph")
    rows = []
    for s in (r for r in results if r.pipeline == "synthetic"):
        twins = [r for r in results if r.pipeline == "files" and all(getattr(r, k) == getattr(s, k) for k in same)]
        if twins:
            f = twins[0]
            rows.append({"real": f.variant, "synthetic": s.variant, "loop": s.loop, "replicas": s.replicas,
                         "real_seconds": f.timed_seconds, "synthetic_seconds": s.timed_seconds,
                         "real_images_per_second": f.images_per_second,
                         "synthetic_images_per_second": s.images_per_second,
                         "real_over_synthetic": f.timed_seconds / s.timed_seconds})
    return rows


def tidy(results: list[Result]):
    """One row per variant x epoch (warm-up rows: phase=warmup, epoch 0)."""
    import pandas as pd

    rows = []
    for r in results:
        common = {"variant": r.variant, "loop": r.loop, "replicas": r.replicas, "device_kind": r.device_kind}
        rows.append({**common, "phase": "warmup", "repeat": 0, "epoch": 0, "seconds": r.warmup_seconds,
                     "images": r.images_per_epoch * r.warmup_epochs})
        for i, (s, n, loss) in enumerate(zip(r.epoch_seconds, r.epoch_images, r.epoch_loss)):
            rows.append({**common, "phase": "timed", "repeat": i // r.epochs, "epoch": i % r.epochs + 1,
                         "seconds": s, "images": n, "loss": loss})
    df = pd.DataFrame(rows)
    df["images_per_second"] = df["images"] / df["seconds"]
    return df


def plots_data(df) -> dict[str, str]:
    """The `dvc plots` files: timed epochs (one series per variant, x = timed epoch 1.. across
    repeats) and the warm-up apart.  Written from the results after timing, never during it."""
    timed = df[df.phase == "timed"].copy()
    timed["timed_epoch"] = timed.groupby("variant").cumcount() + 1
    epochs = timed[["variant", "timed_epoch", "repeat", "epoch", "seconds", "loss", "images_per_second"]]
    warm = df[df.phase == "warmup"][["variant", "seconds"]]
    return {paths.EPOCHS_PLOT.name: epochs.to_csv(index=False, float_format="%.6f"),
            paths.WARMUP_PLOT.name: warm.to_csv(index=False, float_format="%.6f")}


def metrics_file(metrics: dict, audit: list[dict], ceiling: list[dict], warnings: list[str]) -> dict:
    """reports/metrics.json: numbers only, nested by name (`dvc metrics show` drops lists and
    strings); the labels and the warnings' text are in the report."""
    def numbers(d: dict) -> dict:
        return {k: v for k, v in d.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}

    return {"variants": {name: numbers(m) for name, m in metrics.items()},
            "blog_audit": {a["variant"]: numbers(a) for a in audit},
            "input_ceiling": {c["synthetic"]: numbers(c) for c in ceiling},
            "warnings": len(warnings)}
