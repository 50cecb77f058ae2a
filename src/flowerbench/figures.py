"""The report's figures (seaborn, PNG bytes in memory): name -> (png, caption).

Drawn from the metrics and the tidy per-epoch table (metrics.py); nothing here
reads or writes a file.
"""

from __future__ import annotations

import io
import math

from .config import ReportParams
from .metrics import BLOG_BASELINE, reduction_pct
from .results import Result


def _png(fig, dpi: int) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def figures(results: list[Result], metrics: dict, df, report: ReportParams,
            kind_label: str) -> dict[str, tuple[bytes, str]]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="notebook", palette="colorblind")
    dpi = report.figure_dpi
    order = [r.variant for r in results]
    colors = sns.color_palette("colorblind", 2)
    out: dict[str, tuple[bytes, str]] = {}

    # (1) timed seconds per variant, error bars from the per-epoch spread.
    timed = df[df.phase == "timed"]
    spread = timed.groupby("variant")["seconds"].std(ddof=0).reindex(order).fillna(0.0)
    epochs = {r.variant: r.epochs for r in results}
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(order)), 4.2))
    secs = [metrics[v]["timed_seconds"] for v in order]
    err = [spread[v] * math.sqrt(epochs[v]) for v in order]
    bars = ax.bar(order, secs, yerr=err, capsize=4,
                  color=[colors[0] if metrics[v]["loop"] == "fit" else colors[1] for v in order])
    for b, v in zip(bars, order):
        red = metrics[v]["reduction_vs_baseline_pct"]
        label = "baseline" if v == report.baseline else f"{red:+.1f}%"
        ax.annotate(label, (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom",
                    xytext=(0, 4), textcoords="offset points", fontsize=9)
    ax.set_ylabel(f"timed seconds ({results[0].epochs} epochs)")
    ax.set_xlabel("variant (blue: fit, orange: custom loop)")
    ax.set_title(f"Timed training per variant; label = time reduction vs {report.baseline}\n[{kind_label}]")
    ax.tick_params(axis="x", rotation=30)
    out["timed_seconds.png"] = (_png(fig, dpi), "Timed seconds per variant (error bar: sqrt(epochs) x per-epoch "
                                "standard deviation), annotated with the reduction vs the baseline.")

    # (2) this run beside the blog's 4xV100 numbers, one panel (and axis) each.
    names = [n for n in report.blog_seconds if n in metrics]
    if names:
        cmp = pd.DataFrame(
            [{"source": f"this run ({kind_label})", "variant": n, "seconds": metrics[n]["timed_seconds"]} for n in names]
            + [{"source": "blog, 4x V100 (as published)", "variant": n, "seconds": report.blog_seconds[n]}
               for n in names])
        g = sns.catplot(data=cmp, x="variant", y="seconds", col="source", kind="bar", sharey=False,
                        height=3.8, aspect=1.1, order=names, color=colors[0])
        g.set_axis_labels("variant", "timed seconds")
        g.set_titles("{col_name}")
        for ax, (_, sub) in zip(g.axes.flat, cmp.groupby("source", sort=False)):
            base = sub.set_index("variant")["seconds"].get(BLOG_BASELINE)
            for b, n in zip(ax.patches, names):
                if base and n != BLOG_BASELINE:
                    ax.annotate(f"{reduction_pct(base, b.get_height()):+.1f}%",
                                (b.get_x() + b.get_width() / 2, b.get_height()), ha="center", va="bottom",
                                xytext=(0, 3), textcoords="offset points", fontsize=9)
        g.figure.suptitle("This run vs the blog (separate axes: different hardware and settings)", y=1.04)
        out["vs_blog.png"] = (_png(g.figure, dpi), "This run beside the blog's published 4x V100 timings, each on "
                              f"its own axis; labels are the reductions vs {BLOG_BASELINE} within each panel.")

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
    if len({r.replicas for r in results}) > 2:
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
