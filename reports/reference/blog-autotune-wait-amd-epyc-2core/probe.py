"""The blog port with and without --quiet-autotune (a diagnostic), 2 rounds A B / B A, tuned as ours
(run.blog: our cores and thread pools, oneDNN on), the custom loop at 2 replicas and fit() at 1:
    .venv/bin/python reports/reference/blog-autotune-wait-amd-epyc-2core/probe.py 480 3   (images, epochs)
Run 2026-12-07 15:56-16:20 UTC on the 2-core AMD EPYC (no GPU), code of ca11e31 + the flag (committed
after); probe.json beside it is that run (its provenance filled in by hand then, written here since)."""
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(REPO / "src"), str(REPO / "benchmarks")]
import run as bench  # noqa: E402
from flowerbench import host, provenance  # noqa: E402

images, px, b, epochs = int(sys.argv[1]), 32, 32, int(sys.argv[2])
runs = []
with tempfile.TemporaryDirectory(prefix="quietprobe-") as tmp:
    work = bench.make_workdir(Path(tmp), images, px, b, epochs)
    for rnd, order in enumerate([(False, True), (True, False)]):
        for quiet in order:
            for loop, n in (("custom", 2), ("fit", 1)):
                r = bench.blog(work, loop, n, px, b, epochs, quiet_autotune=quiet)
                runs.append({"round": rnd, "loop": loop, "replicas": n, "quiet": quiet, "timed": r["timed_seconds"],
                             "wall": r["wall_seconds"]})
                print(json.dumps(runs[-1]), flush=True)
m = host.describe()
out = {"what": "benchmarks/blog_port.py with and without --quiet-autotune (tf.data autotuning off; a diagnostic, "
               "not the blog's code)", "command": f"probe.py {images} {epochs}", "measured": provenance.now(),
       **provenance.git_state(), "cpu_model": m["cpu_model"], "usable_cores": m["usable_cores"],
       "gpu_count": m["gpu_count"], "device_kind": "cpu (logical replicas)", "versions": provenance.versions(),
       "data_source": "synthetic stand-in (NOT the real flower_photos)",
       "settings": {"images": images, "image_size": px, "batch_per_replica": b, "epochs": epochs, "warmup_epochs": 1},
       "runs": runs}
Path(__file__).with_name("probe.json").write_text(json.dumps(out, indent=1) + "\n")
