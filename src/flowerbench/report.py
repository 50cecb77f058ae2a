"""Stage `report`: results/*.json -> reports/ (report.md, self-contained report.html,
figures/*.png, metrics.json for `dvc metrics`, plots/*.csv for `dvc plots`).

    python -m flowerbench report [--params params.yaml]

It reads the result of every variant the params declare (variants, sweep,
multi-worker), validates each, and only then renders; every file is written
atomically, so a bad input leaves the previous report intact.  The HTML embeds
its figures as base64 PNG and references nothing on the network.
"""

from __future__ import annotations

import base64
import html
import io
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from . import paths, provenance
from .config import Params, resolved_dict
from .io import atomic_write, read_json, write_dir, write_json
from .log import get_logger

REQUIRED = ("variant", "loop", "replicas", "device_kind", "devices", "global_batch_size", "batch_size_per_replica",
            "image_size", "images_per_epoch", "epochs", "warmup_seconds", "epoch_seconds", "epoch_loss", "timed_seconds",
            "images_per_second", "final_loss", "final_accuracy", "data_source", "params", "versions")
# Params that must agree between results for their timings to be comparable.
COMPARABLE = ("seed", "data", "model", "train")
EMULATED_KINDS = {"logical_cpu", "logical_gpu", "local_cpu_workers"}


class ReportError(RuntimeError):
    """A results file is missing or malformed (one line naming the file)."""


log = get_logger("report").info


# --------------------------------------------------------------------------- inputs


def load_results(params: Params, results_dir: Path = paths.RESULTS) -> list[dict]:
    out = []
    missing = []
    for v in params.all_variants():
        path = paths.result_path(v.name, results_dir)
        if not path.exists():
            missing.append(str(path))
            continue
        try:
            r = read_json(path)
        except ValueError as exc:
            raise ReportError(str(exc)) from None
        if not isinstance(r, dict):
            raise ReportError(f"{path}: expected a JSON object, got {type(r).__name__}")
        absent = [k for k in REQUIRED if k not in r]
        if absent:
            raise ReportError(f"{path}: missing field(s) {', '.join(absent)} (written by an older or broken run? "
                              f"rerun `dvc repro`)")
        if r["variant"] != v.name:
            raise ReportError(f"{path}: holds variant {r['variant']!r}, expected {v.name!r}")
        if not r["epoch_seconds"] or r["timed_seconds"] <= 0:
            raise ReportError(f"{path}: no timed epochs (timed_seconds={r['timed_seconds']})")
        r["_path"] = str(path)
        out.append(r)
    if missing:
        raise ReportError(f"{missing[0]}: results file not found ({len(missing)} missing: "
                          f"{', '.join(Path(m).stem for m in missing)}); run `dvc repro` first")
    return out


def mixed_params(results: list[dict]) -> list[str]:
    """Variants whose comparable params differ from the first result's (warned about, named)."""
    def key(r):
        p = dict(r["params"])
        train = dict(p.get("train", {}))
        train.pop("verbose", None)
        p["train"] = train
        return {k: p.get(k) for k in COMPARABLE}
    ref = key(results[0])
    return [r["variant"] for r in results[1:] if key(r) != ref]


# --------------------------------------------------------------------------- numbers


def reduction_pct(baseline_s: float, s: float) -> float:
    return (1.0 - s / baseline_s) * 100.0


def blog_audit(report_params) -> list[dict]:
    """The blog's claimed reductions re-derived from its own times."""
    secs = report_params.blog_seconds
    base = secs["single_fit"]
    rows = []
    for name, claimed in report_params.blog_claimed_reduction_pct.items():
        derived = round(reduction_pct(base, secs[name]), 1)
        rows.append({"variant": name, "blog_seconds": secs[name], "baseline_seconds": base,
                     "claimed_reduction_pct": claimed, "derived_reduction_pct": derived,
                     "discrepancy_pct_points": round(claimed - derived, 1)})
    return rows


def compute_metrics(results: list[dict], baseline: str) -> dict[str, dict]:
    by = {r["variant"]: r for r in results}
    if baseline not in by:
        raise ReportError(f"report.baseline: variant {baseline!r} has no result (have: {', '.join(by)})")
    base_t = by[baseline]["timed_seconds"]
    singles = {}
    for r in results:  # the single-replica run of each loop and input; declared variants come first
        if r["replicas"] == 1:
            singles.setdefault((r["loop"], pipeline(r)), r)
    out = {}
    for r in results:
        t = r["timed_seconds"]
        single = singles.get((r["loop"], pipeline(r)))
        m = {"loop": r["loop"], "replicas": r["replicas"], "device_kind": r["device_kind"],
             "timed_seconds": round(t, 6), "images_per_second": round(r["images_per_second"], 6),
             "speedup_vs_baseline": round(base_t / t, 6),
             "reduction_vs_baseline_pct": round(reduction_pct(base_t, t), 6)}
        if single is not None:
            s = single["timed_seconds"] / t
            m.update(single_same_loop=single["variant"], speedup_vs_single_same_loop=round(s, 6),
                     reduction_vs_single_same_loop_pct=round(reduction_pct(single["timed_seconds"], t), 6),
                     scaling_efficiency=round(s / r["replicas"], 6))
        out[r["variant"]] = m
    return out


def git_tree(r: dict) -> str:
    """'clean tree', the uncommitted files, or 'tree state unknown' (no git)."""
    if r.get("git_dirty") is None:
        return "tree state unknown"
    if not r["git_dirty"]:
        return "clean tree"
    changed = r.get("git_changed")  # absent in results written before it was recorded
    return "uncommitted changes: " + (", ".join(changed) if changed else "files not recorded")


def pipeline(r: dict) -> str:
    return r.get("pipeline", "files")


def input_ceiling(results: list[dict]) -> list[dict]:
    """Each synthetic-input result beside the files result it shadows (same loop, replicas, batch).

    real / synthetic near 1 means the JPEG pipeline keeps up with the model; well above 1
    means training waits for input (bench target: <= 1.05)."""
    rows = []
    for s in (r for r in results if pipeline(r) == "synthetic"):
        twins = [r for r in results if pipeline(r) == "files" and
                 all(r.get(k) == s.get(k) for k in ("loop", "replicas", "global_batch_size", "custom_graph"))]
        if twins:
            f = twins[0]
            rows.append({"real": f["variant"], "synthetic": s["variant"], "loop": s["loop"],
                         "replicas": s["replicas"], "real_seconds": f["timed_seconds"],
                         "synthetic_seconds": s["timed_seconds"],
                         "real_images_per_second": f["images_per_second"],
                         "synthetic_images_per_second": s["images_per_second"],
                         "real_over_synthetic": f["timed_seconds"] / s["timed_seconds"]})
    return rows


def tidy(results: list[dict]):
    """One row per variant x epoch (warm-up rows: phase=warmup, epoch 0)."""
    import pandas as pd

    rows = []
    for r in results:
        common = {"variant": r["variant"], "loop": r["loop"], "replicas": r["replicas"],
                  "device_kind": r["device_kind"]}
        rows.append({**common, "phase": "warmup", "repeat": 0, "epoch": 0, "seconds": r["warmup_seconds"],
                     "images": r["images_per_epoch"] * r.get("warmup_epochs", 1)})
        per = r["epochs"]
        images = r.get("epoch_images") or [r["images_per_epoch"]] * len(r["epoch_seconds"])
        for i, (s, n, loss) in enumerate(zip(r["epoch_seconds"], images, r["epoch_loss"])):
            rows.append({**common, "phase": "timed", "repeat": i // per, "epoch": i % per + 1,
                         "seconds": s, "images": n, "loss": loss})
    df = pd.DataFrame(rows)
    df["images_per_second"] = df["images"] / df["seconds"]
    return df


def plots_data(df) -> dict[str, str]:
    """The `dvc plots` files: timed epochs (one series per variant, x = timed epoch 1.. across
    repeats) and the warm-up apart.  Written from the results after timing, never during it."""
    timed = df[df.phase == "timed"].copy()
    timed["timed_epoch"] = timed.groupby("variant").cumcount() + 1
    epochs = timed[["variant", "timed_epoch", "repeat", "epoch", "seconds", "loss", "images_per_second"]]
    warm = df[df.phase == "warmup"][["variant", "seconds"]]
    return {paths.EPOCHS_PLOT.name: epochs.to_csv(index=False, float_format="%.6f"),
            paths.WARMUP_PLOT.name: warm.to_csv(index=False, float_format="%.6f")}


def metrics_file(metrics: dict, audit: list[dict], ceiling: list[dict], warnings: list[str]) -> dict:
    """reports/metrics.json: numbers only, nested by name (`dvc metrics show` drops lists and
    strings); the labels and the warnings' text are in the report."""
    def numbers(d: dict) -> dict:
        return {k: v for k, v in d.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}

    return {"variants": {name: numbers(m) for name, m in metrics.items()},
            "blog_audit": {a["variant"]: numbers(a) for a in audit},
            "input_ceiling": {c["synthetic"]: numbers(c) for c in ceiling},
            "warnings": len(warnings)}


# --------------------------------------------------------------------------- figures


def _png(fig, dpi: int) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    import matplotlib.pyplot as plt
    plt.close(fig)
    return buf.getvalue()


def figures(results: list[dict], metrics: dict, df, params: Params, kind_label: str) -> dict[str, tuple[bytes, str]]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="notebook", palette="colorblind")
    dpi = params.report.figure_dpi
    order = [r["variant"] for r in results]
    out: dict[str, tuple[bytes, str]] = {}

    # (1) timed seconds per variant, error bars from the per-epoch spread.
    timed = df[df.phase == "timed"]
    spread = timed.groupby("variant")["seconds"].std(ddof=0).reindex(order).fillna(0.0)
    epochs = {r["variant"]: r["epochs"] for r in results}
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(order)), 4.2))
    secs = [metrics[v]["timed_seconds"] for v in order]
    err = [spread[v] * math.sqrt(epochs[v]) for v in order]
    colors = sns.color_palette("colorblind", 2)
    bars = ax.bar(order, secs, yerr=err, capsize=4,
                  color=[colors[0] if metrics[v]["loop"] == "fit" else colors[1] for v in order])
    for b, v in zip(bars, order):
        red = metrics[v]["reduction_vs_baseline_pct"]
        label = "baseline" if v == params.report.baseline else f"{red:+.1f}%"
        ax.annotate(label, (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom",
                    xytext=(0, 4), textcoords="offset points", fontsize=9)
    ax.set_ylabel(f"timed seconds ({results[0]['epochs']} epochs)")
    ax.set_xlabel("variant (blue: fit, orange: custom loop)")
    ax.set_title(f"Timed training per variant; label = time reduction vs {params.report.baseline}\n[{kind_label}]")
    ax.tick_params(axis="x", rotation=30)
    out["timed_seconds.png"] = (_png(fig, dpi), "Timed seconds per variant (error bar: sqrt(epochs) x per-epoch "
                                "standard deviation), annotated with the reduction vs the baseline.")

    # (2) this run beside the blog's 4xV100 numbers, one panel (and axis) each.
    names = [n for n in params.report.blog_seconds if n in metrics]
    if names:
        cmp = pd.DataFrame(
            [{"source": f"this run ({kind_label})", "variant": n, "seconds": metrics[n]["timed_seconds"]} for n in names]
            + [{"source": "blog, 4x V100 (as published)", "variant": n, "seconds": params.report.blog_seconds[n]}
               for n in names])
        g = sns.catplot(data=cmp, x="variant", y="seconds", col="source", kind="bar", sharey=False,
                        height=3.8, aspect=1.1, order=names, color=colors[0])
        g.set_axis_labels("variant", "timed seconds")
        g.set_titles("{col_name}")
        for ax, (src, sub) in zip(g.axes.flat, cmp.groupby("source", sort=False)):
            base = sub.set_index("variant")["seconds"].get("single_fit")
            for b, n in zip(ax.patches, names):
                if base and n != "single_fit":
                    ax.annotate(f"{reduction_pct(base, b.get_height()):+.1f}%",
                                (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom",
                                xytext=(0, 3), textcoords="offset points", fontsize=9)
        g.figure.suptitle("This run vs the blog (separate axes: different hardware and settings)", y=1.04)
        out["vs_blog.png"] = (_png(g.figure, dpi), "This run beside the blog's published 4x V100 timings, each on "
                              "its own axis; labels are the reductions vs single_fit within each panel.")

    # (3) per-epoch time, warm-up apart.
    fig, (ax_w, ax_t) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [1, 2]})
    warm = df[df.phase == "warmup"]
    sns.barplot(data=warm, x="variant", y="seconds", order=order, ax=ax_w, color=colors[1])
    ax_w.set_title("warm-up (untimed: tracing, first pass)")
    ax_w.set_ylabel("seconds")
    ax_w.tick_params(axis="x", rotation=60)
    t2 = timed.assign(step=timed["repeat"] * timed["epoch"].max() + timed["epoch"])
    sns.lineplot(data=t2, x="step", y="seconds", hue="variant", hue_order=order, marker="o", ax=ax_t)
    ax_t.set_title("timed epochs")
    ax_t.set_xlabel("timed epoch")
    ax_t.set_ylabel("seconds per epoch")
    ax_t.legend(fontsize=8, ncol=2)
    out["epoch_seconds.png"] = (_png(fig, dpi), "Seconds per epoch: the warm-up epoch(s) apart (left), timed "
                                "epochs (right).")

    # (4) scaling vs replicas, when there are more than two replica counts.
    if len({r["replicas"] for r in results}) > 2:
        sc = pd.DataFrame([{"replicas": m["replicas"], "loop": m["loop"], "images/s": m["images_per_second"],
                            "efficiency": m.get("scaling_efficiency")} for m in metrics.values()])
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
        sns.lineplot(data=sc, x="replicas", y="images/s", hue="loop", marker="o", ax=a1, errorbar=None)
        a1.set_ylabel("images per second")
        sns.lineplot(data=sc.dropna(), x="replicas", y="efficiency", hue="loop", marker="o", ax=a2, errorbar=None)
        a2.axhline(1.0, ls="--", c="grey")
        a2.set_ylabel("scaling efficiency (speedup / replicas)")
        for a in (a1, a2):
            a.set_xticks(sorted(sc.replicas.unique()))
        fig.suptitle(f"Scaling with replicas [{kind_label}]")
        out["scaling.png"] = (_png(fig, dpi), "Throughput and scaling efficiency against the number of replicas.")
    return out


# --------------------------------------------------------------------------- text


@dataclass
class Doc:
    """Blocks rendered to both Markdown and HTML from one source."""
    blocks: list[tuple[str, Any]]

    def md(self) -> str:
        out = []
        for kind, x in self.blocks:
            if kind == "h1":
                out.append(f"# {x}")
            elif kind == "h2":
                out.append(f"## {x}")
            elif kind == "p":
                out.append(x)
            elif kind == "banner":
                out.append("> **" + x + "**")
            elif kind == "list":
                out.append("\n".join(f"- {i}" for i in x))
            elif kind == "table":
                head, rows = x
                out.append("\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
                                     + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]))
            elif kind == "figure":
                name, caption, _ = x
                out.append(f"![{caption}](figures/{name})\n\n*{caption}*")
        return "\n\n".join(out) + "\n"

    def html(self, title: str) -> str:
        e = html.escape
        out = [f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{e(title)}</title><style>"
               "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
               "table{border-collapse:collapse;font-size:14px}td,th{border:1px solid #ccc;padding:4px 8px;"
               "text-align:right}th{background:#f3f3f3}.banner{background:#fff3cd;border:1px solid #e0c36a;"
               "padding:.8em;font-weight:600}img{max-width:100%}figcaption{font-style:italic;color:#555}"
               "code{background:#f5f5f5}</style></head><body>"]
        for kind, x in self.blocks:
            if kind in ("h1", "h2"):
                out.append(f"<{kind}>{e(x)}</{kind}>")
            elif kind == "p":
                out.append(f"<p>{e(x)}</p>")
            elif kind == "banner":
                out.append(f"<div class='banner'>{e(x)}</div>")
            elif kind == "list":
                out.append("<ul>" + "".join(f"<li>{e(str(i))}</li>" for i in x) + "</ul>")
            elif kind == "table":
                head, rows = x
                out.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>"
                           + "".join("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>" for r in rows)
                           + "</table>")
            elif kind == "figure":
                name, caption, png = x
                b64 = base64.b64encode(png).decode()
                out.append(f"<figure><img alt='{e(caption)}' src='data:image/png;base64,{b64}'>"
                           f"<figcaption>{e(caption)}</figcaption></figure>")
        return "".join(out) + "</body></html>\n"


def run_kind_label(results: list[dict]) -> str:
    kinds = sorted({r["device_kind"] for r in results})
    gpu = sorted({r["gpu_model"] for r in results if r.get("gpu_model")})
    label = "/".join(kinds)
    return f"{label} on {', '.join(gpu)}" if gpu else f"{label}, {results[0].get('cpu_model', 'CPU')}"


def banners(results: list[dict]) -> list[str]:
    out = []
    emulated = sorted({r["device_kind"] for r in results if r["device_kind"] in EMULATED_KINDS or r.get("emulated")})
    if emulated:
        out.append(f"EMULATION: replicas ran as {', '.join(emulated)} devices sharing one host "
                   f"({results[0].get('cpu_count', '?')} CPU core(s), {results[0].get('cpu_model', 'unknown CPU')}"
                   f"{', ' + results[0]['gpu_model'] if results[0].get('gpu_model') else ''}). "
                   "These timings measure the software path, not multi-GPU speed-up; they are not GPU results.")
    elif all(r["device_kind"] == "cpu" for r in results):
        out.append("CPU RUN: no GPU was used; these are not GPU results.")
    if any(r.get("data_synthetic") for r in results):
        out.append("SYNTHETIC DATA: trained on the generated stand-in, NOT the real flower_photos "
                   "(no network to download it). Accuracy numbers say nothing about real flowers.")
    ceiling = [r["variant"] for r in results if pipeline(r) == "synthetic"]
    if ceiling:
        out.append(f"INPUT CEILING: {', '.join(ceiling)} fed random in-memory tensors (no JPEG decoding): "
                   "they measure the model alone, not the data pipeline.")
    return out


def findings(results: list[dict], metrics: dict, baseline: str) -> str:
    """A paragraph generated from the numbers."""
    by = {r["variant"]: r for r in results}
    real = [v for v in metrics if pipeline(by[v]) == "files"] or list(metrics)  # a ceiling run is not a contender
    fastest = min(real, key=lambda v: metrics[v]["timed_seconds"])
    if fastest == baseline:
        parts = [f"The baseline {baseline} was the fastest variant ({metrics[baseline]['timed_seconds']:.2f} s, "
                 f"{metrics[baseline]['images_per_second']:.1f} img/s): no other variant reduced the time."]
    else:
        parts = [f"The fastest variant was {fastest} at {metrics[fastest]['timed_seconds']:.2f} s "
                 f"({metrics[fastest]['images_per_second']:.1f} img/s), a "
                 f"{metrics[fastest]['reduction_vs_baseline_pct']:.1f}% reduction vs {baseline} "
                 f"({metrics[baseline]['timed_seconds']:.2f} s)."]
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
    if "single_custom" in metrics and "single_fit" in metrics:
        d = reduction_pct(metrics["single_fit"]["timed_seconds"], metrics["single_custom"]["timed_seconds"])
        parts.append(f"On one replica the custom loop was {abs(d):.1f}% {'faster' if d > 0 else 'slower'} "
                     f"than fit().")
    kinds = {by[v]["device_kind"] for v in metrics}
    if kinds & EMULATED_KINDS:
        parts.append("Because the replicas were emulated on shared CPU cores, these numbers cannot confirm or "
                     "refute the blog's GPU speed-ups.")
    return " ".join(parts)


def _fmt(x: Optional[float], spec: str = ".2f") -> str:
    return "n/a" if x is None else format(x, spec)


def build_doc(results, metrics, audit, ceiling, figs, params: Params, warnings: list[str],
              manifest: dict) -> Doc:
    base = params.report.baseline
    b: list[tuple[str, Any]] = [("h1", "flowerbench report: multi-replica ResNet50 training on flower_photos")]
    b += [("banner", t) for t in banners(results)]
    b += [("banner", f"WARNING: {w}") for w in warnings]
    r0 = results[0]
    b.append(("p", f"{len(results)} variant(s); {r0['image_size']} px, {r0['images_per_epoch']} images per epoch, "
                   f"{r0['batch_size_per_replica']} per replica ({r0.get('scaling', 'weak')} scaling: "
                   + ("the global batch grows with replicas, as in the blog, so runs differ in steps per epoch"
                      if r0.get("scaling", "weak") == "weak" else "the global batch is fixed and split across "
                      "replicas, so every run takes the same optimisation steps")
                   + f"), {r0.get('warmup_epochs', 1)} warm-up + {r0['epochs']} timed epoch(s), "
                     f"model {r0.get('model', 'resnet50')}."))
    b.append(("h2", "Headline"))
    head = ["variant", "loop", "replicas", "device kind", "input", "global batch", "timed s", "img/s",
            f"speedup vs {base}", f"reduction vs {base}", "efficiency", "final loss", "final acc"]
    rows = []
    for r in results:
        m = metrics[r["variant"]]
        rows.append([r["variant"], r["loop"], r["replicas"], r["device_kind"], pipeline(r), r["global_batch_size"],
                     _fmt(m["timed_seconds"]), _fmt(m["images_per_second"], ".1f"),
                     _fmt(m["speedup_vs_baseline"]), _fmt(m["reduction_vs_baseline_pct"], "+.1f") + "%",
                     _fmt(m.get("scaling_efficiency")), _fmt(r["final_loss"], ".3f"),
                     _fmt(r["final_accuracy"], ".3f")])
    b.append(("table", (head, rows)))
    b.append(("p", "Efficiency = speedup vs the single-replica run of the same loop / replicas."))
    b.append(("h2", "What this shows"))
    b.append(("p", findings(results, metrics, base)))
    b.append(("h2", "Input pipeline: real JPEGs vs synthetic tensors"))
    if ceiling:
        b.append(("p", "The same model and settings fed from decoded JPEG files and from random in-memory tensors "
                       "of the same shape. real / synthetic near 1.00 means the input pipeline keeps up with "
                       "training; well above 1 means the model waits for data (the bench's target is <= 1.05)."))
        b.append(("table", (["real variant", "synthetic variant", "loop", "replicas", "real s", "synthetic s",
                             "real img/s", "synthetic img/s", "real / synthetic"],
                            [[c["real"], c["synthetic"], c["loop"], c["replicas"], _fmt(c["real_seconds"]),
                              _fmt(c["synthetic_seconds"]), _fmt(c["real_images_per_second"], ".1f"),
                              _fmt(c["synthetic_images_per_second"], ".1f"), _fmt(c["real_over_synthetic"], ".3f")]
                             for c in ceiling])))
    else:
        b.append(("p", "No synthetic-input variant ran, so there is no input ceiling to compare with. Add one "
                       "with `pipeline: synthetic` beside a files variant of the same loop and replicas "
                       "(params.yaml has `single_fit_synthetic`)."))
    b.append(("h2", "The blog's claims, audited"))
    b.append(("p", "Reductions re-derived from the blog's own 4x V100 times "
                   f"(single-GPU fit {params.report.blog_seconds['single_fit']} s):"))
    arows = []
    for a in audit:
        ours = metrics.get(a["variant"], {}).get("reduction_vs_baseline_pct")
        arows.append([a["variant"], a["blog_seconds"], f"{a['claimed_reduction_pct']:.1f}%",
                      f"{a['derived_reduction_pct']:.1f}%", f"{a['discrepancy_pct_points']:+.1f} pp",
                      "n/a" if ours is None else f"{ours:.1f}%"])
    b.append(("table", (["variant", "blog s", "blog claims", "derived from blog's times", "claim - derived",
                         "this run"], arows)))
    b.append(("h2", "Figures"))
    for name, (png, caption) in figs.items():
        b.append(("figure", (name, caption, png)))
    b.append(("h2", "Provenance"))
    v = r0["versions"]
    prov = [f"generated {provenance.now()} by `python -m flowerbench report`",
            f"git commit {r0.get('git_commit')} ({git_tree(r0)})",
            "versions: " + ", ".join(f"{k} {v[k]}" for k in sorted(v)),
            f"host {r0.get('hostname')}: {r0.get('cpu_model')} ({r0.get('cpu_count')} cores), "
            f"GPU {r0.get('gpu_model') or 'none'}; {r0.get('platform', '')}",
            f"data: {manifest.get('label', r0['data_source'])}, source {manifest.get('source', r0['data_source'])}, "
            f"{manifest.get('total', '?')} images, tree sha256 {manifest.get('tree_sha256', r0.get('data_tree_sha256'))}"]
    for r in results:
        prov.append(f"{r['variant']}: {r['device_kind']} {r['devices']}, strategy {r.get('strategy')}, "
                    f"all-reduce {r.get('cross_device_ops')}, threads intra {r.get('intra_op_threads')} / inter "
                    f"{r.get('inter_op_threads')} ({r.get('thread_policy')}), started {r.get('started_at')}")
    b.append(("list", prov))
    b.append(("p", "Resolved params of the baseline run:"))
    b.append(("list", [f"{k}: {r0['params'][k]}" for k in COMPARABLE if k in r0["params"]]))
    return Doc(b)


# --------------------------------------------------------------------------- stage


def run(params: Params, params_path: str = "params.yaml", results_dir: Path = paths.RESULTS,
        reports_dir: Path = paths.REPORTS) -> dict:
    results = load_results(params, results_dir)
    warnings = []
    mixed = mixed_params(results)
    if mixed:
        warnings.append(f"results from different param sets: {', '.join(mixed)} differ from "
                        f"{results[0]['variant']} in {'/'.join(COMPARABLE)}; their timings are not comparable")
        log(f"warning: {warnings[-1]}")
    metrics = compute_metrics(results, params.report.baseline)
    audit = blog_audit(params.report)
    df = tidy(results)
    try:
        manifest = read_json(paths.MANIFEST)
    except (OSError, ValueError):
        manifest = {}
    figs = figures(results, metrics, df, params, run_kind_label(results))
    ceiling = input_ceiling(results)
    doc = build_doc(results, metrics, audit, ceiling, figs, params, warnings, manifest)

    # Everything is rendered; now write. Each folder is written whole and swapped into place.
    write_dir(reports_dir / paths.FIGURES.name, {name: png for name, (png, _) in figs.items()})
    write_dir(reports_dir / paths.PLOTS.name, plots_data(df))
    write_json(reports_dir / paths.METRICS.name, metrics_file(metrics, audit, ceiling, warnings))
    atomic_write(reports_dir / paths.REPORT_MD.name, doc.md())
    atomic_write(reports_dir / paths.REPORT_HTML.name, doc.html("flowerbench report"))
    log(f"{len(results)} variants -> {reports_dir}/report.html, report.md, {len(figs)} figures, metrics.json")
    return {"metrics": metrics, "audit": audit, "warnings": warnings}
