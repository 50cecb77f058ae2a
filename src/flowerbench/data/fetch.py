"""Stage `fetch`: deliver the flower images to data/flower_photos plus a manifest.

    python -m flowerbench fetch [--source auto|download|archive|synthetic]

Sources:
  download   stream `data.url` (timeouts, retries with backoff, HTTP Range
             resume of a `.part` file), verify size and sha256, then extract.
  archive    a `flower_photos.tgz` the user already has at `data.archive_path`
             (same verification).
  synthetic  the generated stand-in (see data/standin.py), labelled as such.
  auto       archive if present, else download if the URL answers within
             `data.probe_timeout_s`, else synthetic.  The choice is printed and
             recorded in the manifest; every later artefact carries it.

Extraction refuses absolute paths, `..`, links and device files, and goes
into a temporary directory that is renamed into place only when complete.
Every image is decoded once; files that do not decode are moved to
data/quarantine/ and listed in the manifest (never silently dropped).
"""

from __future__ import annotations

import errno
import hashlib
import http.client
import os
import shutil
import socket
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from flowerbench.core import paths
from flowerbench.data import standin
from flowerbench.core.config import Params
from flowerbench.core.io import swap_dir, write_json
from flowerbench.core.log import get_logger
from flowerbench.core.failpoints import checkpoint

CHUNK = 1 << 16


class FetchError(RuntimeError):
    """A fetch failure, one line naming the URL, archive or member."""


@dataclass(frozen=True)
class Download:
    url: str
    dest: Path
    sha256: str
    size_bytes: Optional[int]
    timeout_s: float
    retries: int
    backoff_s: float = 0.5


log = get_logger("fetch").info


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# --------------------------------------------------------------------------- download


def _progress(total: Optional[int], initial: int, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit="B", unit_scale=True, desc=desc,
                disable=not sys.stderr.isatty(), file=sys.stderr)


def _permanent(exc: BaseException) -> bool:
    """HTTP client errors will not get better by retrying (except 408/429)."""
    return isinstance(exc, urllib.error.HTTPError) and 400 <= exc.code < 500 and exc.code not in (408, 416, 429)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        reason = exc.reason
        if isinstance(reason, socket.gaierror):
            return f"host does not resolve ({reason.strerror})"
        if isinstance(reason, (socket.timeout, TimeoutError)):
            return "timed out"
        return f"{getattr(reason, 'strerror', None) or reason}"
    if isinstance(exc, (socket.timeout, TimeoutError)):
        return "timed out (server stalled)"
    if isinstance(exc, http.client.IncompleteRead):
        return "connection closed mid-body"
    return f"{type(exc).__name__}: {exc}"


def _attempt(job: Download, part: Path) -> None:
    """One HTTP request; appends to `part` (resuming with Range when it has bytes)."""
    have = part.stat().st_size if part.exists() else 0
    req = urllib.request.Request(job.url, headers={"User-Agent": "flowerbench"})
    if have:
        req.add_header("Range", f"bytes={have}-")
    with urllib.request.urlopen(req, timeout=job.timeout_s) as resp:
        if have and resp.status != 206:
            log("server ignored the Range request; restarting from byte 0")
            have = 0
        length = resp.headers.get("Content-Length")
        total = (have + int(length)) if length is not None else job.size_bytes
        got = 0
        with part.open("ab" if have else "wb") as fh, _progress(total, have, job.dest.name) as bar:
            while True:
                chunk = resp.read1(CHUNK)  # what has arrived: a reset loses nothing already received
                if not chunk:
                    break
                fh.write(chunk)
                got += len(chunk)
                bar.update(len(chunk))
        if length is not None and got < int(length):
            raise http.client.IncompleteRead(b"", int(length) - got)


def download(job: Download, sleep: Callable[[float], None] = time.sleep) -> Path:
    """Download `job.url` to `job.dest` (verified), resuming `<dest>.part` if present."""
    job.dest.parent.mkdir(parents=True, exist_ok=True)
    part = job.dest.with_name(job.dest.name + ".part")
    last: BaseException | None = None
    for attempt in range(job.retries + 1):
        if attempt:
            delay = min(job.backoff_s * 2 ** (attempt - 1), 8.0)
            have = part.stat().st_size if part.exists() else 0
            log(f"retry {attempt}/{job.retries} in {delay:.1f}s (have {have} bytes): {_describe(last)}")
            sleep(delay)
        try:
            _attempt(job, part)
            last = None
            break
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            last = exc
            # 416: we already hold every byte (a previous run died before renaming).
            if isinstance(exc, urllib.error.HTTPError) and exc.code == 416 and _complete(job, part):
                last = None
                break
            if _permanent(exc):
                break
    if last is not None:
        raise FetchError(f"{job.url}: download failed after {attempt + 1} attempt(s): {_describe(last)}")
    verify_archive(part, job.sha256, job.size_bytes, label=job.url, remove_on_mismatch=True)
    part.replace(job.dest)
    return job.dest


def _complete(job: Download, part: Path) -> bool:
    return part.exists() and (job.size_bytes is None or part.stat().st_size >= job.size_bytes)


def verify_archive(path: Path, sha256: str, size_bytes: Optional[int], label: str,
                   remove_on_mismatch: bool = False) -> str:
    size = path.stat().st_size
    problem = None
    if size_bytes is not None and size != size_bytes:
        problem = f"size mismatch: expected {size_bytes} bytes, got {size}"
    else:
        digest = sha256_file(path)
        if digest != sha256:
            problem = f"sha256 mismatch: expected {sha256}, got {digest}"
    if problem:
        if remove_on_mismatch:
            path.unlink(missing_ok=True)
        raise FetchError(f"{label}: {problem}")
    return sha256


def probe(url: str, timeout_s: float) -> Optional[int]:
    """HEAD the URL: its HTTP status, or None when nothing answered within `timeout_s` (no route,
    no DNS, refused, timed out: the network, not the URL, is what is missing)."""
    try:
        req = urllib.request.Request(url, method="HEAD", headers={"User-Agent": "flowerbench"})
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError):
        return None


# --------------------------------------------------------------------------- extraction


def _check_member(m: tarfile.TarInfo, archive: Path) -> None:
    name = m.name
    if name.startswith("/") or Path(name).is_absolute():
        raise FetchError(f"{archive}: refusing member with absolute path {name!r}")
    if ".." in Path(name).parts:
        raise FetchError(f"{archive}: refusing member that escapes the target {name!r}")
    if m.issym() or m.islnk():
        raise FetchError(f"{archive}: refusing link member {name!r} -> {m.linkname!r}")
    if not (m.isfile() or m.isdir()):
        raise FetchError(f"{archive}: refusing special file member {name!r} (device, fifo or other)")


def safe_extract(archive: Path, into: Path) -> Path:
    """Extract a tar archive into `into` after checking every member; return the image root."""
    try:
        with tarfile.open(archive, "r:*") as tar:
            members = tar.getmembers()
            if not members:
                raise FetchError(f"{archive}: archive is empty")
            for m in members:
                _check_member(m, archive)
            # Every member is checked above; the "data" filter (Python >= 3.11.4) is a second guard.
            # Older 3.11 releases (Debian 12's 3.11.2) have no `filter` argument.
            extra = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            for m in members:
                try:
                    tar.extract(m, into, **extra)
                except OSError as exc:
                    if exc.errno in (errno.EFBIG, errno.ENOSPC, errno.EDQUOT):
                        raise FetchError(f"{into / m.name}: cannot write the extracted file ({exc.strerror}): "
                                         f"the disk is full or a file size limit applies; the data already in "
                                         f"place is unchanged") from None
                    raise
    except (tarfile.TarError, EOFError, OSError) as exc:
        if isinstance(exc, FetchError):
            raise
        raise FetchError(f"{archive}: not a readable tar archive ({exc})") from None
    return find_root(into, archive)


def find_root(into: Path, archive: Path) -> Path:
    """The folder holding the class sub-folders (flower_photos/ in the real archive)."""
    entries = [p for p in into.iterdir()]
    dirs = [p for p in entries if p.is_dir()]
    root = dirs[0] if len(dirs) == 1 and not _has_images(dirs[0]) else into
    classes = [p for p in root.iterdir() if p.is_dir()]
    if len(classes) < 2:
        raise FetchError(f"{archive}: expected at least 2 class folders under {root.name}/, found {len(classes)}")
    for cls in classes:
        nested = [p for p in cls.iterdir() if p.is_dir()]
        if nested:
            raise FetchError(f"{archive}: nested folder {cls.name}/{nested[0].name}/ (expected <class>/<image> only)")
    return root


def _has_images(folder: Path) -> bool:
    return any(p.is_file() and p.suffix.lower() in paths.IMAGE_SUFFIXES for p in folder.iterdir())


# --------------------------------------------------------------------------- validation


def check_image(path: Path) -> tuple[Optional[str], Optional[str]]:
    """(reason it is unusable or None, decoded format)."""
    from PIL import Image, UnidentifiedImageError

    if path.suffix.lower() not in paths.IMAGE_SUFFIXES:
        return f"not an image file name ({path.suffix or 'no suffix'})", None
    try:
        if path.stat().st_size == 0:
            return "zero-byte file", None
        with Image.open(path) as im:
            fmt = im.format
            im.load()  # full decode: catches truncated and corrupt data
        if fmt not in ("JPEG", "PNG"):
            return f"unsupported image format {fmt}", fmt
        return None, fmt
    except PermissionError:
        return "permission denied", None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        return f"does not decode ({type(exc).__name__}: {str(exc)[:80]})", None


def validate_images(root: Path, quarantine: Path) -> tuple[dict[str, int], list[dict], list[dict]]:
    """Decode every file under root/<class>/; move bad ones to quarantine/<class>/."""
    counts: dict[str, int] = {}
    bad: list[dict] = []
    mismatched: list[dict] = []
    classes = sorted(p for p in root.iterdir() if p.is_dir())
    for cls in classes:
        n = 0
        for f in sorted(cls.iterdir()):
            rel = f"{cls.name}/{f.name}"
            reason, fmt = check_image(f)
            if reason:
                target = quarantine / cls.name / f.name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(str(f), target)
                bad.append({"path": rel, "reason": reason})
                continue
            expected = "PNG" if f.suffix.lower() == ".png" else "JPEG"
            if fmt != expected:
                # Kept: TensorFlow's decode_image sniffs the content, so it trains fine.
                mismatched.append({"path": rel, "suffix": f.suffix, "format": fmt})
            n += 1
        if n == 0:
            raise FetchError(f"{root}/{cls.name}: class folder has no decodable image")
        counts[cls.name] = n
    # Top-level files (the real archive ships LICENSE.txt) are not images; keep them.
    return counts, bad, mismatched


def tree_digest(root: Path) -> str:
    """One sha256 over (relative path, file sha256) of every kept image."""
    h = hashlib.sha256()
    for f in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + sha256_file(f).encode() + b"\n")
    return h.hexdigest()


# --------------------------------------------------------------------------- stage


def choose_source(params: Params, override: Optional[str] = None) -> tuple[str, str]:
    """(source, why)."""
    d = params.data
    source = override or d.source
    if source != "auto":
        return source, f"data.source={source}"
    if Path(d.archive_path).is_file():
        return "archive", f"found {d.archive_path}"
    status = probe(d.url, d.probe_timeout_s)
    if status is not None and status < 400:
        return "download", f"{d.url} answered within {d.probe_timeout_s:g}s"
    if status is not None:
        # A server answered, so the network is there and the URL is wrong: the stand-in exists for
        # hosts without a network, never to cover a mistyped setting.
        why = ("so the URL is wrong" if status < 500 else
               "so the server failed; try again later, or set data.source=synthetic to use the stand-in")
        raise FetchError(f"data.url: {d.url} answered HTTP {status}: the network is up, {why} "
                         f"(data.source=auto falls back to the stand-in only when nothing answers)")
    return "synthetic", f"no {d.archive_path} and {d.url} unreachable within {d.probe_timeout_s:g}s"


def run(params: Params, override: Optional[str] = None) -> dict:
    source, why = choose_source(params, override)
    log(f"source: {source} ({why})")
    d = params.data
    paths.DATA.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".fetch-", dir=paths.DATA))
    try:
        manifest: dict = {"source": source, "source_reason": why, "synthetic": source == "synthetic"}
        if source == "synthetic":
            t0 = time.perf_counter()
            root = staging / "flower_photos"
            standin.generate(root, seed=params.seed, px=d.standin_px)
            log(f"generated the synthetic stand-in ({d.standin_px}px, seed {params.seed}) "
                f"in {time.perf_counter() - t0:.1f}s")
            manifest.update(label="synthetic stand-in (NOT the real flower_photos)", seed=params.seed,
                            standin_px=d.standin_px, archive_sha256=None, url=None)
        else:
            archive = Path(d.archive_path)
            if source == "download":
                download(Download(d.url, archive, d.sha256, d.size_bytes, d.timeout_s, d.retries))
            elif not archive.is_file():
                raise FetchError(f"{archive}: archive not found (data.archive_path); "
                                 f"put flower_photos.tgz there or use data.source=download|synthetic")
            log(f"verifying {archive}")
            verify_archive(archive, d.sha256, d.size_bytes, label=str(archive))
            root = safe_extract(archive, staging / "extract")
            manifest.update(label="flower_photos (real)", url=d.url if source == "download" else None,
                            archive=str(archive), archive_sha256=d.sha256, archive_bytes=archive.stat().st_size)
        log("decoding every image")
        quarantine = staging / "quarantine"
        quarantine.mkdir()
        counts, bad, mismatched = validate_images(root, quarantine)
        for item in bad:
            log(f"quarantined {item['path']}: {item['reason']}")
        manifest.update(
            classes=sorted(counts), counts=counts, total=sum(counts.values()),
            quarantined=bad, format_mismatch=mismatched, tree_sha256=tree_digest(root),
        )
        write_json(quarantine / "index.json", bad)
        write_json(staging / paths.MANIFEST.name, manifest)
        # Swap the finished tree into place; a failure above leaves the old data untouched.  The old
        # manifest goes first, so that a hard kill between the swaps leaves no manifest (training
        # then records the data as unknown) rather than one describing other data.
        paths.MANIFEST.unlink(missing_ok=True)
        for src, dst in ((root, paths.FLOWERS), (quarantine, paths.QUARANTINE)):
            swap_dir(src, dst, staging / f"old-{dst.name}")
        checkpoint("fetch-swapped")
        os.replace(staging / paths.MANIFEST.name, paths.MANIFEST)
        log(f"{manifest['total']} images in {len(counts)} classes -> {paths.FLOWERS} "
            f"({len(bad)} quarantined) [{manifest['label']}]")
        return manifest
    finally:
        shutil.rmtree(staging, ignore_errors=True)
