"""Atomic writes and JSON helpers.

Every result, manifest, metric and report is written through `atomic_write`:
the bytes go to a temporary file in the same directory, are flushed and
fsynced, and only then renamed over the target with `os.replace`.  A crash,
SIGKILL or full disk therefore leaves either the old file or the new one,
never a half-written file that looks real.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from flowerbench.core.failpoints import checkpoint


class OutputError(OSError):
    """An output could not be written (one line naming the path)."""


_held: list[int] = []          # signals that arrived while an atomic write held them (core/entry.py)
_holding = [0]


@contextmanager
def signals_held():
    """A block that SIGINT and SIGTERM do not cut: the command's handler (core/entry.py) sees `holding()`,
    notes the signal and returns; it is delivered again as the block ends."""
    _holding[0] += 1
    try:
        yield
    finally:
        _holding[0] -= 1
        if not _holding[0] and _held:
            signum = _held[0]
            _held.clear()                # before the handler runs again (it may raise)
            os.kill(os.getpid(), signum)


def holding(signum: int) -> bool:
    """True (and the signal kept for later) while a write holds signals."""
    if _holding[0]:
        _held.append(signum)
        return True
    return False


def atomic_write(path: str | Path, data: bytes | str) -> Path:
    with signals_held():
        return _atomic_write(Path(path), data)


def _atomic_write(path: Path, data: bytes | str) -> Path:
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write output ({exc.strerror})") from None
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; outputs get the usual permissions
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        checkpoint("mid-write")
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise OutputError(f"{path}: cannot write output ({exc.strerror})") from None
        raise
    return path


def swap_dir(src: Path, dest: Path, trash: Path) -> None:
    """Move the finished directory `src` to `dest`; an existing `dest` goes to `trash` first (the
    caller removes it).  Both renames stay on one filesystem, so `dest` is never half-written."""
    if dest.exists():
        dest.replace(trash)
    src.replace(dest)


def write_dir(dest: str | Path, files: dict[str, bytes | str]) -> Path:
    """Write `files` (name -> content) as the whole content of directory `dest`, atomically:
    they go to a fresh sibling directory that is swapped into place, so a failure leaves the
    old directory as it was."""
    dest = Path(dest)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    except OSError as exc:
        raise OutputError(f"{dest}: cannot write output ({exc.strerror})") from None
    trash = dest.parent / f".{dest.name}-old"
    try:
        staging.chmod(0o777 & ~_umask())
        for name, data in files.items():
            (staging / name).write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        shutil.rmtree(trash, ignore_errors=True)
        swap_dir(staging, dest, trash)
    except OSError as exc:
        raise OutputError(f"{dest}: cannot write output ({exc.strerror})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(trash, ignore_errors=True)
    return dest


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_writable(directory: str | Path) -> None:
    """Fail early (before hours of training) if an output directory is not writable."""
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".probe.", dir=directory)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise OutputError(f"{directory}: output directory is not writable ({exc.strerror})") from None


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True, allow_nan=False) + "\n"


def write_json(path: str | Path, obj: Any) -> Path:
    return atomic_write(path, dumps(obj))


def read_json(path: str | Path) -> Any:
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise OutputError(f"{path}: file not found") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
