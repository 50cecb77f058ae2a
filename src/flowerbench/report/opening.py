"""The report's top: its title, the answer in one sentence and its figure first, then one line of
labels (what kind of run this was), each linking to what it says, the warnings (results measured
elsewhere, mixed params) as banners, the settings in one line; then what the labels say and where
each result was measured."""

from __future__ import annotations

from flowerbench.perfmodel.blog import HARDWARE
from flowerbench.core.host import label as host_label
from flowerbench.core.render import banner, bullets, figure
from flowerbench.core.results import CoreKind, Result
from flowerbench.analysis.metrics import FASTER, SLOWER
from flowerbench.report.cells import (
    OPENING_FIGURE,
    cpu_words,
    ratio_words,
    rounds_words,
    scaled,
    direction_of,
)


def opening(results: list[Result], metrics: dict, audit: list[dict], warnings: list[str], here: dict,
            figs: dict[str, tuple[bytes, str]], baseline: str) -> list[str]:
    """Title, banners, where measured, the answer and its figure, the settings."""
    r0 = results[0]
    scaling = ("the global batch grows with replicas, as in the blog, so runs differ in steps per epoch"
               if r0.scaling == "weak" else
               "the global batch is fixed and split across replicas, so every run takes the same optimisation steps")
    data = ("a generated stand-in for flower_photos (not the real photos)" if any(r.data_synthetic for r in results)
            else "flower_photos")
    b = [f"# flowerbench report: multi-replica {r0.model} training on {data}",
         answer(results, metrics, audit, baseline)]
    if OPENING_FIGURE in figs:
        b.append(figure(OPENING_FIGURE, figs[OPENING_FIGURE][1]))
    measured, elsewhere = where_measured(results, here)
    labels = banners(results)
    b.append("Labels: " + " · ".join(f"[**{label_of(t)}**](#{LABELS_ANCHOR})" for t in labels)
             + f" ([what they say](#{LABELS_ANCHOR}))")
    # what is wrong with this run, not what kind of run it is: a banner each, on the first screen
    b += [banner(t) for t in elsewhere] + [banner(f"WARNING: {w}") for w in warnings]
    b.append(f"{len(results)} variant(s); {r0.image_size} px, {r0.images_per_epoch} images per epoch, "
             f"{r0.batch_size_per_replica} per replica ({r0.scaling} scaling: {scaling}), {r0.warmup_epochs} "
             f"warm-up + {r0.epochs} timed epoch(s), model {r0.model}.")
    b += [f"## {LABELS_HEADING}", bullets(labels),
          f"Rendered on {host_label(here)}. Where each result was measured:", bullets(measured)]
    return b


LABELS_HEADING = "What the labels say"
LABELS_ANCHOR = "what-the-labels-say"


def label_of(text: str) -> str:
    """A banner's label: its words before the first colon ("SYNTHETIC DATA")."""
    return text.split(":", 1)[0]


def banners(results: list[Result]) -> list[str]:
    out = []
    r0 = results[0]
    matched = [r for r in results if r.budget_kind == CoreKind.CORE_MATCHED and r.replicas > 1]
    if matched:
        c = sorted({r.cores_per_replica for r in matched})
        out.append(f"CORE-MATCHED CPU RUN: in {', '.join(r.variant for r in matched)} every replica had its own "
                   f"{'/'.join(map(str, c))} CPU core(s) (affinity mask), and the 1-replica baselines one "
                   f"replica's share ({cpu_words(r0)}; {r0.usable_cores} usable cores). A real data-parallel "
                   f"measurement on CPU cores, not a GPU result.")
    shared = [r for r in results if r.replicas > 1 and r.budget_kind in (CoreKind.OVERSUBSCRIBED, CoreKind.SHARED)]
    if shared:
        out.append(f"OVERSUBSCRIBED: {', '.join(f'{r.variant} ({r.replicas} replicas)' for r in shared)} shared "
                   f"{r0.usable_cores} CPU core(s) ({cpu_words(r0)}): emulation, which shows the software path "
                   f"runs, not a speed-up; kept out of the speed-up and efficiency figures.")
    emulated_gpu = sorted({r.variant for r in results if r.device_kind == "logical_gpu"})
    if emulated_gpu:
        out.append(f"EMULATION: {', '.join(emulated_gpu)} ran as logical GPUs sharing one {r0.gpu_model}: "
                   "they measure the software path, not multi-GPU speed-up.")
    if all(r.device_kind in ("cpu", "logical_cpu", "local_cpu_workers", "cpu_workers") for r in results):
        out.append("CPU RUN: no GPU was used; these are not GPU results.")
    if any(r.data_synthetic for r in results):
        out.append("SYNTHETIC DATA: trained on the generated stand-in, NOT the real flower_photos "
                   "(no network to download it). Accuracy numbers say nothing about real flowers.")
    ceiling = [r.variant for r in results if r.pipeline == "tensors"]
    if ceiling:
        out.append(f"INPUT CEILING: {', '.join(ceiling)} fed random in-memory tensors (no JPEG decoding): "
                   "they measure the model alone, not the data pipeline.")
    return out


def where_measured(results: list[Result], here: dict) -> tuple[list[str], list[str]]:
    """(lines, banners): which host measured each result and when, grouped by host; a banner for
    every group measured on another host than `here` (the description of the machine rendering)."""
    groups: dict[str, list[Result]] = {}
    for r in results:
        groups.setdefault(host_label(r.host), []).append(r)
    lines, out = [], []
    for name, rs in groups.items():
        same = rs[0].host == here
        days = sorted({r.started_at[:10] for r in rs})
        hosts = sorted({r.hostname for r in rs})
        lines.append(f"{'this host' if same else 'ANOTHER host'} ({name}; hostname {', '.join(hosts)}), "
                     f"{' to '.join([days[0], days[-1]] if len(days) > 1 else days)}: "
                     f"{', '.join(r.variant for r in rs)}")
        if not same:
            out.append(f"MEASURED ELSEWHERE: {len(rs)} of {len(results)} results ({', '.join(r.variant for r in rs)}) "
                       f"were measured on {name} (hostname {', '.join(hosts)}, {days[-1]}), not on this "
                       f"report's host ({host_label(here)}); their timings describe that machine. "
                       f"`make remeasure` measures them here.")
    return lines, out


def answer(results: list[Result], metrics: dict, audit: list[dict], baseline: str) -> str:
    """The report's opening sentence: the measured speed-ups on the blog's basis (against `baseline`,
    single_fit, as the blog's own), each with its interval and the rule's verdict, beside the blog's."""
    runs = scaled(results, metrics)
    blog = "; ".join(f"{a['variant']} {a['speedup']:.2f}x (efficiency {a['efficiency']:.2f})"
                     for a in audit if a["gpus"] and a["gpus"] > 1)
    if not runs:
        return ("**No run here had replicas on cores (or GPUs) of their own, so this report cannot say how much "
                f"faster data-parallel training gets** (see the banners). The blog's {HARDWARE}, against "
                f"its single-GPU fit(): {blog}.")
    r0 = runs[0]
    where = (f"{r0.gpu_model} GPUs" if r0.budget_kind == CoreKind.GPU else
             f"{cpu_words(r0)}: CPU cores, {r0.cores_per_replica} per replica")
    verdicts = {direction_of(metrics[r.variant], "speedup_vs_baseline") for r in runs}
    how = {frozenset({FASTER}): "was faster than", frozenset({SLOWER}): "was slower than"}.get(
        frozenset(verdicts), "was, run by run, faster, slower or not distinguishable from")
    parts = [f"{r.variant} ({r.replicas} {'workers' if r.workers else 'replicas'}) "
             f"{ratio_words(metrics[r.variant], 'speedup_vs_baseline')}: "
             f"{direction_of(metrics[r.variant], 'speedup_vs_baseline')}" for r in runs]
    threads = [r for r in results if r.budget_kind == CoreKind.THREADS]
    more = ""
    if threads:
        t = metrics[threads[0].variant]
        more = (f" One replica given the same {threads[0].budget_cores} cores as intra-op threads "
                f"({threads[0].variant}): {ratio_words(t, 'speedup_vs_baseline')}: "
                f"{direction_of(t, 'speedup_vs_baseline')}.")
    return (f"**On this host ({where}), data-parallel training {how} one replica's share running "
            f"{baseline}:** {'; '.join(parts)} (speed-up against {baseline}, the blog's basis: paired ratios "
            f"in {rounds_words(metrics)}, 95 % interval).{more} The blog's {HARDWARE}, against its "
            f"single-GPU fit(): {blog}. Scaling efficiencies, against one replica of the same loop, are in "
            f"the table below.")
