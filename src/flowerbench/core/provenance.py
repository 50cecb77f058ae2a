"""What produced a result: versions, git commit, host, time.  Copied into every result."""

from __future__ import annotations

import datetime as dt
import platform
import socket
import subprocess
import sys
from importlib import metadata

from flowerbench.core import paths


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
    """Commit of the working tree, whether it had uncommitted changes to tracked files and which
    (a DVC experiment has: params.yaml).  The pipeline's own outputs (results/, reports/, dvc.lock,
    data/) are left out: a run that rewrote the last run's results has not edited code."""
    def git(*args: str) -> str | None:
        try:
            return subprocess.run(["git", *args], capture_output=True, text=True, timeout=10,
                                  check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    commit = git("rev-parse", "HEAD")
    # Tracked files that differ from HEAD, staged or not (untracked files are not part of the tree).
    names = git("diff", "--name-only", "HEAD")
    changed = None if names is None else sorted(n for n in names.splitlines() if not paths.is_pipeline_output(n))
    return {"git_commit": commit, "git_dirty": None if changed is None else bool(changed), "git_changed": changed}


def host() -> dict:
    return {"hostname": socket.gethostname(), "platform": platform.platform(), "argv": sys.argv[1:]}


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
