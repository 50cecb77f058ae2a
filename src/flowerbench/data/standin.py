"""The generated stand-in for flower_photos, used when the real archive is out of reach.

It has the real layout and the real class counts (daisy 633, dandelion 898,
roses 641, sunflowers 699, tulips 799 = 3,670 JPEGs), is byte-identical for
the same seed, and is *learnable*: each class has its own petal colour, disc
size and shape, drawn with per-image jitter over a noisy green-brown
background, so accuracy above chance (20 %) means the model learned something.
It is not the real data: every artefact made from it says "synthetic stand-in".
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image

REAL_COUNTS = {"daisy": 633, "dandelion": 898, "roses": 641, "sunflowers": 699, "tulips": 799}

# Per class: petal RGB, centre RGB, number of petals (0 = a filled blob), relative radius.
_STYLE = {
    "daisy": ((235, 235, 230), (230, 190, 40), 12, 0.55),
    "dandelion": ((240, 205, 30), (225, 170, 20), 0, 0.45),
    "roses": ((190, 30, 50), (120, 10, 30), 5, 0.40),
    "sunflowers": ((250, 180, 20), (90, 50, 20), 20, 0.75),
    "tulips": ((220, 80, 160), (170, 40, 110), 3, 0.35),
}


def _draw(rng: np.random.Generator, cls: str, px: int) -> np.ndarray:
    petal, centre, n_petals, radius = _STYLE[cls]
    yy, xx = np.mgrid[0:px, 0:px].astype(np.float32) / px
    cy, cx = rng.uniform(0.35, 0.65, size=2)
    r = radius * rng.uniform(0.8, 1.2) * 0.5
    dy, dx = yy - cy, xx - cx
    dist = np.sqrt(dx * dx + dy * dy)
    angle = np.arctan2(dy, dx) + rng.uniform(0, 2 * np.pi)
    if n_petals:
        edge = r * (0.65 + 0.35 * np.abs(np.cos(angle * n_petals / 2)))
    else:
        edge = np.full_like(dist, r)
    base = np.array([70, 110, 40], np.float32) * rng.uniform(0.7, 1.2)
    img = np.broadcast_to(base, (px, px, 3)).copy()
    img += rng.normal(0, 18, size=(px, px, 3)).astype(np.float32)
    jitter = rng.normal(0, 12, size=3).astype(np.float32)
    img[dist < edge] = np.asarray(petal, np.float32) + jitter
    img[dist < 0.3 * r] = np.asarray(centre, np.float32) + jitter
    return np.clip(img, 0, 255).astype(np.uint8)


def encode_jpeg(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    # Fixed quality, no EXIF, no timestamp: the bytes depend only on the pixels.
    Image.fromarray(arr, "RGB").save(buf, format="JPEG", quality=90, optimize=False)
    return buf.getvalue()


def generate(dest: Path, seed: int, px: int = 64, counts: dict[str, int] | None = None) -> dict[str, int]:
    """Write the stand-in under `dest/<class>/NNNN.jpg`; return the counts per class."""
    counts = dict(REAL_COUNTS if counts is None else counts)
    for class_index, (cls, n) in enumerate(sorted(counts.items())):
        folder = dest / cls
        folder.mkdir(parents=True, exist_ok=True)
        # One generator per class, seeded from (seed, class): adding a class
        # or changing a count never changes the other classes' bytes.
        rng = np.random.default_rng([seed, class_index])
        for i in range(n):
            (folder / f"{cls}_{i:04d}.jpg").write_bytes(encode_jpeg(_draw(rng, cls, px)))
    return counts
