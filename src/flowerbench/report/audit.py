"""The blog's claims, audited: its reductions re-derived from its own times, and its settings beside
this run's."""

from __future__ import annotations

from flowerbench.perfmodel import blog
from flowerbench.core.render import table
from flowerbench.core.results import Result
from flowerbench.report.cells import fmt, run_kind_label, versus


def audit_section(audit: list[dict], results: list[Result], metrics: dict, baseline: str,
                  blog_seconds: dict[str, float]) -> list[str]:
    s, r0 = blog.SETTINGS, results[0]
    rows = [[a["variant"], a["gpus"], a["blog_seconds"], f"{a['images_per_second']:.0f}", f"{a['speedup']:.2f}x",
             fmt(a["efficiency"]),
             "n/a" if a["claimed_reduction_pct"] is None else f"{a['claimed_reduction_pct']:.1f}%",
             f"{a['derived_reduction_pct']:.1f}%",
             "n/a" if a["discrepancy_pct_points"] is None else f"{a['discrepancy_pct_points']:+.1f} pp",
             versus(metrics[a["variant"]], a["variant"] == baseline) if a["variant"] in metrics else "not run"]
            for a in audit]
    return ["## The blog's claims, audited",
            f"Everything below is derived from the blog's own {blog.HARDWARE} times (single-GPU fit "
            f"{blog_seconds[blog.BASELINE]} s, {s['images_per_epoch']:,} images x {s['epochs']} timed epochs):",
            table(["variant", "GPUs", "blog s", "img/s", "speedup", "efficiency", "blog claims",
                   "derived from blog's times", "claim - derived", "this run"], rows),
            "Settings side by side (this run's are the baseline's; see the banners for what its devices were):",
            table(["setting", "blog", "this run"], [
                ["data", s["data"], r0.data_label or r0.data_source],
                ["model", s["model"], r0.model],
                ["image size", f"{s['image_size']} px", f"{r0.image_size} px"],
                ["images per epoch", f"{s['images_per_epoch']:,}", f"{r0.images_per_epoch:,}"],
                ["batch per replica", s["batch_size_per_replica"], r0.batch_size_per_replica],
                ["warm-up + timed epochs", f"{s['warmup_epochs']} + {s['epochs']}",
                 f"{r0.warmup_epochs} + {r0.epochs} (x {r0.params['train']['repeats']} repeat(s) per process, "
                 f"{r0.repeats // r0.params['train']['repeats']} round(s))"],
                ["hardware", s["hardware"], run_kind_label(results)],
                ["replicas", "1 and 4", ", ".join(str(n) for n in sorted({r.replicas for r in results}))]])]
