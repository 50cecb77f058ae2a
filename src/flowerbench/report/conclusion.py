"""The conclusion: what a reader can quote from this run, and what it cannot show."""

from __future__ import annotations

import math

from .. import stats as S
from ..results import Result
from ..stats import FASTER, UNDECIDED
from .cells import efficiency_words, ratio_words, scaled, verdict_of


def conclusion(results: list[Result], metrics: dict, audit: list[dict], baseline: str, rounds) -> list[str]:
    """What a reader can quote: what this run shows and what it cannot, from the numbers."""
    kinds = sorted({r.device_kind for r in results})
    replicas = sorted({r.replicas for r in results})
    loops = sorted({r.loop for r in results})
    shows = [f"The training code path ran to completion on {', '.join(map(str, replicas))} replica(s) "
             f"({', '.join(kinds)}) with the {' and '.join(loops)} loop(s); every run's loss is a finite number "
             f"and is recorded per epoch."]
    windows = [m["whole_call_over_epochs"] for m in metrics.values()]
    shows.append(f"The blog's timing window (the whole timed call) and ours (the timed epochs) agree within "
                 f"{(max(windows) - 1) * 100:.1f}% for every variant." if max(windows) <= 1.05 else
                 f"The blog's timing window exceeds ours by up to {(max(windows) - 1) * 100:.0f}%: see the "
                 f"whole-call column.")
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
            f"{verdict_of(metrics[r.variant], 'speedup_vs_baseline')} (efficiency {efficiency_words(metrics[r.variant])})"
            for r in runs) + ".")
        by_loop = {}
        for r in runs:
            if not r.workers:
                by_loop.setdefault((r.replicas, r.loop), r)
        for n in sorted({k[0] for k in by_loop}):
            fit, custom = by_loop.get((n, "fit")), by_loop.get((n, "custom"))
            if fit and custom:
                # fit's efficiency over custom's, round by round: a paired ratio of two paired ratios
                sf, sc = metrics[fit.variant]["single_same_loop"], metrics[custom.variant]["single_same_loop"]
                est = S.from_logs([math.log(a / b) - math.log(c / d) for a, b, c, d in zip(
                    rounds.seconds(sf), rounds.seconds(fit.variant), rounds.seconds(sc), rounds.seconds(custom.variant))])
                word = S.verdict(est)
                shows.append(f"At {n} replicas, fit()'s scaling efficiency over the custom loop's: "
                             f"{est.point:.2f}x{'' if est.low is None else f' [{est.low:.2f}-{est.high:.2f}]'}: "
                             + ("not distinguishable." if word == UNDECIDED else
                                f"the {'fit' if word == FASTER else 'custom'} loop scaled better."))
        for t in (r for r in results if r.budget_kind == "threads"):
            twin = next((r for r in runs if r.loop == t.loop and not r.workers and
                         r.replicas * r.cores_per_replica == t.budget_cores), None)
            if twin:
                est = S.paired(rounds.seconds(t.variant), rounds.seconds(twin.variant))
                word = S.verdict(est)
                shows.append(f"On the same {t.budget_cores} cores, {twin.variant} ({twin.replicas} replicas) against "
                             f"{t.variant} (1 replica, intra-op threads): {est.point:.2f}x"
                             f"{'' if est.low is None else f' [{est.low:.2f}-{est.high:.2f}]'}: "
                             + ("not distinguishable." if word == UNDECIDED else
                                f"{'replicas' if word == FASTER else 'threads'} were faster."))
    cannot = []
    if all(r.budget_kind != "gpu" for r in results):
        theirs = " and ".join(f"{a['speedup']:.2f}x" for a in audit if a["gpus"] and a["gpus"] > 1)
        cannot.append(f"It cannot show a GPU speed-up: every replica ran on CPU cores, whose memory and caches "
                      f"they share, and whose all-reduce runs over host memory, not NVLink or PCIe; the blog's "
                      f"{theirs or 'speed-ups'} are neither confirmed nor refuted by it.")
    oversub = [r.variant for r in results if r.replicas > 1 and r.budget_kind in ("oversubscribed", "shared")]
    if oversub:
        cannot.append(f"{', '.join(oversub)} shared cores, so they say nothing about speed-up.")
    undecided = [v for v, m in metrics.items() if v != baseline and m["speedup_vs_baseline_verdict"] == UNDECIDED]
    if undecided:
        cannot.append(f"It cannot tell {', '.join(undecided)} apart from {baseline}: the 95 % interval of the "
                      f"speed-up holds 1.")
    if any(r.data_synthetic for r in results):
        cannot.append("It says nothing about accuracy on real flowers: the data was the generated stand-in.")
    return ["## Conclusion", f"**Shows.** {' '.join(shows)}", f"**Cannot show.** {' '.join(cannot) or 'n/a'}"]
