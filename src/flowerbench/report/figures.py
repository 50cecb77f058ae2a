"""The report's figures (seaborn, PNG bytes in memory): one function per figure, each taking the data
it needs and returning (png, caption), or None where the figure has nothing to show.  Nothing here
reads or writes a file.
"""

from __future__ import annotations

import io
from typing import Optional

from flowerbench.perfmodel import blog
from flowerbench.core.config import ReportParams
from flowerbench.perfmodel.judge import TOLERANCE_PCT
from flowerbench.core.results import CoreKind, Result
from flowerbench.report.cells import OPENING_FIGURE, change_label, change_words

Figure = Optional[tuple[bytes, str]]


def _png(fig, dpi: int) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _style():
    """(pyplot, seaborn, the loop colours, the palette) with the report's theme set."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import seaborn as sns

    sns.set_theme(style="whitegrid", context="notebook", palette="colorblind")
    colors = sns.color_palette("colorblind", 3)
    return plt, sns, {"fit": colors[0], "custom": colors[1]}, colors


def figures(results: list[Result], metrics: dict, df, report: ReportParams, kind_label: str,
            audit: list[dict], predicted: list[dict] = (), heldout: list[dict] = ()) -> dict[str, tuple[bytes, str]]:
    """Every figure that has something to show: file name -> (png, caption).  `heldout`: the held-out
    rows in model_vs_measured's shape (report.heldout.figure_rows)."""
    order, dpi, base = [r.variant for r in results], report.figure_dpi, report.baseline
    drawn = {"timed_seconds.png": timed_seconds(results, metrics, base, kind_label, dpi),
             "vs_blog.png": vs_blog(metrics, audit, kind_label, dpi),
             "reduction.png": reduction(order, metrics, audit, base, dpi),
             "epoch_seconds.png": epoch_seconds(df, order, dpi),
             OPENING_FIGURE: scaling(results, metrics, audit, base, kind_label, dpi),
             "model.png": model_vs_measured(list(predicted), kind_label, dpi),
             "heldout.png": model_vs_measured(list(heldout), kind_label, dpi, held_out=True)}
    return {name: fig for name, fig in drawn.items() if fig is not None}


def model_vs_measured(rows: list[dict], kind_label: str, dpi: int, held_out: bool = False) -> Figure:
    """Every predicted multi-replica run: the prediction as stacked terms (compute, all-reduce, input;
    the dispatch term hatched on top where it was measured) beside the measured point with its 95 %
    interval, the two null models marked.  held_out: the held-out settings' frozen predictions, whose
    dispatch term is carried over from the reference."""
    from flowerbench.perfmodel.judge import predicted_tests

    tests = predicted_tests(rows)
    if not tests:
        return None
    plt, _, _, colors = _style()
    fig, ax = plt.subplots(figsize=(max(6.5, 2.2 * len(tests)), 4.6))
    x = list(range(len(tests)))
    bottom = [0.0] * len(tests)
    for part, color in zip(("compute", "allreduce", "input"), colors):
        h = [r["terms_seconds"][part] for r in tests]
        ax.bar([i - 0.18 for i in x], h, width=0.34, bottom=bottom, color=color, label=f"predicted: {part}")
        bottom = [b + v for b, v in zip(bottom, h)]
    extra = [r.get("predicted_with_dispatch_seconds", r["predicted_seconds"]) - r["predicted_seconds"] for r in tests]
    if any(extra):
        ax.bar([i - 0.18 for i in x], extra, width=0.34, bottom=bottom, color="white", edgecolor="grey",
               hatch="//", label="dispatch (carried over)" if held_out else "dispatch (measured after the misses)")
    med = [r["measured_seconds"] for r in tests]
    lo = [r["measured_low"] if r["measured_low"] is not None else m for r, m in zip(tests, med)]
    hi = [r["measured_high"] if r["measured_high"] is not None else m for r, m in zip(tests, med)]
    ax.errorbar([i + 0.18 for i in x], med, yerr=[[m - l for m, l in zip(med, lo)], [h - m for m, h in zip(med, hi)]],
                fmt="o", color="black", capsize=5, label="measured (95% interval over rounds)")
    for key, marker, words in (("no_speedup", "x", "null: no speed-up"), ("linear", "+", "null: linear")):
        pts = [(i + 0.18, r["nulls"][key]["predicted_seconds"]) for i, r in zip(x, tests) if r.get("nulls")]
        if pts:
            ax.scatter(*zip(*pts), marker=marker, s=80, color="grey", zorder=3, label=words)
    ax.set_xticks(x, [f"{r['variant']}\n{r['verdict']}" for r in tests], fontsize=8 if held_out else None)
    ax.set_ylabel("timed seconds")
    top = max(hi + bottom + [b + e for b, e in zip(bottom, extra)])
    if held_out:   # settings from 10 s to 100+ s: a log axis keeps every bar readable
        ax.set_yscale("log")
        ax.set_ylim(min(lo + [h for h in bottom if h > 0]) / 2, top * 4)
    else:
        ax.set_ylim(0, top * 1.25)
    ax.legend(fontsize=8, loc="upper left", ncol=2)
    ax.set_title("The model on held-out settings: frozen predictions (left bar) against measured (right)"
                 if held_out else "The model: predicted terms (left bar) against measured (right)", fontsize=11)
    ax.text(0.0, -0.25 if held_out else -0.2, kind_label, transform=ax.transAxes, fontsize=8, color="grey")
    what = ("Each held-out setting's prediction, committed before its runs, as stacked terms (the dispatch term, "
            "carried over from the reference, hatched; log axis)" if held_out else
            "Each multi-replica run's prediction as stacked terms (the dispatch term hatched, where it was measured)")
    return (_png(fig, dpi), what + " beside its measured point and 95% interval over rounds; the null models from "
                                   "the 1-replica run of the same loop marked x (no speed-up) and + (linear). Under "
                                   f"each run, the verdict of the equivalence test (±{TOLERANCE_PCT:g} % band).")


def timed_seconds(results: list[Result], metrics: dict, base: str, kind_label: str, dpi: int) -> Figure:
    """Timed seconds per variant: geometric mean over rounds with its 95 % interval, labelled with the change
    vs the baseline."""
    plt, _, loop_color, _ = _style()
    order = [r.variant for r in results]

    fig, ax = plt.subplots(figsize=(max(6.5, 1.25 * len(order)), 4.6))
    med = [metrics[v]["timed_seconds"] for v in order]
    lo = [metrics[v]["timed_seconds_ci_low"] for v in order]
    hi = [metrics[v]["timed_seconds_ci_high"] for v in order]
    yerr = [[m - (l if l is not None else m) for m, l in zip(med, lo)],
            [(h if h is not None else m) - m for m, h in zip(med, hi)]]
    ax.bar(order, med, yerr=yerr, capsize=5, color=[loop_color[metrics[v]["loop"]] for v in order])
    top = [h if h is not None else m for m, h in zip(med, hi)]
    for x, (v, t) in enumerate(zip(order, top)):
        ax.annotate(change_label(metrics[v], v == base), (x, t), ha="center", va="bottom", xytext=(0, 6),
                    textcoords="offset points", fontsize=9)
    ax.set_ylim(0, max(top) * 1.2)
    ax.set_ylabel(f"timed seconds ({results[0].epochs} epochs, geometric mean over rounds)")
    ax.set_xlabel("")
    ax.set_title(f"Time per variant vs {base} (blue: fit, orange: custom loop)", fontsize=11)
    ax.text(0.0, -0.32, kind_label, transform=ax.transAxes, fontsize=8, color="grey")
    ax.tick_params(axis="x", rotation=25)
    return (_png(fig, dpi), "Timed seconds per variant (geometric mean over rounds; whisker: 95% "
                                "t-interval over rounds, none for one round), labelled with the change vs the baseline.")


def vs_blog(metrics: dict, audit: list[dict], kind_label: str, dpi: int) -> Figure:
    """This run beside the blog's published times: one horizontal panel each (different hardware)."""
    plt, _, loop_color, _ = _style()

    names = [a["variant"] for a in audit if a["variant"] in metrics]
    if not names:
        return None
    published = {a["variant"]: a for a in audit}
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 0.7 * len(names) + 2.2))
    ours = [metrics[n]["timed_seconds"] for n in names]
    theirs = [published[n]["blog_seconds"] for n in names]
    for a, vals, title in ((a1, ours, f"this run [{kind_label}]"), (a2, theirs, f"blog, {blog.HARDWARE} (as published)")):
        a.barh(names, vals, color=[loop_color[metrics[n]["loop"]] for n in names])
        a.invert_yaxis()
        a.set_xlim(0, max(vals) * 1.45)
        a.set_xlabel("timed seconds")
        a.set_title(title, fontsize=10)
    for y, n in enumerate(names):
        a1.annotate(change_label(metrics[n], n == blog.BASELINE), (ours[y], y), va="center", xytext=(4, 0),
                    textcoords="offset points", fontsize=9)
        b = published[n]
        text = "baseline" if n == blog.BASELINE else change_words(b["derived_reduction_pct"], b["speedup"], "less")
        if b["claimed_reduction_pct"] is not None:
            text += f" (claims {b['claimed_reduction_pct']:.1f}%)"
        a2.annotate(text, (theirs[y], y), va="center", xytext=(4, 0), textcoords="offset points", fontsize=9)
    a2.set_yticklabels([])
    fig.suptitle("This run vs the blog (each on its own axis: different hardware and settings)", fontsize=11)
    fig.tight_layout()
    return (_png(fig, dpi), f"Time per variant, this run beside the blog's published {blog.HARDWARE} "
                          f"timings; labels are the change vs {blog.BASELINE} within each panel, with the "
                          "blog's claimed reduction beside the one its own times give.")


def reduction(order: list[str], metrics: dict, audit: list[dict], base: str, dpi: int) -> Figure:
    """Reduction vs the baseline with its interval, the blog's reductions as markers."""
    plt, _, loop_color, colors = _style()

    others = [v for v in order if v != base]
    if not others:
        return None
    fig, ax = plt.subplots(figsize=(7.5, 0.55 * len(others) + 1.8))
    for y, v in enumerate(others):
        m = metrics[v]
        red = m["reduction_vs_baseline_pct"]
        if m["reduction_ci_low_pct"] is not None:
            ax.plot([m["reduction_ci_low_pct"], m["reduction_ci_high_pct"]], [y, y], color="black", lw=1.5)
        ax.plot(red, y, "o", color=loop_color[m["loop"]], ms=8, label="this run (95% CI)" if y == 0 else None)
    published = {a["variant"]: a for a in audit}
    shown = False
    for y, v in enumerate(others):
        if v in published:
            ax.plot(published[v]["derived_reduction_pct"], y, "D", color=colors[2], ms=7,
                    label=None if shown else "blog (from its times)")
            shown = True
    ax.axvline(0, color="grey", lw=1)
    ax.set_yticks(range(len(others)), others)
    ax.invert_yaxis()
    ax.set_xlabel(f"time reduction vs {base} (%; left of 0 = slower)")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(f"Reduction vs {base}", fontsize=11)
    return (_png(fig, dpi), f"Reduction in timed seconds vs {base} with its 95% interval "
                            "(paired ratios over rounds; none for one round), and the blog's own "
                            "reductions (diamonds) where it ran the same variant.")


def epoch_seconds(df, order: list[str], dpi: int) -> Figure:
    """Seconds per epoch, the warm-up apart."""
    plt, sns, _, _ = _style()
    from matplotlib.ticker import MaxNLocator

    timed = df[df.phase == "timed"]
    fig, (ax_w, ax_t) = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [1, 2]})
    warm = df[df.phase == "warmup"]
    pal = dict(zip(order, sns.color_palette("tab10", len(order))))
    sns.barplot(data=warm, x="variant", y="seconds", order=order, ax=ax_w, hue="variant", palette=pal, legend=False)
    ax_w.set_title("warm-up (untimed: tracing, first pass)", fontsize=10)
    ax_w.set_ylabel("seconds")
    ax_w.set_xlabel("")
    ax_w.tick_params(axis="x", rotation=60)
    t2 = timed.assign(timed_epoch=timed.groupby("variant").cumcount() + 1)
    sns.lineplot(data=t2, x="timed_epoch", y="seconds", hue="variant", style="variant", hue_order=order,
                 style_order=order, palette=pal, markers=True, dashes=False, ax=ax_t)
    ax_t.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax_t.set_ylim(bottom=0)
    ax_t.set_title("timed epochs (every round's repeats in order)", fontsize=10)
    ax_t.set_xlabel("timed epoch")
    ax_t.set_ylabel("seconds per epoch")
    ax_t.legend(fontsize=8, ncol=2)
    return (_png(fig, dpi), "Seconds per epoch: the warm-up epoch(s) apart (left, median over rounds), "
                                "timed epochs of every round's repeats in order (right).")


def scaling(results: list[Result], metrics: dict, audit: list[dict], base: str, kind_label: str, dpi: int) -> Figure:
    """The answer: speed-up and efficiency against replicas, runs that owned their cores (or GPUs) only."""
    plt, _, loop_color, colors = _style()
    from matplotlib.ticker import MaxNLocator

    owned = [r for r in results if r.pipeline == "files" and "scaling_efficiency" in metrics[r.variant]]
    if not any(r.replicas > 1 or r.budget_kind == CoreKind.THREADS for r in owned):
        return None
    fig, (ax_s, ax_e) = plt.subplots(1, 2, figsize=(12, 4.4))

    # side by side at one replica count: fit, threads, custom, multi-worker
    nudge = {"fit": -0.09, "threads": 0.0, "custom": 0.09, "workers": 0.18}

    def point(ax, x, r, key, fmt, label, **kw):
        m = metrics[r.variant]
        name = "speedup_vs_baseline" if key == "speedup" else "scaling_efficiency"
        y, lo, hi = m[name], m.get(f"{name}_ci_low"), m.get(f"{name}_ci_high")
        err = None if lo is None else [[y - lo], [hi - y]]
        ax.errorbar(x, y, yerr=err, fmt=fmt, capsize=4, label=label, **kw)

    for key, ax in (("speedup", ax_s), ("efficiency", ax_e)):
        for loop in ("fit", "custom"):
            line = {}
            for r in owned:  # the declared variant wins over a sweep's at the same replica count
                if r.loop == loop and not r.workers and r.budget_kind != CoreKind.THREADS:
                    line.setdefault(r.replicas, r)
            if len(line) > 1:
                xs = sorted(line)
                ys = [metrics[line[x].variant]["speedup_vs_baseline" if key == "speedup"
                                               else "scaling_efficiency"] for x in xs]
                ax.plot([x + (nudge[loop] if x > 1 else 0) for x in xs], ys, "-", color=loop_color[loop], alpha=0.6)
                for n, x in enumerate(xs):
                    point(ax, x + (nudge[loop] if x > 1 else 0), line[x], key, "o",
                          f"this host, {loop} (replicas)" if n == 0 else None, color=loop_color[loop])
        for r in owned:
            if r.workers:
                point(ax, r.replicas + nudge["workers"], r, key, "s", f"this host, {r.variant} (separate processes)",
                      color=loop_color[r.loop], ms=9, mfc="none", mew=2)
            elif r.budget_kind == CoreKind.THREADS:
                scale = r.budget_cores / r.cores_per_replica
                point(ax, scale, r, key, "D", f"this host, {r.variant} (1 replica, {r.budget_cores} cores "
                      "as threads)", color=colors[2], ms=8)
        for a in audit:
            if a["gpus"] and a["gpus"] > 1:
                loop = "fit" if "fit" in a["variant"] else "custom"
                y = a["speedup"] if key == "speedup" else a["efficiency"]
                ax.plot(a["gpus"], y, "*", color=loop_color[loop], ms=15, mec="black",
                        label=f"blog {blog.HARDWARE}, {a['variant']} ({y:.2f})")
        top = max(4, max(r.replicas for r in results))
        if key == "speedup":
            ax.plot([1, top], [1, top], "--", c="grey", lw=1, label="linear")
            ax.set_ylabel(f"speed-up vs {base} (the blog's basis)")
            ax.set_ylim(0, top + 0.5)
        else:
            ax.axhline(1.0, ls="--", c="grey", lw=1)
            ax.set_ylabel("scaling efficiency (same-loop speed-up / replicas)")
            ax.set_ylim(0, max(1.2, ax.get_ylim()[1]))
        ax.set_xlim(0.5, top + 0.5)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel("replicas (each with its own cores or GPU)")
        ax.legend(fontsize=7, loc="upper left" if key == "speedup" else "lower left")
    fig.suptitle(f"Data-parallel speed-up: this host [{kind_label}] beside the blog", fontsize=10)
    return (_png(fig, dpi), f"Speed-up against {base} (left, the blog's basis) and scaling efficiency against "
                          f"one replica of the same loop on one replica's share (right), against replicas, each "
                          f"replica on cores (or a GPU) of its own, with 95 % intervals over rounds; the blog's "
                          f"4-GPU points (against its single-GPU fit()) as stars. Runs whose replicas shared "
                          f"cores are left out.")
