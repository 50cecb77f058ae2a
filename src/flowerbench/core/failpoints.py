"""Fault injection for the tests: named points where a test may stop, pause or look into a stage.

The product never reads these variables except here, and each costs one dict lookup when unset.
The contract (tests/faults/ and tests/test_multiworker.py use it; nothing else may):

    FLOWERBENCH_FAILPOINT=kill:<point>             SIGKILL this process at <point>, as a hard kill would
    FLOWERBENCH_FAILPOINT=pause:<point>:<file>     wait at <point> until <file> exists (at most 300 s)
    FLOWERBENCH_FAILPOINT_PORTS=<p0>,<p1>,...      the multi-worker launcher's first attempt uses these
                                                   ports (a test holds one, to collide with a worker)
    FLOWERBENCH_FAILPOINT_WEIGHTS=<file.npz>       the multi-worker chief saves its trainable weights
                                                   when the job joins (init_<i>) and at the end (final_<i>)

Points (`checkpoint(name)`), where they fire:
    <stage>-start        a stage's entry, its params loaded (host-, fetch-, train-, report-, worker-,
                         launch-, terms-, probe-start, ...: core/entry.py)
    after-first-epoch    training, after the first timed epoch (training/loops.py)
    mid-write            io.atomic_write: the temporary file is written, the target not yet replaced
    process-recorded     the rounds stage (measuring/scheduler.py): a process's result and load are recorded
    fetch-swapped        fetch: the new data is in place, its manifest not yet
A kill or pause prints `[failpoint] <action> at <point>` on stderr first, for the test to wait on.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Optional

POINT_ENV = "FLOWERBENCH_FAILPOINT"
PORTS_ENV = "FLOWERBENCH_FAILPOINT_PORTS"
WEIGHTS_ENV = "FLOWERBENCH_FAILPOINT_WEIGHTS"
POINTS = ("after-first-epoch", "mid-write", "fetch-swapped", "process-recorded")   # besides <stage>-start

_kept: dict[str, list] = {}   # keep_weights' init arrays, held until the chief's final call


def checkpoint(name: str) -> None:
    spec = os.environ.get(POINT_ENV)
    if not spec:
        return
    action, _, rest = spec.partition(":")
    point, _, arg = rest.partition(":")
    if point != name:
        return
    print(f"[failpoint] {action} at {name}", file=sys.stderr, flush=True)
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif action == "pause":
        deadline = time.monotonic() + 300
        while not Path(arg).exists() and time.monotonic() < deadline:
            time.sleep(0.05)


def forced_ports() -> Optional[list[int]]:
    raw = os.environ.get(PORTS_ENV)
    return [int(p) for p in raw.split(",")] if raw else None


def keep_weights(tag: str, model) -> None:
    """`init`: remember the model's trainable weights; `final`: write them beside the kept ones."""
    path = os.environ.get(WEIGHTS_ENV)
    if not path:
        return
    _kept[tag] = [w.numpy() for w in model.trainable_weights]
    if tag == "final":
        import numpy as np

        arrays = {f"{t}_{i}": a for t in ("init", "final") for i, a in enumerate(_kept.get(t, []))}
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)
