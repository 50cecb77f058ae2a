"""The model on held-out settings: the predictions frozen in a commit (predictions/heldout.json, `make
predict-heldout`) beside their measurement (reports/validation/validation.json, `make validate`), the
summary against the null models, and what the blog's 224 px says about the share of the overheads.
Both files are inputs of the report stage; neither is written by it."""

from __future__ import annotations

from flowerbench.perfmodel import heldout as H
from flowerbench.perfmodel.heldout import label, when
from flowerbench.perfmodel.judge import HOLDS
from flowerbench.core.render import bullets, table
from flowerbench.analysis.metrics import EQUIVALENCE_PCT



def overhead_lines(overheads: list[dict]) -> list[str]:
    """Per setting and loop (heldout.overheads): the share of the predicted epoch that N replicas add
    (all-reduce and dispatch, carried over from the reference), and the measured 1-replica run's time
    (same rounds) over the N-replica time, predicted and measured: if the overheads' share shrinks as
    compute grows (224 px), the measured speed-up must rise with it."""
    return [f"{o['label']}: all-reduce + dispatch {o['share_pct']:.0f} % of the predicted epoch; the 1-replica run's "
            f"time over the N-replica time: {o['predicted_speedup']:.2f}x with the predicted one, "
            f"measured {o['measured_speedup']:.2f}x" for o in overheads]


def diagnosis_table(diag: list[dict]) -> str:
    return table(["run", "one replica's step: used s", "measured s", "error", "N replicas with the measured step s",
                  "its error"],
                 [[d["label"], f"{d['step_used']:.3f}"]
                  + (["n/a (strong scaling: the 1-replica run steps at the global batch)", "", "", ""]
                     if d["step_measured"] is None else
                     [f"{d['step_measured']:.3f}", f"{d['step_error_pct']:+.1f}%", f"{d['again_seconds']:.2f}",
                      f"{d['again_error_pct']:+.1f}%"]) for d in diag])


def heldout_section(validation: dict | None, predictions: dict | None, predictions_sha256: str | None,
                    judged: dict | None = None) -> list[str]:
    """`predictions_sha256`: of the committed file now, checked against the one the runs were judged on;
    `judged`: heldout.judged (the summary, the diagnosis and the overheads of the validation's rows)."""
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
    v = judged["summary"]
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
          H.rows_table(rows), H.summary_words(v, validation["tolerance_pct"])]
    if stale:
        b.append("WARNING: predictions/heldout.json is not the file these runs were judged against (its sha256 "
                 "differs): the table shows the predictions as judged; predict and validate again.")
    misses = [r for r in rows if r["verdict"] != HOLDS]
    if misses:
        b += ["Every prediction that did not hold:",
              bullets([f"{label(r)}: predicted {r['predicted_seconds']:.2f} s, measured {r['measured_seconds']:.2f} s "
                       f"({r['error_pct']:+.1f} %), {H.verdict_words(r)}" for r in misses])]
    diag, again = judged["diagnosis"], judged["again_abs_error_pct"]
    b += ["Which part missed, after the fact (not a prediction, and it changes none): the one-replica step each "
          "prediction used (the probe at the setting, times the loop's factor from the reference) against the "
          "1-replica run's own step in the same rounds, and the N-replica form again with that measured step and "
          "every carried-over term unchanged. Where the second error is small and the first large, the probe "
          "missed and the multi-replica terms carried over; where both are large, a carried-over term did.",
          diagnosis_table(diag),
          f"With the measured one-replica step the carried-over terms give a mean absolute error of "
          f"{again['mean']:.1f} % (largest {again['max']:.1f} %) on the {again['runs']} runs that have one."
          if again else "No run has a measured one-replica step at its replicas' batch."]
    b += ["What N replicas add, by setting (the model's claim: at 224 px, where compute dominates, the share of "
          "the all-reduce and dispatch shrinks, so the speed-up rises):", bullets(overhead_lines(judged["overheads"]))]
    return b
