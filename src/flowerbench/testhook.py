"""A test-only hook: stop or pause a stage at a named checkpoint, as a hard kill or a slow run would.

    FLOWERBENCH_TEST_HOOK=kill:<checkpoint>            SIGKILL this process there
    FLOWERBENCH_TEST_HOOK=pause:<checkpoint>:<file>    wait there until <file> exists (at most 300 s)

Checkpoints: `<command>-start` (the CLI, params loaded: fetch-start, train-start, report-start),
`after-first-epoch` (training, after the first timed epoch), `mid-write` (io.atomic_write: the
temporary file is written, the target not yet replaced), `fetch-swapped` (fetch: the new data
is in place, its manifest not yet).  Unset, it costs one dict lookup.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

ENV = "FLOWERBENCH_TEST_HOOK"


def checkpoint(name: str) -> None:
    spec = os.environ.get(ENV)
    if not spec:
        return
    action, _, rest = spec.partition(":")
    point, _, arg = rest.partition(":")
    if point != name:
        return
    print(f"[testhook] {action} at {name}", file=sys.stderr, flush=True)
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif action == "pause":
        deadline = time.monotonic() + 300
        while not Path(arg).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
