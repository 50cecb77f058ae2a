"""The k-steps-per-call what-if, predicted before it is built (issue 35; Daydream's order).

    .venv/bin/python benchmarks/ksteps.py [--images 960] [--k 1 3 5 15] [--out predictions/ksteps.json]

The custom loop calls one tf.function per step; at N replicas each call pays the dispatch term
(terms: N replicas' step driven from one process, beyond contention x the step alone + the
all-reduce).  Running k steps per call pays it once per k steps.  This writes what the model says
that does to the N-replica epoch (heldout.ksteps) at the reference settings with `--images`
images (960 = 15 steps of 2 x 32, the blog's 3,670 / 256 steps per epoch or more), from the
committed terms and the custom loop's twin step in the committed rounds.  Commit the file before
the feature is built and measured.  Reads results only: no TensorFlow, under a second.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from flowerbench import heldout, paths, predict, provenance  # noqa: E402
from flowerbench.config import load_params  # noqa: E402
from flowerbench.dataset import steps_per_epoch  # noqa: E402
from flowerbench.io import write_json  # noqa: E402
from flowerbench.validate import reference_rows  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=960)
    ap.add_argument("--k", type=int, nargs="+", default=[1, 3, 5, 15])
    ap.add_argument("--out", type=Path, default=Path("predictions") / "ksteps.json")
    a = ap.parse_args()
    params = load_params("params.yaml")
    terms = predict.load_terms(paths.TERMS)
    n = max(int(k) for k in terms["contention"])
    twin = next(r for r in reference_rows(params, terms) if r["loop"] == "custom" and r.get("step_seconds"))
    b = params.train.batch_size_per_replica
    steps = steps_per_epoch(a.images, n * b)
    common = {"cores_per_replica": params.train.cores_per_replica, "images": a.images,
              "epochs": params.train.epochs, "input_rate": terms["input"]["median_rate"], "ks": a.k}
    out = {"written_at": provenance.now(), **provenance.git_state(), "terms_sha256": heldout.sha256(paths.TERMS),
           "form": "unrolled: k steps traced into one tf.function (not a tf.range while-loop)",
           "image_size": params.data.image_size, "batch_size_per_replica": b, "replicas": n,
           "custom_step_seconds": twin["step_seconds"], "twin": twin["twin"],
           "n_replicas": heldout.ksteps(terms, twin["step_seconds"], replicas=n, steps=steps, **common),
           "one_replica": heldout.ksteps(terms, twin["step_seconds"], replicas=1,
                                         steps=steps_per_epoch(a.images, b),
                                         **{**common, "ks": [k for k in a.k if steps_per_epoch(a.images, b) % k == 0]})}
    write_json(a.out, out)
    for k, v in out["n_replicas"]["by_k"].items():
        print(f"[ksteps] {n} replicas, k = {k}: {v['seconds']:.2f} s ({v['over_smallest_k']:.3f} of k = 1)")
    print(f"[ksteps] -> {a.out}; commit it before the k-steps loop is built")
    return 0


if __name__ == "__main__":
    sys.exit(main())
