"""The blog port with and without --quiet-autotune (a diagnostic), 2 rounds A B / B A, tuned as ours
(run.blog: our cores and thread pools, oneDNN on), the custom loop at 2 replicas and fit() at 1:
    .venv/bin/python -m benchmarks.autotune_probe 480 3   (images, epochs)
It writes reports/reference/blog-autotune-wait-amd-epyc-2core/probe.json: that run, 2026-12-07
15:56-16:20 UTC on the 2-core AMD EPYC (no GPU, host schema 1), code of ca11e31 + the flag (committed
after); its provenance was filled in by hand then and is written by this code since.  This file sat
beside it, under reports/, until 2026-12-07 evening."""
import json
import sys
import tempfile
from pathlib import Path

from benchmarks import run as bench
from flowerbench.core import host, provenance

OUT = bench.REPO / "reports" / "reference" / "blog-autotune-wait-amd-epyc-2core" / "probe.json"


def main() -> None:
    images, epochs = int(sys.argv[1]), int(sys.argv[2])
    runs = measure(images, epochs)
    m = host.describe()
    out = {"what": "benchmarks/blog_port.py with and without --quiet-autotune (tf.data autotuning off; a "
                   "diagnostic, not the blog's code)",
           "command": f"python -m benchmarks.autotune_probe {images} {epochs}",
           "measured": provenance.now(), **provenance.git_state(), "cpu_model": host.cpu_label(m), "host": m,
           "usable_cores": m["usable_cores"], "gpu_count": m["gpu_count"], "device_kind": "cpu (logical replicas)",
           "versions": provenance.versions(), "data_source": "synthetic stand-in (NOT the real flower_photos)",
           "settings": {"images": images, "image_size": PX, "batch_per_replica": BATCH, "epochs": epochs,
                        "warmup_epochs": 1},
           "runs": runs}
    OUT.write_text(json.dumps(out, indent=1) + "\n")


PX, BATCH = 32, 32


def measure(images: int, epochs: int) -> list[dict]:
    """2 rounds, A B then B A, of the blog port with and without --quiet-autotune, each loop."""
    px, b = PX, BATCH
    runs = []
    with tempfile.TemporaryDirectory(prefix="quietprobe-") as tmp:
        work = bench.make_workdir(Path(tmp), images, px, b, epochs)
        for rnd, order in enumerate([(False, True), (True, False)]):
            for quiet in order:
                for loop, n in (("custom", 2), ("fit", 1)):
                    r = bench.blog(work, loop, n, px, b, epochs, quiet_autotune=quiet)
                    runs.append({"round": rnd, "loop": loop, "replicas": n, "quiet": quiet,
                                 "timed": r["timed_seconds"], "wall": r["wall_seconds"]})
                    print(json.dumps(runs[-1]), flush=True)
    return runs


if __name__ == "__main__":
    main()
