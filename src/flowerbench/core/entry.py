"""What every command does around its work: its params loaded, signals, one-line errors, exit codes.

Each command is a small module of its own in flowerbench/commands/ (its flags and the call into
the stage), so that DVC reruns a stage when its own command line changes and no other:

    python -m flowerbench.commands.train --variant mirrored_fit     (what dvc.yaml runs)
    python -m flowerbench train --variant mirrored_fit              (the same, through cli.py)

Params are validated before TensorFlow is imported, so a bad params file fails in under a
second with exit code 2 and one line naming the file and the dotted key.  Exit codes (EXIT_CODES,
docs/faults.md): 0 ok, 1 runtime failure (one line on stderr), 2 bad params or usage, 3 refused
(`make validate`: the held-out predictions are not committed, or not the ones judged; nothing
measured), 75 a multi-worker worker's port was taken (the launcher restarts the job with fresh
ports; `make reproduce` also exits 75 when another holds the checkout), 130 interrupted (SIGINT),
143 terminated (SIGTERM).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Callable, Optional, Sequence

from flowerbench.core.config import ParamsError, load_params
from flowerbench.core.failpoints import checkpoint


class Terminated(BaseException):
    """Raised from the SIGTERM handler so `finally` blocks and temp-file cleanup run."""


# every exit code a command (or `make reproduce`) can end with -> what it means (docs/faults.md lists them)
EXIT_CODES = {0: "ok", 1: "runtime failure", 2: "bad params or usage", 3: "refused, nothing measured",
              75: "a port taken (the launcher retries) / the checkout held by another make reproduce",
              130: "interrupted (SIGINT)", 143: "terminated (SIGTERM)"}
STOPPED = {signal.SIGINT: (130, "interrupted (SIGINT)"), signal.SIGTERM: (143, "terminated (SIGTERM)")}


def _stop_handler(name: str):
    """SIGINT and SIGTERM: wait out an atomic write (io.signals_held); in a process that has loaded
    TensorFlow, say so and exit at once, because unwinding through TensorFlow's running threads can
    corrupt the heap (a `free(): invalid next size` abort instead of exit 143, seen under load); in
    any other process raise, so that `finally` blocks run (the launcher kills its workers there)."""
    def handler(signum, frame):  # pragma: no cover - exercised in subprocess tests
        from flowerbench.core.io import holding

        if holding(signum):
            return
        if "tensorflow" in sys.modules:
            rc, word = STOPPED[signum]
            print(f"flowerbench {name}: {word}; no result written", file=sys.stderr, flush=True)
            os._exit(rc)
        raise KeyboardInterrupt() if signum == signal.SIGINT else Terminated()
    return handler


def parser(name: str, help_: str, flags: Optional[dict] = None) -> argparse.ArgumentParser:
    """A command's parser: --params, which every command takes, then its own `flags` (the
    argparse arguments of each, by name; a name without dashes is positional)."""
    p = argparse.ArgumentParser(prog=f"python -m flowerbench {name}", description=help_)
    p.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    for flag, spec in (flags or {}).items():
        p.add_argument(flag, **spec)
    return p


def command(name: str, help_: str, func: Callable, flags: Optional[dict] = None):
    """A command's (main, parser): `main(argv=None)` parses, loads the params and runs
    `func(args, params)` under `run`."""
    def make_parser() -> argparse.ArgumentParser:
        return parser(name, help_, flags)

    def main(argv: Optional[Sequence[str]] = None) -> int:
        return run(make_parser(), func, argv)
    return main, make_parser


def run(p: argparse.ArgumentParser, func: Callable, argv: Optional[Sequence[str]] = None) -> int:
    """Parse `argv`, load the params, run `func(args, params)` and map what it raises to an exit code."""
    args = p.parse_args(argv)
    name = p.prog.split()[-1]
    from flowerbench.core.log import setup
    setup()
    for signum in STOPPED:
        if signal.getsignal(signum) is not signal.SIG_IGN:   # a background job's SIGINT stays ignored
            signal.signal(signum, _stop_handler(name))
    try:
        params = load_params(args.params)
        checkpoint(f"{name}-start")
        return int(func(args, params) or 0)
    except ParamsError as exc:
        print(f"flowerbench: error: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Terminated) as exc:
        rc, word = STOPPED[signal.SIGINT if isinstance(exc, KeyboardInterrupt) else signal.SIGTERM]
        print(f"flowerbench {name}: {word}; no result written", file=sys.stderr)
        return rc
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
