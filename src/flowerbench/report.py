"""Stage `report`: results/*.json -> reports/ (report.md, self-contained report.html,
figures/*.png, metrics.json for `dvc metrics`, plots/*.csv for `dvc plots`).

    python -m flowerbench report [--params params.yaml]

It reads the result of every variant the params declare (variants, sweep,
multi-worker) through the result model (results.py), computes the numbers
(metrics.py), draws the figures (figures.py), writes the text here and renders
it (render.py).  Nothing is written until everything is rendered, and every
file is written atomically, so a bad input leaves the previous report intact.
"""

from __future__ import annotations

from pathlib import Path

from . import metrics as M, paths, render
from . import predict
from .prose import (ATTRIBUTION, answer, banners, blog_model_text, blog_validation, code_state, conclusion,
                    confounders, dispatch_rows, dispatch_verdict, findings, fmt as _fmt, model_rows, model_verdict,
                    run_kind_label, seconds_cell, speedup_cell, terms_lines, versus, versus_same_loop, where_measured)
from .config import Params
from .figures import figures
from .host import describe as describe_host, label as host_label
from .io import atomic_write, read_json, write_dir, write_json
from .log import get_logger
from .results import Result, ResultError, load

log = get_logger("report").info
OPENING_FIGURE = "scaling.png"   # the answer, right under the opening sentence


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
    """results/model-terms.json (stage `terms`), or None where it was not measured."""
    if not path.exists():
        return None
    try:
        terms = read_json(path)
    except ValueError as exc:
        raise ReportError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(terms, dict) or terms.get("schema_version") != predict.TERMS_SCHEMA:
        got = terms.get("schema_version") if isinstance(terms, dict) else None
        raise ReportError(f"{path}: schema_version {got}, this code reads {predict.TERMS_SCHEMA} (rerun `dvc repro`)")
    return terms


def model_section(terms: dict | None, rows: list[dict], verdict: dict) -> list[str]:
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
    if terms.get("skipped"):
        return b + [f"The terms were not measured: {terms['skipped']}."]
    b += [f"Terms, measured {terms['started_at'][:10]} on {terms['cpu_model']} by the `terms` stage:",
          render.bullets(terms_lines(terms)),
          render.table(["variant", "runs", "role", "predicted s = compute + all-reduce + input", "measured s: "
                        "median [95% CI]", "error", "holds within", "verdict"], model_rows(rows)),
          model_verdict(verdict, rows)]
    extended = [r for r in rows if "dispatch_seconds" in r]
    if extended:
        b += ["The fifth term, measured because the four missed the in-process runs on this host (docs/model.md): "
              "N replicas' step driven from one process (the custom loop's own per-step function on in-memory "
              "tensors; `dispatch` in the terms file), less contention x one replica's step and the all-reduce. "
              "Added to the in-process runs' predictions:",
              render.table(["variant", "dispatch ms per step", "four terms s", "with dispatch s", "measured s",
                            "error", "verdict"], dispatch_rows(rows)),
              dispatch_verdict(predict.verdict(rows, "holds_with_dispatch"))]
    b.append("With the decoded images cached (`data.cache: true`) the input term is a small part of an epoch; the "
             "input-on validation run (`dvc exp run -n input-on -S data.cache=false -S data.standin_px=512`) puts "
             "it on trial, and its report is kept beside this one ([docs/model.md](../docs/model.md#putting-the-"
             "input-term-on-trial)).")
    return b


def budget_cell(r: Result) -> str:
    """'core_matched: 2 cores [0, 1], intra 1 / inter 2'."""
    pinned = str(r.budget_affinity) if r.budget_affinity else "not pinned"
    if r.workers:  # the chief's budget; every worker had its own slice of the same size
        return (f"{r.budget_kind}: {r.workers} workers x {r.budget_cores} core(s) (chief {pinned}), intra "
                f"{r.intra_op_threads or 'default'} / inter {r.inter_op_threads or 'default'} each")
    return (f"{r.budget_kind}: {r.budget_cores} core(s) {pinned}, intra {r.intra_op_threads or 'default'} / "
            f"inter {r.inter_op_threads or 'default'}")


def current_host(path: Path = paths.HOST) -> dict:
    """The machine this report is rendered on: the pipeline's data/host.json, or (the report run
    on its own, outside DVC) a fresh description."""
    try:
        return read_json(path)
    except (OSError, ValueError):
        return describe_host()


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
             model: list[str], verdict: dict | None, predicted: list[dict]) -> str:
    base, r0 = params.report.baseline, results[0]
    scaling = ("the global batch grows with replicas, as in the blog, so runs differ in steps per epoch"
               if r0.scaling == "weak" else
               "the global batch is fixed and split across replicas, so every run takes the same optimisation steps")
    data = ("a generated stand-in for flower_photos (not the real photos)" if any(r.data_synthetic for r in results)
            else "flower_photos")
    b = [f"# flowerbench report: multi-replica {r0.model} training on {data}"]
    measured, elsewhere = where_measured(results, here)
    b += [render.banner(t) for t in banners(results) + elsewhere]
    b += [render.banner(f"WARNING: {w}") for w in warnings]
    b.append(f"Rendered on {host_label(here)}. Where each result was measured:")
    b.append(render.bullets(measured))
    b.append(answer(results, metrics, audit))
    if OPENING_FIGURE in figs:
        b.append(render.figure(OPENING_FIGURE, figs[OPENING_FIGURE][1]))
    b.append(f"{len(results)} variant(s); {r0.image_size} px, {r0.images_per_epoch} images per epoch, "
             f"{r0.batch_size_per_replica} per replica ({r0.scaling} scaling: {scaling}), {r0.warmup_epochs} "
             f"warm-up + {r0.epochs} timed epoch(s), model {r0.model}.")
    b.append("## Headline")
    rows = [[r.variant, r.loop, r.replicas, r.device_kind, budget_cell(r), r.pipeline, r.global_batch_size,
             seconds_cell(m), _fmt(m["whole_call_seconds"]), _fmt(m["whole_call_over_epochs"], ".3f"),
             _fmt(m["images_per_second"], ".1f"), speedup_cell(m), versus(m, r.variant == base), versus_same_loop(m),
             _fmt(m.get("scaling_efficiency")), _fmt(r.final_loss, ".3f"), _fmt(r.final_accuracy, ".3f")]
            for r in results for m in [metrics[r.variant]]]
    b.append(render.table(["variant", "loop", "replicas", "device kind", "core budget", "input", "global batch",
                           "timed epochs s: median [95% CI] (n)", "whole call s", "whole / epochs", "img/s",
                           f"speedup vs {base} [95% CI]", f"vs {base}", "vs 1 replica, same loop", "efficiency", "final loss", "final acc"],
                          rows))
    b.append("Timed epochs: the sum of each repeat's timed epochs (our window). Whole call: the wall time of "
             "the whole timed `fit()` call or epoch loop (the blog's `time.time()` window); whole / epochs "
             "near 1.00 means nothing outside the epochs is timed by the blog's window. The 95 % intervals "
             "are over repeats inside one process (Student's t; speedups by the delta method), so they "
             "miss the host's drift between processes (`make bench` measures that).")
    b.append("Efficiency = speed-up vs the single-replica run of the same loop on one replica's share of the "
             "cores (the same-budget baseline) / replicas (for one replica with N x c cores as threads: / N). "
             "Runs whose replicas shared cores (oversubscribed) have no efficiency.")
    b += ["## What this shows", findings(results, metrics, base), "Confounders:",
          render.bullets(confounders(results, metrics))]
    b.append("## Input pipeline: real JPEGs vs in-memory tensors")
    if ceiling:
        b.append("The same model and settings fed from decoded JPEG files and from random in-memory tensors "
                 "of the same shape. real / tensors near 1.00 means the input pipeline keeps up with "
                 "training; well above 1 means the model waits for data (the bench's target is <= 1.05).")
        b.append(render.table(["real variant", "tensors variant", "loop", "replicas", "real s", "tensors s",
                               "real img/s", "tensors img/s", "real / tensors"],
                              [[c["real"], c["tensors"], c["loop"], c["replicas"], _fmt(c["real_seconds"]),
                                _fmt(c["tensors_seconds"]), _fmt(c["real_images_per_second"], ".1f"),
                                _fmt(c["tensors_images_per_second"], ".1f"), _fmt(c["real_over_tensors"], ".3f")]
                               for c in ceiling]))
    else:
        b.append("No in-memory-tensors variant ran, so there is no input ceiling to compare with. Add one "
                 "with `pipeline: tensors` beside a files variant of the same loop and replicas "
                 "(params.yaml has `single_fit_tensors`).")
    b += ["## The blog's claims, audited",
          f"Everything below is derived from the blog's own 4x V100 times (single-GPU fit "
          f"{params.report.blog_seconds[M.BLOG_BASELINE]} s, {M.BLOG_SETTINGS['images_per_epoch']:,} images x "
          f"{M.BLOG_SETTINGS['epochs']} timed epochs):"]
    b.append(render.table(["variant", "GPUs", "blog s", "img/s", "speedup", "efficiency", "blog claims",
                           "derived from blog's times", "claim - derived", "this run"],
                          [[a["variant"], a["gpus"], a["blog_seconds"], f"{a['images_per_second']:.0f}",
                            f"{a['speedup']:.2f}x", _fmt(a["efficiency"]),
                            "n/a" if a["claimed_reduction_pct"] is None else f"{a['claimed_reduction_pct']:.1f}%",
                            f"{a['derived_reduction_pct']:.1f}%",
                            "n/a" if a["discrepancy_pct_points"] is None else f"{a['discrepancy_pct_points']:+.1f} pp",
                            versus(metrics[a["variant"]], a["variant"] == base) if a["variant"] in metrics
                            else "not run"]
                           for a in audit]))
    b.append("Settings side by side (this run's are the baseline's; see the banners for what its devices were):")
    s_ = M.BLOG_SETTINGS
    b.append(render.table(["setting", "blog", "this run"], [
        ["data", s_["data"], r0.data_label or r0.data_source],
        ["model", s_["model"], r0.model],
        ["image size", f"{s_['image_size']} px", f"{r0.image_size} px"],
        ["images per epoch", f"{s_['images_per_epoch']:,}", f"{r0.images_per_epoch:,}"],
        ["batch per replica", s_["batch_size_per_replica"], r0.batch_size_per_replica],
        ["warm-up + timed epochs", f"{s_['warmup_epochs']} + {s_['epochs']}",
         f"{r0.warmup_epochs} + {r0.epochs} (x {r0.repeats} repeat(s))"],
        ["hardware", s_["hardware"], run_kind_label(results)],
        ["replicas", "1 and 4", ", ".join(str(n) for n in sorted({r.replicas for r in results}))]]))
    b += model
    sm = params.report.scaling_model
    blog = M.blog_model(params.report.blog_seconds, sm)
    inputs, said = blog_model_text(blog, sm, params.report.blog_seconds)
    b += ["## The blog explained: a model of its 4-GPU run", blog_validation(verdict, predicted),
          "Epoch time on N GPUs ~ max(input time, compute / N + steps x all-reduce time), weak scaling as the "
          "blog. Inputs (report.scaling_model in params.yaml):", render.bullets(inputs),
          render.table(["interconnect", "input", "compute + all-reduce s", "input s", "predicted 4-GPU s (max)",
                        "bound", "efficiency", "blog fit s", "blog custom s"],
                       [[r["interconnect"], r["input"], f"{r['compute_seconds']:.1f}", f"{r['input_seconds']:.1f}",
                         f"{r['predicted_seconds']:.1f}", r["bound"], f"{r['efficiency']:.2f}",
                         params.report.blog_seconds.get("mirrored_fit", "n/a"),
                         params.report.blog_seconds.get("mirrored_custom", "n/a")] for r in blog["rows"]]),
          " ".join(said),
          "No GPU run has been made by this project; when one exists (make gpu-check), its times belong beside "
          "these predictions."]
    b += ["## Conclusion", *conclusion(results, metrics, audit)]
    b.append("## Figures")
    b += [render.figure(name, caption) for name, (_, caption) in figs.items() if name != OPENING_FIGURE]
    b.append("## Provenance")
    v = r0.versions
    # No rendering time: the report is a function of its inputs, so rerendering the same results (a
    # fresh clone's `make reproduce`) gives the same bytes and leaves dvc.lock as committed.
    prov = [f"rendered by `python -m flowerbench report` from results measured "
            f"{min(r.started_at for r in results)} to {max(r.finished_at for r in results)}",
            code_state(results),
            "versions: " + ", ".join(f"{k} {v[k]}" for k in sorted(v)),
            f"host {r0.hostname}: {r0.cpu_model} ({r0.cpu_count} cores), GPU {r0.gpu_model or 'none'}; {r0.platform}",
            f"data: {r0.data_label or r0.data_source}, source {r0.data_source}, {r0.images_per_epoch} images "
            f"per epoch, tree sha256 {r0.data_tree_sha256}"]
    prov += [f"{r.variant}: {r.device_kind} {r.devices}, strategy {r.strategy}, all-reduce {r.cross_device_ops}, "
             f"threads intra {r.intra_op_threads} / inter {r.inter_op_threads} ({r.thread_policy}), "
             f"started {r.started_at}" for r in results]
    b.append(render.bullets(prov))
    if not all(r.data_synthetic for r in results):
        b.append(f"Data attribution: {ATTRIBUTION}")
    b += ["Resolved params of the baseline run:",
          render.bullets(f"{k}: {r0.params[k]}" for k in M.COMPARABLE if k in r0.params)]
    return "\n\n".join(b) + "\n"


def run(params: Params, results_dir: Path = paths.RESULTS, reports_dir: Path = paths.REPORTS) -> dict:
    results = load_results(params, results_dir)
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
    audit = M.blog_audit(params.report.blog_seconds, params.report.blog_claimed_reduction_pct)
    ceiling = M.input_ceiling(results)
    df = M.tidy(results)
    figs = figures(results, metrics, df, params.report, run_kind_label(results), audit)
    terms = load_terms(results_dir / paths.TERMS.name)
    rows = predict.predictions(results, terms)
    verdict = predict.verdict(rows) if terms and not terms.get("skipped") else None
    md = markdown(results, metrics, audit, ceiling, figs, params, warnings, current_host(),
                  model_section(terms, rows, verdict), verdict, rows)
    page = render.html_page(md, "flowerbench report", {name: png for name, (png, _) in figs.items()})

    # Everything is rendered; now write. Each folder is written whole and swapped into place.
    write_dir(reports_dir / paths.FIGURES.name, {name: png for name, (png, _) in figs.items()})
    write_dir(reports_dir / paths.PLOTS.name, M.plots_data(df))
    write_json(reports_dir / paths.METRICS.name, M.metrics_file(metrics, audit, ceiling, warnings, rows))
    atomic_write(reports_dir / paths.REPORT_MD.name, md)
    atomic_write(reports_dir / paths.REPORT_HTML.name, page)
    log(f"{len(results)} variants -> {reports_dir}/report.html, report.md, {len(figs)} figures, metrics.json")
    return {"metrics": metrics, "audit": audit, "warnings": warnings, "model": rows}
