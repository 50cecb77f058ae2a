"""Build flower-like .tgz archives (good and hostile) for the fetch tests."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

from flowerbench.data import standin


def jpeg(seed: int = 0, px: int = 32) -> bytes:
    import numpy as np
    rng = np.random.default_rng(seed)
    return standin.encode_jpeg(rng.integers(0, 255, (px, px, 3), dtype=np.uint8))


def good_members(per_class: int = 3, classes=("daisy", "roses", "tulips")) -> dict[str, bytes]:
    out = {}
    for c, cls in enumerate(classes):
        for i in range(per_class):
            out[f"flower_photos/{cls}/{cls}_{i}.jpg"] = jpeg(seed=c * 100 + i)
    out["flower_photos/LICENSE.txt"] = b"CC-BY\n"
    return out


def make_tgz(path: Path, files: dict[str, bytes], extra=()) -> tuple[Path, str]:
    """Write a .tgz with `files` plus `extra` raw TarInfo members; return (path, sha256)."""
    with tarfile.open(path, "w:gz") as tar:
        dirs = sorted({str(Path(n).parent) for n in files} - {"."})
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type = tarfile.DIRTYPE
            info.mode = 0o755
            tar.addfile(info)
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for info in extra:
            tar.addfile(info)
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def link_member(name: str, target: str, hard: bool = False) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.LNKTYPE if hard else tarfile.SYMTYPE
    info.linkname = target
    return info


def device_member(name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.CHRTYPE
    info.devmajor, info.devminor = 1, 3
    return info
