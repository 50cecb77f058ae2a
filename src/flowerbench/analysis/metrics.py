"""The report's numbers, computed from results alone: no files, no figures, no text.

Speedup, reduction and scaling efficiency per variant, the variance split, the rounds' facts (their
minutes, orders, busy processes), the input-pipeline ceiling, the tidy per-epoch table, the `dvc
plots` data and the numbers-only `reports/metrics.json`, which holds every number the report prints
(metrics_file; tests/test_report_numbers.py reads each one back).  The report's sections take their
numbers and their vocabulary (the rule's words, the interval levels) from here and import no
statistics of their own.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from flowerbench.core import paths
from flowerbench.analysis import stats as S
from flowerbench.analysis.estimators import CHOSEN
from flowerbench.analysis.pool import Pool
from flowerbench.core.results import CoreKind, Result
# the vocabulary the sections print beside these numbers (the one rule's words, its levels, the estimator)
from flowerbench.analysis.estimators import SETTLE_TOLERANCE, WORDS as ESTIMATOR_WORDS  # noqa: F401
from flowerbench.analysis.stats import CONFIDENCE, EQUIVALENCE_PCT, FASTER, SLOWER, UNDECIDED  # noqa: F401

# Params that must agree between results for their timings to be comparable.
COMPARABLE = ("seed", "data", "model", "train")


def reduction_pct(baseline_s: float, s: float) -> float:
    return (1.0 - s / baseline_s) * 100.0


VERDICT_CODE = {S.FASTER: 1, S.SLOWER: -1, S.UNDECIDED: 0}   # metrics.json holds numbers only


def mixed_params(results: list[Result]) -> list[str]:
    """Variants whose comparable params differ from the first result's (`train.verbose` aside)."""
    def key(r: Result) -> dict:
        p = dict(r.params)
        p["train"] = {k: v for k, v in p.get("train", {}).items() if k != "verbose"}
        return {k: p.get(k) for k in COMPARABLE}
    ref = key(results[0])
    return [r.variant for r in results[1:] if key(r) != ref]


def _ratio(prefix: str, est: S.Estimate) -> dict[str, Any]:
    """A paired ratio's point, interval, half-width and verdict under `prefix` keys."""
    return {prefix: est.point, f"{prefix}_ci_low": est.low, f"{prefix}_ci_high": est.high,
            f"{prefix}_half_width_pct": est.half_width_pct, f"{prefix}_verdict": S.direction(est)}


def compute_metrics(results: list[Result], baseline: str, rounds, pool=None) -> dict[str, dict]:
    """Per variant, from its process times round by round (`rounds`, a rounds.Study or Rounds):

      * timed seconds: the geometric mean over rounds with its 95 % interval (between processes);
      * speed-up vs `baseline` (the blog's basis: single_fit) and vs the single-replica run of the same
        loop and input (labelled "same loop" wherever shown): paired ratios inside each round,
        stats.paired's geometric mean and interval, stats.direction's word;
      * reduction (from the speed-up vs the baseline) and scaling efficiency (the same-loop speed-up over
        the hardware it had, budget_scale).

    `results` (rounds.Rounds.pooled) supplies what describes a variant.  `pool` (pool.Pool): the
    intervals' spread pooled over this run and the committed references of its kind; None: this
    run's own.  KeyError if the baseline has no result (the caller names it)."""
    if baseline not in rounds.variants():
        raise KeyError(baseline)
    pool = own_pool(rounds, pool)
    ratio = pool.paired

    out = {}
    for r in results:
        secs = rounds.seconds(r.variant)
        t = pool.seconds(r.variant)
        home = rounds.home(r.variant)
        m: dict[str, Any] = {"loop": r.loop, "replicas": r.replicas, "device_kind": r.device_kind,
                             "budget_kind": r.budget_kind, "budget_cores": r.budget_cores, "rounds": len(secs),
                             # which rounds measured it (a baseline measured in both: the headline's) and how
                             "measured_in": "headline" if home is rounds.parts[0] else "secondary",
                             "held": all(p.held for p in home.schedule.processes if p.variant == r.variant),
                             "timed_seconds": t.point, "timed_seconds_ci_low": t.low,
                             "timed_seconds_ci_high": t.high, "timed_seconds_df": t.dof,
                             "images_per_second": r.images_per_epoch * r.epochs / t.point,
                             "global_batch_size": r.global_batch_size,
                             "final_loss": r.final_loss, "final_accuracy": r.final_accuracy}
        vs = S.Estimate.itself(len(secs)) if r.variant == baseline else ratio(baseline, r.variant)
        m.update(_ratio("speedup_vs_baseline", vs), speedup_vs_baseline_df=vs.dof)
        m.update(reduction_vs_baseline_pct=(1 - 1 / vs.point) * 100,
                 reduction_ci_low_pct=None if vs.low is None else (1 - 1 / vs.low) * 100,
                 reduction_ci_high_pct=None if vs.high is None else (1 - 1 / vs.high) * 100)
        # the blog's window: the whole timed call around the same epochs
        call = statistics.median(r.repeat_wall_seconds)
        m.update(whole_call_seconds=call, whole_call_over_epochs=call / r.timed_seconds)
        single = same_budget_single(r, results)
        if single is not None:
            same = S.Estimate.itself(len(secs)) if single is r else ratio(single.variant, r.variant)
            m["single_same_loop"] = single.variant
            m.update(_ratio("speedup_vs_single", same))
            m["reduction_vs_single_same_loop_pct"] = (1 - 1 / same.point) * 100
            scale = budget_scale(r)
            if scale is not None:  # oversubscribed and shared runs have no efficiency: cores were shared
                eff = same.scaled(scale)
                m.update(budget_scale=scale, scaling_efficiency=eff.point,
                         scaling_efficiency_ci_low=eff.low, scaling_efficiency_ci_high=eff.high,
                         scaling_efficiency_pathological_baseline=pathological(single))
        out[r.variant] = m
    return out


def measured(metrics: dict) -> dict[str, tuple]:
    """variant -> (seconds, 95 % low, high, df) over rounds: what the model's predictions are judged against."""
    return {v: (m["timed_seconds"], m["timed_seconds_ci_low"], m["timed_seconds_ci_high"], m.get("timed_seconds_df"))
            for v, m in metrics.items()}


def pathological(single: Result) -> bool:
    """A baseline known to run far below its hardware: the blog's whole-epoch custom graph on one
    replica (one tf.function per epoch; 2.7x slower than one per step on CPU, docs/performance.md).
    An efficiency against it is labelled, never set beside the others as a finding."""
    return single.loop == "custom" and single.custom_graph == "epoch" and single.device_kind != "gpu"


def own_pool(rounds, pool=None) -> Pool:
    """`pool`, or this run alone: the one source of every interval's spread (analysis/pool.py)."""
    return pool if pool is not None else Pool([rounds], ["this run"])


def compared_ratios(rounds, results: list[Result], baseline: str, pool=None) -> list[tuple[Result, str, S.Estimate]]:
    """Every paired ratio a multi-replica (or threads) run is judged by: its speed-up against
    `baseline` (the blog's basis) and, where that is another run, against its same-budget single run
    of the same loop (same_budget_single): (run, the run it is against, stats.paired's estimate).
    The report's precision section and the A/B both read these; `pool` (pool.Pool): the spread pooled
    over runs of this kind (default: this run's own)."""
    pool = own_pool(rounds, pool)
    out = []
    for r in results:
        if r.replicas == 1 and r.budget_kind != CoreKind.THREADS:
            continue
        single = same_budget_single(r, results)
        for other in dict.fromkeys([baseline, single.variant if single else None]):
            if other is not None and other != r.variant:
                out.append((r, other, pool.paired(other, r.variant)))
    return out


def pairing(rounds, against: str, variant: str, estimator: str = CHOSEN) -> dict:
    """What pairing inside a round removed from one ratio's variance (this run): the variance of the
    log paired ratio against the sum of the two arms' variances over rounds (unpaired), and the part a
    round shares (their covariance).  None where fewer than 3 rounds leave no spread worth splitting."""
    part = rounds.holding(against, variant)
    la = [math.log(x) for x in part.seconds(against, estimator)]
    lb = [math.log(x) for x in part.seconds(variant, estimator)]
    if len(la) < 3:
        return {"paired_var": None, "unpaired_var": None, "shared_var": None, "removed_pct": None}
    va, vb = statistics.variance(la), statistics.variance(lb)
    vp = statistics.variance([a - b for a, b in zip(la, lb)])
    return {"paired_var": vp, "unpaired_var": va + vb, "shared_var": (va + vb - vp) / 2,
            "removed_pct": (1 - vp / (va + vb)) * 100 if va + vb > 0 else None}


def _has_cpu(rounds) -> bool:
    return all(r.epoch_cpu_seconds is not None for r in rounds.results())


def variance_split(rounds, results: list[Result], baseline: str, target_pct: float, pool=None) -> dict:
    """Where the variance lives (stats.components per variant, pooled over variants), the spread over
    rounds of every compared ratio (compared_ratios) with the rounds it needs for a 95 % half-width of
    `target_pct` % (the target and the round count are for the multi-replica ones; the threads run
    is shown beside them), and the counts the components call for (stats.per_level) at the costs
    this run measured: a timed epoch, a repeat's own call, a process's start and warm-up."""
    per_variant = {r.variant: S.components(rounds.epochs(r.variant)) for r in results}
    head = rounds.parts[0]                   # the headline rounds: their engine is the one the counts are for
    ratios = {}
    cpu = _has_cpu(rounds)
    given, pool = pool, own_pool(rounds, pool)
    # the components the counts are chosen from: the headline's variants in every run of the pool
    pooled = S.pooled_components({f"{name}: {v}": S.components(rr.parts[0].epochs(v))
                                  for name, rr in zip(pool.names, pool.runs) for v in head.variants()
                                  if v in rr.parts[0].variants()})
    for r, other, est in compared_ratios(rounds, results, baseline, pool):
        basis = "vs_baseline" if other == baseline else "vs_single"
        part = rounds.holding(other, r.variant)     # compared ratios pair inside one part
        own = S.paired(part.seconds(other), part.seconds(r.variant))
        comp = pool.components(other, r.variant)
        whole = S.paired(part.seconds(other, "whole_call"), part.seconds(r.variant, "whole_call"))
        cpu_est = S.paired(part.seconds(other, "cpu"), part.seconds(r.variant, "cpu")) if cpu else None
        ratios[f"{r.variant} {basis}"] = {
            "variant": r.variant, "basis": basis, "against": other, "log_sd": est.log_sd, "df": est.dof,
            "own_log_sd": own.log_sd, "pooled_runs": comp["runs"], "between_run_sd": comp["between_sd"],
            "between_run_p": comp["p"], "half_width_pct": est.half_width_pct, "targeted": r.replicas > 1,
            "part": "headline" if part is head else "secondary",
            "rounds_needed": S.rounds_needed(est.log_sd, target_pct) if est.log_sd else None,
            "whole_call": whole.point, "whole_call_low": whole.low, "whole_call_high": whole.high,
            "cpu_log_sd": None if cpu_est is None else cpu_est.log_sd, **pairing(rounds, other, r.variant)}
    runs = head.results()                    # the costs of the headline rounds (held or not)
    epoch_s = statistics.median(e for r in runs for e in r.epoch_seconds)
    call_s = statistics.median(max(0.0, w - t) for r in runs for w, t in zip(r.repeat_wall_seconds, r.repeat_seconds))
    process_s = statistics.median(process_costs(head))
    var = {level: pooled[level]["variance"] for level in ("epoch", "repeat", "round")}
    if var["repeat"] is None:     # one repeat per process: epochs sit directly under the process
        counts = {"epochs_per_repeat": S.per_level(process_s, epoch_s, var["epoch"], var["round"]),
                  "repeats_per_process": 1}
        if var["epoch"] is not None and var["round"] is not None:
            # what the configured epochs cost against the rule's: (variance of a process's mean) x (its
            # cost), the quantity the rule minimises, at the configured count over at the rule's count
            def var_cost(n: int) -> float:
                return (var["round"] + var["epoch"] / n) * (process_s + n * epoch_s)
            k = runs[0].epochs
            counts["configured_epochs"] = k
            counts["configured_excess_pct"] = (var_cost(k) / var_cost(counts["epochs_per_repeat"]) - 1) * 100
    else:
        counts = {"epochs_per_repeat": S.per_level(call_s + epoch_s, epoch_s, var["epoch"], var["repeat"]),
                  "repeats_per_process": S.per_level(process_s, call_s + epoch_s, var["repeat"], var["round"])}
    # the target is on the multi-replica speed-ups; the threads run is shown, not targeted
    for key, where in (("rounds", "headline"), ("secondary_rounds", "secondary")):
        needed = [x["rounds_needed"] for x in ratios.values()
                  if x["rounds_needed"] and x["targeted"] and x["part"] == where]
        counts[key] = max(needed) if needed else None
    removed = [x["removed_pct"] for x in ratios.values() if x.get("removed_pct") is not None]
    cpu_wall = [(x["cpu_log_sd"], x["own_log_sd"]) for x in ratios.values()
                if x.get("cpu_log_sd") is not None and x.get("own_log_sd")]
    return {"per_variant": per_variant, "pooled": pooled, "ratios": ratios, "target_pct": target_pct,
            "pairing_removed_pct": None if not removed else {
                "median": statistics.median(removed), "min": min(removed), "max": max(removed), "ratios": len(removed)},
            "cpu_against_wall": None if not cpu_wall else {
                "ratios": len(cpu_wall), "cpu_smaller": sum(c < w for c, w in cpu_wall),
                "cpu_median_sd": statistics.median(c for c, _ in cpu_wall),
                "wall_median_sd": statistics.median(w for _, w in cpu_wall)},
            "estimator": CHOSEN, "cpu_recorded": cpu, "t_two_rounds": S.t975(1),
            "pool": None if given is None else {"runs": len(pool.runs), "names": pool.names,
                                               "left_out": pool.left_out, "identity_known": pool.identity_known,
                                               "words": pool.describe()},
            "costs_seconds": {"epoch": epoch_s, "repeat_call": call_s, "process": process_s}, "counts": counts}


def round_minutes(part) -> list[float]:
    """Each round's wall minutes in one part: from its first process's start to its last one's end (a
    held round's processes overlap; a sequential round's follow each other)."""
    from datetime import datetime

    out = []
    s = part.schedule
    for k in range(1, s.count + 1):
        ps = [p for p in s.processes if p.round == k]
        starts = [datetime.fromisoformat(p.started_at).timestamp() for p in ps]
        out.append((max(t + p.wall_seconds for t, p in zip(starts, ps)) - min(starts)) / 60)
    return out


def rounds_facts(rounds) -> dict[str, dict]:
    """Per part (headline, secondary): its rounds, variants and complete Williams squares, its order
    and training seeds, each round's minutes with their range, sum and mean, the busy processes."""
    out = {}
    for name, part in zip(("headline", "secondary"), rounds.parts):
        s, minutes = part.schedule, round_minutes(part)
        out[name] = {"rounds": s.count, "variants": len(s.variants),
                     "complete_squares": s.count // len(s.variants) if s.variants else 0,
                     "order_seed": s.order_seed, "seed": s.seed, "usable_cores": s.usable_cores,
                     "busy_share": s.busy_share, "processes": len(s.processes),
                     "busy_processes": sum(p.busy for p in s.processes),
                     "minutes": minutes, "minutes_min": min(minutes), "minutes_max": max(minutes),
                     "minutes_total": sum(minutes), "minutes_mean": sum(minutes) / len(minutes)}
    return out


def run_facts(results: list[Result], metrics: dict, processes: list[Result]) -> dict[str, Any]:
    """What describes the run as a whole: its settings, its host's cores, how far the blog's timing
    window strays from ours at most, and the speed index every process (`processes`: every round's)
    measured before training."""
    r0 = results[0]
    windows = [m["whole_call_over_epochs"] for m in metrics.values()]
    speeds = [r.speed_index["gflops"] for r in processes if r.speed_index]
    return {"variants": len(results), "image_size": r0.image_size, "images_per_epoch": r0.images_per_epoch,
            "batch_size_per_replica": r0.batch_size_per_replica, "warmup_epochs": r0.warmup_epochs,
            "epochs": r0.epochs, "usable_cores": r0.usable_cores, "cores_per_replica": r0.cores_per_replica,
            "whole_call_max_excess_pct": (max(windows) - 1) * 100,
            "speed_index_gflops": None if not speeds else {
                "median": statistics.median(speeds), "min": min(speeds), "max": max(speeds), "processes": len(speeds),
                **{k: v for k, v in next(r.speed_index for r in processes if r.speed_index).items()
                   if k in ("matrix", "seconds")}}}


def process_costs(rounds) -> list[float]:
    """Each process's own cost in one part (rounds.Rounds), the wall time a process adds beyond its
    timed epochs: held (engine 2), half its start-up and warm-up until it was held
    (ready_after_seconds: two processes warm up at once); sequential, its whole wall time
    (interpreter, TensorFlow's import, tracing, warm-up) less its timed calls."""
    rec = {(p.round, p.variant): p for p in rounds.schedule.processes}
    out = []
    for k, rnd in enumerate(rounds.runs, start=1):
        for v, r in rnd.items():
            p = rec.get((k, v))
            if p is not None and p.ready_after_seconds is not None:
                out.append(p.ready_after_seconds / 2)
            else:
                out.append(max(0.0, (p.wall_seconds if p else r.stage_seconds) - sum(r.repeat_wall_seconds)))
    return out


def single_files(results: list[Result]) -> tuple[Result | None, Result | None]:
    """The declared one-replica fit() and custom runs on the files (one replica's share of the cores;
    the first declared wins)."""
    singles = {(r.loop, r.pipeline): r for r in reversed(results) if r.replicas == 1 and r.budget_kind != CoreKind.THREADS}
    return singles.get(("fit", "files")), singles.get(("custom", "files"))


def _cmp(est: S.Estimate, **names) -> dict[str, Any]:
    return {**names, "point": est.point, "low": est.low, "high": est.high, "df": est.dof,
            "half_width_pct": est.half_width_pct, "verdict": S.direction(est)}


def comparisons(rounds, results: list[Result], metrics: dict, pool=None) -> dict[str, dict]:
    """The comparisons the report's words make beyond each run's own speed-ups, every one a paired
    estimate with the same spread as the rest (`pool`, or this run's own rounds):

      * loops_on_one_replica: the custom loop's speed-up over fit() on one replica (fit's seconds over
        custom's; below 1: the custom loop is slower, a confounder of the custom efficiencies);
      * efficiency_fit_over_custom_N: at N replicas, fit()'s scaling efficiency over the custom loop's,
        round by round (a ratio of two paired ratios);
      * replicas_over_threads_<variant>: on the same cores, N replicas against one replica with the
        cores as intra-op threads."""
    pool = own_pool(rounds, pool)
    out: dict[str, dict] = {}
    fit, custom = single_files(results)
    if fit and custom:
        c = _cmp(pool.paired(fit.variant, custom.variant), fit=fit.variant, custom=custom.variant)
        # its reciprocal too (custom's time over fit's), the interval turned round with it: the confounders say it so
        out["loops_on_one_replica"] = {**c, "inverse": 1 / c["point"],
                                       "inverse_low": None if c["high"] is None else 1 / c["high"],
                                       "inverse_high": None if c["low"] is None else 1 / c["low"]}
    runs = [r for r in results if r.replicas > 1 and r.pipeline == "files"
            and metrics[r.variant].get("scaling_efficiency") is not None]
    by_loop: dict = {}
    for r in runs:
        if not r.workers:
            by_loop.setdefault((r.replicas, r.loop), r)
    for n in sorted({k[0] for k in by_loop}):
        f, c = by_loop.get((n, "fit")), by_loop.get((n, "custom"))
        if f and c:
            sf, sc = metrics[f.variant]["single_same_loop"], metrics[c.variant]["single_same_loop"]

            def logs(rr, f=f, c=c, sf=sf, sc=sc):
                part = rr.holding(f.variant, c.variant, sf, sc)
                if part is None:
                    return None
                return [math.log(a / b) - math.log(x / y) for a, b, x, y in zip(
                    part.seconds(sf), part.seconds(f.variant), part.seconds(sc), part.seconds(c.variant))]
            out[f"efficiency_fit_over_custom_{n}"] = _cmp(pool.estimate(logs), replicas=n, fit=f.variant,
                                                          custom=c.variant)
    for t in (r for r in results if r.budget_kind == CoreKind.THREADS):
        twin = next((r for r in runs if r.loop == t.loop and not r.workers and
                     r.replicas * r.cores_per_replica == t.budget_cores), None)
        if twin:
            out[f"replicas_over_threads_{t.variant}"] = _cmp(pool.paired(t.variant, twin.variant), threads=t.variant,
                                                             replicas=twin.variant, cores=t.budget_cores,
                                                             replica_count=twin.replicas)
    return out


def budget_scale(r: Result) -> float | None:
    """How many same-budget baselines' worth of hardware `r` had: N replicas (core-matched, GPUs),
    or its cores over one replica's share (one replica with more threads); None when its
    replicas shared cores (oversubscribed, shared), which no efficiency can describe."""
    if r.budget_kind in (CoreKind.CORE_MATCHED, CoreKind.GPU):
        return float(r.replicas)
    if r.budget_kind == CoreKind.THREADS:
        return r.budget_cores / r.cores_per_replica
    return None


def same_budget_single(r: Result, results: list[Result]) -> Result | None:
    """The baseline of `r`'s speed-up and efficiency: the single-replica run of the same loop and
    input that had one replica's share of the hardware (c cores, core-matched; or one GPU).  A
    1-replica run with N x c cores is never a baseline (it is the threads comparison).  Oversubscribed
    runs compare with the core-matched single run (their speed-up is shown, labelled, never their
    efficiency); runs that left the cores to TensorFlow (shared) with the single run of that kind.  Declared variants come first, so
    a declared run wins over a sweep's."""
    cpu = (CoreKind.CORE_MATCHED, CoreKind.THREADS, CoreKind.OVERSUBSCRIBED)
    kinds = (CoreKind.CORE_MATCHED,) if r.budget_kind in cpu else (r.budget_kind,)
    for s in results:
        if (s.replicas == 1 and s.loop == r.loop and s.pipeline == r.pipeline and s.budget_kind in kinds
                and s.cores_per_replica == r.cores_per_replica
                and (s.budget_kind != CoreKind.CORE_MATCHED or s.budget_cores == s.cores_per_replica)):
            return s
    return None


def input_ceiling(results: list[Result], rounds) -> list[dict]:
    """Each in-memory-tensors result beside the files result it shadows (same loop, replicas, batch):
    real / tensors as a paired ratio over rounds (stats.paired).

    real / tensors near 1 means the JPEG pipeline keeps up with the model; well above 1
    means training waits for input (bench target: <= 1.05)."""
    same = ("loop", "replicas", "global_batch_size", "custom_graph")
    rows = []
    for s in (r for r in results if r.pipeline == "tensors"):
        twins = [r for r in results if r.pipeline == "files" and all(getattr(r, k) == getattr(s, k) for k in same)]
        if twins:
            f = twins[0]
            part = rounds.holding(f.variant, s.variant)
            if part is None:
                continue
            est = S.paired(part.seconds(f.variant), part.seconds(s.variant))
            rows.append({"real": f.variant, "tensors": s.variant, "loop": s.loop, "replicas": s.replicas,
                         "real_seconds": S.geometric(part.seconds(f.variant)).point,
                         "tensors_seconds": S.geometric(part.seconds(s.variant)).point,
                         "real_images_per_second": f.images_per_second,
                         "tensors_images_per_second": s.images_per_second,
                         "real_over_tensors": est.point, "real_over_tensors_ci_low": est.low,
                         "real_over_tensors_ci_high": est.high})
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


def numbers_tree(x: Any) -> Any:
    """`x` with numbers only, for metrics.json: dicts keep their numeric leaves (nested), a list
    becomes a dict keyed by position from 1 (`dvc metrics show` drops lists), booleans become 0/1,
    floats are rounded to 6 places; strings and None are dropped (None when nothing is left)."""
    if isinstance(x, bool):
        return int(x)
    if isinstance(x, (int, float)):
        return round(x, 6) if isinstance(x, float) else x
    items = x.items() if isinstance(x, dict) else enumerate(x, start=1) if isinstance(x, (list, tuple)) else ()
    out = {str(k): v for k, v in ((k, numbers_tree(v)) for k, v in items) if v is not None}
    return out or None


def metrics_file(metrics: dict, audit: list[dict], ceiling: list[dict], warnings: list[str],
                 model: list[dict] = (), variance: dict | None = None, heldout: dict | None = None,
                 compared: dict | None = None, shown: dict | None = None) -> dict:
    """reports/metrics.json: numbers only, nested by name (`dvc metrics show` drops lists and
    strings); the labels and the warnings' text are in the report.  `shown`: the other structures
    the report prints numbers from (the run's and its rounds' facts, the terms, the held-out rows,
    the blog's model), each as numbers_tree."""
    def numbers(d: dict) -> dict:
        return {k: round(v, 6) if isinstance(v, float) else v for k, v in d.items()
                if isinstance(v, (int, float)) and not isinstance(v, bool)}

    def with_codes(m: dict) -> dict:
        return {**numbers(m), **{k.replace("_verdict", "_verdict_code"): VERDICT_CODE[v]
                                 for k, v in m.items() if k.endswith("_verdict")}}

    return {"variants": {name: with_codes(m) for name, m in metrics.items()},
            "blog_audit": {a["variant"]: numbers(a) for a in audit},
            "input_ceiling": {c["tensors"]: numbers(c) for c in ceiling},
            "model": {r["variant"]: {**numbers_tree(r), "verdict_code": r["verdict_code"],
                                     **({"verdict_with_dispatch_code": r["verdict_with_dispatch_code"]}
                                        if "verdict_with_dispatch" in r else {}),
                                     **{f"null_{k}_error_pct": round(x["error_pct"], 6)
                                        for k, x in r.get("nulls", {}).items()}} for r in model
                      if r.get("predicted_seconds") is not None},
            "variance": {} if variance is None else {
                **{f"{level}_sd_pct": c["sd_pct"] for level, c in variance["pooled"].items()
                   if c["sd_pct"] is not None},
                **{name.replace(" ", "_"): numbers(x) for name, x in variance["ratios"].items()},
                **{f"chosen_{k}": v for k, v in variance["counts"].items() if v is not None},
                **(numbers_tree({"costs_seconds": variance["costs_seconds"], "target_pct": variance["target_pct"],
                                 "pairing_removed_pct": variance["pairing_removed_pct"],
                                 "cpu_against_wall": variance["cpu_against_wall"],
                                 "t_two_rounds": variance["t_two_rounds"],
                                 "components": {k: {"variants": c["variants"]} for k, c in variance["pooled"].items()},
                                 "pooled_runs": (variance["pool"] or {}).get("runs")}) or {})},
            "heldout": {} if heldout is None else {
                **numbers(heldout), "missed": len(heldout["missed"]), "undetermined": len(heldout["undetermined"]),
                **{f"null_{k}_mae_pct": round(x, 6) for k, x in heldout["null_mae_pct"].items() if x is not None},
                "beats_nulls": int(heldout["beats_nulls"])},
            "comparisons": {k: {**numbers(x), "verdict_code": VERDICT_CODE[x["verdict"]]}
                            for k, x in (compared or {}).items()},
            "rules": {"confidence_pct": CONFIDENCE * 100, "equivalence_pct": EQUIVALENCE_PCT,
                      "settle_tolerance_pct": SETTLE_TOLERANCE * 100},
            **{k: numbers_tree(v) or {} for k, v in (shown or {}).items()},
            "warnings": len(warnings)}
