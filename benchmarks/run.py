"""`make bench`: this project against the blog's own code and against the input-pipeline ceiling.

    .venv/bin/python -m benchmarks.run [--rounds 3] [--images 192] [--image-size 32] [--epochs 2]
                                       [--no-scaling] [--no-reproduce] [--keep-reproduce DIR]

Every measurement is its own process, in `--rounds` sequential rounds in the measuring engine's order
(the rows of a Williams square over the peers, an order seed drawn for each bench and recorded; the
blog's code runs unmodified, so it cannot be held as the headline's processes are); the table shows
the median with min and max.  Settings are the same for the peers (data files, image size,
batch, replicas, epochs).  Writes reports/bench.json and reports/bench.md.

1. ours / blog: our `fit` and `custom` variants vs benchmarks/blog_port.py    target <= 0.90
   (both timed over the blog's window: the whole timed fit() call / epoch loop), at the same core
   budget: the blog's process pinned to our run's cores with our thread pools, at 1 x c and at
   N x c cores (N = `replicas: auto`)                                        target <= 1.00 at N x c
   with img/s and efficiency for both codes, 95 % intervals over the rounds.  The default 192 images
   are 3 steps per epoch, which flatters ours (issue 35): `make bench-ksteps` (benchmarks/ksteps.py)
   sets ours against the blog's code at its fastest setting at 15 steps per epoch
2. real / tensors: our JPEG pipeline vs in-memory tensors (same model)      target <= 1.05
3. harness: timed seconds / sum of per-step seconds (step_timing on)          target <= 1.02
   and the fixed cost per stage (imports, tracing, start-up)
4. pipeline: a no-op `dvc repro` (target <= 3 s) and `make reproduce` with the default params in a
   fresh `git clone` of HEAD that reuses this venv                             target <= 1200 s
5. scaling on this host: img/s at 1, 2, 4 logical replicas, with and without the thread policy
6. memory: peak RSS per run
7. how close to the machine: matmul / 3x3-conv GFLOP/s on the single-replica runs' own core budget
   (benchmarks/ceiling.py, pinned like them) and their img/s at 32 and 64 px as a fraction of the
   ResNet50 ceiling it implies
Ratios are paired inside each round; a target is met only when the whole 95 % interval meets it.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from flowerbench.training import placement, runtime
from flowerbench.core import host, paths, provenance, results
from flowerbench.core import render
from flowerbench.measuring import schedule
from flowerbench.training.placement import CoreBudget
from flowerbench.core.config import load_params
from flowerbench.data.dataset import list_images
from flowerbench.core.deadline import Deadline, DeadlineExceeded, guarded
from flowerbench.core.host import cpu_model, usable_cores as cpu_count
from flowerbench.core.io import atomic_write, write_json
from flowerbench.core.lockfile import pending_stages
from flowerbench.analysis.stats import paired

REPO = Path(__file__).resolve().parents[1]

PY = sys.executable
# make reproduce in a fresh clone: the rounds train for <= 15 min (docs/params.md); fetch, host, the
# terms probes and the report add about 5 min on a 2-core host
REPRODUCE_TARGET_S = 1200.0


def run_measured(cmd: list[str], cwd: Path, env: dict | None = None,
                 cores: CoreBudget | None = None) -> tuple[float, int, str]:
    """(wall seconds, peak RSS of the process in MiB, stdout); `cores`: a budget whose affinity mask is
    set in the child before it starts (budget.pin: before TensorFlow sizes its thread pools from it)."""
    pin = functools.partial(placement.pin, cores) if cores and cores.affinity else None
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, text=True, env=env or os.environ.copy(),
                                preexec_fn=pin)
        _, status, usage = os.wait4(proc.pid, 0)  # rusage of exactly this child
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:6])} failed (rc {proc.returncode}): {stderr.strip().splitlines()[-1:]}")
    return wall, usage.ru_maxrss // 1024, stdout


def make_workdir(root: Path, images: int, image_size: int, batch: int, epochs: int, data_root: Path = REPO) -> Path:
    """A working directory with exactly the `images` files our pipeline would pick (from
    data_root/data), this checkout's params.yaml set to the bench's sizes, and one params file
    per knob the bench varies."""
    import yaml

    params = yaml.safe_load((REPO / "params.yaml").read_text())
    src = data_root / paths.FLOWERS
    chosen = list_images(src, params["seed"], images)
    work = root / "work"
    flowers = work / paths.FLOWERS
    for f in chosen.files:
        rel = Path(f).relative_to(src)
        (flowers / rel.parent).mkdir(parents=True, exist_ok=True)
        shutil.copy(f, flowers / rel)
    shutil.copy(data_root / paths.MANIFEST, work / paths.MANIFEST)
    params["data"].update(image_size=image_size, max_images=None, source="synthetic")
    params["train"].update(batch_size_per_replica=batch, epochs=epochs, warmup_epochs=1, repeats=1, verbose="quiet",
                           custom_graph="epoch")  # the blog's loop; the `step` knob file times ours
    params["variants"] = {n: {"loop": l, "replicas": r} for n, l, r in
                          [("single_fit", "fit", 1), ("single_custom", "custom", 1),
                           ("r2_fit", "fit", 2), ("r4_fit", "fit", 4), ("rn_fit", "fit", "auto"),
                           ("rn_custom", "custom", "auto")]}
    params["sweep"] = {"replicas": [], "loops": ["fit"]}
    (work / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    for name, pipeline, policy, graph, step_timing, px in (
            ("tensors", "tensors", "per_replica", "epoch", False, image_size),
            ("tfdefault", "files", "tf_default", "epoch", False, image_size),
            ("step", "files", "per_replica", "step", False, image_size),
            ("steptimed", "files", "per_replica", "step", True, image_size),
            ("px64", "files", "per_replica", "epoch", False, 64)):
        p = json.loads(json.dumps(params))
        p["data"].update(pipeline=pipeline, image_size=px)
        p["train"].update(thread_policy=policy, custom_graph=graph, step_timing=step_timing)
        (work / f"params-{name}.yaml").write_text(yaml.safe_dump(p, sort_keys=False))
    return work


def ours(work: Path, variant: str, params: str = "params.yaml") -> dict:
    wall, rss, _ = run_measured([PY, "-m", "flowerbench", "train", "--variant", variant, "--params", params], work)
    r = results.load(work / "results" / f"{variant}.json")
    call = statistics.median(r.repeat_wall_seconds)
    return {"timed_seconds": r.timed_seconds, "call_seconds": call,
            "wall_seconds": wall, "stage_seconds": r.stage_seconds, "warmup_seconds": r.warmup_seconds,
            "images_per_second": r.images_per_second, "harness_ratio": r.harness_ratio, "rss_mib": rss,
            "call_images_per_second": r.images_per_epoch * r.epochs / call, "replicas": r.replicas,
            "budget": {"budget_kind": r.budget_kind, "budget_affinity": r.budget_affinity,
                       "intra_op_threads": r.intra_op_threads, "inter_op_threads": r.inter_op_threads}}


def same_budget(replicas: int) -> CoreBudget:
    """The core budget our `train` gives `replicas` replicas on this host (runtime.core_budget, this
    checkout's params): the blog's code runs under exactly this mask and these thread pools."""
    return runtime.core_budget(load_params(REPO / "params.yaml").train, replicas)[1]


def auto_replicas() -> int:
    """N of the N x c budget: what `replicas: auto` is on this host."""
    machine = host.describe()
    return placement.auto_replicas(load_params(REPO / "params.yaml").train, machine["usable_cores"], machine["gpu_count"])


def same_budget_rows(runs: dict[str, list[dict]], n: int) -> list[dict]:
    """Ours against the blog's code at 1 x c and N x c: img/s over the rounds (median, 95 % interval)
    in the blog's window (the whole timed call), and each one's efficiency at N as a paired ratio inside
    each round (its 1 x c run of the same round; stats.paired, over N).  The custom loop with the whole
    epoch in one graph on one replica is a pathological baseline on CPU (docs/performance.md): an
    efficiency against it is labelled so."""
    from flowerbench.analysis.stats import mean_interval, paired

    rows = []
    for loop in ("fit", "custom"):
        for who in ("ours", "blog"):
            one, many = (runs.get(f"{who}_{loop}{suffix}") for suffix in ("", "_N"))
            if not one or not many:
                continue
            key = "call_images_per_second" if who == "ours" else "images_per_second"
            eff = paired([r["call_seconds"] for r in one], [r["call_seconds"] for r in many]).scaled(n)
            rows.append({"loop": loop, "code": who, "replicas": n, "img_s_1": mean_interval([r[key] for r in one]),
                         "img_s_n": mean_interval([r[key] for r in many]), "efficiency": eff.point,
                         "efficiency_low": eff.low, "efficiency_high": eff.high,
                         "pathological_baseline": loop == "custom",   # both codes: the whole epoch in one graph
                         "budget_1": one[0]["budget"], "budget_n": many[0]["budget"]})
    return rows


def blog(work: Path, loop: str, replicas: int, image_size: int, batch: int, epochs: int,
         tf_defaults: bool = False, quiet_autotune: bool = False) -> dict:
    """The blog's code (its port), pinned to the same cores with the same thread pools as our run of
    the same replicas (TensorFlow reads TF_NUM_INTRAOP_THREADS / TF_NUM_INTEROP_THREADS at start).
    tf_defaults: on the same cores, but as a new user runs it, TensorFlow's own thread pools and oneDNN
    left off (TensorFlow's default on this AMD EPYC); benchmarks/ksteps.py measures both settings.
    quiet_autotune: the port's diagnostic flag (tf.data autotuning off; not the blog's code)."""
    cmd = [PY, str(REPO / "benchmarks" / "blog_port.py"), "--data", str(work / paths.FLOWERS), "--loop", loop,
           "--replicas", str(replicas), "--image-size", str(image_size), "--batch-size", str(batch),
           "--epochs", str(epochs), *(["--quiet-autotune"] if quiet_autotune else [])]
    b = same_budget(replicas)
    env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": "0"} if tf_defaults else {**os.environ, **placement.thread_env(b)}
    if tf_defaults:
        for k in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS"):
            env.pop(k, None)
    wall, rss, out = run_measured(cmd, work, env=env, cores=b)
    line = json.loads(out.strip().splitlines()[-1])
    # The blog's time.time() window is the whole timed call: that is its call_seconds too.
    n_images = sum(1 for f in (work / paths.FLOWERS).rglob("*") if f.is_file())
    return {"timed_seconds": line["timed_seconds"], "call_seconds": line["timed_seconds"], "wall_seconds": wall,
            "rss_mib": rss, "final_loss": line["final_loss"], "budget": b.as_dict(), "tf_defaults": tf_defaults,
            "quiet_autotune": quiet_autotune,
            "images_per_second": n_images * epochs / line["timed_seconds"]}


def machine_ceiling(work: Path, cores: CoreBudget, small: bool = False) -> dict:
    """The matmul and 3x3-conv GFLOP/s of `cores` (benchmarks/ceiling.py, its own process pinned to the
    budget's mask with its thread pools): the budget of the run it is compared with, never the host."""
    cmd = [PY, str(REPO / "benchmarks" / "ceiling.py"), *(["--small", "--seconds", "0.2"] if small else [])]
    _, _, out = run_measured(cmd, work, env={**os.environ, **placement.thread_env(cores)}, cores=cores)
    return {**json.loads(out.strip().splitlines()[-1]), "budget": cores.as_dict()}


def closeness(ceiling: dict, img_s: dict[int, float]) -> dict:
    """Single-replica ResNet50 img/s at each image size as a fraction of what the host's best
    measured GFLOP/s would allow (ceiling.images_per_second_ceiling)."""
    from benchmarks.ceiling import images_per_second_ceiling

    peak = max(ceiling["matmul_gflops"], ceiling["conv3x3_gflops"])
    return {str(px): {"images_per_second": v, "ceiling_images_per_second": images_per_second_ceiling(peak, px),
                      "fraction_of_ceiling": v / images_per_second_ceiling(peak, px)} for px, v in img_s.items()}


def noop_repro_seconds() -> float | None:
    """Seconds of `dvc repro` when nothing changed; None (not measured) if the pipeline is stale,
    because then `dvc repro` would retrain everything instead of measuring its own overhead."""
    env = dict(os.environ, PATH=f"{Path(PY).parent}{os.pathsep}{os.environ['PATH']}")
    dvc = str(Path(PY).parent / "dvc")
    status = subprocess.run([dvc, "status", "--json"], cwd=REPO, capture_output=True, text=True, env=env)
    # The host stage is always changed and cheap: "up to date" is every other stage unchanged.
    if status.returncode != 0 or pending_stages(json.loads(status.stdout or "{}")):
        return None
    t0 = time.perf_counter()
    subprocess.run([dvc, "repro"], cwd=REPO, capture_output=True, check=True, env=env)
    return time.perf_counter() - t0


KEPT = ("dvc.lock", "results", "reports/report.md", "reports/report.html", "reports/metrics.json",
        "reports/plots", "reports/figures")


def keep_outputs(clone: Path, dest: Path) -> None:
    """Copy the clone's pipeline outputs (KEPT) to dest, replacing what dest had of them."""
    for rel in KEPT:
        src, dst = clone / rel, dest / Path(rel).name
        if dst.is_dir():
            shutil.rmtree(dst)
        dst.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, dst)


def reproduce_in_clone(root: Path, deadline_s: float = 1800.0, keep: Path | None = None) -> dict:
    """`make reproduce` with the default params in a fresh `git clone` of HEAD, reusing this venv
    (linked in as .venv; `-o` on its stamp stops make from rebuilding it: the clone's files are newer),
    then a no-op `dvc repro` there.  Per-stage seconds come from DVC's "Running stage" lines."""
    clone = root / "clone"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True,
                            check=True).stdout.strip()
    (clone / ".venv").symlink_to(Path(PY).parents[1])
    # The clone's own code, not this checkout's editable install.
    # PYTHONUNBUFFERED: DVC's "Running stage" lines arrive as they are written, so the stage times hold.
    env = dict(os.environ, PYTHONPATH=str(clone / "src"), PYTHONUNBUFFERED="1")
    print(f"[bench] make reproduce in a clone of {commit[:12]} (target <= 600 s) ...", file=sys.stderr, flush=True)
    stages, current, t0 = {}, None, time.perf_counter()
    log = []
    procs: list[subprocess.Popen] = []
    try:
        # The deadline holds even while make prints nothing: guarded() kills its whole process group.
        with guarded(procs, Deadline(deadline_s)):
            procs.append(subprocess.Popen(["make", "-o", ".venv/.flowerbench-installed", "reproduce"], cwd=clone,
                                          env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                          start_new_session=True))
            for line in procs[0].stdout:
                log.append(line)
                now = time.perf_counter() - t0
                if line.startswith("Running stage '"):
                    if current:
                        stages[current] = now - stages[current]
                    current = line.split("'")[1]
                    stages[current] = now
                    print(f"[bench]   {now:6.1f}s {current}", file=sys.stderr, flush=True)
            rc = procs[0].wait()
    except DeadlineExceeded:
        raise TimeoutError(f"make reproduce ran past {deadline_s:.0f} s and was killed:\n{''.join(log[-20:])}") from None
    total = time.perf_counter() - t0
    if current:
        stages[current] = total - stages[current]
    if rc != 0:
        raise RuntimeError(f"make reproduce failed in the clone (rc {rc}):\n{''.join(log[-20:])}")
    t1 = time.perf_counter()
    subprocess.run([str(clone / ".venv" / "bin" / "dvc"), "repro"], cwd=clone, env=env, capture_output=True,
                   check=True)
    noop = time.perf_counter() - t1
    result = {"commit": commit, "seconds": total, "stage_seconds": stages, "noop_repro_seconds": noop}
    if keep:
        keep_outputs(clone, keep)
        write_json(keep / "reproduce.json", result)
        print(f"[bench] the clone's dvc.lock, results and report are in {keep}", file=sys.stderr, flush=True)
    print(f"[bench] make reproduce: {total:.0f} s; no-op dvc repro: {noop:.1f} s", file=sys.stderr, flush=True)
    return result


def fmt_or(x: float | None, spec: str = ".2f") -> str:
    return "n/a" if x is None else format(x, spec)


def iv_cell(iv: dict) -> str:
    return f"{iv['median']:.1f} [{fmt_or(iv['low'], '.1f')}, {fmt_or(iv['high'], '.1f')}]"


def summary(xs: list[float]) -> dict:
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--images", type=int, default=192)
    ap.add_argument("--image-size", type=int, default=32)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--no-scaling", action="store_true", help="skip the 1/2/4-replica section")
    ap.add_argument("--no-reproduce", action="store_true",
                    help="skip timing `make reproduce` in a fresh clone (about 10 min)")
    ap.add_argument("--keep-reproduce", type=Path, metavar="DIR",
                    help="copy the clone's dvc.lock, results/ and report to DIR (a clean-tree reference run), "
                         "with reproduce.json (seconds in all and per stage)")
    return ap.parse_args(argv)


def measure(a: argparse.Namespace, tmp: Path) -> dict:
    """Every process of the bench, in its rounds: the raw records and what describes the run (no
    analysis).  -> {"runs": name -> [record per round], "ceiling", "repro", "noop", "n_auto", "git",
    "t_start"}"""
    keep = a.keep_reproduce.resolve() if a.keep_reproduce else None  # relative to where make ran
    # First, so that a failure there costs no measured runs.
    t_start, git = time.perf_counter(), provenance.git_state()  # the code that runs, not what HEAD is later
    repro = None if a.no_reproduce else reproduce_in_clone(tmp, keep=keep)
    work = make_workdir(tmp, a.images, a.image_size, a.batch, a.epochs)
    runs: dict[str, list[dict]] = {}
    n_auto = auto_replicas()  # (not `n`: the scaling section below loops over its own)
    # ours and the blog's code at the same budgets, 1 x c and N x c cores (same_budget)
    plan = [("blog_fit", lambda: blog(work, "fit", 1, a.image_size, a.batch, a.epochs)),
            ("ours_fit", lambda: ours(work, "single_fit")),
            ("blog_custom", lambda: blog(work, "custom", 1, a.image_size, a.batch, a.epochs)),
            ("ours_custom", lambda: ours(work, "single_custom")),
            ("blog_fit_N", lambda: blog(work, "fit", n_auto, a.image_size, a.batch, a.epochs)),
            ("ours_fit_N", lambda: ours(work, "rn_fit")),
            ("blog_custom_N", lambda: blog(work, "custom", n_auto, a.image_size, a.batch, a.epochs)),
            ("ours_custom_N", lambda: ours(work, "rn_custom")),
            ("ours_custom_step", lambda: ours(work, "single_custom", "params-step.yaml")),
            ("ours_fit_tensors", lambda: ours(work, "single_fit", "params-tensors.yaml"))]
    # the measuring engine's order (schedule.order): the rows of a Williams square over the peers, placed
    # by an order seed drawn for this bench, so every peer runs at every place and after every other
    # equally often over a complete square.  The blog's code runs unmodified, so it cannot be held:
    # these rounds are sequential, each process from its start to its exit (engine 1).
    order_seed = schedule.draw_order_seed()
    fns = dict(plan)
    for rnd, row in enumerate(schedule.order(list(fns), a.rounds, order_seed)):
        for name in row:
            r = fns[name]()
            runs.setdefault(name, []).append(r)
            print(f"[bench] round {rnd + 1}/{a.rounds} {name}: timed {r['timed_seconds']:.2f}s "
                  f"(wall {r['wall_seconds']:.1f}s, {r['rss_mib']} MiB)", file=sys.stderr, flush=True)
    ceiling = machine_ceiling(work, same_budget(1))  # the budget of the single-replica runs it is set beside
    print(f"[bench] ceiling: matmul {ceiling['matmul_gflops']:.0f}, conv 3x3 {ceiling['conv3x3_gflops']:.0f} "
          "GFLOP/s", file=sys.stderr, flush=True)
    extra = [("ours_fit_64px", "single_fit", "params-px64.yaml"),
             ("ours_fit_steptimed", "single_fit", "params-steptimed.yaml"),
             ("ours_custom_steptimed", "single_custom", "params-steptimed.yaml")]
    if not a.no_scaling:
        extra += [("r2_policy", "r2_fit", "params.yaml"), ("r2_tfdefault", "r2_fit", "params-tfdefault.yaml"),
                  ("r4_policy", "r4_fit", "params.yaml"), ("r4_tfdefault", "r4_fit", "params-tfdefault.yaml")]
    for name, variant, params in extra:
        r = ours(work, variant, params)
        runs[name] = [r]
        print(f"[bench] {name}: {r['images_per_second']:.1f} img/s, harness ratio {r['harness_ratio']}",
              file=sys.stderr, flush=True)
    noop = repro["noop_repro_seconds"] if repro else noop_repro_seconds()
    return {"runs": runs, "ceiling": ceiling, "repro": repro, "noop": noop, "n_auto": n_auto, "git": git,
            "t_start": t_start, "order_seed": order_seed, "order": schedule.order(list(fns), a.rounds, order_seed)}


def analyse(raw: dict, a: argparse.Namespace) -> dict:
    """The bench's numbers from its raw records (measure): each ratio against its target by the one
    rule (the whole 95 % interval of a paired ratio), the peers at the same budget, scaling, the
    machine's ceiling; what bench.json holds."""
    runs, ceiling, repro, noop, n_auto = (raw[k] for k in ("runs", "ceiling", "repro", "noop", "n_auto"))
    med = {k: summary([r["timed_seconds"] for r in v]) for k, v in runs.items()}
    call = {k: summary([r["call_seconds"] for r in v]) for k, v in runs.items()}
    rows = []

    def row(name, value, target, **detail):
        rows.append({"measure": name, "value": value, "target": target, "meets": value <= target, **detail})

    def ratio(name, num, den, target, key="timed_seconds"):
        """A paired ratio inside each round (stats.paired); it meets its target only when the whole
        95 % interval does (the one rule), never on a point estimate."""
        est = paired([r[key] for r in runs[num]], [r[key] for r in runs[den]])
        rows.append({"measure": name, "value": est.point, "low": est.low, "high": est.high,
                     "target": target, "meets": est.high is not None and est.high <= target,
                     "numerator": med[num], "denominator": med[den]})

    ratio("ours/blog seconds, fit", "ours_fit", "blog_fit", 0.90, "call_seconds")
    ratio("ours/blog seconds, custom loop (custom_graph=epoch, as the blog)", "ours_custom", "blog_custom",
          0.90, "call_seconds")
    ratio("ours/blog seconds, custom loop (custom_graph=step)", "ours_custom_step", "blog_custom", 0.90,
          "call_seconds")
    ratio(f"ours/blog seconds at {n_auto} replicas (same cores and threads), fit", "ours_fit_N", "blog_fit_N",
          1.0, "call_seconds")
    ratio(f"ours/blog seconds at {n_auto} replicas (same cores and threads), custom loop", "ours_custom_N",
          "blog_custom_N", 1.0, "call_seconds")
    peers = same_budget_rows(runs, n_auto)
    ratio("real/tensors epoch time (input ceiling)", "ours_fit", "ours_fit_tensors", 1.05)
    for name, label in (("ours_fit_steptimed", "fit"), ("ours_custom_steptimed", "custom loop, step")):
        row(f"harness: timed / sum of step seconds, {label}", runs[name][0]["harness_ratio"], 1.02)
    fixed = statistics.median(r["wall_seconds"] - r["timed_seconds"] - r["warmup_seconds"] for r in runs["ours_fit"])
    if noop is None:
        print("[bench] the pipeline is not up to date: run `make reproduce` first to measure a no-op "
              "`dvc repro`; skipped", file=sys.stderr)
    else:
        row("no-op dvc repro seconds", noop, 3.0)
    if repro:
        row("make reproduce seconds (default params, fresh clone, venv exists)", repro["seconds"],
            REPRODUCE_TARGET_S, commit=repro["commit"])
    scaling = {}
    one = statistics.median(r["images_per_second"] for r in runs["ours_fit"])
    scaling["1"] = {"per_replica": one}
    for n in (2, 4):
        if f"r{n}_policy" in runs:
            scaling[str(n)] = {"per_replica": runs[f"r{n}_policy"][0]["images_per_second"],
                               "tf_default": runs[f"r{n}_tfdefault"][0]["images_per_second"]}
    close = closeness(ceiling, {a.image_size: one, 64: runs["ours_fit_64px"][0]["images_per_second"]})
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(a).items()}
    return {"settings": settings, "cpu_model": cpu_model(), "cpu_count": cpu_count(), "host": host.describe(),
            "versions": provenance.versions(), **raw["git"], "date": provenance.now(),
            "ratios": rows, "timed_seconds": med, "call_seconds": call, "fixed_cost_seconds_per_stage": fixed,
            "warmup_seconds_median": {k: statistics.median(r.get("warmup_seconds", 0) for r in v)
                                      for k, v in runs.items() if k.startswith("ours")},
            "peak_rss_mib": {k: max(r["rss_mib"] for r in v) for k, v in runs.items()},
            "scaling_images_per_second": scaling, "machine_ceiling": ceiling, "closeness": close,
            "reproduce": repro, "runs": runs, "run_order": list(runs), "order_seed": raw.get("order_seed"),
            "order": raw.get("order"), "same_budget": peers, "n_auto": n_auto,
            "bench_seconds": time.perf_counter() - raw["t_start"]}


def render_md(out: dict) -> str:
    """bench.md from bench.json's numbers (analyse): nothing measured or computed here."""
    s, rows, ceiling, peers = out["settings"], out["ratios"], out["machine_ceiling"], out["same_budget"]
    n_auto, med, call, scaling, close, repro = (out[k] for k in ("n_auto", "timed_seconds", "call_seconds",
                                                                  "scaling_images_per_second", "closeness",
                                                                  "reproduce"))
    mm = lambda d: f"{d['median']:.2f} [{d['min']:.2f}, {d['max']:.2f}]"  # noqa: E731
    md = [f"# flowerbench benchmark ({out['date']})",
          f"Host: {host.label(out['host'])} (model name {out['cpu_model']}), {out['cpu_count']} cores, no GPU "
          f"(CPU run). ResNet50, {s['images']} images, "
          f"{s['image_size']} px, batch {s['batch']}, 1 warm-up + {s['epochs']} timed epochs, {s['rounds']} "
          f"interleaved rounds (median [min, max]). Commit {(out['git_commit'] or 'unknown')[:12]}"
          f"{' (dirty tree)' if out.get('git_dirty') else ''}.",
          render.table(["measure", "value [95% CI over rounds]", "target", "meets (whole interval)"],
                       [[r["measure"], f"{r['value']:.3f}" + ("" if r.get("low") is None else
                                                              f" [{r['low']:.3f}, {r['high']:.3f}]"),
                         f"<= {r['target']}", "yes" if r["meets"] else "NO"] for r in rows]),
          "A ratio meets its target only when its whole 95 % interval (paired ratios inside each round, "
          "stats.paired) lies at or below it; a point estimate alone never does.",
          f"Ours against the blog's code (benchmarks/blog_port.py) at the same core budget: 1 x c and {n_auto} x c "
          "cores, the blog's process pinned to our run's cores with our thread pools (intra-op c, inter-op "
          "replicas). img/s over the whole timed call (the blog's window), mean [95 % interval] over the "
          "rounds; efficiency = img/s at N / img/s at 1 / N, paired inside each round. Which code is faster "
          "at a budget is read from the ours/blog rows above (their intervals), not from this table; "
          "efficiency is reported, not targeted (a faster baseline lowers it).",
          render.table(["loop", "code", "1 x c img/s", f"{n_auto} x c img/s", "efficiency [95% CI]", "budget at N"],
                       [[r["loop"], r["code"], iv_cell(r["img_s_1"]), iv_cell(r["img_s_n"]),
                         f"{r['efficiency']:.2f} [{fmt_or(r['efficiency_low'])}, {fmt_or(r['efficiency_high'])}]"
                         + (" (PATHOLOGICAL BASELINE: the whole-epoch graph on one replica)"
                            if r["pathological_baseline"] else ""),
                         f"{r['budget_n']['budget_kind']} {r['budget_n']['budget_affinity']}, intra "
                         f"{r['budget_n']['intra_op_threads']} / inter {r['budget_n']['inter_op_threads']}"]
                        for r in peers]),
          "Timed epochs: our timed seconds (sum of the timed epochs).  Whole call: the blog's "
          "time.time() window around the timed fit() call or epoch loop, which the ours/blog rows use.",
          render.table(["run", "timed epochs s median [min, max]", "whole call s median [min, max]",
                        "peak RSS MiB"], [[k, mm(med[k]), mm(call[k]), out["peak_rss_mib"][k]]
                                          for k in out.get("run_order", med)]),
          f"Fixed cost per stage (process wall - warm-up - timed, median of ours_fit): "
          f"{out['fixed_cost_seconds_per_stage']:.1f} s "
          "(Python + TensorFlow import, device set-up, dataset and model build, result writing).",
          f"Scaling on this host (fit, images/s): replicas up to the {out['cpu_count']} usable cores each own "
          f"theirs (core-matched, the per_replica policy); more replicas than cores share them "
          f"(oversubscribed), where no speed-up is possible and the thread policy decides the overhead:",
          render.table(["replicas", "per_replica policy", "tf_default"],
                       [[n, f"{x['per_replica']:.1f}", f"{x['tf_default']:.1f}" if "tf_default" in x else
                         "(same run: the policy leaves 1 replica at the defaults)"] for n, x in scaling.items()]),
          f"How close to the machine: the float32 GFLOP/s of the single-replica runs' own budget "
          f"({ceiling['budget']['budget_kind']}, cores {ceiling['budget']['budget_affinity']}, intra "
          f"{ceiling['budget']['intra_op_threads']} threads), measured in this run with oneDNN on "
          f"(matmul {ceiling['matmul_gflops']:.0f}, 3x3 conv {ceiling['conv3x3_gflops']:.0f}), against "
          "single-replica ResNet50 fit() on that budget (24.6 GFLOP per trained 224 px image, scaled by "
          "pixel area):",
          render.table(["image size", "img/s", "ceiling img/s", "fraction of ceiling"],
                       [[f"{px} px", f"{c['images_per_second']:.1f}", f"{c['ceiling_images_per_second']:.0f}",
                         f"{c['fraction_of_ceiling']:.2f}"] for px, c in close.items()])]
    if repro:
        md += [f"`make reproduce` in a fresh clone of {repro['commit'][:12]}: {repro['seconds']:.0f} s; "
               "seconds per DVC stage:",
               render.table(["stage", "seconds"], [[k, f"{v:.1f}"] for k, v in repro["stage_seconds"].items()])]
    return "\n\n".join(md) + "\n"


def main(argv=None) -> int:
    """measure, then analyse, then render: bench.json and bench.md under reports/."""
    a = parse_args(argv)
    os.chdir(REPO)
    if not paths.MANIFEST.exists():
        print("bench: no data yet; running `python -m flowerbench fetch` first", file=sys.stderr)
        subprocess.run([PY, "-m", "flowerbench", "fetch"], check=True)
    tmp = Path(tempfile.mkdtemp(prefix="flowerbench-bench-"))
    try:
        out = analyse(measure(a, tmp), a)
        write_json(REPO / paths.BENCH_JSON, out)
        md = render_md(out)
        atomic_write(REPO / paths.BENCH_MD, md)
        print(md, end="")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
