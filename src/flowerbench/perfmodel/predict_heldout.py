"""`make predict-heldout` (`python -m flowerbench predict-heldout`): the model's predictions for the
held-out settings, written before anything they predict is measured.

For every setting of heldout.yaml, in a workspace of its own (.dvc/tmp/heldout/<setting>/:
params.yaml with the setting's keys changed, its own data fetched there), one short probe of a
replica alone at that setting (`probe replica`: its step on in-memory tensors and the input
pipeline), then the prediction of each loop's N-replica run (heldout.predict_setting): the
setting's own step and input rate, and the reference's contention, all-reduce and dispatch
carried over from results/model-terms.json, never measured again.  A loop's step is the probe's
step times the reference's ratio of that loop's twin (the rounds' in-memory-tensors run) to the
probe's step alone: a ratio carried over like the other terms.  Writes predictions/heldout.json;
commit it before anything it predicts is measured (`make validate` refuses until it is).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from flowerbench.analysis import rounds as R
from flowerbench.core import paths, provenance
from flowerbench.core.config import ParamsError, validate as validate_params
from flowerbench.core.deadline import Deadline
from flowerbench.core.io import write_json
from flowerbench.core.log import get_logger
from flowerbench.core.tdist import median_interval
from flowerbench.data.dataset import steps_per_epoch
from flowerbench.perfmodel import heldout as H, judge
from flowerbench.perfmodel.termsfile import Terms, load_terms

log = get_logger("predict-heldout").info

PROBE_STEPS = 8          # timed steps of each setting's replica probe
DEADLINE_S = 4 * 3600    # the probes of every setting together


def _median_lo_hi(values: list[float]) -> tuple[float, float, float]:
    m, lo, hi = median_interval(values)
    return (m, *H.bracket([lo, hi], m))


def loop_factors(terms: Terms, reference: list[dict]) -> dict[str, float]:
    """Each loop's twin step over the probe's step alone, at the reference settings (from the
    report's rows: judge.predictions on the committed rounds)."""
    alone = terms.step_alone.median_seconds
    out = {}
    for row in reference:
        if row.get("step_seconds") and row["loop"] not in out:
            out[row["loop"]] = row["step_seconds"] / alone
    return out


def reference_rows(params, terms: Terms) -> list[dict]:
    """judge.predictions on the committed rounds, as the report computes them."""
    from flowerbench.analysis import metrics as M

    rounds = R.load_study([v.name for v in params.all_variants()])
    results = rounds.pooled()
    m = M.compute_metrics(results, params.report.baseline, rounds)
    return judge.predictions(results, terms, M.measured(m))


def probe(ws: Path, params, batch: int, deadline: Deadline) -> dict:
    """One replica alone at the setting: its step and the input pipeline (terms' replica probe)."""
    from flowerbench.core import host
    from flowerbench.perfmodel.terms import _probe, run_together

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
    """Probe every setting and write the predictions file (not committed: that is the user's act),
    holding the host's measurement lock (the probes time steps: alone on the host)."""
    from flowerbench.measuring.hostlock import measuring

    with measuring(f"held-out probes of {params_path}"):
        return _probe_and_predict(params, params_path)


def _probe_and_predict(params, params_path: str) -> dict:
    from flowerbench.training.trainer import batch_sizes

    h = H.load(H.HELDOUT)
    terms = load_terms(paths.TERMS)
    if not terms.usable:
        raise ParamsError(f"{paths.TERMS}: no multi-replica terms to carry over ({terms.skipped or 'none'})")
    n = terms.most_replicas
    factors = loop_factors(terms, reference_rows(params, terms))
    base = yaml.safe_load(Path(params_path).read_text())
    deadline = Deadline(DEADLINE_S)
    out = {"schema_version": H.PREDICTIONS_SCHEMA, "written_at": provenance.now(), **provenance.git_state(),
           "heldout_sha256": H.sha256(H.HELDOUT), "terms_sha256": H.sha256(paths.TERMS),
           "tolerance_pct": h.tolerance_pct, "rounds": h.rounds, "replicas": n, "loop_factors": factors,
           "settings": {}}
    for k, (name, setting) in enumerate(h.settings.items(), start=1):
        raw = H.setting_params(base, setting, n, h.rounds)
        sp = validate_params(raw, f"heldout setting {name}")
        log(f"setting {k}/{len(h.settings)} {name}: one replica alone ({setting.about or 'no note'})")
        ws = H.workspace(name, raw, setting)
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
    write_json(H.PREDICTIONS, out)
    log(f"-> {H.PREDICTIONS}; commit it now: `make validate` refuses to measure until it is committed")
    return out
