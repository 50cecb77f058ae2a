"""What produced a result: versions, git commit, host, time.  Copied into every result."""

from __future__ import annotations

import datetime as dt
import platform
import socket
import subprocess
import sys
from importlib import metadata


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def versions() -> dict:
    return {"python": platform.python_version(), "tensorflow": _version("tensorflow"),
            "keras": _version("keras"), "numpy": _version("numpy"), "dvc": _version("dvc"),
            "pandas": _version("pandas"), "seaborn": _version("seaborn")}


def git_state() -> dict:
    """Commit of the working tree and whether it had uncommitted changes (DVC experiments do)."""
    def git(*args: str) -> str | None:
        try:
            return subprocess.run(["git", *args], capture_output=True, text=True, timeout=10,
                                  check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    commit = git("rev-parse", "HEAD")
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return {"git_commit": commit, "git_dirty": bool(dirty) if dirty is not None else None}


def host() -> dict:
    return {"hostname": socket.gethostname(), "platform": platform.platform(), "argv": sys.argv[1:]}


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
