"""Held processes: a training process that waits, warmed up, until the scheduler releases one epoch.

The measuring engine (measuring/scheduler.py, engine 2) starts a round's processes two at a time; each warms up,
then blocks before every timed epoch until the scheduler says `go`, so the scheduler can release one
epoch of one process at a time, with nothing else running, and cycle through the round's processes.
A slow minute of the host then lands on every arm of the round alike (benchmarks/interleave.py
measured that a held, interleaved epoch times what a back-to-back one does: reports/reference/
interleave-amd-f25m17-2core/).

The protocol runs on a pipe pair of its own (the child's stdout and stderr stay free for its log),
whose descriptors the scheduler passes in $FLOWERBENCH_HOLD as "<read fd>,<write fd>":

    child -> scheduler   ready                       warmed up (or after an epoch): held, waiting
    scheduler -> child   go                          run one timed epoch
    child -> scheduler   {"seconds": s, "cpu_seconds": c}   the epoch just timed
                         (the child exits after its last epoch, its result written)

A held process takes no CPU: it blocks in a read, and its input pipeline runs with tf.data's autotune
off (dataset.build_dataset, and dataset.quiet_device_iterators for the per-device datasets of a
distributed iterator), which would otherwise keep threads busy.  A scheduler that goes away (EOF) ends
the child with HoldError.  Without $FLOWERBENCH_HOLD there is no gate and nothing waits.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import IO, Optional

ENV = "FLOWERBENCH_HOLD"
READY, GO = "ready", "go"


class HoldError(RuntimeError):
    """The hold protocol broke: the scheduler went away, or a process said something unexpected."""


class Gate:
    """The child's side: `wait()` before each timed epoch, `done(...)` after it."""

    def __init__(self, read: IO[str], write: IO[str]):
        self._read, self._write = read, write
        self.held_seconds = 0.0        # wall time spent held, over the whole process
        self.held_cpu_seconds = 0.0    # this process's CPU time meanwhile (should be ~0: nothing runs)

    def wait(self) -> None:
        t0, c0 = time.perf_counter(), time.process_time()
        self._say(READY)
        line = self._read.readline()
        if line.strip() != GO:
            raise HoldError("the scheduler went away while this process was held" if not line
                            else f"expected {GO!r} from the scheduler, got {line.strip()!r}")
        self.held_seconds += time.perf_counter() - t0
        self.held_cpu_seconds += time.process_time() - c0

    def done(self, seconds: float, cpu_seconds: float) -> None:
        self._say(json.dumps({"seconds": seconds, "cpu_seconds": cpu_seconds}))

    def _say(self, line: str) -> None:
        self._write.write(line + "\n")
        self._write.flush()


def from_env() -> Optional[Gate]:
    """The gate the scheduler set up for this process, or None (a process nobody holds)."""
    spec = os.environ.get(ENV)
    if not spec:
        return None
    try:
        rfd, wfd = (int(x) for x in spec.split(","))
        return Gate(os.fdopen(rfd, "r", encoding="utf-8"), os.fdopen(wfd, "w", encoding="utf-8"))
    except (ValueError, OSError) as exc:
        raise HoldError(f"${ENV}={spec!r}: not two open pipe descriptors ({exc})") from None


class Held:
    """The scheduler's side of one held process (or one multi-process job held as one)."""

    def __init__(self, cmd: list[str], env: Optional[dict] = None, label: str = "a held process"):
        self.label = label
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        env = {**(os.environ if env is None else env), ENV: f"{to_child_r},{from_child_w}"}
        try:
            self.proc = subprocess.Popen(cmd, env=env, pass_fds=(to_child_r, from_child_w), start_new_session=True)
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        self._to = os.fdopen(to_child_w, "w", encoding="utf-8")
        self._from = os.fdopen(from_child_r, "r", encoding="utf-8")
        self.started = time.monotonic()
        self.ready_after: Optional[float] = None   # seconds from start to the first `ready` (warm-up)
        self.epochs: list[dict] = []                # what each released epoch reported

    def _line(self) -> str:
        line = self._from.readline()
        if not line:
            raise HoldError(f"{self.label} exited where {READY!r} or an epoch was due (exit code {self.proc.wait()})")
        return line.strip()

    def until_ready(self) -> None:
        """Block until the process is held (warmed up, or its last epoch reported)."""
        if (line := self._line()) != READY:
            raise HoldError(f"{self.label} said {line!r} where {READY!r} was due")
        if self.ready_after is None:
            self.ready_after = time.monotonic() - self.started

    def release(self) -> dict:
        """One timed epoch: `go`, then its report ({"seconds", "cpu_seconds"}).  The caller then waits
        for `until_ready` (more epochs to come) or for the process to exit (its last)."""
        try:
            self._to.write(GO + "\n")
            self._to.flush()
        except BrokenPipeError:
            raise HoldError(f"{self.label} exited while held (exit code {self.proc.wait()})") from None
        line = self._line()
        try:
            rec = json.loads(line)
            rec = {"seconds": float(rec["seconds"]), "cpu_seconds": float(rec["cpu_seconds"])}
        except (ValueError, KeyError, TypeError):
            raise HoldError(f"{self.label} reported {line!r} where an epoch's seconds were due") from None
        self.epochs.append(rec)
        return rec

    def close(self) -> None:
        for f in (self._to, self._from):
            try:
                f.close()
            except OSError:
                pass
