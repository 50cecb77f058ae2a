"""`make predict-heldout`, then `make validate`: the model judged where it was not fitted.

predict-heldout (`python -m flowerbench predict-heldout`)
    For every setting of heldout.yaml, in a workspace of its own (.dvc/tmp/heldout/<setting>/:
    params.yaml with the setting's keys changed, its own data fetched there), one short probe of a
    replica alone at that setting (`probe replica`: its step on in-memory tensors and the input
    pipeline), then the prediction of each loop's N-replica run (heldout.predict_setting): the
    setting's own step and input rate, and the reference's contention, all-reduce and dispatch
    carried over from results/model-terms.json, never measured again.  A loop's step is the probe's
    step times the reference's ratio of that loop's twin (the rounds' in-memory-tensors run) to the
    probe's step alone: a ratio carried over like the other terms.  Writes predictions/heldout.json;
    commit it before anything it predicts is measured.

validate (`python -m flowerbench validate`)
    Refuses unless predictions/heldout.json is committed and unchanged at HEAD (heldout.frozen), and
    unless heldout.yaml and the terms are the ones it was predicted from.  Then, per setting, in the
    same workspace, the interleaved rounds of the 1-replica and N-replica runs of each loop (the
    `rounds` command: resumable, the host-wide lock), and per prediction: the measured point and its
    95 % interval over rounds, the signed error, the verdict on the point (predict.judge at
    heldout.yaml's tolerance), and the two null models from the 1-replica run of the same loop in
    the same rounds.  Writes reports/validation/validation.json and validation.md, each prediction
    carrying the predictions file's sha256 and commit.  It never reruns the terms stage, and
    nothing it measures changes a prediction.
"""

from __future__ import annotations

import copy
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import yaml

from . import heldout as H, paths, predict, provenance, rounds as R, stats as S
from .config import ParamsError, validate as validate_params
from .dataset import steps_per_epoch
from .deadline import Deadline
from .io import atomic_write, read_json, write_json
from .log import get_logger
from .render import table

log = get_logger("validate").info

HELDOUT = Path("heldout.yaml")
PREDICTIONS = H.PREDICTIONS
WORK = Path(".dvc") / "tmp" / "heldout"
OUT = H.VALIDATION.parent
SCHEMA = 1
PROBE_STEPS = 8          # timed steps of each setting's replica probe
DEADLINE_S = 4 * 3600    # the probes of every setting together


def variants_of(setting: H.Setting, replicas: int) -> dict[str, dict]:
    """The runs a setting measures: each loop on one replica and on N."""
    out = {}
    for loop in setting.loops:
        out[f"single_{loop}"] = {"loop": loop, "replicas": 1}
        out[f"mirrored_{loop}"] = {"loop": loop, "replicas": replicas}
    return out


def setting_params(base: dict, setting: H.Setting, replicas: int, rounds: int) -> dict:
    """params.yaml with the setting's keys changed, its runs as the variants, no sweep or multi-worker
    job, and heldout.yaml's rounds.  The data archive (when there is one) stays the repo's."""
    p = copy.deepcopy(base)
    for key, value in H.overrides(setting).items():
        section, name = key.split(".")
        p.setdefault(section, {})[name] = value
    p["variants"] = variants_of(setting, replicas)
    p["sweep"] = {"replicas": []}
    p["multiworker"] = {"workers": 0}
    p["rounds"] = {**p.get("rounds", {}), "count": rounds}
    p.setdefault("report", {})["baseline"] = f"single_{setting.loops[0]}"
    archive = p.get("data", {}).get("archive_path")
    if archive and Path(archive).exists():
        p["data"]["archive_path"] = str(Path(archive).resolve())
    return p


DATA_KEYS = ("data.standin_px",)   # the keys that change the fetched data itself (the rest apply at load)
DATA_FILES = (paths.FLOWERS, paths.MANIFEST, paths.QUARANTINE)


def own_data(setting: H.Setting) -> bool:
    """Whether a setting needs data of its own (fetched in its workspace) or reads the repo's."""
    return any(k in DATA_KEYS for k in H.overrides(setting))


def workspace(name: str, params: dict, setting: H.Setting) -> Path:
    """.dvc/tmp/heldout/<name>/ with its params.yaml (rewritten only when it changed, so that a rerun
    keeps the rounds it measured), the repo's lock and host description, and its data: the repo's
    (linked) unless the setting changes what is fetched, then its own (`fetch` in the workspace)."""
    ws = WORK / name
    (ws / paths.DATA).mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(params, sort_keys=False)
    f = ws / "params.yaml"
    if not f.is_file() or f.read_text() != text:
        atomic_write(f, text)
    for src, dest in ((Path("requirements.lock"), ws / "requirements.lock"), (paths.HOST, ws / paths.HOST)):
        if src.is_file():
            shutil.copyfile(src, dest)
    for data in DATA_FILES:
        link = ws / data
        if link.is_symlink():
            link.unlink()
        if not own_data(setting):
            if link.exists():
                shutil.rmtree(link) if link.is_dir() else link.unlink()
            if data.exists():
                link.symlink_to(data.resolve())
    if own_data(setting):
        run_in(ws, "fetch")
    return ws


def run_in(ws: Path, *args: str) -> None:
    """`python -m flowerbench ARGS` in the workspace, its output passed through; fails naming it."""
    rc = subprocess.run([sys.executable, "-m", "flowerbench", *args], cwd=ws).returncode
    if rc != 0:
        raise RuntimeError(f"{' '.join(args[:1])} in {ws} failed with exit code {rc}")


def _median_lo_hi(values: list[float]) -> tuple[float, float, float]:
    iv = S.mean_interval(values)
    m = statistics.median(values)
    return (m, *H.bracket([iv["low"], iv["high"]], m))


def loop_factors(terms: dict, reference: list[dict]) -> dict[str, float]:
    """Each loop's twin step over the probe's step alone, at the reference settings (from the
    report's rows: predict.predictions on the committed rounds)."""
    alone = terms["step_alone"]["median_seconds"]
    out = {}
    for row in reference:
        if row.get("step_seconds") and row["loop"] not in out:
            out[row["loop"]] = row["step_seconds"] / alone
    return out


def reference_rows(params, terms: dict) -> list[dict]:
    """predict.predictions on the committed rounds, as the report computes them."""
    from . import metrics as M

    rounds = R.load_study([v.name for v in params.all_variants()])
    results = rounds.pooled()
    m = M.compute_metrics(results, params.report.baseline, rounds)
    return predict.predictions(results, terms, M.measured(m))


def probe(ws: Path, params, batch: int, deadline: Deadline) -> dict:
    """One replica alone at the setting: its step and the input pipeline (terms' replica probe)."""
    from . import host
    from .terms import _probe, run_together

    cores = host.usable_core_ids(host.describe())[:params.train.cores_per_replica]
    out, = run_together([_probe("replica", cores, "params.yaml", count=PROBE_STEPS, batch=batch, cwd=ws)],
                        deadline, solo_first=True)
    inp = out["input"]
    c = params.train.cores_per_replica
    secs = _median_lo_hi(inp["seconds"])
    return {"cores": cores, "batch": batch, "step_seconds": out["alone_seconds"],
            "step": _median_lo_hi(out["alone_seconds"]),
            "input_seconds": inp["seconds"], "input_images": inp["images"],
            # a rate's interval from the seconds' (the fast end is the short epoch)
            "rate": (inp["images"] / secs[0] / c, inp["images"] / secs[2] / c, inp["images"] / secs[1] / c)}


def predict_heldout(params, params_path: str = "params.yaml") -> dict:
    """Probe every setting and write the predictions file (not committed: that is the user's act)."""
    from .training import batch_sizes

    h = H.load(HELDOUT)
    terms = predict.load_terms(paths.TERMS)
    if terms.get("skipped") or not terms.get("contention"):
        raise ParamsError(f"{paths.TERMS}: no multi-replica terms to carry over ({terms.get('skipped', 'none')})")
    n = max(int(k) for k in terms["contention"])
    factors = loop_factors(terms, reference_rows(params, terms))
    base = yaml.safe_load(Path(params_path).read_text())
    deadline = Deadline(DEADLINE_S)
    out = {"schema_version": SCHEMA, "written_at": provenance.now(), **provenance.git_state(),
           "heldout_sha256": H.sha256(HELDOUT), "terms_sha256": H.sha256(paths.TERMS),
           "tolerance_pct": h.tolerance_pct, "rounds": h.rounds, "replicas": n, "loop_factors": factors,
           "settings": {}}
    for k, (name, setting) in enumerate(h.settings.items(), start=1):
        raw = setting_params(base, setting, n, h.rounds)
        sp = validate_params(raw, f"heldout setting {name}")
        log(f"setting {k}/{len(h.settings)} {name}: one replica alone ({setting.about or 'no note'})")
        ws = workspace(name, raw, setting)
        b_n = batch_sizes(sp, n)
        pr = probe(ws, sp, b_n.batch_size_per_replica, deadline)
        images = pr["input_images"]          # what the setting's data holds, max_images applied
        steps = steps_per_epoch(images, b_n.global_batch_size)
        loops = {}
        for loop in setting.loops:
            if loop not in factors:
                raise ParamsError(f"no reference twin of the {loop} loop in the rounds: its step cannot be carried")
            f = factors[loop]
            loops[loop] = H.predict_setting(terms, tuple(x * f for x in pr["step"]), pr["rate"], replicas=n,
                                            cores_per_replica=sp.train.cores_per_replica, steps=steps, images=images,
                                            epochs=sp.train.epochs, dispatch=True)
            log(f"  {name} mirrored_{loop}: predicted {loops[loop]['seconds']:.2f} s "
                f"[{loops[loop]['low']:.2f}, {loops[loop]['high']:.2f}]")
        out["settings"][name] = {"about": setting.about, "overrides": H.overrides(setting), "probe": pr,
                                 "steps_per_epoch": steps, "images": images, "epochs": sp.train.epochs,
                                 "predictions": loops}
    write_json(PREDICTIONS, out)
    log(f"-> {PREDICTIONS}; commit it now: `make validate` refuses to measure until it is committed")
    return out


def check_frozen(repo: Path = Path(".")) -> tuple[dict, dict]:
    """The frozen predictions and their sha256 and commit; refuses when the settings or the terms
    are not the ones they were predicted from."""
    frozen = H.frozen(PREDICTIONS, repo)
    pred = read_json(PREDICTIONS)
    if pred.get("schema_version") != SCHEMA:
        raise H.FrozenError(f"{PREDICTIONS}: schema_version {pred.get('schema_version')!r}, this code reads {SCHEMA}")
    for what, path, key in (("settings", HELDOUT, "heldout_sha256"), ("terms", paths.TERMS, "terms_sha256")):
        if H.sha256(path) != pred[key]:
            raise H.FrozenError(f"{path}: not the {what} the predictions were made from (sha256 differs); "
                                f"predict again and commit, or restore it")
    return pred, frozen


def judge_setting(name: str, frozen_setting: dict, rounds: R.Rounds, tolerance: float) -> list[dict]:
    """Every frozen prediction of one setting beside its measurement in that setting's rounds, the
    null models from predict.nulls (the 1-replica run of the same loop, same rounds)."""
    results = rounds.pooled()
    by_name = {r.variant: r for r in results}
    measured = {v: (e.point, e.low, e.high, e.dof) for v in by_name for e in [S.geometric(rounds.seconds(v))]}
    rows = []
    for loop, p in frozen_setting["predictions"].items():
        r = by_name[f"mirrored_{loop}"]
        median, low, high, df = measured[r.variant]
        null = predict.nulls(r, results, measured)
        if not null:
            raise RuntimeError(f"setting {name}: no 1-replica run of the {loop} loop matches {r.variant} "
                               f"(batch, image size, cores), so the null models have no source")
        rows.append({"setting": name, "loop": loop, "replicas": r.replicas,
                     "predicted_seconds": p["seconds"], "predicted_low": p["low"], "predicted_high": p["high"],
                     "measured_seconds": median, "measured_low": low, "measured_high": high,
                     "measured_half_width_pct": predict.half_width_pct(median, low, high),
                     "error_pct": predict.error_pct(p["seconds"], median),
                     "verdict": predict.judge(p["seconds"], median, low, high, df, tolerance), "df": df,
                     **null, "rounds": rounds.count,
                     "measured_from": min(x.started_at for x in results),
                     "measured_to": max(x.finished_at for x in results),
                     "measured_commits": sorted({x.git_commit for x in results})})
    return rows


RULE = ("tost: holds when the measured 90 % interval lies inside +-tolerance of the prediction (log-symmetric); "
        "MISSED when the measured 95 % interval and that band are disjoint; undetermined otherwise")


def rejudge(validation_path: Path = H.VALIDATION, predictions_path: Path = PREDICTIONS) -> int:
    """The committed validation judged again by the current rule (predict.judge, RULE), from the numbers
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
        rows.append({**r, "df": df, "verdict": predict.judge(r["predicted_seconds"], r["measured_seconds"],
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
    s, f = out["summary"], out["frozen"]
    lines = [f"# The model on held-out settings",
             f"Predictions: {PREDICTIONS} at commit {f['predictions_commit'][:12]} (sha256 "
             f"{f['predictions_sha256'][:12]}), written before any of these runs; {H.when(out)}. The rule (an "
             f"equivalence test, stats.tost): a prediction holds when the measured 90 % interval lies inside "
             f"±{out['tolerance_pct']:g} % of it (a band symmetric on the log scale); it is MISSED when the "
             f"measured 95 % interval and that band are disjoint; undetermined otherwise. Null models: the "
             f"1-replica run of the same loop in the same rounds (no speed-up: its time; linear: its time / N).",
             table(["setting", "loop", "predicted s [interval]", "measured s [95% CI]", "error",
                    "no speed-up / linear: error", "verdict"],
                   [[r["setting"], r["loop"], f"{r['predicted_seconds']:.2f} [{r['predicted_low']:.2f}, "
                     f"{r['predicted_high']:.2f}]",
                     f"{r['measured_seconds']:.2f} " + ("n/a" if r["measured_low"] is None else
                                                       f"[{r['measured_low']:.2f}, {r['measured_high']:.2f}]"),
                     f"{r['error_pct']:+.1f}%", f"{r['nulls']['no_speedup']['error_pct']:+.1f}% / "
                     f"{r['nulls']['linear']['error_pct']:+.1f}%", r["verdict"]] for r in out["rows"]])]
    if s["mae_pct"] is not None:
        nm = s["null_mae_pct"]
        lines.append(f"{s['held']} of {s['predicted']} held; missed: {', '.join(s['missed']) or 'none'}; "
                     f"undetermined: {', '.join(s['undetermined']) or 'none'}. Mean absolute error "
                     f"{s['mae_pct']:.1f} % (target <= {predict.MAE_TARGET_PCT:g} %), largest "
                     f"{s['max_abs_error_pct']:.1f} % (target <= {predict.MAX_TARGET_PCT:g} %); null models: no "
                     f"speed-up {nm['no_speedup']:.1f} %, linear {nm['linear']:.1f} %. "
                     + ("The model beats both null models." if s["beats_nulls"] else
                        "The model does NOT beat both null models."))
    return "\n\n".join(lines) + "\n"


def validate(params, params_path: str = "params.yaml") -> int:
    """Measure every held-out setting in rounds and judge the frozen predictions; exit 0 when every
    prediction held, 1 otherwise (the report is written either way)."""
    pred, frozen = check_frozen()
    h = H.load(HELDOUT)
    base = yaml.safe_load(Path(params_path).read_text())
    n = pred["replicas"]
    rows = []
    for k, (name, setting) in enumerate(h.settings.items(), start=1):
        raw = setting_params(base, setting, n, pred["rounds"])
        validate_params(raw, f"heldout setting {name}")
        log(f"setting {k}/{len(h.settings)} {name}: its rounds ({pred['rounds']} x {len(raw['variants'])} runs)")
        ws = workspace(name, raw, setting)
        run_in(ws, "rounds")
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
