"""The provenance section: what produced every result (commits and tree state, versions, host,
data, devices, params)."""

from __future__ import annotations

from collections import Counter


from flowerbench.core.host import label as host_label
from flowerbench.analysis.metrics import COMPARABLE
from flowerbench.core.render import bullets
from flowerbench.core.results import Result


ATTRIBUTION = ("The flower_photos images are from Flickr, licensed by their authors under Creative Commons "
               "Attribution; each photo's author is listed in the LICENSE.txt inside the archive.")


def provenance(results: list[Result], processes: list[Result], run: dict,
               measured_code: frozenset[str] = frozenset()) -> list[str]:
    """What produced the results (one pooled record per variant; `processes`: every round's, for the
    code state; `run`: metrics.run_facts; `measured_code`: the repo paths of the code the measured
    processes run): commits, versions, host, data, devices; the data's attribution."""
    r0 = results[0]
    v = r0.versions
    # No rendering time: the report is a function of its inputs, so rerendering the same results (a
    # fresh clone's `make reproduce`) gives the same bytes and leaves dvc.lock as committed.
    lines = [f"rendered by `python -m flowerbench report` from results measured "
             f"{min(r.started_at for r in results)} to {max(r.finished_at for r in results)}",
             code_state(processes, measured_code),
             "versions: " + ", ".join(f"{k} {v[k]}" for k in sorted(v)),
             f"host {r0.hostname}: {host_label(r0.host)} (its model name: {r0.cpu_model}); GPU "
             f"{r0.gpu_model or 'none'}; {r0.platform}",
             speed_line(processes[0], run["speed_index_gflops"]),
             f"data: {r0.data_label or r0.data_source}, source {r0.data_source}, {r0.images_per_epoch} images "
             f"per epoch, tree sha256 {r0.data_tree_sha256}"]
    lines += [f"{r.variant}: {r.device_kind} {r.devices}, strategy {r.strategy}, all-reduce {r.cross_device_ops}, "
              f"threads intra {r.intra_op_threads} / inter {r.inter_op_threads} ({r.thread_policy}), "
              f"rounds from {r.started_at} to {r.finished_at}" for r in results]
    b = ["## Provenance", bullets(lines)]
    if not all(r.data_synthetic for r in results):
        b.append(f"Data attribution: {ATTRIBUTION}")
    return b + ["Resolved params of the baseline run:",
                bullets(f"{k}: {r0.params[k]}" for k in COMPARABLE if k in r0.params)]


def code_state(results: list[Result], measured_code: frozenset[str] = frozenset()) -> str:
    """The commits the results came from and, over every result (not only the first), whether
    the tree was clean: one dirty result makes the line say which files and which variants, and,
    given `measured_code` (repo paths), which of those files the measured processes run."""
    commits = sorted({r.git_commit or "unknown" for r in results})
    head = f"git commit {commits[0]}" if len(commits) == 1 else f"git commits {', '.join(commits)} (MIXED)"
    dirty = [r for r in results if r.git_dirty]
    if not dirty:
        unknown = any(r.git_dirty is None for r in results)
        return f"{head} ({'tree state unknown' if unknown else 'clean tree'} for all {len(results)} results)"
    files = sorted({f for r in dirty for f in (r.git_changed or [])})
    out = (f"{head}; {len(dirty)} of {len(results)} results ran with uncommitted changes "
           f"({', '.join(files) or 'files not recorded'}): "
           + ", ".join(f"{v} ({n} process(es))" for v, n in Counter(r.variant for r in dirty).items()))
    if measured_code and files:
        ran = [f for f in files if f in measured_code]
        out += ("; none of those files is code the measured processes run" if not ran else
                f"; of those, the measured processes run {', '.join(ran)}")
    return out


def speed_line(first: Result, speed: dict | None) -> str:
    """The speed index every process measured before training (host.speed_index; metrics.run_facts),
    as provenance; `first`: a process, for how it was measured."""
    if not speed:
        return "speed index: not recorded (results of schema 5, before it existed)"
    m = first.speed_index
    how = f", {m['method']}" if m.get("method") else ""
    return (f"speed index (a {m['matrix']} x {m['matrix']} float64 matrix product{how}, for {m['seconds']:g} s on "
            f"the process's own cores, before TensorFlow started): median {speed['median']:.1f} GFLOP/s, "
            f"{speed['min']:.1f}-{speed['max']:.1f} over {speed['processes']} processes")
