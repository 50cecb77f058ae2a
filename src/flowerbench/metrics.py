"""The report's numbers, computed from results alone: no files, no figures, no text.

Speedup, reduction and scaling efficiency per variant, the input-pipeline ceiling, the tidy per-epoch
table, the `dvc plots` data and the numbers-only `reports/metrics.json`.
"""

from __future__ import annotations

from typing import Any

from . import paths
from .results import Result

# Params that must agree between results for their timings to be comparable.
COMPARABLE = ("seed", "data", "model", "train")


# Two-sided 95 % quantiles of Student's t by degrees of freedom (standard tables); between
# entries the next smaller df is used (a slightly wider, conservative interval).
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
        10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980}


def reduction_pct(baseline_s: float, s: float) -> float:
    return (1.0 - s / baseline_s) * 100.0


def t975(df: int) -> float:
    return T975[max(k for k in T975 if k <= df)] if df < 1000 else 1.960


def interval(values: list[float]) -> dict:
    """Median, mean and the 95 % t-interval of the mean over repeats; no interval for n = 1."""
    import statistics

    n = len(values)
    mean = statistics.fmean(values)
    out = {"n": n, "median": statistics.median(values), "mean": mean, "low": None, "high": None, "se": None}
    if n >= 2:
        se = statistics.stdev(values) / n ** 0.5
        out.update(se=se, low=mean - t975(n - 1) * se, high=mean + t975(n - 1) * se)
    return out


def ratio_interval(base: dict, other: dict) -> tuple[float | None, float | None]:
    """95 % interval of mean(base) / mean(other) from two independent sets of repeats (delta
    method: relative standard errors add in quadrature; df = the smaller n - 1).  None without
    repeats on both sides."""
    if base["se"] is None or other["se"] is None:
        return None, None
    r = base["mean"] / other["mean"]
    rel = ((base["se"] / base["mean"]) ** 2 + (other["se"] / other["mean"]) ** 2) ** 0.5
    half = t975(min(base["n"], other["n"]) - 1) * rel
    return r * max(1.0 - half, 1e-9), r * (1.0 + half)


def mixed_params(results: list[Result]) -> list[str]:
    """Variants whose comparable params differ from the first result's (`train.verbose` aside)."""
    def key(r: Result) -> dict:
        p = dict(r.params)
        p["train"] = {k: v for k, v in p.get("train", {}).items() if k != "verbose"}
        return {k: p.get(k) for k in COMPARABLE}
    ref = key(results[0])
    return [r.variant for r in results[1:] if key(r) != ref]


def compute_metrics(results: list[Result], baseline: str) -> dict[str, dict]:
    """Per variant: timed seconds, img/s, speedup and reduction vs `baseline` and vs the
    single-replica run of the same loop and input, and scaling efficiency (speedup / replicas).
    KeyError if the baseline has no result (the caller names it)."""
    by = {r.variant: r for r in results}
    base_t = by[baseline].timed_seconds
    base_iv = interval(by[baseline].repeat_seconds)
    out = {}
    for r in results:
        t = r.timed_seconds
        m: dict[str, Any] = {"loop": r.loop, "replicas": r.replicas, "device_kind": r.device_kind,
                             "budget_kind": r.budget_kind, "budget_cores": r.budget_cores,
                             "timed_seconds": round(t, 6), "images_per_second": round(r.images_per_second, 6),
                             "speedup_vs_baseline": round(base_t / t, 6),
                             "reduction_vs_baseline_pct": round(reduction_pct(base_t, t), 6)}
        # The spread over repeats (one process: the host's between-process drift is not in it),
        # and the blog's window: the whole timed call around the same epochs.
        iv = interval(r.repeat_seconds)
        lo, hi = (None, None) if r.variant == baseline else ratio_interval(base_iv, iv)
        call = interval(r.repeat_wall_seconds)
        m.update(repeats=iv["n"], timed_seconds_ci_low=iv["low"],
                 timed_seconds_ci_high=iv["high"], whole_call_seconds=call["median"],
                 whole_call_over_epochs=call["median"] / t,
                 speedup_ci_low=lo, speedup_ci_high=hi,
                 reduction_ci_low_pct=None if lo is None else (1 - 1 / lo) * 100,
                 reduction_ci_high_pct=None if hi is None else (1 - 1 / hi) * 100,
                 distinguishable_from_baseline=None if lo is None else not (lo <= 1.0 <= hi))
        single = same_budget_single(r, results)
        if single is not None:
            s = single.timed_seconds / t
            lo1, hi1 = (None, None) if single is r else ratio_interval(interval(single.repeat_seconds), iv)
            m.update(single_same_loop=single.variant, speedup_vs_single_same_loop=round(s, 6),
                     speedup_vs_single_ci_low=lo1, speedup_vs_single_ci_high=hi1,
                     reduction_vs_single_same_loop_pct=round(reduction_pct(single.timed_seconds, t), 6))
            scale = budget_scale(r)
            if scale is not None:  # oversubscribed and shared runs have no efficiency: cores were shared
                m.update(scaling_efficiency=round(s / scale, 6), budget_scale=scale,
                         scaling_efficiency_ci_low=None if lo1 is None else lo1 / scale,
                         scaling_efficiency_ci_high=None if hi1 is None else hi1 / scale)
        out[r.variant] = m
    return out


def budget_scale(r: Result) -> float | None:
    """How many same-budget baselines' worth of hardware `r` had: N replicas (core-matched, GPUs),
    or its cores over one replica's share (one replica with more threads); None when its
    replicas shared cores (oversubscribed, shared), which no efficiency can describe."""
    if r.budget_kind in ("core_matched", "gpu"):
        return float(r.replicas)
    if r.budget_kind == "threads":
        return r.budget_cores / r.cores_per_replica
    return None


def same_budget_single(r: Result, results: list[Result]) -> Result | None:
    """The baseline of `r`'s speed-up and efficiency: the single-replica run of the same loop and
    input that had one replica's share of the hardware (c cores, core-matched; or one GPU).  A
    1-replica run with N x c cores is never a baseline (it is the threads comparison).  Oversubscribed
    runs compare with the core-matched single run (their speed-up is shown, labelled, never their
    efficiency); runs that left the cores to TensorFlow (shared) with the single run of that kind.  Declared variants come first, so
    a declared run wins over a sweep's."""
    cpu = ("core_matched", "threads", "oversubscribed")
    kinds = ("core_matched",) if r.budget_kind in cpu else (r.budget_kind,)
    for s in results:
        if (s.replicas == 1 and s.loop == r.loop and s.pipeline == r.pipeline and s.budget_kind in kinds
                and s.cores_per_replica == r.cores_per_replica
                and (s.budget_kind != "core_matched" or s.budget_cores == s.cores_per_replica)):
            return s
    return None


def input_ceiling(results: list[Result]) -> list[dict]:
    """Each in-memory-tensors result beside the files result it shadows (same loop, replicas, batch).

    real / tensors near 1 means the JPEG pipeline keeps up with the model; well above 1
    means training waits for input (bench target: <= 1.05)."""
    same = ("loop", "replicas", "global_batch_size", "custom_graph")
    rows = []
    for s in (r for r in results if r.pipeline == "tensors"):
        twins = [r for r in results if r.pipeline == "files" and all(getattr(r, k) == getattr(s, k) for k in same)]
        if twins:
            f = twins[0]
            rows.append({"real": f.variant, "tensors": s.variant, "loop": s.loop, "replicas": s.replicas,
                         "real_seconds": f.timed_seconds, "tensors_seconds": s.timed_seconds,
                         "real_images_per_second": f.images_per_second,
                         "tensors_images_per_second": s.images_per_second,
                         "real_over_tensors": f.timed_seconds / s.timed_seconds})
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


def metrics_file(metrics: dict, audit: list[dict], ceiling: list[dict], warnings: list[str],
                 model: list[dict] = ()) -> dict:
    """reports/metrics.json: numbers only, nested by name (`dvc metrics show` drops lists and
    strings); the labels and the warnings' text are in the report."""
    def numbers(d: dict) -> dict:
        return {k: round(v, 6) if isinstance(v, float) else v for k, v in d.items()
                if isinstance(v, (int, float)) and not isinstance(v, bool)}

    return {"variants": {name: numbers(m) for name, m in metrics.items()},
            "blog_audit": {a["variant"]: numbers(a) for a in audit},
            "input_ceiling": {c["tensors"]: numbers(c) for c in ceiling},
            "model": {r["variant"]: {**numbers(r), "holds": int(r["holds"]),
                                     **({"holds_with_dispatch": int(r["holds_with_dispatch"])}
                                        if "holds_with_dispatch" in r else {})} for r in model
                      if r.get("predicted_seconds") is not None},
            "warnings": len(warnings)}
