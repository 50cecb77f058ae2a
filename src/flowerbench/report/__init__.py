"""Stage `report`: results/rounds/ + results/model-terms.json -> reports/ (report.md, self-contained
report.html, figures/*.png, metrics.json for `dvc metrics`, plots/*.csv for `dvc plots`).

    python -m flowerbench report [--params params.yaml]

It reads every round of every variant the params declare (variants, sweep,
multi-worker) through analysis/rounds.py and the result model (core/results.py), computes the
numbers (analysis/metrics.py: paired ratios over rounds, analysis/stats.py; perfmodel/judge.py, perfmodel/blog.py),
draws the figures (figures.py) and writes the report as a list of sections, one
function each beside its own words:

    opening        title, banners, where measured, the answer and its figure
    headline       every variant's row;  what_this_shows: findings, confounders
    precision      the rounds, the variance split, the half-widths against the target
    inputs         real JPEGs against in-memory tensors
    audit          the blog's claims re-derived from its own times
    prediction     the model, tested on this host
    heldout        the model on held-out settings: frozen predictions against `make validate`
    blog_explained the model's GPU form applied to the blog's 4 GPUs
    conclusion     what a reader can quote, and what this run cannot show
    provenance     what produced every result

Nothing is written until everything is rendered, and every file is written
atomically, so a bad input leaves the previous report intact.
"""

from __future__ import annotations

from pathlib import Path

from flowerbench.perfmodel import blog, judge as predict, termsfile
from flowerbench.perfmodel.termsfile import Terms
from flowerbench.analysis import metrics as M, pool as P
from flowerbench.core import paths
from flowerbench.core import render
from flowerbench.core.config import Params
from flowerbench.perfmodel.heldout import PREDICTIONS as HELDOUT_PREDICTIONS, VALIDATION, figure_rows, judged, sha256
from flowerbench.core.host import HostError, describe as describe_host, label as host_label, load as load_host
from flowerbench.core.io import atomic_write, write_dir, write_json
from flowerbench.core.log import get_logger
from flowerbench.core.results import Result
from flowerbench.analysis.rounds import RoundsError, Study, load_study
from flowerbench.report.audit import audit_section
from flowerbench.report.blog_explained import blog_explained
from flowerbench.report.conclusion import conclusion
from flowerbench.report.cells import OPENING_FIGURE, run_kind_label
from flowerbench.report.figures import figures
from flowerbench.report.headline import headline, what_this_shows
from flowerbench.report.heldout import heldout_section
from flowerbench.report.inputs import input_pipeline
from flowerbench.report.opening import opening, where_measured
from flowerbench.report.prediction import model_section
from flowerbench.report.provenance import provenance
from flowerbench.report.precision import precision

log = get_logger("report").info


class ReportError(RuntimeError):
    """A results file is missing or malformed, or the params name no result (one line)."""


def load_results(params: Params, results_dir: Path = paths.RESULTS) -> Study:
    """The complete rounds of every variant the params declare, headline and secondary
    (rounds.load_study), or a one-line ReportError."""
    try:
        return load_study([v.name for v in params.all_variants()], results_dir)
    except RoundsError as exc:
        raise ReportError(str(exc)) from None


def load_terms(path: Path = paths.TERMS) -> Terms | None:
    """results/model-terms.json (stage `terms`), checked (termsfile.load_terms), or None where it was not
    measured."""
    if not path.exists():
        return None
    try:
        return termsfile.load_terms(path)
    except termsfile.TermsError as exc:
        raise ReportError(str(exc)) from None


def load_heldout(predictions_path: Path = HELDOUT_PREDICTIONS, validation_path: Path = VALIDATION) -> dict:
    """The committed held-out predictions, their sha256, and `make validate`'s judgement of them; a
    missing file is None (not predicted, or not measured yet), a malformed one a one-line ReportError."""
    import json

    out: dict = {"predictions": None, "predictions_sha256": None, "validation": None}
    for key, path in (("predictions", predictions_path), ("validation", validation_path)):
        if Path(path).exists():
            try:
                out[key] = json.loads(Path(path).read_text())
            except (OSError, ValueError) as exc:
                raise ReportError(f"{path}: not readable JSON ({exc})") from None
    if out["predictions"] is not None:
        out["predictions_sha256"] = sha256(predictions_path)
    if out["validation"] is not None and out["predictions"] is None:
        raise ReportError(f"{validation_path} judges predictions, but {predictions_path} is missing")
    return out


def current_host(path: Path = paths.HOST) -> dict:
    """The machine this report is rendered on: the pipeline's data/host.json, checked (a corrupt or
    impossible one is refused, naming it), or, with no such file (the report run on its own, outside
    DVC), a fresh description."""
    if not Path(path).exists():
        return describe_host()
    try:
        return load_host(path)
    except HostError as exc:
        raise ReportError(str(exc)) from None


def measured_summary(params: Params, since: str, results_dir: Path = paths.RESULTS) -> str:
    """What `make reproduce` prints at its end: how many results this run measured, how many it
    reused from an earlier run, and the host and date of those."""
    import datetime as dt

    study = load_results(params, results_dir)
    start = dt.datetime.fromisoformat(since)
    new = [r for r in study.results() if dt.datetime.fromisoformat(r.finished_at) >= start]
    old = [r for r in study.results() if r not in new]
    here = current_host()
    out = [f"flowerbench: {len(new)} process result(s) measured now on this host ({host_label(here)}), "
           f"{len(old)} reused"]
    if old:
        lines, _ = where_measured([r for r in study.pooled() if any(o.variant == r.variant for o in old)], here)
        out += [f"  reused, measured on {line}" for line in lines]
        out.append("  (DVC reran nothing for them: same code, params, data and host description; "
                   "`make remeasure` measures every result again)")
    return "\n".join(out)


def markdown(rounds: Study, results: list[Result], metrics: dict, variance: dict, audit: list[dict],
             ceiling: list[dict], figs: dict[str, tuple[bytes, str]], params: Params, warnings: list[str],
             here: dict, terms: Terms | None, predicted: list[dict], shown: dict, heldout: dict | None = None,
             compared: dict | None = None) -> str:
    """The report: its sections in order, each given the numbers it prints (`shown`: compute_shown's)."""
    base = params.report.baseline
    verdict = shown["scorecard"]
    blocks = [*opening(results, metrics, audit, warnings, here, figs, base),
              *headline(results, metrics, base),
              *what_this_shows(results, metrics, base, rounds, variance, compared or {}),
              *precision(rounds, variance, shown["rounds"]),
              *input_pipeline(ceiling),
              *audit_section(audit, results, metrics, base, params.report.blog_seconds),
              *model_section(terms, predicted, verdict),
              *heldout_section(*(heldout[k] if heldout else None for k in
                                 ("validation", "predictions", "predictions_sha256")), shown["heldout_judged"]),
              *blog_explained(params.report, verdict, shown["blog_explained"]),
              *conclusion(results, metrics, audit, base, compared or {}, shown["run"]),
              "## Figures", *(render.figure(name, caption) for name, (_, caption) in figs.items()
                              if name != OPENING_FIGURE),
              *provenance(results, rounds.results(), shown["run"], measured_code())]
    return "\n\n".join(blocks) + "\n"


def compute_shown(params: Params, rounds: Study, results: list[Result], metrics: dict, terms: Terms | None,
                  rows: list[dict], held: dict, here: dict) -> dict:
    """Every structure the sections print numbers from beyond the metrics, computed once here (the
    sections only format them) and written into metrics.json beside the metrics."""
    predicted = predict.predicted_tests(rows)
    return {"run": M.run_facts(results, metrics, rounds.results()), "rounds": M.rounds_facts(rounds),
            # this host and each distinct one the results were measured on (most runs share one)
            "hosts": {"here": here, "measured": list({host_label(r.host): r.host for r in results if r.host}.values())},
            "params": {k: results[0].params[k] for k in M.COMPARABLE if k in results[0].params},
            "blog_inputs": {"seconds": params.report.blog_seconds,
                            "claimed_reduction_pct": params.report.blog_claimed_reduction_pct,
                            "scaling_model": params.report.scaling_model.model_dump()},
            "scorecard": predict.scorecard(rows) if terms and not terms.skipped else None,
            "terms": None if terms is None else _samples_counted(terms.model_dump(exclude={"host", "params", "versions"})),
            "blog_explained": blog.explained(params.report.blog_seconds, params.report.scaling_model,
                                             [r["error_pct"] for r in predicted]),
            "blog_settings": {**blog.SETTINGS, "gpus": params.report.scaling_model.gpus},
            "heldout_judged": judged(held["validation"], held["predictions"]) if held["validation"] else None,
            "heldout_rows": {f"{r['setting']} {r['loop']}": r for r in held["validation"]["rows"]}
            if held["validation"] else None,
            "heldout_predictions": None if not held["predictions"] else {
                "replicas": held["predictions"].get("replicas"), "loop_factors": held["predictions"].get("loop_factors"),
                "settings": {name: {"predictions": x["predictions"], "steps_per_epoch": x["steps_per_epoch"],
                                    "images": x["images"], "epochs": x["epochs"], "probe_batch": x["probe"]["batch"]}
                             for name, x in held["predictions"]["settings"].items()}}}


def _samples_counted(x):
    """A terms record with each list of raw samples (`seconds`) replaced by its count (`samples`)."""
    if isinstance(x, dict):
        return {("samples" if k == "seconds" and isinstance(v, list) else k):
                (len(v) if k == "seconds" and isinstance(v, list) else _samples_counted(v)) for k, v in x.items()}
    return [_samples_counted(v) for v in x] if isinstance(x, list) else x


# The commands the rounds stage runs (measure.SPAWNED, which the report does not import: it reads the
# rounds, it does not run them; tests/test_dvc.py holds the two equal).
MEASURED_COMMANDS = ("rounds", "secondary", "train", "launch", "worker")


def measured_code() -> frozenset[str]:
    """The repo paths of the flowerbench modules the measured processes run (the rounds stage's
    closure), to tell an uncommitted change they ran with from one they did not."""
    from flowerbench.core.closure import PACKAGE_DIR, closure

    return frozenset(f"src/flowerbench/{m}" for m in closure(PACKAGE_DIR, list(MEASURED_COMMANDS)))


def consistency_warnings(rounds: Study, results: list[Result]) -> list[str]:
    """What makes results less comparable than they look: mixed params, commits or data trees, across
    variants or rounds."""
    warnings = []
    mixed = M.mixed_params(results)
    if mixed:
        warnings.append(f"results from different param sets: {', '.join(mixed)} differ from "
                        f"{results[0].variant} in {'/'.join(M.COMPARABLE)}; their timings are not comparable")
    # (another schema version never gets this far: results.load refuses it)
    for what, key in (("git commits", "git_commit"), ("data trees", "data_tree_sha256")):
        groups: dict = {}
        for part in rounds.parts:
            for k, rnd in enumerate(part.runs, start=1):
                for r in rnd.values():
                    groups.setdefault(getattr(r, key), {}).setdefault(r.variant, []).append(k)
        if len(groups) > 1:
            def names(found: dict) -> str:
                return ", ".join(v if len(ks) == rounds.home(v).count else f"{v} (round {', '.join(map(str, ks))})"
                                 for v, ks in found.items())
            warnings.append(f"results from {len(groups)} different {what}: " + "; ".join(
                f"{str(k)[:12]}: {names(v)}" for k, v in groups.items()) + "; compare them with care")
    return warnings


def run(params: Params, results_dir: Path = paths.RESULTS, reports_dir: Path = paths.REPORTS,
        reference_dir: Path = P.REFERENCE) -> dict:
    rounds = load_results(params, results_dir)
    results = rounds.pooled()
    here = current_host()
    terms = load_terms(results_dir / paths.TERMS.name)
    warnings = consistency_warnings(rounds, results)
    for w in warnings:
        log(f"warning: {w}")
    base = params.report.baseline
    pool = P.load(rounds, [v.name for v in params.all_variants()], reference_dir)
    metrics = M.compute_metrics(results, base, rounds, pool)
    variance = M.variance_split(rounds, results, base, params.report.precision_target_pct, pool)
    compared = M.comparisons(rounds, results, metrics, pool)
    audit = blog.audit(params.report.blog_seconds, params.report.blog_claimed_reduction_pct)
    ceiling = M.input_ceiling(results, rounds)
    df = M.tidy(results)
    rows = predict.predictions(results, terms, M.measured(metrics))
    held = load_heldout()
    held_rows = figure_rows(held["validation"], held["predictions"]) if held["validation"] else []
    shown = compute_shown(params, rounds, results, metrics, terms, rows, held, here)
    figs = figures(results, metrics, df, params.report, run_kind_label(results), audit, rows, held_rows)
    md = markdown(rounds, results, metrics, variance, audit, ceiling, figs, params, warnings, here, terms, rows,
                  shown, held, compared)
    page = render.html_page(md, "flowerbench report", {name: png for name, (png, _) in figs.items()})

    # Everything is rendered; now write. Each folder is written whole and swapped into place.
    write_dir(reports_dir / paths.FIGURES.name, {name: png for name, (png, _) in figs.items()})
    write_dir(reports_dir / paths.PLOTS.name, M.plots_data(df))
    write_json(reports_dir / paths.METRICS.name,
               M.metrics_file(metrics, audit, ceiling, warnings, rows, variance,
                              shown["heldout_judged"]["summary"] if shown["heldout_judged"] else None, compared,
                              shown))
    atomic_write(reports_dir / paths.REPORT_MD.name, md)
    atomic_write(reports_dir / paths.REPORT_HTML.name, page)
    log(f"{len(results)} variants x {rounds.count} round(s) -> {reports_dir}/report.html, report.md, "
        f"{len(figs)} figures, metrics.json")
    return {"metrics": metrics, "audit": audit, "warnings": warnings, "model": rows, "variance": variance}
