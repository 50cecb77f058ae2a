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

from . import metrics as M, paths, provenance, render
from .config import Params
from .figures import figures
from .io import atomic_write, write_dir, write_json
from .log import get_logger
from .results import Result, ResultError, load

log = get_logger("report").info
EMULATED_KINDS = {"logical_cpu", "logical_gpu", "local_cpu_workers"}
ATTRIBUTION = ("The flower_photos images are from Flickr, licensed by their authors under Creative Commons "
               "Attribution; each photo's author is listed in the LICENSE.txt inside the archive.")


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


def run_kind_label(results: list[Result]) -> str:
    kinds = "/".join(sorted({r.device_kind for r in results}))
    gpus = sorted({r.gpu_model for r in results if r.gpu_model})
    return f"{kinds} on {', '.join(gpus)}" if gpus else f"{kinds}, {results[0].cpu_model}"


def banners(results: list[Result]) -> list[str]:
    out = []
    r0 = results[0]
    emulated = sorted({r.device_kind for r in results if r.device_kind in EMULATED_KINDS or r.emulated})
    if emulated:
        out.append(f"EMULATION: replicas ran as {', '.join(emulated)} devices sharing one host "
                   f"({r0.cpu_count} CPU core(s), {r0.cpu_model}{', ' + r0.gpu_model if r0.gpu_model else ''}). "
                   "These timings measure the software path, not multi-GPU speed-up; they are not GPU results.")
    elif all(r.device_kind == "cpu" for r in results):
        out.append("CPU RUN: no GPU was used; these are not GPU results.")
    if any(r.data_synthetic for r in results):
        out.append("SYNTHETIC DATA: trained on the generated stand-in, NOT the real flower_photos "
                   "(no network to download it). Accuracy numbers say nothing about real flowers.")
    ceiling = [r.variant for r in results if r.pipeline == "synthetic"]
    if ceiling:
        out.append(f"INPUT CEILING: {', '.join(ceiling)} fed random in-memory tensors (no JPEG decoding): "
                   "they measure the model alone, not the data pipeline.")
    return out


def findings(results: list[Result], metrics: dict, baseline: str) -> str:
    """A paragraph generated from the numbers."""
    by = {r.variant: r for r in results}
    real = [v for v in metrics if by[v].pipeline == "files"] or list(metrics)  # a ceiling run is not a contender
    fastest = min(real, key=lambda v: metrics[v]["timed_seconds"])
    base = metrics[baseline]
    if fastest == baseline:
        parts = [f"The baseline {baseline} was the fastest variant ({base['timed_seconds']:.2f} s, "
                 f"{base['images_per_second']:.1f} img/s): no other variant reduced the time."]
    else:
        parts = [f"The fastest variant was {fastest} at {metrics[fastest]['timed_seconds']:.2f} s "
                 f"({metrics[fastest]['images_per_second']:.1f} img/s), a "
                 f"{metrics[fastest]['reduction_vs_baseline_pct']:.1f}% reduction vs {baseline} "
                 f"({base['timed_seconds']:.2f} s)."]
    multi = [v for v, m in metrics.items() if m["replicas"] > 1 and "scaling_efficiency" in m]
    if multi:
        best = max(multi, key=lambda v: metrics[v]["scaling_efficiency"])
        worst = min(multi, key=lambda v: metrics[v]["scaling_efficiency"])
        parts.append(f"Scaling efficiency ranged from {metrics[worst]['scaling_efficiency']:.2f} ({worst}) to "
                     f"{metrics[best]['scaling_efficiency']:.2f} ({best}); 1.00 would be perfect linear scaling.")
        slower = [v for v in multi if metrics[v]["speedup_vs_single_same_loop"] < 1]
        if slower:
            parts.append(f"{len(slower)} multi-replica variant(s) were slower than one replica of the same loop "
                         f"({', '.join(slower)}), as expected when replicas share the same cores.")
    singles = {(r.loop, r.pipeline): r.variant for r in reversed(results) if r.replicas == 1}
    fit, custom = singles.get(("fit", "files")), singles.get(("custom", "files"))
    if fit and custom:
        d = M.reduction_pct(metrics[fit]["timed_seconds"], metrics[custom]["timed_seconds"])
        parts.append(f"On one replica the custom loop was {abs(d):.1f}% {'faster' if d > 0 else 'slower'} "
                     f"than fit().")
    if {by[v].device_kind for v in metrics} & EMULATED_KINDS:
        parts.append("Because the replicas were emulated on shared CPU cores, these numbers cannot confirm or "
                     "refute the blog's GPU speed-ups.")
    return " ".join(parts)


def _fmt(x, spec: str = ".2f") -> str:
    return "n/a" if x is None else format(x, spec)


def markdown(results: list[Result], metrics: dict, audit: list[dict], ceiling: list[dict],
             figs: dict[str, tuple[bytes, str]], params: Params, warnings: list[str]) -> str:
    base, r0 = params.report.baseline, results[0]
    scaling = ("the global batch grows with replicas, as in the blog, so runs differ in steps per epoch"
               if r0.scaling == "weak" else
               "the global batch is fixed and split across replicas, so every run takes the same optimisation steps")
    b = ["# flowerbench report: multi-replica ResNet50 training on flower_photos"]
    b += [render.banner(t) for t in banners(results)] + [render.banner(f"WARNING: {w}") for w in warnings]
    b.append(f"{len(results)} variant(s); {r0.image_size} px, {r0.images_per_epoch} images per epoch, "
             f"{r0.batch_size_per_replica} per replica ({r0.scaling} scaling: {scaling}), {r0.warmup_epochs} "
             f"warm-up + {r0.epochs} timed epoch(s), model {r0.model}.")
    b.append("## Headline")
    rows = [[r.variant, r.loop, r.replicas, r.device_kind, r.pipeline, r.global_batch_size,
             _fmt(m["timed_seconds"]), _fmt(m["images_per_second"], ".1f"), _fmt(m["speedup_vs_baseline"]),
             _fmt(m["reduction_vs_baseline_pct"], "+.1f") + "%", _fmt(m.get("scaling_efficiency")),
             _fmt(r.final_loss, ".3f"), _fmt(r.final_accuracy, ".3f")]
            for r in results for m in [metrics[r.variant]]]
    b.append(render.table(["variant", "loop", "replicas", "device kind", "input", "global batch", "timed s", "img/s",
                           f"speedup vs {base}", f"reduction vs {base}", "efficiency", "final loss", "final acc"],
                          rows))
    b.append("Efficiency = speedup vs the single-replica run of the same loop / replicas.")
    b += ["## What this shows", findings(results, metrics, base)]
    b.append("## Input pipeline: real JPEGs vs synthetic tensors")
    if ceiling:
        b.append("The same model and settings fed from decoded JPEG files and from random in-memory tensors "
                 "of the same shape. real / synthetic near 1.00 means the input pipeline keeps up with "
                 "training; well above 1 means the model waits for data (the bench's target is <= 1.05).")
        b.append(render.table(["real variant", "synthetic variant", "loop", "replicas", "real s", "synthetic s",
                               "real img/s", "synthetic img/s", "real / synthetic"],
                              [[c["real"], c["synthetic"], c["loop"], c["replicas"], _fmt(c["real_seconds"]),
                                _fmt(c["synthetic_seconds"]), _fmt(c["real_images_per_second"], ".1f"),
                                _fmt(c["synthetic_images_per_second"], ".1f"), _fmt(c["real_over_synthetic"], ".3f")]
                               for c in ceiling]))
    else:
        b.append("No synthetic-input variant ran, so there is no input ceiling to compare with. Add one "
                 "with `pipeline: synthetic` beside a files variant of the same loop and replicas "
                 "(params.yaml has `single_fit_synthetic`).")
    b += ["## The blog's claims, audited",
          f"Reductions re-derived from the blog's own 4x V100 times (single-GPU fit "
          f"{params.report.blog_seconds[M.BLOG_BASELINE]} s):"]
    b.append(render.table(["variant", "blog s", "blog claims", "derived from blog's times", "claim - derived",
                           "this run"],
                          [[a["variant"], a["blog_seconds"], f"{a['claimed_reduction_pct']:.1f}%",
                            f"{a['derived_reduction_pct']:.1f}%", f"{a['discrepancy_pct_points']:+.1f} pp",
                            _fmt(metrics.get(a["variant"], {}).get("reduction_vs_baseline_pct"), ".1f") + "%"]
                           for a in audit]))
    b.append("## Figures")
    b += [render.figure(name, caption) for name, (_, caption) in figs.items()]
    b.append("## Provenance")
    v = r0.versions
    prov = [f"generated {provenance.now()} by `python -m flowerbench report`",
            f"git commit {r0.git_commit} ({provenance.git_tree(r0.git_dirty, r0.git_changed)})",
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
    metrics = M.compute_metrics(results, params.report.baseline)
    audit = M.blog_audit(params.report.blog_seconds, params.report.blog_claimed_reduction_pct)
    ceiling = M.input_ceiling(results)
    df = M.tidy(results)
    figs = figures(results, metrics, df, params.report, run_kind_label(results))
    md = markdown(results, metrics, audit, ceiling, figs, params, warnings)
    page = render.html_page(md, "flowerbench report", {name: png for name, (png, _) in figs.items()})

    # Everything is rendered; now write. Each folder is written whole and swapped into place.
    write_dir(reports_dir / paths.FIGURES.name, {name: png for name, (png, _) in figs.items()})
    write_dir(reports_dir / paths.PLOTS.name, M.plots_data(df))
    write_json(reports_dir / paths.METRICS.name, M.metrics_file(metrics, audit, ceiling, warnings))
    atomic_write(reports_dir / paths.REPORT_MD.name, md)
    atomic_write(reports_dir / paths.REPORT_HTML.name, page)
    log(f"{len(results)} variants -> {reports_dir}/report.html, report.md, {len(figs)} figures, metrics.json")
    return {"metrics": metrics, "audit": audit, "warnings": warnings}
