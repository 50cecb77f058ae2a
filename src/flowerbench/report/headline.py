"""The headline table (every variant's time, speed-up and efficiency) and "What this shows": the
findings and the confounders, each sentence computed from the metrics."""

from __future__ import annotations

from flowerbench.core.render import bullets, table
from flowerbench.core.results import CoreKind, Result
from flowerbench.analysis.metrics import FASTER, SLOWER, UNDECIDED
from flowerbench.report.cells import (
    between_rounds_words,
    budget_cell,
    fmt,
    interval_words,
    pairing_words,
    ratio_words,
    seconds_cell,
    rounds_words,
    speedup_cell,
    direction_of,
    versus,
    versus_same_loop,
)


def headline(results: list[Result], metrics: dict, baseline: str) -> list[str]:
    """Every variant in one row, and how to read the row."""
    rows = [[r.variant, r.loop, r.replicas, r.device_kind, budget_cell(r), r.pipeline, r.global_batch_size,
             seconds_cell(m), fmt(m["whole_call_over_epochs"], ".3f"), fmt(m["images_per_second"], ".1f"),
             speedup_cell(m), versus(m, r.variant == baseline), versus_same_loop(m),
             "n/a" if m.get("scaling_efficiency") is None else ratio_words(m, "scaling_efficiency")
             + (" (pathological baseline)" if m.get("scaling_efficiency_pathological_baseline") else ""),
             fmt(r.final_loss, ".3f"), fmt(r.final_accuracy, ".3f")]
            for r in results for m in [metrics[r.variant]]]
    return ["## Headline",
            table(["variant", "loop", "replicas", "device kind", "core budget", "input", "global batch",
                   "timed s [95% CI] (rounds)", "whole call / epochs", "img/s",
                   f"speed-up vs {baseline} (blog's basis) [95% CI]", f"vs {baseline}: rule",
                   "vs 1 replica, same loop [95% CI]: rule", "efficiency, same loop [95% CI]",
                   "final loss", "final acc"], rows),
            f"Every number here comes from {rounds_words(metrics)}: in a round each of its variants ran once, "
            f"as its own process, in a balanced order (held: warmed up two at a time, then released one timed "
            f"epoch at a time, cycling through the round). A speed-up is a paired ratio inside each round (the "
            f"run against its baseline from the same round, never across the two sets of rounds); the table gives their geometric mean and the "
            f"95 % t-interval of the mean log ratio over rounds, its spread the within-run variance pooled as "
            f"section Precision says, so the point is the centre of its interval and the variation between "
            f"processes is inside it. Timed seconds: one repeat's timed epochs (the process's mean epoch times "
            f"the epochs per repeat, every epoch kept), geometric mean over rounds. Whole call / epochs: the "
            f"blog's `time.time()` window (the whole timed call) over ours; near 1.00 means the two windows agree.",
            f"The rule (the same in every sentence of this report): **faster** when the whole 95 % interval "
            f"of the speed-up lies above 1, **slower** when it lies below 1, otherwise **not "
            f"distinguishable**. The blog's basis is {baseline}; the same-loop basis (one replica of the same "
            f"loop and input, on one replica's share of the cores) is labelled wherever it appears.",
            "Efficiency = the same-loop speed-up / replicas (for one replica with N x c cores as threads: "
            "/ N). Runs whose replicas shared cores (oversubscribed) have no efficiency; one against the "
            "whole-epoch custom graph on one replica is labelled a pathological baseline."]


def what_this_shows(results: list[Result], metrics: dict, baseline: str, rounds, variance: dict,
                    compared: dict) -> list[str]:
    return ["## What this shows", findings(results, metrics, baseline, compared), "Confounders:",
            bullets(confounders(results, rounds, variance, compared))]


def findings(results: list[Result], metrics: dict, baseline: str, compared: dict) -> str:
    """A paragraph generated from the numbers, every comparison by the one rule."""
    by = {r.variant: r for r in results}
    real = [v for v in metrics if by[v].pipeline == "files" and v != baseline]
    faster = [v for v in real if direction_of(metrics[v], "speedup_vs_baseline") == FASTER]
    base = metrics[baseline]
    if faster:
        best = max(faster, key=lambda v: metrics[v]["speedup_vs_baseline"])
        parts = [f"Faster than {baseline} ({base['timed_seconds']:.2f} s) by the rule: "
                 + ", ".join(f"{v} {ratio_words(metrics[v], 'speedup_vs_baseline')}" for v in faster)
                 + f"; the largest, {best}, took {metrics[best]['reduction_vs_baseline_pct']:.1f}% less time."]
    else:
        parts = [f"No variant was faster than {baseline} ({base['timed_seconds']:.2f} s) by the rule: no "
                 f"speed-up interval lies wholly above 1."]
    slower = [v for v in real if direction_of(metrics[v], "speedup_vs_baseline") == SLOWER]
    if slower:
        parts.append(f"Slower than {baseline}: " + ", ".join(
            f"{v} {ratio_words(metrics[v], 'speedup_vs_baseline')}" for v in slower) + ".")
    undecided = [v for v in real if direction_of(metrics[v], "speedup_vs_baseline") == UNDECIDED]
    if undecided:
        parts.append(f"Not distinguishable from {baseline}: {', '.join(undecided)}.")
    multi = [v for v, m in metrics.items() if m["replicas"] > 1 and m.get("scaling_efficiency") is not None]
    if multi:
        best = max(multi, key=lambda v: metrics[v]["scaling_efficiency"])
        worst = min(multi, key=lambda v: metrics[v]["scaling_efficiency"])
        parts.append(f"Scaling efficiency (same-loop basis) ranged from {metrics[worst]['scaling_efficiency']:.2f} "
                     f"({worst}) to {metrics[best]['scaling_efficiency']:.2f} ({best}); 1.00 would be perfect "
                     f"linear scaling.")
        worse = [v for v in multi if direction_of(metrics[v], "speedup_vs_single") == SLOWER]
        if worse:
            parts.append(f"Slower than one replica of the same loop by the rule: {', '.join(worse)}.")
    loops = compared.get("loops_on_one_replica")
    if loops:
        word = loops["verdict"]
        parts.append(f"On one replica the custom loop against fit(): {interval_words(loops)}: "
                     + ("not distinguishable." if word == UNDECIDED else f"custom was {word}."))
    shared = [v for v in metrics if by[v].replicas > 1 and (by[v].budget_kind in (CoreKind.OVERSUBSCRIBED, CoreKind.SHARED)
                                                           or by[v].device_kind == "logical_gpu")]
    if shared:
        parts.append(f"The replicas of {', '.join(shared)} shared their cores (or one GPU): those numbers cannot "
                     f"confirm or refute the blog's GPU speed-ups.")
    return " ".join(parts)


def confounders(results: list[Result], rounds, variance: dict, compared: dict) -> list[str]:
    """What else differs between the runs a comparison sets side by side, with its size."""
    out = []
    loops = compared.get("loops_on_one_replica")
    if loops and loops["verdict"] == SLOWER:            # the custom loop slower than fit() on one replica
        by = {r.variant: r for r in results}
        fit, custom = by[loops["fit"]], by[loops["custom"]]
        why = ("the blog's whole epoch inside one `tf.function` (`train.custom_graph: epoch`), which runs "
               "much slower than one `tf.function` per step on CPU" if custom.custom_graph == "epoch"
               else "the custom loop's own overhead")
        custom_multi = [r.variant for r in results if r.loop == "custom" and r.replicas > 1]
        out.append(f"One replica of the custom loop ({custom.variant}) took {interval_words(loops, inverse=True)} "
                   f"the time of fit() ({fit.variant}): {why}. Custom-loop efficiencies "
                   f"({', '.join(custom_multi) or 'none'}) are against {custom.variant}, so they look better than the "
                   f"same times would against fit(); the 'vs {fit.variant}' column is the blog's basis.")
    shared = [r for r in results if r.replicas > 1 and r.budget_kind == CoreKind.SHARED]
    if shared:
        out.append(f"Thread pools were left to TensorFlow (train.thread_policy: tf_default) in "
                   f"{', '.join(r.variant for r in shared)}: the replicas shared every core, so their times "
                   f"compare thread settings as much as replica counts.")
    matched = [r for r in results if r.budget_kind == CoreKind.CORE_MATCHED and r.replicas > 1 and not r.workers]
    if matched:
        out.append(f"Core-matched runs share one process, one intra-op pool and the host's memory bandwidth and "
                   f"caches: the replicas of {', '.join(r.variant for r in matched)} each had their own cores, not "
                   f"their own memory system, which no GPU run shares this way.")
    workers = [r for r in results if r.workers]
    if workers:
        out.append(f"Multi-worker runs ({', '.join(r.variant for r in workers)}) are separate processes, each on "
                   f"its own cores with its own input pipeline, and all-reduce over loopback gRPC: their "
                   f"efficiency is against the 1-replica custom loop in one process.")
    if rounds.count < 3:
        out.append(f"Only {rounds.count} round(s): the intervals are missing (1 round) or very wide "
                   f"(t = {variance['t_two_rounds']:.2f} for 2 rounds).")
    busy = rounds.busy()
    if busy:
        out.append(f"{len(busy)} process(es) ran on a busy host (other work or steal above "
                   f"{rounds.schedule.busy_share:.0%} of the CPU time): "
                   + ", ".join(f"round {p.round} {p.variant}" for p in busy) + "; their rounds are kept.")
    out.append(f"Each TensorFlow process has its own speed: this run's variance split puts the spread between "
               f"processes at an sd of {between_rounds_words(variance)} of an epoch's time, and {pairing_words(variance)} "
               f"(section Precision). The intervals the rule reads carry that per-process spread.")
    return out

