"""The model on held-out settings: the predictions frozen in a commit (predictions/heldout.json, `make
predict-heldout`) beside their measurement (reports/validation/validation.json, `make validate`), the
summary against the null models, and what the blog's 224 px says about the share of the overheads.
Both files are inputs of the report stage; neither is written by it."""

from __future__ import annotations

from flowerbench.perfmodel.heldout import summary, when
from flowerbench.perfmodel.judge import HOLDS, MAE_TARGET_PCT, MAX_TARGET_PCT, UNDETERMINED
from flowerbench.core.render import bullets, table
from flowerbench.analysis.stats import EQUIVALENCE_PCT

OVERHEADS = ("allreduce", "dispatch")   # the terms N replicas add to one replica's step


def label(r: dict) -> str:
    return f"{r['setting']} {r['loop']}"


def figure_rows(validation: dict, predictions: dict) -> list[dict]:
    """The held-out rows in the shape figures.model_vs_measured draws: the frozen prediction's terms
    stacked (the dispatch term, carried over, on top), the measurement and the null models."""
    out = []
    for r in validation["rows"]:
        p = predictions["settings"][r["setting"]]["predictions"][r["loop"]]
        t = p["terms_seconds"]
        out.append({**r, "variant": label(r), "role": "test", "terms_seconds": t,
                    "predicted_seconds": t["compute"] + t["allreduce"] + t["input"],
                    "predicted_with_dispatch_seconds": p["seconds"]})
    return out


def _verdict_words(r: dict) -> str:
    if r["verdict"] == UNDETERMINED:
        hw = r["measured_half_width_pct"]
        return "undetermined" + (f" (measured ±{hw:.1f} %)" if hw is not None else " (no interval)")
    return r["verdict"]


def rows_table(rows: list[dict]) -> str:
    return table(["setting", "loop", "predicted s [interval]", "measured s [95% CI]", "error",
                  "no speed-up / linear: error", "verdict"],
                 [[r["setting"], r["loop"],
                   f"{r['predicted_seconds']:.2f} [{r['predicted_low']:.2f}, {r['predicted_high']:.2f}]",
                   f"{r['measured_seconds']:.2f} " + ("n/a" if r["measured_low"] is None else
                                                     f"[{r['measured_low']:.2f}, {r['measured_high']:.2f}]"),
                   f"{r['error_pct']:+.1f}%", f"{r['nulls']['no_speedup']['error_pct']:+.1f}% / "
                   f"{r['nulls']['linear']['error_pct']:+.1f}%", _verdict_words(r)] for r in rows])


def summary_line(v: dict, tolerance_pct: float) -> str:
    nm = v["null_mae_pct"]
    met = [f"mean absolute error {v['mae_pct']:.1f} % (target <= {MAE_TARGET_PCT:g} %: "
           f"{'met' if v['mae_pct'] <= MAE_TARGET_PCT else 'MISSED'})",
           f"largest {v['max_abs_error_pct']:.1f} % (target <= {MAX_TARGET_PCT:g} %: "
           f"{'met' if v['max_abs_error_pct'] <= MAX_TARGET_PCT else 'MISSED'})"]
    beats = ("The model beats both null models on mean absolute error." if v["beats_nulls"] else
             "The model does NOT beat both null models on mean absolute error.")
    return (f"{v['held']} of {v['predicted']} predictions held within ±{tolerance_pct:g} % of the measured point; missed: "
            f"{', '.join(v['missed']) or 'none'}; undetermined: {', '.join(v['undetermined']) or 'none'}. "
            f"{met[0]}, {met[1]}; null models on the same runs: no speed-up {nm['no_speedup']:.1f} %, linear "
            f"{nm['linear']:.1f} %. {beats}")


def overhead_lines(rows: list[dict], predictions: dict) -> list[str]:
    """Per setting and loop: the share of the predicted epoch that N replicas add (all-reduce and
    dispatch, carried over from the reference), and the measured 1-replica run's time (same rounds)
    over the N-replica time, predicted and measured: if the overheads' share shrinks as compute grows
    (224 px), the measured speed-up must rise with it."""
    out = []
    for r in sorted(rows, key=lambda r: (r["loop"], r["setting"])):
        p = predictions["settings"][r["setting"]]["predictions"][r["loop"]]
        share = sum(p["terms_seconds"][k] for k in OVERHEADS) / p["seconds"] * 100.0
        single = r["nulls"]["no_speedup"]["predicted_seconds"]
        out.append(f"{label(r)}: all-reduce + dispatch {share:.0f} % of the predicted epoch; the 1-replica run's "
                   f"time over the N-replica time: {single / r['predicted_seconds']:.2f}x with the predicted one, "
                   f"measured {single / r['measured_seconds']:.2f}x")
    return out


def diagnosis(rows: list[dict], predictions: dict) -> list[dict]:
    """Which part missed, after the fact (never a prediction): the setting's one-replica step as the
    frozen prediction used it (the probe's, times the loop's factor) against the step of the 1-replica
    run of the same loop in the same rounds (its seconds over epochs x steps, the cached input
    included), and the N-replica form evaluated again with that measured step, every carried-over
    term (contention, all-reduce, dispatch) and the input term unchanged."""
    out = []
    for r in rows:
        s = predictions["settings"][r["setting"]]
        p = s["predictions"][r["loop"]]
        t, kappa = p["terms_seconds"], p["carried"]["contention"]
        epochs, steps_n = s["epochs"], s["steps_per_epoch"]
        used = t["compute"] / (epochs * steps_n * kappa)
        if s["overrides"].get("train.scaling") == "strong":
            # its 1-replica run steps at the global batch, each replica at 1/N of it: no step of the
            # replica's batch was measured in these rounds, so there is nothing to put in its place
            out.append({"label": label(r), "step_used": used, "step_measured": None})
            continue
        measured = r["nulls"]["no_speedup"]["predicted_seconds"] / (epochs * -(-s["images"] // s["probe"]["batch"]))
        again = epochs * steps_n * kappa * measured + t["allreduce"] + t["input"] + t["dispatch"]
        out.append({"label": label(r), "step_used": used, "step_measured": measured,
                    "step_error_pct": (used / measured - 1) * 100, "again_seconds": again,
                    "again_error_pct": (again / r["measured_seconds"] - 1) * 100})
    return out


def diagnosis_table(diag: list[dict]) -> str:
    return table(["run", "one replica's step: used s", "measured s", "error", "N replicas with the measured step s",
                  "its error"],
                 [[d["label"], f"{d['step_used']:.3f}"]
                  + (["n/a (strong scaling: the 1-replica run steps at the global batch)", "", "", ""]
                     if d["step_measured"] is None else
                     [f"{d['step_measured']:.3f}", f"{d['step_error_pct']:+.1f}%", f"{d['again_seconds']:.2f}",
                      f"{d['again_error_pct']:+.1f}%"]) for d in diag])


def heldout_section(validation: dict | None, predictions: dict | None, predictions_sha256: str | None) -> list[str]:
    """`predictions_sha256`: of the committed file now, checked against the one the runs were judged on."""
    b = ["## The model on held-out settings",
         "Settings no multi-replica term was measured at (heldout.yaml): each setting's one-replica step probed "
         "there, the contention, all-reduce and dispatch carried over from the reference settings, and every "
         "prediction committed before its runs (docs/model.md, \"Held out\")."]
    if predictions is None:
        return b + ["No held-out predictions are committed (predictions/heldout.json): `make predict-heldout`, "
                    "commit, then `make validate`."]
    if validation is None:
        return b + [f"Predictions committed (predictions/heldout.json, written {predictions['written_at'][:16]} "
                    f"at {predictions['git_commit'][:12]}); not measured yet: `make validate` (an hour or more)."]
    rows, f = validation["rows"], validation["frozen"]
    v = summary(rows)
    stale = f["predictions_sha256"] != predictions_sha256
    b += [f"Predictions: predictions/heldout.json, written {predictions['written_at'][:16].replace('T', ' ')} UTC "
          f"at {predictions['git_commit'][:12]} and committed at {f['predictions_commit'][:12]} (sha256 "
          f"{f['predictions_sha256'][:12]}); {when(validation)}, {rows[0]['rounds'] if rows else 0} interleaved "
          f"rounds per setting. A prediction "
          f"holds when the measured {EQUIVALENCE_PCT} % interval lies inside ±{validation['tolerance_pct']:g} % of it (log-symmetric), "
          f"is MISSED when the measured 95 % interval and that band are disjoint, undetermined otherwise (stats.tost"
          + (f"; re-judged by this rule from the recorded numbers, {validation['judged_at'][:16].replace('T', ' ')} "
             f"UTC" if validation.get("rejudged_from") else "") + "); the null models come from the 1-replica "
          f"run of the same loop in the same rounds.",
          rows_table(rows), summary_line(v, validation["tolerance_pct"])]
    if stale:
        b.append("WARNING: predictions/heldout.json is not the file these runs were judged against (its sha256 "
                 "differs): the table shows the predictions as judged; predict and validate again.")
    misses = [r for r in rows if r["verdict"] != HOLDS]
    if misses:
        b += ["Every prediction that did not hold:",
              bullets([f"{label(r)}: predicted {r['predicted_seconds']:.2f} s, measured {r['measured_seconds']:.2f} s "
                       f"({r['error_pct']:+.1f} %), {_verdict_words(r)}" for r in misses])]
    diag = diagnosis(rows, predictions)
    again = [abs(d["again_error_pct"]) for d in diag if d["step_measured"] is not None]
    b += ["Which part missed, after the fact (not a prediction, and it changes none): the one-replica step each "
          "prediction used (the probe at the setting, times the loop's factor from the reference) against the "
          "1-replica run's own step in the same rounds, and the N-replica form again with that measured step and "
          "every carried-over term unchanged. Where the second error is small and the first large, the probe "
          "missed and the multi-replica terms carried over; where both are large, a carried-over term did.",
          diagnosis_table(diag),
          f"With the measured one-replica step the carried-over terms give a mean absolute error of "
          f"{sum(again) / len(again):.1f} % (largest {max(again):.1f} %) on the {len(again)} runs that have one."
          if again else "No run has a measured one-replica step at its replicas' batch."]
    b += ["What N replicas add, by setting (the model's claim: at 224 px, where compute dominates, the share of "
          "the all-reduce and dispatch shrinks, so the speed-up rises):", bullets(overhead_lines(rows, predictions))]
    return b
