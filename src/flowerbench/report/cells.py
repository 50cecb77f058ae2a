"""Table cells and short phrases that several report sections share (each section's own words
sit in its own module).  Pure: numbers in, text out."""

from __future__ import annotations


from flowerbench.core.results import CoreKind, Result

OPENING_FIGURE = "scaling.png"   # the answer's figure, right under the opening sentence


def fmt(x, spec: str = ".2f") -> str:
    return "n/a" if x is None else format(x, spec)


def seconds_cell(m: dict) -> str:
    """Timed seconds over rounds: geometric mean [95 % interval] (n rounds)."""
    if m["timed_seconds_ci_low"] is None:
        return f"{m['timed_seconds']:.2f} (1 round, no interval)"
    return (f"{m['timed_seconds']:.2f} [{m['timed_seconds_ci_low']:.2f}, {m['timed_seconds_ci_high']:.2f}] "
            f"(n={m['rounds']})")


def ratio_words(m: dict, key: str) -> str:
    """'1.31x [1.22-1.41]': a paired ratio and its 95 % interval over rounds (key: speedup_vs_baseline,
    speedup_vs_single, scaling_efficiency)."""
    lo, hi = m.get(f"{key}_ci_low"), m.get(f"{key}_ci_high")
    x = "" if key == "scaling_efficiency" else "x"
    return f"{m[key]:.2f}{x}" + ("" if lo is None else f" [{lo:.2f}-{hi:.2f}]")


def direction_of(m: dict, key: str) -> str:
    """stats.direction's word for a speed-up (faster, slower, not distinguishable), as metrics holds it."""
    return m[f"{key}_verdict"]


def speedup_cell(m: dict) -> str:
    return ratio_words(m, "speedup_vs_baseline")


def change_words(reduction_pct: float, speedup: float, less: str = "less time") -> str:
    """'62.3% less time' or '1.21x slower': a slower run never reads as a negative reduction."""
    return f"{reduction_pct:.1f}% {less}" if reduction_pct >= 0 else f"{1 / speedup:.2f}x slower"


def change_label(m: dict, is_baseline: bool) -> str:
    """A bar's label: 'baseline', '40.0% less' or '1.21x slower'."""
    return "baseline" if is_baseline else change_words(m["reduction_vs_baseline_pct"], m["speedup_vs_baseline"], "less")


def versus(m: dict, is_baseline: bool) -> str:
    """The change vs the baseline and the rule's word on it (stats.direction)."""
    if is_baseline:
        return "baseline"
    return (f"{change_words(m['reduction_vs_baseline_pct'], m['speedup_vs_baseline'])} "
            f"({direction_of(m, 'speedup_vs_baseline')})")


def versus_same_loop(m: dict) -> str:
    """The same comparison against one replica of the same loop and input (the scaling view), labelled."""
    if "speedup_vs_single" not in m:
        return "n/a"
    if m["replicas"] == 1 and m["budget_kind"] != CoreKind.THREADS:
        return "itself"
    return f"{ratio_words(m, 'speedup_vs_single')} vs {m['single_same_loop']} ({direction_of(m, 'speedup_vs_single')})"


def budget_cell(r: Result) -> str:
    """'core_matched: 2 cores [0, 1], intra 1 / inter 2'."""
    pinned = str(r.budget_affinity) if r.budget_affinity else "not pinned"
    if r.workers:  # the chief's budget; every worker had its own slice of the same size
        return (f"{r.budget_kind}: {r.workers} workers x {r.budget_cores} core(s) (chief {pinned}), intra "
                f"{r.intra_op_threads or 'default'} / inter {r.inter_op_threads or 'default'} each")
    return (f"{r.budget_kind}: {r.budget_cores} core(s) {pinned}, intra {r.intra_op_threads or 'default'} / "
            f"inter {r.inter_op_threads or 'default'}")


def efficiency_words(m: dict) -> str:
    """'0.62 [0.55-0.70], same-loop basis' (and the label of a pathological baseline)."""
    text = f"{ratio_words(m, 'scaling_efficiency')} vs {m['single_same_loop']}"
    if m.get("scaling_efficiency_pathological_baseline"):
        text += " (PATHOLOGICAL BASELINE: the whole-epoch graph on one replica)"
    return text


def scaled(results: list[Result], metrics: dict) -> list[Result]:
    """The multi-replica runs (in-process or multi-worker) whose replicas owned their cores or GPUs."""
    return [r for r in results if r.replicas > 1 and r.pipeline == "files"
            and metrics[r.variant].get("scaling_efficiency") is not None]


def cpu_words(r: Result) -> str:
    """A result's CPU in a few words: its model name and, where the host identity is known, vendor,
    family and model (the name alone is masked under virtualisation: "AMD EPYC" on machines 2.5x apart)."""
    c = r.host.get("cpu") if isinstance(r.host, dict) else None
    if not isinstance(c, dict):
        return f"{r.cpu_model}, identity unknown"
    return f"{r.cpu_model}, {c.get('vendor')} family {c.get('family')} model {c.get('model')}"


def run_kind_label(results: list[Result]) -> str:
    kinds = "/".join(sorted({r.device_kind for r in results}))
    gpus = sorted({r.gpu_model for r in results if r.gpu_model})
    return f"{kinds} on {', '.join(gpus)}" if gpus else f"{kinds}, {cpu_words(results[0])}"


def between_rounds_words(variance: dict) -> str:
    """The sd between processes this run measured, in words (a percentage, or n/a)."""
    sd = variance["pooled"]["round"]["sd_pct"]
    return "n/a (one round)" if sd is None else f"{sd:.1f} %"


def pairing_words(variance: dict) -> str:
    """What pairing inside a round removed from the ratios' variance, in one clause (this run)."""
    removed = variance["pairing_removed_pct"]
    if not removed:
        return "pairing could not be assessed (fewer than 3 rounds)"
    return (f"pairing inside a round removed {removed['median']:.0f} % of a ratio's variance (median over "
            f"{removed['ratios']} ratios; range {removed['min']:.0f} to {removed['max']:.0f} %, from 3-round spreads "
            f"that are themselves noisy)")


def interval_words(c: dict, inverse: bool = False) -> str:
    """A comparison (metrics.comparisons) as '1.25x [1.10-1.42]'; `inverse`: its reciprocal (the
    other side's time over this one's, which metrics.comparisons gives where the report says it)."""
    key = "inverse" if inverse else "point"
    point, low, high = c[key], c[f"{key}_low" if inverse else "low"], c[f"{key}_high" if inverse else "high"]
    return f"{point:.2f}x" + ("" if low is None else f" [{low:.2f}-{high:.2f}]")


def rounds_words(metrics: dict) -> str:
    """How the rounds behind the numbers ran: one set of rounds, or the headline's held rounds and the
    secondary's sequential ones (whose variants pair with the baselines measured again there)."""
    groups: dict[str, list[str]] = {}
    for v, m in metrics.items():
        groups.setdefault(m.get("measured_in", "headline"), []).append(v)

    def one(names: list[str]) -> str:
        m = metrics[names[0]]
        return f"{m['rounds']} {'held' if m.get('held') else 'sequential'} round(s)"

    if len(groups) == 1:
        return f"{one(next(iter(groups.values())))}, every variant once per round"
    return (f"{one(groups['headline'])} of the headline ({', '.join(groups['headline'])}) and {one(groups['secondary'])} "
            f"of the other variants, each beside the baselines measured again in those rounds")
