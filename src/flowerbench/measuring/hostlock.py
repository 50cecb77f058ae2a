"""One measurement at a time on a host: the lock every measuring stage holds while it runs.

    with measuring("rounds of params.yaml"):
        ...

Two measurements side by side disturb each other's times, whatever checkout or DVC workspace they
run in (`make reproduce`, `dvc exp run`, a `dvc queue` worker in .dvc/tmp/exps, `make ab`).  So the
lock is host-wide: $FLOWERBENCH_MEASURE_LOCK, else /var/tmp/flowerbench-measure.lock, else (where
/var/tmp is not writable) the checkout's .dvc/tmp.  A second measurement waits, saying who holds it.
"""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from flowerbench.core.log import get_logger

LOCK_ENV = "FLOWERBENCH_MEASURE_LOCK"
DEFAULT_LOCK = Path("/var/tmp/flowerbench-measure.lock")

def lock_path() -> Path:
    """The host-wide measurement lock: $FLOWERBENCH_MEASURE_LOCK, else /var/tmp (shared by every
    checkout and DVC's temporary workspaces), else the checkout's .dvc/tmp where /var/tmp is not writable."""
    if os.environ.get(LOCK_ENV):
        return Path(os.environ[LOCK_ENV])
    if os.access(DEFAULT_LOCK.parent, os.W_OK):
        return DEFAULT_LOCK
    return Path(".dvc/tmp/flowerbench-measure.lock")


@contextmanager
def measuring(what: str) -> Iterator[None]:
    """Hold the host's measurement lock for the block; wait (saying who holds it) when it is taken."""
    path = lock_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, writable = os.open(path, os.O_RDWR | os.O_CREAT, 0o666), True
        try:
            os.fchmod(fd, 0o666)       # another user's measurement must be able to take it too
        except PermissionError:
            pass
    except PermissionError:            # another user's lock file: a read-only descriptor locks as well
        fd, writable = os.open(path, os.O_RDONLY), False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            get_logger("lock").info(f"waiting for the measurement lock {path} (held by {holder}): one "
                                    f"measurement at a time on a host, or each disturbs the other")
            fcntl.flock(fd, fcntl.LOCK_EX)
        if writable:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()} ({what}, {os.getcwd()})\n".encode(), 0)
        yield
    finally:
        os.close(fd)   # releases the lock
