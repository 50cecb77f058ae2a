"""What every command does around its work: its params loaded, signals, one-line errors, exit codes.

Each command is a small module of its own in flowerbench/commands/ (its flags and the call into
the stage), so that DVC reruns a stage when its own command line changes and no other:

    python -m flowerbench.commands.train --variant mirrored_fit     (what dvc.yaml runs)
    python -m flowerbench train --variant mirrored_fit              (the same, through cli.py)

Params are validated before TensorFlow is imported, so a bad params file fails in under a
second with exit code 2 and one line naming the file and the dotted key.  Exit codes: 0 ok,
1 runtime failure (one line on stderr), 2 bad params or usage, 130 interrupted (SIGINT),
143 terminated (SIGTERM).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Callable, Optional, Sequence

from .config import ParamsError, load_params
from .failpoints import checkpoint


class Terminated(BaseException):
    """Raised from the SIGTERM handler so `finally` blocks and temp-file cleanup run."""


def _on_sigterm(signum, frame):  # pragma: no cover - exercised in subprocess tests
    raise Terminated()


def parser(name: str, help_: str) -> argparse.ArgumentParser:
    """A command's parser, with the --params every command takes."""
    p = argparse.ArgumentParser(prog=f"python -m flowerbench {name}", description=help_)
    p.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    return p


def run(p: argparse.ArgumentParser, func: Callable, argv: Optional[Sequence[str]] = None) -> int:
    """Parse `argv`, load the params, run `func(args, params)` and map what it raises to an exit code."""
    args = p.parse_args(argv)
    name = p.prog.split()[-1]
    from .log import setup
    setup()
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        params = load_params(args.params)
        checkpoint(f"{name}-start")
        return int(func(args, params) or 0)
    except ParamsError as exc:
        print(f"flowerbench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"flowerbench {name}: interrupted (SIGINT); no result written", file=sys.stderr)
        return 130
    except Terminated:
        print(f"flowerbench {name}: terminated (SIGTERM); no result written", file=sys.stderr)
        return 143
    except Exception as exc:  # one line for the user; FLOWERBENCH_DEBUG=1 shows the traceback
        if os.environ.get("FLOWERBENCH_DEBUG"):
            raise
        print(f"flowerbench {name}: error: {one_line(exc)}", file=sys.stderr)
        return getattr(exc, "exit_code", 1)  # e.g. a worker whose port was taken (the launcher retries)


def one_line(exc: BaseException) -> str:
    """The line of an exception that says what went wrong.  TensorFlow's graph errors
    start with "Graph execution error:" and bury the cause under the trace."""
    lines = [l.strip() for l in str(exc).splitlines() if l.strip()]
    if not lines:
        return type(exc).__name__
    if len(lines) > 1 and lines[0].endswith(":"):
        noise = ("File ", "Detected at", "Cf.", "[[", "^", "The error could be")
        for line in lines[1:]:
            if not line.startswith(noise) and "root error(s) found" not in line:
                return f"{lines[0]} {line.removeprefix('(0) ')}"
    return lines[0]
