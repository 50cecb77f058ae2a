"""Table cells and short phrases that several report sections share (each section's own words
sit in its own module).  Pure: numbers in, text out."""

from __future__ import annotations

from ..results import Result


def fmt(x, spec: str = ".2f") -> str:
    return "n/a" if x is None else format(x, spec)


def seconds_cell(m: dict) -> str:
    if m["timed_seconds_ci_low"] is None:
        return f"{m['timed_seconds']:.2f} (n={m['repeats']}, no interval)"
    return f"{m['timed_seconds']:.2f} [{m['timed_seconds_ci_low']:.2f}, {m['timed_seconds_ci_high']:.2f}] (n={m['repeats']})"


def speedup_cell(m: dict) -> str:
    if m["speedup_ci_low"] is None:
        return fmt(m["speedup_vs_baseline"])
    return f"{m['speedup_vs_baseline']:.2f} [{m['speedup_ci_low']:.2f}, {m['speedup_ci_high']:.2f}]"


def change_words(reduction_pct: float, speedup: float, less: str = "less time") -> str:
    """'62.3% less time' or '1.21x slower': a slower run never reads as a negative reduction."""
    return f"{reduction_pct:.1f}% {less}" if reduction_pct >= 0 else f"{1 / speedup:.2f}x slower"


def change_label(m: dict, is_baseline: bool) -> str:
    """A bar's label: 'baseline', '40.0% less' or '1.21x slower'."""
    return "baseline" if is_baseline else change_words(m["reduction_vs_baseline_pct"], m["speedup_vs_baseline"], "less")


def versus(m: dict, is_baseline: bool) -> str:
    """The change vs the baseline, and whether the interval includes the baseline."""
    if is_baseline:
        return "baseline"
    text = change_words(m["reduction_vs_baseline_pct"], m["speedup_vs_baseline"])
    if m["distinguishable_from_baseline"] is False:
        text += " (not distinguishable from the baseline)"
    return text


def versus_same_loop(m: dict) -> str:
    """The same comparison against one replica of the same loop and input (the scaling view)."""
    if "speedup_vs_single_same_loop" not in m:
        return "n/a"
    if m["replicas"] == 1:
        return "itself" if m["speedup_vs_single_same_loop"] == 1.0 else f"{m['speedup_vs_single_same_loop']:.2f}x"
    return change_words(m["reduction_vs_single_same_loop_pct"], m["speedup_vs_single_same_loop"])


def budget_cell(r: Result) -> str:
    """'core_matched: 2 cores [0, 1], intra 1 / inter 2'."""
    pinned = str(r.budget_affinity) if r.budget_affinity else "not pinned"
    if r.workers:  # the chief's budget; every worker had its own slice of the same size
        return (f"{r.budget_kind}: {r.workers} workers x {r.budget_cores} core(s) (chief {pinned}), intra "
                f"{r.intra_op_threads or 'default'} / inter {r.inter_op_threads or 'default'} each")
    return (f"{r.budget_kind}: {r.budget_cores} core(s) {pinned}, intra {r.intra_op_threads or 'default'} / "
            f"inter {r.inter_op_threads or 'default'}")


def speedup_words(m: dict) -> str:
    """'1.31x [1.22-1.41]': the speed-up vs 1 replica of the same loop (the interval when there is one)."""
    s = m["speedup_vs_single_same_loop"]
    lo, hi = m.get("speedup_vs_single_ci_low"), m.get("speedup_vs_single_ci_high")
    return f"{s:.2f}x" + ("" if lo is None else f" [{lo:.2f}-{hi:.2f}]")


def efficiency_words(m: dict) -> str:
    lo, hi = m.get("scaling_efficiency_ci_low"), m.get("scaling_efficiency_ci_high")
    return f"{m['scaling_efficiency']:.2f}" + ("" if lo is None else f" [{lo:.2f}-{hi:.2f}]")


def side(m: dict) -> str:
    """faster / slower when the 95 % interval of the speed-up lies above / below 1, else unclear."""
    lo, hi = m.get("speedup_vs_single_ci_low"), m.get("speedup_vs_single_ci_high")
    if lo is None:
        return "unclear"
    return "faster" if lo > 1 else "slower" if hi < 1 else "unclear"


def unclear_words(m: dict) -> str:
    """' (not distinguishable from 1)' when the interval holds 1 (nothing without an interval)."""
    return " (not distinguishable from 1)" if m.get("speedup_vs_single_ci_low") is not None and \
        side(m) == "unclear" else ""


def scaled(results: list[Result], metrics: dict) -> list[Result]:
    """The multi-replica runs (in-process or multi-worker) whose replicas owned their cores or GPUs."""
    return [r for r in results if r.replicas > 1 and r.pipeline == "files"
            and metrics[r.variant].get("scaling_efficiency") is not None]


def run_kind_label(results: list[Result]) -> str:
    kinds = "/".join(sorted({r.device_kind for r in results}))
    gpus = sorted({r.gpu_model for r in results if r.gpu_model})
    return f"{kinds} on {', '.join(gpus)}" if gpus else f"{kinds}, {results[0].cpu_model}"
