"""The k-steps-per-call what-if: predicted before it was built (issue 35; Daydream's order), then measured.

    .venv/bin/python -m benchmarks.ksteps [--images 960] [--k 1 3 5 15] [--out predictions/ksteps.json]
    .venv/bin/python -m benchmarks.ksteps --measure [--rounds 3] [--images 960] [--k 1 3 5 15]   (make bench-ksteps)

Predict.  The custom loop calls one tf.function per step; at N replicas each call pays the dispatch
term (terms: N replicas' step driven from one process, beyond contention x the step alone + the
all-reduce).  Running k steps per call pays it once per k steps.  This writes what the model says
that does to the N-replica epoch (perfmodel.ksteps) at the reference settings with `--images`
images (960 = 15 steps of 2 x 32, the blog's 3,670 / 256 steps per epoch or more), from the
committed terms and the custom loop's twin step in the committed rounds.  Commit the file before
the feature is built and measured.  Reads results only: no TensorFlow, under a second.

Measure (`--measure`).  Interleaved rounds (a Williams order, every run its own process, the host's
measurement lock held), all at the prediction's settings (`--images` images, the params' image
size, batch and timed epochs, one warm-up epoch):
  * ours, custom loop at N x c (N = `replicas: auto`), train.custom_steps_per_call = each k;
  * the blog's code (benchmarks/blog_port.py) on the same cores, its custom loop at N x c and its
    fit() at 1 x c (the blog's fastest multi-GPU run and its single-GPU run), at two settings, because
    which one is its fastest is measured here, not assumed: TensorFlow's defaults as a new user runs it
    (its own thread pools, oneDNN off) and tuned as ours (our thread pools, oneDNN on);
  * ours, fit() at 1 x c.
Then: each k's seconds against the committed prediction (on the point, judge.judge) and as a
paired ratio to k = 1 against the predicted ratio; ours/blog as paired ratios over the blog's window
(the whole timed call), target <= 0.90 on the whole 95 % interval against the blog's faster setting
(the lower geometric mean), at N x c (every k) and at 1 x c (fit).  Writes reports/ksteps.json and
reports/ksteps.md, with the prediction's commit beside.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from flowerbench.perfmodel import heldout, judge
from flowerbench.perfmodel.ksteps import ksteps
from flowerbench.perfmodel.termsfile import load_terms
from flowerbench.core import paths, provenance
from flowerbench.core import render
from flowerbench.analysis import rounds, stats
from flowerbench.core.config import load_params
from flowerbench.data.dataset import steps_per_epoch
from flowerbench.core.io import atomic_write, write_json
from flowerbench.perfmodel.predict_heldout import reference_rows

REPO = Path(__file__).resolve().parents[1]

PREDICTION = Path("predictions") / "ksteps.json"
TARGET = 0.90   # ours / the blog's code's seconds, on the whole 95 % interval


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=960)
    ap.add_argument("--k", type=int, nargs="+", default=[1, 3, 5, 15])
    ap.add_argument("--out", type=Path, default=None,
                    help="predictions/ksteps.json (predict) | reports/ksteps.json (measure; .md beside)")
    ap.add_argument("--measure", action="store_true", help="measure the k-steps loop and the blog's code")
    ap.add_argument("--rounds", type=int, default=3, help="measure: interleaved rounds (>= 2: an interval)")
    a = ap.parse_args()
    if a.measure:
        return measure(a)
    a.out = a.out or PREDICTION
    params = load_params("params.yaml")
    terms = load_terms(paths.TERMS)
    n = terms.most_replicas
    twin = next(r for r in reference_rows(params, terms) if r["loop"] == "custom" and r.get("step_seconds"))
    b = params.train.batch_size_per_replica
    steps = steps_per_epoch(a.images, n * b)
    common = {"cores_per_replica": params.train.cores_per_replica, "images": a.images,
              "epochs": params.train.epochs, "input_rate": terms.input.median_rate, "ks": a.k}
    out = {"written_at": provenance.now(), **provenance.git_state(), "terms_sha256": heldout.sha256(paths.TERMS),
           "form": "unrolled: k steps traced into one tf.function (not a tf.range while-loop)",
           "image_size": params.data.image_size, "batch_size_per_replica": b, "replicas": n,
           "custom_step_seconds": twin["step_seconds"], "twin": twin["twin"],
           "n_replicas": ksteps(terms, twin["step_seconds"], replicas=n, steps=steps, **common),
           "one_replica": ksteps(terms, twin["step_seconds"], replicas=1,
                                         steps=steps_per_epoch(a.images, b),
                                         **{**common, "ks": [k for k in a.k if steps_per_epoch(a.images, b) % k == 0]})}
    write_json(a.out, out)
    for k, v in out["n_replicas"]["by_k"].items():
        print(f"[ksteps] {n} replicas, k = {k}: {v['seconds']:.2f} s ({v['over_smallest_k']:.3f} of k = 1)")
    print(f"[ksteps] -> {a.out}; commit it before the k-steps loop is built")
    return 0


# --------------------------------------------------------------------------- measure


# The blog's code at each setting: run-name suffix -> (label, TensorFlow's defaults?).
BLOG_SETTINGS = {"": ("TF defaults (its own thread pools, oneDNN off)", True),
                 "_tuned": ("tuned as ours (our thread pools, oneDNN on)", False)}


def prediction_commit(path: Path) -> dict:
    """The commit that last changed the prediction file, and when (git shows it older than the runs)."""
    import subprocess

    out = subprocess.run(["git", "log", "-1", "--format=%H %cI", "--", str(path)], cwd=REPO, capture_output=True,
                         text=True).stdout.split()
    return {"commit": out[0], "committed_at": out[1]} if len(out) == 2 else {"commit": None, "committed_at": None}


def _ratio(runs: dict, num: str, den: str, key: str) -> dict:
    return stats.paired([r[key] for r in runs[num]], [r[key] for r in runs[den]]).as_dict()


def analyse(runs: dict[str, list[dict]], prediction: dict, ks: list[int]) -> dict:
    """Each k against the prediction (seconds on the point; the ratio to k = 1 paired in each round)
    and ours against the blog's code (paired, the blog's window), from the runs of every round."""
    by_k = prediction["n_replicas"]["by_k"]
    k_rows = []
    for k in ks:
        timed = [r["timed_seconds"] for r in runs[f"ours_custom_N_k{k}"]]
        est = stats.geometric(timed)
        row = {"k": k, "measured_seconds": est.point, "low": est.low, "high": est.high,
               "warmup_seconds": [r["warmup_seconds"] for r in runs[f"ours_custom_N_k{k}"]]}
        p = by_k.get(str(k))
        if p:
            row.update(predicted_seconds=p["seconds"], error_pct=judge.error_pct(p["seconds"], est.point),
                       verdict=judge.judge(p["seconds"], est.point, est.low, est.high, est.dof),
                       predicted_over_k1=p["over_smallest_k"])
        if k != ks[0]:
            over = _ratio(runs, f"ours_custom_N_k{k}", f"ours_custom_N_k{ks[0]}", "timed_seconds")
            row["measured_over_k1"] = over
            if p:
                row["ratio_error_pct"] = judge.error_pct(p["over_smallest_k"], over["point"])
                row["ratio_verdict"] = judge.judge(p["over_smallest_k"], over["point"], over["low"], over["high"],
                                                     over["n"] - 1)
        k_rows.append(row)
    seconds = {name: stats.geometric([r["call_seconds"] for r in rs]).as_dict() for name, rs in runs.items()}
    budgets = [("N x c", "custom_N", "custom loop (whole epoch in one tf.function)",
                [(f"ours_custom_N_k{k}", f"custom loop, k = {k}") for k in ks]),
               ("1 x c", "fit_1", "fit()", [("ours_fit_1", "fit()")])]
    peers = []
    for budget, blog_run, blog_label, ours_runs in budgets:
        settings = [s for s in BLOG_SETTINGS if f"blog_{blog_run}{s}" in runs]
        fastest = min(settings, key=lambda s: seconds[f"blog_{blog_run}{s}"]["point"])
        for name, label in ours_runs:
            for s in settings:
                est = _ratio(runs, name, f"blog_{blog_run}{s}", "call_seconds")
                peers.append({"budget": budget, "ours": label, "blog": blog_label, "blog_setting": BLOG_SETTINGS[s][0],
                              "blog_fastest": s == fastest, **est,
                              "meets": est["high"] is not None and est["high"] <= TARGET})
    return {"by_k": k_rows, "ours_over_blog": peers, "call_seconds": seconds}


def _iv(point: float, low, high, spec: str = ".3f") -> str:
    return f"{point:{spec}}" + ("" if low is None else f" [{low:{spec}}, {high:{spec}}]")


def markdown(out: dict) -> str:
    pc, st = out["prediction"], out["settings"]
    return render.document(f"The k-steps what-if, measured ({out['date']})", [
             f"Host: {out['cpu_model']}, {out['usable_cores']} usable cores, no GPU (a CPU run: replicas are logical "
             f"CPU devices, never a GPU result). Data: {out['data_source']}. ResNet50, {st['images']} images at "
             f"{st['image_size']} px, batch {st['batch']} per replica ({out['steps_per_epoch_N']} steps per epoch at "
             f"{out['replicas']} replicas), 1 warm-up + {st['epochs']} timed epochs; {st['rounds']} interleaved rounds "
             f"(a Williams order), each run its own process. Code {(out['git_commit'] or 'unknown')[:12]}"
             f"{' (dirty tree)' if out.get('git_dirty') else ''}; the prediction (predictions/ksteps.json) was "
             f"committed at {(pc['commit'] or 'uncommitted')[:12]} ({pc['committed_at']}), before this run.",
             "## k steps per call against the prediction",
             f"Seconds: the timed epochs of one process, geometric mean [95 % interval] over the rounds; the "
             f"prediction holds within +-{judge.TOLERANCE_PCT:.0f} % of the measured point, undetermined where the "
             f"measured interval is itself wider. The ratio to k = {out['ks'][0]} is paired inside each round.",
             render.table(["k", "calls per epoch", "predicted s", "measured s [95% CI]", "error", "verdict",
                           f"predicted / k={out['ks'][0]}", f"measured / k={out['ks'][0]} [95% CI]", "verdict (ratio)",
                           "warm-up s (tracing)"],
                          [[r["k"], -(-out["steps_per_epoch_N"] // r["k"]),
                            f"{r['predicted_seconds']:.1f}" if "predicted_seconds" in r else "-",
                            _iv(r["measured_seconds"], r["low"], r["high"], ".1f"),
                            f"{r['error_pct']:+.1f} %" if "error_pct" in r else "-", r.get("verdict", "-"),
                            f"{r['predicted_over_k1']:.3f}" if "predicted_over_k1" in r else "-",
                            _iv(r["measured_over_k1"]["point"], r["measured_over_k1"]["low"],
                                r["measured_over_k1"]["high"]) if "measured_over_k1" in r else "1",
                            r.get("ratio_verdict", "-"),
                            f"{min(r['warmup_seconds']):.0f}-{max(r['warmup_seconds']):.0f}"] for r in out["by_k"]]),
             "## Ours against the blog's code",
             "The blog's code (benchmarks/blog_port.py) on the same cores as ours, at two settings: TensorFlow's "
             "defaults as a new user runs it (its own thread pools, oneDNN off) and tuned as ours (our thread "
             "pools, oneDNN on). Its fastest setting is the one with fewer seconds in these rounds; the target is "
             "judged against that one. Seconds over the blog's window (the whole timed call), ours / the blog's "
             f"paired inside each round; the target <= {TARGET} is met only when the whole 95 % interval is.",
             render.table(["budget", "ours", "the blog's", "the blog's setting", "its fastest here",
                           "ours / blog [95% CI]", "target", "meets"],
                          [[r["budget"], r["ours"], r["blog"], r["blog_setting"], "yes" if r["blog_fastest"] else "no",
                            _iv(r["point"], r["low"], r["high"]), f"<= {TARGET}",
                            ("yes" if r["meets"] else "NO") if r["blog_fastest"] else "-"]
                           for r in out["ours_over_blog"]]),
             "Whole-call seconds per run, geometric mean [95 % interval]:",
             render.table(["run", "seconds"], [[k, _iv(v["point"], v["low"], v["high"], ".2f")]
                                               for k, v in out["call_seconds"].items()])])


def measure(a) -> int:
    import shutil
    import tempfile

    import yaml

    from benchmarks import run as bench
    from flowerbench.core import host
    from flowerbench.measuring.hostlock import measuring

    os.chdir(REPO)
    if a.rounds < 2:
        sys.exit("ksteps: --rounds must be at least 2 (an interval needs two rounds)")
    prediction = json.loads(PREDICTION.read_text())
    params = load_params("params.yaml")
    ks = sorted(set(a.k))
    out_json = a.out or Path("reports") / "ksteps.json"
    if not paths.MANIFEST.exists():
        sys.exit("ksteps: no data yet; run `make fetch` (or `python -m flowerbench fetch`) first")
    n = bench.auto_replicas()
    px, b, epochs = params.data.image_size, params.train.batch_size_per_replica, params.train.epochs
    tmp = Path(tempfile.mkdtemp(prefix="flowerbench-ksteps-"))
    try:
        git, t_start = provenance.git_state(), time.perf_counter()
        work = bench.make_workdir(tmp, a.images, px, b, epochs)
        base = yaml.safe_load((work / "params.yaml").read_text())
        for k in ks:
            base["train"].update(custom_graph="step", custom_steps_per_call=k)
            (work / f"params-k{k}.yaml").write_text(yaml.safe_dump(base, sort_keys=False))
        plan = {f"ours_custom_N_k{k}": (lambda k=k: bench.ours(work, "rn_custom", f"params-k{k}.yaml")) for k in ks}
        plan["ours_fit_1"] = lambda: bench.ours(work, "single_fit")
        for s, (_, defaults) in BLOG_SETTINGS.items():
            plan[f"blog_custom_N{s}"] = lambda d=defaults: bench.blog(work, "custom", n, px, b, epochs, tf_defaults=d)
            plan[f"blog_fit_1{s}"] = lambda d=defaults: bench.blog(work, "fit", 1, px, b, epochs, tf_defaults=d)
        order = rounds.order(list(plan), a.rounds, params.seed)
        runs: dict[str, list[dict]] = {}
        total, done = a.rounds * len(plan), 0
        with measuring(f"benchmarks/ksteps.py --measure, {a.rounds} rounds"):
            for i, names in enumerate(order):
                for name in names:
                    r = plan[name]()
                    runs.setdefault(name, []).append(r)
                    done += 1
                    left = (time.perf_counter() - t_start) / done * (total - done)
                    print(f"[ksteps] round {i + 1}/{a.rounds} {name}: call {r['call_seconds']:.2f} s "
                          f"(process {r['wall_seconds']:.0f} s); {done}/{total} done, about {left / 60:.0f} min left",
                          file=sys.stderr, flush=True)
        machine = host.describe()
        out = {"date": provenance.now(), **git, "cpu_model": host.cpu_label(machine),
               "usable_cores": machine["usable_cores"], "gpu_count": machine["gpu_count"],
               "device_kind": "cpu (logical replicas)", "versions": provenance.versions(),
               "data_source": json.loads(paths.MANIFEST.read_text()).get("label", "unknown"),
               "settings": {"images": a.images, "image_size": px, "batch": b, "epochs": epochs, "rounds": a.rounds},
               "replicas": n, "steps_per_epoch_N": steps_per_epoch(a.images, n * b), "ks": ks,
               "prediction": {**prediction_commit(PREDICTION), "sha256": heldout.sha256(PREDICTION)},
               "order": order, **analyse(runs, prediction, ks), "runs": runs,
               "bench_seconds": time.perf_counter() - t_start}
        write_json(out_json, out)
        md = markdown(out)
        atomic_write(out_json.with_suffix(".md"), md)
        print(md)
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
