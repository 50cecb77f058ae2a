"""One log format for every stage: `[stage] message` on stderr, flushed at once.

    from .log import get_logger
    log = get_logger("fetch")            # -> "[fetch] 30 images in 5 classes ..."

`setup()` (called by the CLI, and by any child process that logs) installs the
one handler; without it, library use stays silent.  Errors are not logged here:
the CLI prints them as the one `flowerbench ...: error: ...` line.
"""

from __future__ import annotations

import logging
import sys

ROOT = "flowerbench"


class _StageFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"[{record.name.removeprefix(ROOT + '.')}] {record.getMessage()}"


def setup(level: int = logging.INFO) -> None:
    root = logging.getLogger(ROOT)
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_StageFormatter())
        root.addHandler(handler)
    root.setLevel(level)
    root.propagate = False


def get_logger(stage: str) -> logging.Logger:
    return logging.getLogger(f"{ROOT}.{stage}")
