"""Does a held, interleaved epoch measure what a back-to-back one does?  A within-process test of the
measuring engine that issue 44 asks for, before any stage adopts it.

    .venv/bin/python -m benchmarks.interleave [--pairs 14] [--k 3] [--out reports/interleave.json] [--more FILE]
    (in the repo, or in any folder holding data/ and a params file)

Each pair is two processes of two arms, warmed up together and then held (blocked on a pipe before
every timed epoch, with tf.data's autotune off, so that a held process takes no CPU):

  arm A   fit(), 1 replica on 1 core (the pair's core, rotated over the cores)
  arm B   fit(), MirroredStrategy over 2 replicas, 1 core each

Both run the project's own pieces (runtime.start, dataset, model, optimizer) at params.yaml's
settings.  The driver then releases one epoch at a time, with nothing else running, in four phases
of k epochs per arm: back to back (A's k epochs, then B's k) and interleaved (A B A B ...), alternated
and mirrored from pair to pair (B2B IL B2B IL, or IL B2B IL B2B; A or B first), so that a drift lands
on both designs.  Per pair:

  d = log(B/A interleaved) - log(B/A back to back)       (means of the log epoch times)

and over the pairs stats.tost judges whether the interleaved ratio reproduces the back-to-back one
within +-5 % (90 % interval inside the band: "equivalent"; 95 % wholly outside: "different").  The
switching cost (an interleaved epoch over a back-to-back one) is reported per arm.  Every process is
its own: the process is the unit of replication.  Writes the JSON (every epoch, the order, the
provenance) and a Markdown table beside it.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BAND_PCT = 5.0
ARMS = {"A": 1, "B": 2}      # arm -> replicas


# --------------------------------------------------------------------------- the held process


def worker(params_path: str, replicas: int, cores: list[int], epochs: int) -> int:
    """One held process: warm up one epoch at once, then before each of `epochs` timed epochs say
    `ready` on stdout and wait for `go` on stdin; after each, print the epoch's seconds as JSON."""
    from flowerbench.core import paths
    from flowerbench.training import runtime
    from flowerbench.core.config import load_params
    from flowerbench.data.dataset import build_dataset, list_images
    from flowerbench.training.loops import build_optimizer_in_scope, known_steps
    from flowerbench.training.network import build_network, make_optimizer
    from flowerbench.training.trainer import batch_sizes

    params = load_params(params_path)
    rt = runtime.start(params.train, replicas, core_ids=cores, speed_index=False)
    import keras

    strategy = rt.strategy
    batches = batch_sizes(params, replicas)
    images = list_images(paths.FLOWERS, params.seed, params.data.max_images)
    dataset = build_dataset(images, params.data.image_size, batches.global_batch_size, params.seed,
                            pipeline="files", cache=params.data.cache)
    with strategy.scope():
        model = build_network(params.model.arch, params.data.image_size, len(images.class_names),
                            batchnorm=params.model.batchnorm)
        optimizer = make_optimizer(params.train.optimizer, params.train.learning_rate)
    build_optimizer_in_scope(strategy, model, optimizer)
    model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    steps = known_steps(dataset)
    data = dataset.repeat()
    if replicas > 1:
        data = strategy.experimental_distribute_dataset(data)

    class Held(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            if epoch >= 1:                       # epoch 0 is the warm-up, run at once
                print("ready", flush=True)
                if sys.stdin.readline().strip() != "go":
                    raise SystemExit("interleave worker: the driver went away")
            self.t0, self.c0 = time.perf_counter(), time.process_time()

        def on_epoch_end(self, epoch, logs=None):
            dt, cpu = time.perf_counter() - self.t0, time.process_time() - self.c0
            print(json.dumps({"epoch": epoch, "seconds": dt, "cpu_seconds": cpu, "loss": float(logs["loss"])}),
                  flush=True)

    model.fit(data, epochs=1 + epochs, steps_per_epoch=steps, callbacks=[Held()], verbose=0, shuffle=False)
    return 0


# --------------------------------------------------------------------------- the driver


class Held:
    """A held worker process: its pipe, and the epochs it has reported."""

    def __init__(self, arm: str, cores: list[int], epochs: int, params: str):
        import os

        self.arm, self.cores, self.epochs = arm, cores, []
        # in this working directory (its data and params), the package importable from the repo
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.interleave", "--worker", "--replicas", str(ARMS[arm]), "--cores",
             ",".join(map(str, cores)), "--epochs", str(epochs), "--params", params],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, start_new_session=True, env=env)

    def _line(self) -> str:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"arm {self.arm} on cores {self.cores} exited (rc {self.proc.wait()})")
        return line.strip()

    def until_ready(self) -> None:
        while (line := self._line()) != "ready":
            if line.startswith("{"):             # the warm-up epoch's report
                continue

    def release(self, tag: str) -> float:
        """One timed epoch: go, its seconds, and the process held again (or finished)."""
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        rec = json.loads(self._line())
        self.epochs.append({**rec, "design": tag})
        return rec["seconds"]

    def close(self, timeout: float = 60) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def schedule(pair: int, k: int) -> list[tuple[str, str]]:
    """The releases of one pair: (arm, design) in order.  Four phases of k epochs per arm, B2B and IL
    alternating (which first, and which arm first, both alternate over the pairs)."""
    first, second = ("A", "B") if pair % 2 == 0 else ("B", "A")
    phases = ["b2b", "il", "b2b", "il"] if (pair // 2) % 2 == 0 else ["il", "b2b", "il", "b2b"]
    out: list[tuple[str, str]] = []
    for phase in phases:
        if phase == "b2b":
            out += [(first, "b2b")] * k + [(second, "b2b")] * k
        else:
            out += [a for _ in range(k) for a in ((first, "il"), (second, "il"))]
    return out


def pair_logs(epochs: dict[str, list[dict]]) -> dict:
    """One pair's mean log epoch seconds per arm and design, and d = log(B/A) IL - log(B/A) B2B."""
    m = {(arm, d): statistics.fmean(math.log(e["seconds"]) for e in rs if e["design"] == d)
         for arm, rs in epochs.items() for d in ("b2b", "il")}
    return {"A_b2b": m["A", "b2b"], "A_il": m["A", "il"], "B_b2b": m["B", "b2b"], "B_il": m["B", "il"],
            "d": (m["B", "il"] - m["A", "il"]) - (m["B", "b2b"] - m["A", "b2b"])}


def analyse(pairs: list[dict]) -> dict:
    """Over the pairs: the equivalence test of d (stats.tost, +-BAND_PCT) and each arm's switching
    cost (interleaved over back to back) with its 95 % interval."""
    from flowerbench.analysis import stats as S

    logs = [pair_logs(p["epochs"]) for p in pairs]
    ds = [x["d"] for x in logs]
    n = len(ds)
    se = statistics.stdev(ds) / math.sqrt(n) if n >= 2 else None
    verdict = S.tost(statistics.fmean(ds), se, n - 1 if n >= 2 else None, BAND_PCT)
    switching = {arm: S.from_logs([x[f"{arm}_il"] - x[f"{arm}_b2b"] for x in logs]).as_dict() for arm in ARMS}
    ratio = {d: S.from_logs([x[f"B_{d}"] - x[f"A_{d}"] for x in logs]).as_dict() for d in ("b2b", "il")}
    return {"pairs": n, "d": ds, "tost": verdict, "switching_cost": switching, "ratio_B_over_A": ratio}


def markdown(out: dict) -> str:
    from flowerbench.core.render import table

    t, a = out["tost"], out["analysis"]

    def iv(x: dict) -> str:
        return f"{x['point']:.3f}" + ("" if x["low"] is None else f" [{x['low']:.3f}, {x['high']:.3f}]")

    eq = t["equivalence_interval_pct"]
    return "\n\n".join([
        "# Held and interleaved epochs against back-to-back ones",
        f"{out['host_label']}; {out['date']}, commit {(out['git_commit'] or 'unknown')[:12]}"
        f"{' (dirty tree)' if out.get('git_dirty') else ''}. {a['pairs']} pairs of processes (arm A: fit() on 1 "
        f"replica, 1 core; arm B: fit() on 2 replicas, 1 core each), {out['settings']['k']} epochs per arm per "
        f"phase, 4 phases; {out['settings']['image_size']} px, {out['settings']['images']} images, stand-in data "
        f"(NOT the real flower_photos). No GPU: CPU cores.",
        f"**The ratio B/A from interleaved epochs against the one from back-to-back epochs: "
        f"{math.expm1(t['log_diff']) * 100:+.1f} %, 90 % interval "
        + ("n/a" if eq is None else f"[{eq[0]:+.1f}, {eq[1]:+.1f}] %") + f": {t['verdict']}** (stats.tost, band "
        f"±{BAND_PCT:g} %).",
        table(["", "B/A back to back", "B/A interleaved", "switching cost A (IL / B2B)",
               "switching cost B (IL / B2B)"],
              [["geometric mean [95 % CI] over pairs", iv(a["ratio_B_over_A"]["b2b"]), iv(a["ratio_B_over_A"]["il"]),
                iv(a["switching_cost"]["A"]), iv(a["switching_cost"]["B"])]])]) + "\n"


def drive(a: argparse.Namespace) -> dict:
    from flowerbench.core import host, provenance
    from flowerbench.core.config import load_params
    from flowerbench.measuring.hostlock import measuring

    params = load_params(a.params)
    usable = host.usable_core_ids(host.describe())
    if len(usable) < 2:
        raise SystemExit("interleave: arm B needs 2 usable cores")
    epochs = 4 * a.k                      # per process: 4 phases (2 of each design) x k
    before = json.loads(Path(a.more).read_text()) if a.more else None
    if before and before["settings"]["k"] != a.k:
        raise SystemExit(f"interleave: --more {a.more} was measured with k = {before['settings']['k']}, not {a.k}")
    pairs = list(before["pairs"]) if before else []
    first = len(pairs)                    # more pairs continue the alternation where the file stopped
    t_start = time.monotonic()
    with measuring(f"benchmarks.interleave, {a.pairs} pairs"):
        for i in range(first, first + a.pairs):
            core = usable[i % 2]
            procs = {"A": Held("A", [core], epochs, a.params), "B": Held("B", usable[:2], epochs, a.params)}
            try:
                for p in procs.values():      # both warm up at once; each then blocks before its first epoch
                    p.until_ready()
                order = schedule(i, a.k)
                for n, (arm, design) in enumerate(order):
                    procs[arm].release(design)
                    if any(x == arm for x, _ in order[n + 1:]):
                        procs[arm].until_ready()
            finally:
                for p in procs.values():
                    p.close()
            pairs.append({"pair": i, "core_A": core, "order": [f"{x}:{d}" for x, d in schedule(i, a.k)],
                          "epochs": {arm: p.epochs for arm, p in procs.items()}})
            done = time.monotonic() - t_start
            n = i + 1 - first
            print(f"[interleave] pair {i + 1}/{first + a.pairs}: d = {pair_logs(pairs[-1]['epochs'])['d']:+.4f} "
                  f"({done / 60:.1f} min, about {done / n * (a.pairs - n) / 60:.0f} min left)",
                  file=sys.stderr, flush=True)
    machine = host.describe()
    analysis = analyse(pairs)
    if before and before["host"] != machine:
        raise SystemExit(f"interleave: --more {a.more} was measured on another host identity; nothing pooled")
    runs = [*(before.get("runs") or [{k: before[k] for k in ("date", "git_commit", "minutes")}] if before else []),
            {"date": provenance.now(), "git_commit": provenance.git_state().get("git_commit"),
             "minutes": (time.monotonic() - t_start) / 60, "pairs": [first, first + a.pairs]}]
    return {"date": provenance.now(), **provenance.git_state(), "host": machine, "host_label": host.label(machine),
            "versions": provenance.versions(), "minutes": sum(r["minutes"] for r in runs), "runs": runs,
            "settings": {"pairs": len(pairs), "k": a.k, "image_size": params.data.image_size,
                         "images": params.data.max_images, "batch_per_replica": params.train.batch_size_per_replica,
                         "band_pct": BAND_PCT},
            "tost": analysis["tost"], "analysis": analysis, "pairs": pairs}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--params", default="params.yaml")
    ap.add_argument("--pairs", type=int, default=14)
    ap.add_argument("--k", type=int, default=3, help="epochs per arm per phase")
    ap.add_argument("--more", metavar="FILE", help="add --pairs pairs to those of an earlier run's JSON (same k and "
                                                   "host identity); the analysis covers them all")
    ap.add_argument("--out", type=Path, default=Path("reports") / "interleave.json")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--replicas", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--cores", help=argparse.SUPPRESS)
    ap.add_argument("--epochs", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        return worker(a.params, a.replicas, [int(c) for c in a.cores.split(",")], a.epochs)
    from flowerbench.core.io import atomic_write, write_json

    out = drive(a)
    write_json(a.out, out)
    md = markdown(out)
    atomic_write(a.out.with_suffix(".md"), md)
    print(md, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
