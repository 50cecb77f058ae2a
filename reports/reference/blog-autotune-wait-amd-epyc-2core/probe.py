"""The blog port with and without --quiet-autotune (a diagnostic), 2 rounds A B / B A, ours budgets:
    .venv/bin/python reports/reference/blog-autotune-wait-amd-epyc-2core/probe.py 480 3   (images, epochs)
Run 2026-12-07 15:56-16:20 UTC on the 2-core AMD EPYC (no GPU), code of ca11e31 + the flag (committed after)."""
import json, os, sys, tempfile, time
from pathlib import Path
REPO = Path(__file__).resolve().parents[3]; sys.path[:0] = [str(REPO / "src"), str(REPO / "benchmarks")]
import run as bench
from flowerbench import budget, paths
tmp = Path(tempfile.mkdtemp(prefix="quietprobe-", ))
images, px, b, epochs = int(sys.argv[1]), 32, 32, int(sys.argv[2])
work = bench.make_workdir(tmp, images, px, b, epochs)
out = []
for rnd in range(2):
    for quiet in (False, True) if rnd == 0 else (True, False):
        for loop, n in (("custom", 2), ("fit", 1)):
            cmd = [bench.PY, str(REPO / "benchmarks" / "blog_port.py"), "--data", str(work / paths.FLOWERS), "--loop", loop,
                   "--replicas", str(n), "--image-size", str(px), "--batch-size", str(b), "--epochs", str(epochs)]
            cmd += ["--quiet-autotune"] if quiet else []
            bud = bench.same_budget(n)
            wall, rss, o = bench.run_measured(cmd, work, env={**os.environ, **budget.thread_env(bud)}, cores=bud)
            line = json.loads(o.strip().splitlines()[-1])
            r = {"round": rnd, "loop": loop, "replicas": n, "quiet": quiet, "timed": line["timed_seconds"], "wall": wall}
            out.append(r); print(json.dumps(r), flush=True)
Path(__file__).with_name("probe.json").write_text(json.dumps(out, indent=1))
