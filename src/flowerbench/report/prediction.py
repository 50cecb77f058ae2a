"""The model, tested on this host: its terms as measured, each core-matched run predicted beside its
measurement, the verdict, and the dispatch term where it was measured (perfmodel/judge.py does the arithmetic)."""

from __future__ import annotations

from flowerbench.perfmodel.termsfile import Terms
from flowerbench.perfmodel.judge import (
    HOLDS,
    MAE_TARGET_PCT,
    MAX_TARGET_PCT,
    TOLERANCE_PCT,
    UNDETERMINED,
    predicted_tests,
    scorecard,
)
from flowerbench.core.render import bullets, table
from flowerbench.analysis.metrics import EQUIVALENCE_PCT
from flowerbench.report.cells import fmt


def model_section(terms: Terms | None, rows: list[dict], verdict: dict) -> list[str]:
    """The model of an N-replica epoch, predicted beside measured for every core-matched run."""
    b = ["## The model, tested on this host",
         "Each N-replica run's timed epochs predicted from parts measured apart (docs/model.md). On a CPU host "
         "input, compute and the all-reduce share the same cores, so their times add: T = E x [S x (kappa_N x "
         "s + a_N) + n / (rho x N x c)], with E timed epochs, S steps per epoch, n images, c cores per replica, "
         "s one replica's step from the in-memory-tensors twin of the same loop, kappa_N the contention of N "
         "such steps side by side, a_N the all-reduce per step and rho the input rate per core."]
    if terms is None:
        return b + ["No terms were measured (results/model-terms.json is missing: the `terms` stage did not "
                    "run), so nothing is predicted."]
    if terms.skipped:
        return b + [f"The terms were not measured: {terms.skipped}."]
    b += [f"Terms, measured {terms.started_at[:10]} on {terms.cpu_model} by the `terms` stage:",
          bullets(terms_lines(terms) + compute_lines(terms, rows)),
          f"A prediction holds when the measured {EQUIVALENCE_PCT} % interval (over rounds) lies inside "
          f"±{TOLERANCE_PCT:g} % of it "
          f"(a band symmetric on the log scale), is MISSED when the measured 95 % interval and that band are "
          f"disjoint, and is undetermined otherwise (an equivalence test, stats.tost; the A/B uses the same). "
          f"The null models come from the 1-replica run "
          f"of the same loop in the same rounds: no speed-up (N replicas take its time) and linear (its time / N).",
          table(["variant", "runs", "role", "predicted s = compute + all-reduce + input", "measured s: "
                        "over rounds [95% CI]", "error", "no speed-up / linear: error", "verdict"],
                model_rows(rows)),
          model_verdict(verdict, rows)]
    extended = [r for r in rows if "dispatch_seconds" in r]
    if extended:
        b += ["The fifth term, measured because the four missed the in-process runs on this host (docs/model.md): "
              "N replicas' step driven from one process (the custom loop's own per-step function on in-memory "
              "tensors; `dispatch` in the terms file), less contention x one replica's step and the all-reduce. "
              "Added to the in-process runs' predictions:",
              table(["variant", "dispatch ms per step", "four terms s", "with dispatch s", "measured s",
                            "error", "verdict"], dispatch_rows(rows)),
              dispatch_verdict(scorecard(rows, "verdict_with_dispatch"))]
    b.append("With the decoded images cached (`data.cache: true`) the input term is a small part of an epoch. The "
             "input-on run (`dvc exp run -n input-on -S data.cache=false -S data.standin_px=512`) made it large; "
             "its report is kept in the repository at reports/reference/cpu-input-on-amd-epyc-2core/, and "
             "docs/model.md (\"Putting the input term on trial\") says what it found and why it did not hold the "
             "term out of sample.")
    return b


def _missing_term(row: dict) -> str:
    """Which term a missed prediction lacks, by the sign of the gap and the kind of run."""
    gap_ms = row["missing_per_step_seconds"] * 1000
    if gap_ms > 0:
        where = (("the workers' per-step work that the all-reduce probe leaves out (their own input pipelines and "
                  "step launches kept in lockstep by the collective)" if row.get("allreduce_between_processes") else
                  "the all-reduce between processes over gRPC (not measured: the in-process one stood in) and the "
                  "workers' per-step coordination") if row["workers"] else
                 f"driving {row['replicas']} replicas from one process (strategy.run, splitting each global "
                 f"batch, the replicas' ops on one inter-op pool), "
                 + ("measured below as the dispatch term" if "dispatch_seconds" in row else
                    "which no probe measured"))
        return f"{gap_ms:.0f} ms per step that no term holds: most likely {where}"
    return (f"{-gap_ms:.0f} ms per step too much: a term overstates this run (the side-by-side probes "
            f"contend only in their timed windows; the run's input prefetch may overlap compute)")


def verdict_cell(r: dict, verdict: str, why: bool = True) -> str:
    """A row's verdict; a missed test says which term it lacks unless `why` is False (the dispatch
    table, whose row of the four terms above says it already)."""
    if verdict == HOLDS:
        return "holds" if r["role"] == "test" else "consistent"
    if verdict == UNDETERMINED:
        hw = r["measured_half_width_pct"]
        return (f"undetermined (measured ±{hw:.1f} %)" if hw is not None else "undetermined (no interval)")
    if r["role"] != "test":
        return "off: " + _missing_term(r)
    return "MISSED: " + _missing_term(r) if why else "MISSED"


def model_rows(rows: list[dict]) -> list[list]:
    out = []
    for r in rows:
        who = f"{r['workers']} workers" if r["workers"] else f"{r['replicas']} replica(s)"
        if r.get("predicted_seconds") is None:
            out.append([r["variant"], who, r["role"], "cannot predict: " + "; ".join(r["missing"]),
                        "", "", "", ""])
            continue
        t = r["terms_seconds"]
        iv = ("n/a" if r["measured_low"] is None else f"[{r['measured_low']:.2f}, {r['measured_high']:.2f}]")
        n = r.get("nulls")
        out.append([r["variant"], who, r["role"],
                    f"{r['predicted_seconds']:.2f} = {t['compute']:.2f} + {t['allreduce']:.2f} + {t['input']:.2f}",
                    f"{r['measured_seconds']:.2f} {iv}", f"{r['error_pct']:+.1f}%",
                    (f"{n['no_speedup']['error_pct']:+.1f}% / {n['linear']['error_pct']:+.1f}%" if n else "–"),
                    verdict_cell(r, r["verdict"])])
    return out


def terms_lines(terms: Terms) -> list[str]:
    """Each measured term, as the table's inputs."""
    inp, alone = terms.input, terms.step_alone
    c = terms.cores_per_replica
    lo, hi = (fmt(x, ".0f") if x is not None else "n/a" for x in inp.interval_rate)
    out = [f"input (rho): {inp.median_rate:.0f} images/s per core [{lo}, {hi}], the pipeline alone on "
           f"{c} core(s): {inp.images} images at "
           f"{inp.image_size} px, cache {'on' if inp.cache else 'off'}, {len(inp.seconds)} epochs after "
           f"one that {'fills the cache' if inp.cache else 'warms up'}",
           f"one replica's step alone (custom step, in-memory tensors, batch {alone.batch}): "
           f"{alone.median_seconds * 1000:.0f} ms [{alone.interval_seconds[0] * 1000:.0f}, "
           f"{alone.interval_seconds[1] * 1000:.0f}]"]
    for n, k in terms.contention.items():
        each = ", ".join(f"{x * 1000:.0f}" for x in k.median_seconds_each)
        out.append(f"contention (kappa_{n}): {k.factor:.3f}, {n} such steps side by side on {k.cores} took "
                   f"{each} ms")
    for n, a in terms.allreduce.items():
        out.append(f"all-reduce (a_{n}): {a.median_seconds * 1000:.1f} ms per step [{a.interval_seconds[0] * 1000:.1f}, "
                   f"{a.interval_seconds[1] * 1000:.1f}], {a.tensors} gradient tensors, "
                   f"{a.parameters / 1e6:.2f} M parameters, {n} replicas in one process, {a.cross_device_ops}")
    for n, d in terms.dispatch.items():
        out.append(f"dispatch (d_{n}, measured after the four terms missed): {n} replicas' whole step driven from one "
                   f"process took {d.median_seconds * 1000:.0f} ms [{d.interval_seconds[0] * 1000:.0f}, "
                   f"{d.interval_seconds[1] * 1000:.0f}] on {d.cores}, {d.seconds_beyond_terms * 1000:.0f} ms "
                   f"more than kappa_{n} x the step alone + a_{n}")
    for n, a in terms.allreduce_workers.items():
        out.append(f"all-reduce between {n} worker processes (a_{n} of the multi-worker job): "
                   f"{a.median_seconds * 1000:.1f} ms per step [{a.interval_seconds[0] * 1000:.1f}, "
                   f"{a.interval_seconds[1] * 1000:.1f}], each worker on its own cores {a.cores}, "
                   f"{a.cross_device_ops}")
    return out


def compute_lines(terms: Terms, rows: list[dict]) -> list[str]:
    """Which step each part of the arithmetic uses: the compute term takes each loop's own step (its
    in-memory twin in the rounds); kappa and the dispatch term are ratios to, or time beyond, the
    probe's step alone, so the two are different numbers on purpose."""
    steps = {}
    for r in rows:
        if r.get("twin") and r["loop"] not in steps:
            steps[r["loop"]] = (r["twin"], r["step_seconds"])
    if not steps:
        return []
    alone = terms.step_alone.median_seconds
    each = ", ".join(f"{loop} {s * 1000:.0f} ms (from {twin})" for loop, (twin, s) in steps.items())
    return [f"s in the compute term, one replica's step of each loop from its in-memory-tensors twin in the "
            f"rounds: {each}. kappa_N is a ratio to the probe's step alone ({alone * 1000:.0f} ms) and the "
            f"dispatch term a time per step beyond kappa_N x that step + a_N, so each is carried to the loop's "
            f"own step as measured: a ratio and a time, not a second copy of the step."]


def model_verdict(v: dict, rows: list[dict]) -> str:
    tested = predicted_tests(rows)
    errs = ", ".join(f"{r['variant']} {r['error_pct']:+.1f}%" for r in tested)
    if not v["tests"]:
        return "No core-matched multi-replica run is in these results, so the model was not tested."
    summary = ""
    if v["mae_pct"] is not None:
        nm = v["null_mae_pct"]
        nulls = (f"; the null models on the same {v['nulls_runs']} run(s): no speed-up {nm['no_speedup']:.1f} %, "
                 f"linear {nm['linear']:.1f} %" if v["nulls_runs"] else "; no null model (no 1-replica run of "
                 "the same loop)")
        beats = (" The model beats both null models." if v["beats_nulls"] else
                 " The model does NOT beat both null models: knowing nothing did as well." if v["nulls_runs"] else "")
        summary = (f" Mean absolute error {v['mae_pct']:.1f} %, largest {v['max_abs_error_pct']:.1f} % (target: "
                   f"mean <= {MAE_TARGET_PCT:g} %, largest <= {MAX_TARGET_PCT:g} %){nulls}.{beats}")
    if v["validated"]:
        return (f"The model held for all {v['held']} multi-replica run(s) ({errs}): each prediction lies "
                f"within ±{TOLERANCE_PCT:g} % of the measured point.{summary} These runs are the settings the "
                f"terms were measured at, not held out.")
    parts = []
    if v["missed"]:
        parts.append(f"The model MISSED {len(v['missed'])} of {v['predicted']} multi-replica run(s) "
                     f"({', '.join(v['missed'])}; errors: {errs}).")
    if v["undetermined"]:
        parts.append(f"{len(v['undetermined'])} could not be judged: {', '.join(v['undetermined'])} (the "
                     f"measured interval straddles the ±{TOLERANCE_PCT:g} % band around the prediction).")
    if v["unpredicted"]:
        parts.append(f"It could not predict {', '.join(v['unpredicted'])} (an input is missing).")
    if v["held"]:
        parts.append(f"It held for {v['held']}.")
    return (" ".join(parts) + summary + " It is not validated on this host; the blog section below says what "
            "that costs.")


def dispatch_rows(rows: list[dict]) -> list[list]:
    return [[r["variant"], f"{r['dispatch_seconds'] * 1000:.0f}", f"{r['predicted_seconds']:.2f}",
             f"{r['predicted_with_dispatch_seconds']:.2f}", f"{r['measured_seconds']:.2f}",
             f"{r['error_with_dispatch_pct']:+.1f}%", verdict_cell(r, r["verdict_with_dispatch"], why=False)]
            for r in rows if "dispatch_seconds" in r]


def dispatch_verdict(v: dict) -> str:
    after = ("The term was added after the four-term model missed, so it explains those misses; it was not "
             "predicted before them.")
    if v["validated"]:
        return f"With the dispatch term the model holds for all {v['held']} multi-replica run(s). {after}"
    undetermined = (f"; undetermined: {', '.join(v['undetermined'])}" if v["undetermined"] else "")
    return (f"With the dispatch term, of {v['predicted']} predicted run(s) {v['held']} held; missed: "
            f"{', '.join(v['missed']) or 'none'}{undetermined}. {after}")
