"""`make validate` (`python -m flowerbench validate`): the model judged where it was not fitted.

Refuses unless predictions/heldout.json (predict_heldout.py) is committed and unchanged at HEAD
(heldout.frozen), and unless heldout.yaml and the terms are the ones it was predicted from.  Then,
per setting, in the same workspace, the interleaved rounds of the 1-replica and N-replica runs of
each loop (the `rounds` command: resumable, the host-wide lock), and per prediction: the measured
point and its 95 % interval over rounds, the signed error, the verdict on the point (judge.judge at
heldout.yaml's tolerance), and the two null models from the 1-replica run of the same loop in the
same rounds.  Writes reports/validation/validation.json and validation.md, each prediction carrying
the predictions file's sha256 and commit.  It never reruns the terms stage, and nothing it measures
changes a prediction.  `--rejudge` judges the recorded rows again by the current rule.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from flowerbench.analysis import rounds as R, stats as S
from flowerbench.core import paths, provenance
from flowerbench.core.config import validate as validate_params
from flowerbench.core.io import atomic_write, read_json, write_json
from flowerbench.core.log import get_logger
from flowerbench.perfmodel import heldout as H, judge
from flowerbench.core import render

log = get_logger("validate").info

OUT = H.VALIDATION.parent
SCHEMA = 1               # of validation.json


def check_frozen(repo: Path = Path(".")) -> tuple[dict, dict]:
    """The frozen predictions and their sha256 and commit; refuses when the settings or the terms
    are not the ones they were predicted from."""
    frozen = H.frozen(H.PREDICTIONS, repo)
    pred = read_json(H.PREDICTIONS)
    if pred.get("schema_version") != H.PREDICTIONS_SCHEMA:
        raise H.FrozenError(f"{H.PREDICTIONS}: schema_version {pred.get('schema_version')!r}, this code reads "
                            f"{H.PREDICTIONS_SCHEMA}")
    for what, path, key in (("settings", H.HELDOUT, "heldout_sha256"), ("terms", paths.TERMS, "terms_sha256")):
        if H.sha256(path) != pred[key]:
            raise H.FrozenError(f"{path}: not the {what} the predictions were made from (sha256 differs); "
                                f"predict again and commit, or restore it")
    return pred, frozen


def judge_setting(name: str, frozen_setting: dict, rounds: R.Rounds, tolerance: float) -> list[dict]:
    """Every frozen prediction of one setting beside its measurement in that setting's rounds, the
    null models from judge.nulls (the 1-replica run of the same loop, same rounds)."""
    results = rounds.pooled()
    by_name = {r.variant: r for r in results}
    measured = {v: (e.point, e.low, e.high, e.dof) for v in by_name for e in [S.geometric(rounds.seconds(v))]}
    rows = []
    for loop, p in frozen_setting["predictions"].items():
        r = by_name[f"mirrored_{loop}"]
        median, low, high, df = measured[r.variant]
        null = judge.nulls(r, results, measured)
        if not null:
            raise RuntimeError(f"setting {name}: no 1-replica run of the {loop} loop matches {r.variant} "
                               f"(batch, image size, cores), so the null models have no source")
        rows.append({"setting": name, "loop": loop, "replicas": r.replicas,
                     "predicted_seconds": p["seconds"], "predicted_low": p["low"], "predicted_high": p["high"],
                     "measured_seconds": median, "measured_low": low, "measured_high": high,
                     "measured_half_width_pct": judge.half_width_pct(median, low, high),
                     "error_pct": judge.error_pct(p["seconds"], median),
                     "verdict": judge.judge(p["seconds"], median, low, high, df, tolerance), "df": df,
                     **null, "rounds": rounds.count,
                     "measured_from": min(x.started_at for x in results),
                     "measured_to": max(x.finished_at for x in results),
                     "measured_commits": sorted({x.git_commit for x in results})})
    return rows


RULE = ("tost: holds when the measured 90 % interval lies inside +-tolerance of the prediction (log-symmetric); "
        "MISSED when the measured 95 % interval and that band are disjoint; undetermined otherwise")


def rejudge(validation_path: Path = H.VALIDATION, predictions_path: Path = H.PREDICTIONS) -> int:
    """The committed validation judged again by the current rule (judge.judge, RULE), from the numbers
    it recorded: each row's measured point, 95 % interval and rounds (df = rounds - 1 where the row
    predates `df`).  Nothing is measured and the terms are not read (the terms file has changed since
    the predictions were made; a re-judgement needs only the predictions, whose sha256 must be the one
    the rows were judged against).  Rewrites validation.json and .md; exit 0 when every prediction
    held, 1 otherwise."""
    v = read_json(validation_path)
    sha = H.sha256(predictions_path)
    stale = sorted({r["predictions_sha256"][:12] for r in v["rows"] if r["predictions_sha256"] != sha})
    if stale:
        raise H.FrozenError(f"{validation_path}: judged predictions {', '.join(stale)}, but {predictions_path} "
                            f"is {sha[:12]}; restore the predictions it judged, or run `make validate`")
    rows = []
    for r in v["rows"]:
        df = r.get("df") or r["rounds"] - 1
        rows.append({**r, "df": df, "verdict": judge.judge(r["predicted_seconds"], r["measured_seconds"],
                                                             r["measured_low"], r["measured_high"], df,
                                                             v["tolerance_pct"])})
    before = {f"{r['setting']} {r['loop']}": r["verdict"] for r in v["rows"]}
    state = provenance.git_state()
    head = state.get("git_commit") or v["frozen"]["head"]
    rows = [{**r, "head": head} for r in rows]
    out = {**v, **state, "rows": rows, "summary": H.summary(rows), "rule": RULE, "judged_at": provenance.now(),
           "frozen": {**v["frozen"], "head": head},
           # the first judgement, kept through every re-judgement
           "rejudged_from": v.get("rejudged_from") or {
               "judged_at": v["judged_at"], "head": v["frozen"]["head"],
               "rule": v.get("rule", "until 2026-12-07: undetermined where the measured 95 % interval was wider "
                                     "than +-tolerance, else on the point"),
               "verdicts": before}}
    write_json(validation_path, out)
    atomic_write(validation_path.parent / "validation.md", markdown(out))
    changed = [f"{k}: {before[k]} -> {r['verdict']}" for r in rows if before[(k := f"{r['setting']} {r['loop']}")]
               != r["verdict"]]
    log(f"re-judged {len(rows)} rows by the current rule: {len(changed)} changed"
        + (f" ({'; '.join(changed)})" if changed else "") + f"; {out['summary']['held']} held, "
        f"{len(out['summary']['missed'])} missed, {len(out['summary']['undetermined'])} undetermined")
    return 0 if out["summary"]["held"] == len(rows) else 1


def markdown(out: dict) -> str:
    """validation.md: the rule, the judged rows and their summary (the report's section says the same)."""
    f = out["frozen"]
    return render.document("The model on held-out settings", [
        f"Predictions: {H.PREDICTIONS} at commit {f['predictions_commit'][:12]} (sha256 "
        f"{f['predictions_sha256'][:12]}), written before any of these runs; {H.when(out)}. The rule (an "
        f"equivalence test, stats.tost): a prediction holds when the measured 90 % interval lies inside "
        f"±{out['tolerance_pct']:g} % of it (a band symmetric on the log scale); it is MISSED when the "
        f"measured 95 % interval and that band are disjoint; undetermined otherwise. Null models: the "
        f"1-replica run of the same loop in the same rounds (no speed-up: its time; linear: its time / N).",
        H.rows_table(out["rows"]),
        H.summary_words(out["summary"], out["tolerance_pct"]) if out["summary"]["mae_pct"] is not None else ""])


def validate(params, params_path: str = "params.yaml") -> int:
    """Measure every held-out setting in rounds and judge the frozen predictions; exit 0 when every
    prediction held, 1 otherwise (the report is written either way)."""
    pred, frozen = check_frozen()
    h = H.load(H.HELDOUT)
    base = yaml.safe_load(Path(params_path).read_text())
    n = pred["replicas"]
    rows = []
    for k, (name, setting) in enumerate(h.settings.items(), start=1):
        raw = H.setting_params(base, setting, n, pred["rounds"])
        validate_params(raw, f"heldout setting {name}")
        log(f"setting {k}/{len(h.settings)} {name}: its rounds ({pred['rounds']} x {len(raw['variants'])} runs)")
        ws = H.workspace(name, raw, setting)
        H.run_in(ws, "rounds")
        measured = R.load(list(raw["variants"]), ws / paths.ROUNDS)
        rows += judge_setting(name, pred["settings"][name], measured, pred["tolerance_pct"])
    out = {"schema_version": SCHEMA, "judged_at": provenance.now(), "rule": RULE, "frozen": frozen,
           "measured_from": min(r["measured_from"] for r in rows), "measured_to": max(r["measured_to"] for r in rows),
           "measured_commits": sorted({c for r in rows for c in r["measured_commits"]}),
           "tolerance_pct": pred["tolerance_pct"], **provenance.git_state(),
           "rows": [{**r, **frozen} for r in rows], "summary": H.summary(rows)}
    write_json(H.VALIDATION, out)
    atomic_write(OUT / "validation.md", markdown(out))
    log(f"-> {OUT}/validation.md: {out['summary']['held']} of {len(rows)} held")
    return 0 if out["summary"]["held"] == len(rows) else 1
