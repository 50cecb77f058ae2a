"""Kill-on-deadline for child processes: the multi-worker launcher, the bench's clone and gpu-check.

A child that hangs must not hang its parent: a MultiWorkerMirroredStrategy worker
whose peer never comes blocks in C++ and ignores SIGTERM, and a `make reproduce`
can stall while printing nothing.  So every child runs in its own process group
(`start_new_session=True`) and, at the deadline, the whole group gets SIGKILL:

    deadline = Deadline(600)
    with guarded(procs, deadline):          # kills the groups at the deadline, even while
        for line in procs[0].stdout: ...    # the caller blocks reading a silent pipe
    codes = wait(procs, deadline)           # or poll: first failure or deadline kills all

Both raise `DeadlineExceeded` (a TimeoutError) after the kill, naming the
children that were still alive.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from contextlib import contextmanager
from typing import Iterator, Sequence


class DeadlineExceeded(TimeoutError):
    def __init__(self, seconds: float, alive: list[int]):
        self.seconds, self.alive = seconds, alive
        super().__init__(f"ran past its {seconds:g} s deadline; killed {len(alive)} process group(s)")


class Deadline:
    """A wall-clock budget that starts now."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.at = time.monotonic() + seconds

    def left(self) -> float:
        return self.at - time.monotonic()

    def expired(self) -> bool:
        return self.left() <= 0


def kill_groups(procs: Sequence[subprocess.Popen]) -> list[int]:
    """SIGKILL the process group of every child still running; wait for them.  -> their indices."""
    alive = [i for i, p in enumerate(procs) if p.poll() is None]
    for i in alive:
        try:
            os.killpg(procs[i].pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
            pass
    return alive


@contextmanager
def guarded(procs: list[subprocess.Popen], deadline: Deadline) -> Iterator[None]:
    """Kill every child's group at the deadline from a timer thread (so a caller blocked on a pipe
    is released: the pipe closes), or at once when the block raises; raise DeadlineExceeded after
    the block if the timer fired.  Children appended to `procs` inside the block are covered."""
    fired: list[int] = []

    def fire() -> None:
        fired.extend(kill_groups(procs))
        fired.append(-1)  # marks that the timer ran, even if nothing was alive

    timer = threading.Timer(max(0.0, deadline.left()), fire)
    timer.daemon = True
    timer.start()
    try:
        yield
    except BaseException:
        _stop(timer)
        kill_groups(procs)
        if fired:
            raise DeadlineExceeded(deadline.seconds, [i for i in fired if i >= 0]) from None
        raise
    _stop(timer)  # a timer that already fired finishes its kill before we look at `fired`
    if fired:
        raise DeadlineExceeded(deadline.seconds, [i for i in fired if i >= 0])


def _stop(timer: threading.Timer) -> None:
    timer.cancel()
    timer.join()


def wait(procs: Sequence[subprocess.Popen], deadline: Deadline, poll_s: float = 0.2) -> list[int]:
    """Wait until every child exited 0, or one failed (the others are killed at once): -> the exit
    codes (None for a child killed here).  At the deadline every group is killed and
    DeadlineExceeded names the children that were still running."""
    while True:
        codes = [p.poll() for p in procs]
        if any(c not in (None, 0) for c in codes):
            kill_groups(procs)
            return codes
        if all(c == 0 for c in codes):
            return codes
        if deadline.expired():
            raise DeadlineExceeded(deadline.seconds, kill_groups(procs))
        time.sleep(min(poll_s, max(0.0, deadline.left())))
