"""The input pipeline alone at the blog's 224 px: images/s per core, the blog's pipeline vs ours.

    .venv/bin/python -m benchmarks.input_pipeline [--images 512] [--px 320] [--out FILE]

Stand-in JPEGs at the real photos' typical size (`--px`, default 320 px a side: the real ones are
a few hundred pixels a side, tens of KB) are decoded, resized to 224 px and batched by 64, with no
model, in a fresh process pinned to 1 and then 2 cores (taskset):

  blog  the blog-era `image_dataset_from_directory` (TF 2.3-2.7): a sequential map (no
        num_parallel_calls), shuffle into an 8 x batch buffer, batch, no cache, no prefetch;
        every epoch decodes every JPEG again.
  ours  this repo's pipeline (src/flowerbench/dataset.py): parallel map; its cache makes later
        epochs free, so the first (decoding) epoch is what is measured.

Writes one JSON (host, versions, per-core rates) that docs/performance.md and the report's
scaling model quote.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def blog_pipeline(files: list[str], labels: list[int], px: int, batch: int, seed: int):
    """The blog-era image_dataset_from_directory, ported (sequential decode + resize)."""
    import tensorflow as tf

    def load(path, label):
        img = tf.io.decode_image(tf.io.read_file(path), channels=3, expand_animations=False)
        img.set_shape([None, None, 3])
        return tf.image.resize(img, (px, px), method="bilinear"), label

    ds = tf.data.Dataset.from_tensor_slices((files, labels))
    ds = ds.shuffle(buffer_size=batch * 8, seed=seed)
    return ds.map(load).batch(batch)


def rate(pipeline: str, root: Path, px: int, batch: int) -> float:
    """Images/s over one pass (ours: its first, decoding pass)."""
    from flowerbench.data.dataset import build_dataset, list_images

    images = list_images(root, 123, None)
    ds = (blog_pipeline(images.files, images.labels, px, batch, 123) if pipeline == "blog"
          else build_dataset(images, px, batch, 123, cache=True))
    t0, n = time.perf_counter(), 0
    for x, _ in ds:
        n += int(x.shape[0])
    return n / (time.perf_counter() - t0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=512)
    ap.add_argument("--px", type=int, default=320)
    ap.add_argument("--out", type=Path, default=REPO / "reports" / "input_pipeline.json")
    ap.add_argument("--child", nargs=2, metavar=("PIPELINE", "ROOT"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        print(json.dumps({"images_per_second": rate(a.child[0], Path(a.child[1]), 224, 64)}))
        return 0
    from flowerbench.core import provenance
    from flowerbench.data import standin
    from flowerbench.core.host import cpu_model, usable_cores as cpu_count

    per_class = a.images // len(standin.REAL_COUNTS)
    rows = []
    with tempfile.TemporaryDirectory(prefix="flowerbench-input-") as tmp:
        root = Path(tmp) / "flower_photos"
        standin.generate(root, 123, px=a.px, counts={c: per_class for c in standin.REAL_COUNTS})
        sizes = [f.stat().st_size for f in root.rglob("*.jpg")]
        for cores in (1, 2):
            cpus = ",".join(str(c) for c in sorted(os.sched_getaffinity(0))[:cores])
            for pipeline in ("blog", "ours"):
                out = subprocess.run(["taskset", "-c", cpus, sys.executable, __file__, "--child", pipeline,
                                      str(root)], capture_output=True, text=True, check=True).stdout
                r = json.loads(out.strip().splitlines()[-1])["images_per_second"]
                rows.append({"pipeline": pipeline, "cores": cores, "images_per_second": r,
                             "images_per_second_per_core": r / cores})
                print(f"[input] {pipeline} on {cores} core(s): {r:.0f} img/s", flush=True)
    out = {"what": "decode + resize to 224 px + batch 64, no model", "jpeg_px": a.px,
           "jpeg_kb_mean": sum(sizes) / len(sizes) / 1024, "images": len(sizes), "rows": rows,
           "host": {"cpu_model": cpu_model(), "cpu_count": cpu_count()}, "versions": provenance.versions(),
           "date": provenance.now(), **provenance.git_state()}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"[input] -> {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
