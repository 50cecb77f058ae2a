"""The conclusion: what a reader can quote from this run, and what it cannot show."""

from __future__ import annotations

from flowerbench.core.results import CoreKind, Result
from flowerbench.analysis.metrics import FASTER, UNDECIDED
from flowerbench.report.cells import efficiency_words, interval_words, ratio_words, scaled, direction_of


def conclusion(results: list[Result], metrics: dict, audit: list[dict], baseline: str, compared: dict,
               run: dict) -> list[str]:
    """What a reader can quote: what this run shows and what it cannot, from the numbers (`run`:
    metrics.run_facts)."""
    kinds = sorted({r.device_kind for r in results})
    replicas = sorted({r.replicas for r in results})
    loops = sorted({r.loop for r in results})
    shows = [f"The training code path ran to completion on {', '.join(map(str, replicas))} replica(s) "
             f"({', '.join(kinds)}) with the {' and '.join(loops)} loop(s); every run's loss is a finite number "
             f"and is recorded per epoch."]
    excess = run["whole_call_max_excess_pct"]
    shows.append(f"The blog's timing window (the whole timed call) and ours (the timed epochs) agree within "
                 f"{excess:.1f}% for every variant." if excess <= 5 else
                 f"The blog's timing window exceeds ours by up to {excess:.0f}%: see the whole-call column.")
    wrong = [a for a in audit if a["discrepancy_pct_points"]]
    if wrong:
        shows.append("The blog's own times do not give its stated reductions: " + "; ".join(
            f"{a['variant']} reads {a['claimed_reduction_pct']:.1f}% but its times give "
            f"{a['derived_reduction_pct']:.1f}%" for a in wrong) + ".")
    shows.append("That the distributed update equals the single-device one (gradients summed over replicas, "
                 "the loss scaled by the global batch) is proven by the test suite at this commit "
                 "(tests/test_equivalence.py), not by these timings.")
    runs = scaled(results, metrics)
    if runs:
        shows.append(f"Data parallelism on cores of their own, against {baseline} (the blog's basis): " + "; ".join(
            f"{r.variant} {ratio_words(metrics[r.variant], 'speedup_vs_baseline')}: "
            f"{direction_of(metrics[r.variant], 'speedup_vs_baseline')} (efficiency {efficiency_words(metrics[r.variant])})"
            for r in runs) + ".")
        for c in (x for k, x in compared.items() if k.startswith("efficiency_fit_over_custom_")):
            word = c["verdict"]
            shows.append(f"At {c['replicas']} replicas, fit()'s scaling efficiency over the custom loop's: "
                         f"{interval_words(c)}: " + ("not distinguishable." if word == UNDECIDED else
                                                     f"the {'fit' if word == FASTER else 'custom'} loop scaled better."))
        for c in (x for k, x in compared.items() if k.startswith("replicas_over_threads_")):
            word = c["verdict"]
            shows.append(f"On the same {c['cores']} cores, {c['replicas']} ({c['replica_count']} replicas) against "
                         f"{c['threads']} (1 replica, intra-op threads): {interval_words(c)}: "
                         + ("not distinguishable." if word == UNDECIDED else
                            f"{'replicas' if word == FASTER else 'threads'} were faster."))
    cannot = []
    if all(r.budget_kind != CoreKind.GPU for r in results):
        theirs = " and ".join(f"{a['speedup']:.2f}x" for a in audit if a["gpus"] and a["gpus"] > 1)
        cannot.append(f"It cannot show a GPU speed-up: every replica ran on CPU cores, whose memory and caches "
                      f"they share, and whose all-reduce runs over host memory, not NVLink or PCIe; the blog's "
                      f"{theirs or 'speed-ups'} are neither confirmed nor refuted by it.")
    oversub = [r.variant for r in results if r.replicas > 1 and r.budget_kind in (CoreKind.OVERSUBSCRIBED, CoreKind.SHARED)]
    if oversub:
        cannot.append(f"{', '.join(oversub)} shared cores, so they say nothing about speed-up.")
    undecided = [v for v, m in metrics.items() if v != baseline and m["speedup_vs_baseline_verdict"] == UNDECIDED]
    if undecided:
        cannot.append(f"It cannot tell {', '.join(undecided)} apart from {baseline}: the 95 % interval of the "
                      f"speed-up holds 1.")
    if any(r.data_synthetic for r in results):
        cannot.append("It says nothing about accuracy on real flowers: the data was the generated stand-in.")
    return ["## Conclusion", f"**Shows.** {' '.join(shows)}", f"**Cannot show.** {' '.join(cannot) or 'n/a'}"]
