"""Stage `report`: results/*.json -> reports/ (report.md, self-contained report.html,
figures/*.png, metrics.json for `dvc metrics`, plots/*.csv for `dvc plots`).

    python -m flowerbench report [--params params.yaml]

It reads the result of every variant the params declare (variants, sweep,
multi-worker) through the result model (results.py), computes the numbers
(metrics.py, predict.py, blog.py), draws the figures (figures.py) and writes the
report as a list of sections, one function each beside its own words:

    opening        title, banners, where measured, the answer and its figure
    headline       every variant's row;  what_this_shows: findings, confounders
    inputs         real JPEGs against in-memory tensors
    audit          the blog's claims re-derived from its own times
    prediction     the model, tested on this host
    blog_explained the model's GPU form applied to the blog's 4 GPUs
    conclusion     what a reader can quote, and what this run cannot show
    provenance     what produced every result

Nothing is written until everything is rendered, and every file is written
atomically, so a bad input leaves the previous report intact.
"""

from __future__ import annotations

from pathlib import Path

from .. import blog, metrics as M, paths, predict, render
from ..config import Params
from ..host import HostError, describe as describe_host, label as host_label, load as load_host
from ..io import atomic_write, write_dir, write_json
from ..log import get_logger
from ..results import Result, ResultError, load
from .audit import audit_section
from .blog_explained import blog_explained
from .cells import run_kind_label
from .conclusion import conclusion
from .figures import OPENING_FIGURE, figures
from .headline import headline, what_this_shows
from .inputs import input_pipeline
from .opening import opening, where_measured
from .prediction import model_section
from .provenance import provenance

log = get_logger("report").info


class ReportError(RuntimeError):
    """A results file is missing or malformed, or the params name no result (one line)."""


def load_results(params: Params, results_dir: Path = paths.RESULTS) -> list[Result]:
    variants = params.all_variants()
    missing = [v.name for v in variants if not paths.result_path(v.name, results_dir).exists()]
    if missing:
        raise ReportError(f"{paths.result_path(missing[0], results_dir)}: results file not found "
                          f"({len(missing)} missing: {', '.join(missing)}); run `dvc repro` first")
    out = []
    for v in variants:
        path = paths.result_path(v.name, results_dir)
        try:
            r = load(path)
        except ResultError as exc:
            raise ReportError(str(exc)) from None
        if r.variant != v.name:
            raise ReportError(f"{path}: holds variant {r.variant!r}, expected {v.name!r}")
        out.append(r)
    if params.report.baseline not in {r.variant for r in out}:
        raise ReportError(f"report.baseline: variant {params.report.baseline!r} has no result "
                          f"(have: {', '.join(r.variant for r in out)})")
    return out


def load_terms(path: Path = paths.TERMS) -> dict | None:
    """results/model-terms.json (stage `terms`), checked (predict.load_terms), or None where it was not
    measured."""
    if not path.exists():
        return None
    try:
        return predict.load_terms(path)
    except predict.TermsError as exc:
        raise ReportError(str(exc)) from None


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

    results = load_results(params, results_dir)
    start = dt.datetime.fromisoformat(since)
    new = [r for r in results if dt.datetime.fromisoformat(r.started_at) >= start]
    old = [r for r in results if r not in new]
    here = current_host()
    out = [f"flowerbench: {len(new)} result(s) measured now on this host ({host_label(here)}), {len(old)} reused"]
    if old:
        lines, _ = where_measured(old, here)
        out += [f"  reused, measured on {line}" for line in lines]
        out.append("  (DVC reran nothing for them: same code, params, data and host description; "
                   "`make remeasure` measures every result again)")
    return "\n".join(out)


def markdown(results: list[Result], metrics: dict, audit: list[dict], ceiling: list[dict],
             figs: dict[str, tuple[bytes, str]], params: Params, warnings: list[str], here: dict,
             terms: dict | None, predicted: list[dict]) -> str:
    """The report: its sections in order, each given the data it needs."""
    base = params.report.baseline
    verdict = predict.verdict(predicted) if terms and not terms.get("skipped") else None
    blocks = [*opening(results, metrics, audit, warnings, here, figs),
              *headline(results, metrics, base),
              *what_this_shows(results, metrics, base),
              *input_pipeline(ceiling),
              *audit_section(audit, results, metrics, base, params.report.blog_seconds),
              *model_section(terms, predicted, verdict),
              *blog_explained(params.report, verdict, predicted),
              *conclusion(results, metrics, audit),
              "## Figures", *(render.figure(name, caption) for name, (_, caption) in figs.items()
                              if name != OPENING_FIGURE),
              *provenance(results)]
    return "\n\n".join(blocks) + "\n"


def run(params: Params, results_dir: Path = paths.RESULTS, reports_dir: Path = paths.REPORTS) -> dict:
    results = load_results(params, results_dir)
    here = current_host()
    terms = load_terms(results_dir / paths.TERMS.name)
    warnings = []
    mixed = M.mixed_params(results)
    if mixed:
        warnings.append(f"results from different param sets: {', '.join(mixed)} differ from "
                        f"{results[0].variant} in {'/'.join(M.COMPARABLE)}; their timings are not comparable")
        log(f"warning: {warnings[-1]}")
    # (another schema version never gets this far: results.load refuses it)
    for what, key in (("git commits", "git_commit"), ("data trees", "data_tree_sha256")):
        groups: dict = {}
        for r in results:
            groups.setdefault(getattr(r, key), []).append(r.variant)
        if len(groups) > 1:
            warnings.append(f"results from {len(groups)} different {what}: " + "; ".join(
                f"{str(k)[:12]}: {', '.join(v)}" for k, v in groups.items()) + "; compare them with care")
            log(f"warning: {warnings[-1]}")
    metrics = M.compute_metrics(results, params.report.baseline)
    audit = blog.audit(params.report.blog_seconds, params.report.blog_claimed_reduction_pct)
    ceiling = M.input_ceiling(results)
    df = M.tidy(results)
    figs = figures(results, metrics, df, params.report, run_kind_label(results), audit)
    rows = predict.predictions(results, terms)
    md = markdown(results, metrics, audit, ceiling, figs, params, warnings, here, terms, rows)
    page = render.html_page(md, "flowerbench report", {name: png for name, (png, _) in figs.items()})

    # Everything is rendered; now write. Each folder is written whole and swapped into place.
    write_dir(reports_dir / paths.FIGURES.name, {name: png for name, (png, _) in figs.items()})
    write_dir(reports_dir / paths.PLOTS.name, M.plots_data(df))
    write_json(reports_dir / paths.METRICS.name, M.metrics_file(metrics, audit, ceiling, warnings, rows))
    atomic_write(reports_dir / paths.REPORT_MD.name, md)
    atomic_write(reports_dir / paths.REPORT_HTML.name, page)
    log(f"{len(results)} variants -> {reports_dir}/report.html, report.md, {len(figs)} figures, metrics.json")
    return {"metrics": metrics, "audit": audit, "warnings": warnings, "model": rows}
