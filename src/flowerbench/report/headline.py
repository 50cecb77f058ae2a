"""The headline table (every variant's time, speed-up and efficiency) and "What this shows": the
findings and the confounders, each sentence computed from the metrics."""

from __future__ import annotations

from .. import metrics as M
from ..render import bullets, table
from ..results import Result
from .cells import budget_cell, fmt, seconds_cell, speedup_cell, versus, versus_same_loop


def headline(results: list[Result], metrics: dict, baseline: str) -> list[str]:
    """Every variant in one row, and how to read the row."""
    rows = [[r.variant, r.loop, r.replicas, r.device_kind, budget_cell(r), r.pipeline, r.global_batch_size,
             seconds_cell(m), fmt(m["whole_call_seconds"]), fmt(m["whole_call_over_epochs"], ".3f"),
             fmt(m["images_per_second"], ".1f"), speedup_cell(m), versus(m, r.variant == baseline),
             versus_same_loop(m), fmt(m.get("scaling_efficiency")), fmt(r.final_loss, ".3f"),
             fmt(r.final_accuracy, ".3f")]
            for r in results for m in [metrics[r.variant]]]
    return ["## Headline",
            table(["variant", "loop", "replicas", "device kind", "core budget", "input", "global batch",
                   "timed epochs s: median [95% CI] (n)", "whole call s", "whole / epochs", "img/s",
                   f"speedup vs {baseline} [95% CI]", f"vs {baseline}", "vs 1 replica, same loop", "efficiency",
                   "final loss", "final acc"], rows),
            "Timed epochs: the sum of each repeat's timed epochs (our window). Whole call: the wall time of "
            "the whole timed `fit()` call or epoch loop (the blog's `time.time()` window); whole / epochs "
            "near 1.00 means nothing outside the epochs is timed by the blog's window. The 95 % intervals "
            "are over repeats inside one process (Student's t; speedups by the delta method), so they "
            "miss the host's drift between processes (`make bench` measures that).",
            "Efficiency = speed-up vs the single-replica run of the same loop on one replica's share of the "
            "cores (the same-budget baseline) / replicas (for one replica with N x c cores as threads: / N). "
            "Runs whose replicas shared cores (oversubscribed) have no efficiency."]


def what_this_shows(results: list[Result], metrics: dict, baseline: str) -> list[str]:
    return ["## What this shows", findings(results, metrics, baseline), "Confounders:",
            bullets(confounders(results, metrics))]


def findings(results: list[Result], metrics: dict, baseline: str) -> str:
    """A paragraph generated from the numbers."""
    by = {r.variant: r for r in results}
    real = [v for v in metrics if by[v].pipeline == "files"] or list(metrics)  # a ceiling run is not a contender
    fastest = min(real, key=lambda v: metrics[v]["timed_seconds"])
    base = metrics[baseline]
    if fastest == baseline:
        parts = [f"The baseline {baseline} was the fastest variant ({base['timed_seconds']:.2f} s, "
                 f"{base['images_per_second']:.1f} img/s): no other variant reduced the time."]
    elif metrics[fastest].get("distinguishable_from_baseline") is False:
        parts = [f"No variant was distinguishably faster than {baseline} ({base['timed_seconds']:.2f} s): the "
                 f"fastest median, {fastest} at {metrics[fastest]['timed_seconds']:.2f} s, has a speedup "
                 f"interval that includes 1."]
    else:
        parts = [f"The fastest variant was {fastest} at {metrics[fastest]['timed_seconds']:.2f} s "
                 f"({metrics[fastest]['images_per_second']:.1f} img/s), a "
                 f"{metrics[fastest]['reduction_vs_baseline_pct']:.1f}% reduction vs {baseline} "
                 f"({base['timed_seconds']:.2f} s)."]
    multi = [v for v, m in metrics.items() if m["replicas"] > 1 and "scaling_efficiency" in m]
    if multi:
        best = max(multi, key=lambda v: metrics[v]["scaling_efficiency"])
        worst = min(multi, key=lambda v: metrics[v]["scaling_efficiency"])
        parts.append(f"Scaling efficiency ranged from {metrics[worst]['scaling_efficiency']:.2f} ({worst}) to "
                     f"{metrics[best]['scaling_efficiency']:.2f} ({best}); 1.00 would be perfect linear scaling.")
        slower = [v for v in multi if metrics[v]["speedup_vs_single_same_loop"] < 1]
        if slower:
            parts.append(f"{len(slower)} multi-replica variant(s) were slower than one replica of the same loop "
                         f"({', '.join(slower)}).")
    singles = {(r.loop, r.pipeline): r.variant for r in reversed(results) if r.replicas == 1}
    fit, custom = singles.get(("fit", "files")), singles.get(("custom", "files"))
    if fit and custom:
        d = M.reduction_pct(metrics[fit]["timed_seconds"], metrics[custom]["timed_seconds"])
        lo, hi = M.ratio_interval(M.interval(by[fit].repeat_seconds), M.interval(by[custom].repeat_seconds))
        same = lo is not None and lo <= 1.0 <= hi
        parts.append(f"On one replica the custom loop was {abs(d):.1f}% {'faster' if d > 0 else 'slower'} "
                     f"than fit(){' (within the repeats spread: not distinguishable)' if same else ''}.")
    shared = [v for v in metrics if by[v].replicas > 1 and (by[v].budget_kind in ("oversubscribed", "shared")
                                                           or by[v].device_kind == "logical_gpu")]
    if shared:
        parts.append(f"The replicas of {', '.join(shared)} shared their cores (or one GPU): those numbers cannot "
                     f"confirm or refute the blog's GPU speed-ups.")
    return " ".join(parts)


def confounders(results: list[Result], metrics: dict) -> list[str]:
    """What else differs between the runs a comparison sets side by side, with its size."""
    out = []
    singles = {(r.loop, r.pipeline): r for r in reversed(results)  # the first (declared) one wins
               if r.replicas == 1 and r.budget_kind != "threads"}
    fit, custom = singles.get(("fit", "files")), singles.get(("custom", "files"))
    if fit and custom and custom.timed_seconds > fit.timed_seconds:
        ratio = custom.timed_seconds / fit.timed_seconds
        why = ("the blog's whole epoch inside one `tf.function` (`train.custom_graph: epoch`), which runs "
               "much slower than one `tf.function` per step on CPU" if custom.custom_graph == "epoch"
               else "the custom loop's own overhead")
        custom_multi = [r.variant for r in results if r.loop == "custom" and r.replicas > 1]
        out.append(f"One replica of the custom loop ({custom.variant}) took {ratio:.2f}x the time of fit() "
                   f"({fit.variant}): {why}. Custom-loop efficiencies ({', '.join(custom_multi) or 'none here'}) "
                   f"are against {custom.variant}, so they look better than the same times would against fit(); "
                   f"the 'vs {fit.variant}' column is the blog's basis.")
    shared = [r for r in results if r.replicas > 1 and r.budget_kind == "shared"]
    if shared:
        out.append(f"Thread pools were left to TensorFlow (train.thread_policy: tf_default) in "
                   f"{', '.join(r.variant for r in shared)}: the replicas shared every core, so their times "
                   f"compare thread settings as much as replica counts.")
    matched = [r for r in results if r.budget_kind == "core_matched" and r.replicas > 1 and not r.workers]
    if matched:
        out.append(f"Core-matched runs share one process, one intra-op pool and the host's memory bandwidth and "
                   f"caches: the replicas of {', '.join(r.variant for r in matched)} each had their own cores, not "
                   f"their own memory system, which no GPU run shares this way.")
    workers = [r for r in results if r.workers]
    if workers:
        out.append(f"Multi-worker runs ({', '.join(r.variant for r in workers)}) are separate processes, each on "
                   f"its own cores with its own input pipeline, and all-reduce over loopback gRPC: their "
                   f"efficiency is against the 1-replica custom loop in one process.")
    if any(r.repeats < 3 for r in results):
        out.append("Some variants have fewer than 3 timed repeats: their intervals are missing or very wide.")
    out.append("Intervals are over repeats inside one process; the host's speed also drifts between "
               "processes (variants run one after another), which the intervals do not include. `make bench` "
               "interleaves separate processes to measure that spread (its reference on this host kind: "
               "reports/reference/bench-amd-epyc-2core/bench.md; docs/performance.md), and differences between "
               "variants smaller than it are not evidence.")
    return out
