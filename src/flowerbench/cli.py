"""One command line for every stage.

    python -m flowerbench host                                  (describe this machine: data/host.json)
    python -m flowerbench fetch  [--params params.yaml] [--source ...]
    python -m flowerbench train  --variant NAME [--params ...]
    python -m flowerbench report [--params ...]
    python -m flowerbench worker --variant multiworker_custom   (one TF_CONFIG worker)
    python -m flowerbench launch [--workers N]                  (N local workers)
    python -m flowerbench terms  [--params ...]                 (the model's terms: results/model-terms.json)
    python -m flowerbench probe  KIND --cores 0,1 --batch B     (one term, one process; run by `terms`)
    python -m flowerbench preflight --params params-blog.yaml   (can this host run it?)
    python -m flowerbench exp-args --params params-blog.yaml    (-S args for dvc exp run)
    python -m flowerbench measured --since ISO-TIME             (what `make reproduce` measured, reused)
    python -m flowerbench prune-lock                            (drop dvc.lock entries of removed stages)

Params are validated before TensorFlow is imported, so a bad params file
fails in under a second with exit code 2 and one line naming the dotted key.
Exit codes: 0 ok, 1 runtime failure (one line on stderr), 2 bad params or
usage, 130 interrupted (SIGINT), 143 terminated (SIGTERM).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import Callable, Optional, Sequence

from .config import ParamsError, load_params
from .testhook import checkpoint


class Terminated(BaseException):
    """Raised from the SIGTERM handler so `finally` blocks and temp-file cleanup run."""


def _on_sigterm(signum, frame):  # pragma: no cover - exercised in subprocess tests
    raise Terminated()


def tensorflow_env() -> None:
    """Set what must be set before TensorFlow is imported.  The stage imports it itself
    (devices.import_tensorflow) only after its own checks, so a bad input fails in a second."""
    # oneDNN kernels: some TF builds leave them off on AMD CPUs, a several-fold slower ResNet50
    # step (docs/performance.md).  An explicit user choice wins.
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _cmd_host(args, params):
    from . import host, paths
    host.run(paths.HOST)


def _cmd_fetch(args, params):
    from . import fetch
    fetch.run(params, override=args.source)


def _cmd_train(args, params):
    tensorflow_env()
    from . import train
    train.run(params, variant_name=args.variant)


def _cmd_report(args, params):
    from . import report
    report.run(params)


def _cmd_worker(args, params):
    tensorflow_env()
    from . import multiworker
    multiworker.worker_main(params, variant_name=args.variant, out=args.out, dump_weights=args.dump_weights)


def _cmd_launch(args, params):
    from . import multiworker
    return multiworker.launch_main(params, workers=args.workers, params_path=args.params,
                                   extra_worker_args=args.worker_arg or [])


def _cmd_terms(args, params):
    from . import terms
    terms.run(params, params_path=args.params)


def _cmd_probe(args, params):
    # pinned before TensorFlow starts: its thread pools size themselves from the mask
    os.sched_setaffinity(0, [int(c) for c in args.cores.split(",")])
    tensorflow_env()
    from . import probes
    return probes.main(params, args.kind, args.replicas, args.count, args.batch, args.input_epochs)


def _cmd_preflight(args, params):
    tensorflow_env()
    from . import devices
    return devices.preflight(params)


def _cmd_exp_args(args, params):
    from .config import exp_set_args
    print(" ".join(exp_set_args(args.params)))


def _cmd_measured(args, params):
    from . import report
    print(report.measured_summary(params, since=args.since))


def _cmd_prune_lock(args, params):
    from . import lockfile
    removed = lockfile.prune()
    print(f"dvc.lock: removed {len(removed)} entr{'y' if len(removed) == 1 else 'ies'} of stages dvc.yaml no "
          f"longer has{': ' + ', '.join(removed) if removed else ''}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m flowerbench", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="STAGE")

    def add(name: str, help_: str, func: Callable) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_)
        p.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
        p.set_defaults(func=func)
        return p

    add("host", "describe this machine (CPU model, usable cores, GPUs, CUDA build) in data/host.json", _cmd_host)
    p = add("fetch", "fetch the flower data into data/flower_photos and write data/manifest.json", _cmd_fetch)
    p.add_argument("--source", choices=["auto", "download", "archive", "synthetic"],
                   help="override data.source for this run")
    p = add("train", "train one variant and write results/<variant>.json", _cmd_train)
    p.add_argument("--variant", required=True, help="variant name from params.yaml (variants, sweep)")
    add("report", "render reports/ (md, html, figures, metrics) from results/*.json", _cmd_report)
    p = add("worker", "run one MultiWorkerMirroredStrategy worker configured by TF_CONFIG", _cmd_worker)
    p.add_argument("--variant", default="multiworker_custom")
    p.add_argument("--out", help="where the chief writes its result JSON (the launcher sets it)")
    p.add_argument("--dump-weights", help="(tests) save initial and final weights to this .npz")
    p = add("launch", "start N local workers on 127.0.0.1 with deadlines and gather one result", _cmd_launch)
    p.add_argument("--workers", type=int, help="number of workers (default: multiworker.workers)")
    p.add_argument("--worker-arg", action="append", help=argparse.SUPPRESS)
    add("terms", "measure the model's terms on this host (input, step alone and side by side, all-reduce) "
        "and write results/model-terms.json", _cmd_terms)
    p = add("probe", "(run by `terms`) measure terms in this process, pinned to --cores; one JSON line",
            _cmd_probe)
    p.add_argument("kind", choices=["replica", "allreduce", "mirrored"])
    p.add_argument("--cores", required=True, help="comma-separated core ids to pin this process to")
    p.add_argument("--replicas", type=int, default=1)
    p.add_argument("--count", type=int, default=8, help="timed repetitions")
    p.add_argument("--batch", type=int, required=True, help="images per replica per step")
    p.add_argument("--input-epochs", type=int, default=3, help="timed input epochs of a `solo` replica probe")
    add("preflight", "check that this host can run every variant of the params (GPUs, emulation) "
        "before any work starts", _cmd_preflight)
    add("exp-args", "print `-S key=value` arguments that turn params.yaml into this params file "
        "(for `dvc exp run`)", _cmd_exp_args)
    p = add("measured", "say which results were measured since a time and which were reused (and where)",
            _cmd_measured)
    p.add_argument("--since", required=True, help="ISO time the run started (make reproduce passes it)")
    add("prune-lock", "remove dvc.lock entries of stages that dvc.yaml no longer has", _cmd_prune_lock)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    from .log import setup
    setup()
    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        params = load_params(args.params)
        checkpoint(f"{args.command}-start")
        rc = args.func(args, params)
        return int(rc or 0)
    except ParamsError as exc:
        print(f"flowerbench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"flowerbench {args.command}: interrupted (SIGINT); no result written", file=sys.stderr)
        return 130
    except Terminated:
        print(f"flowerbench {args.command}: terminated (SIGTERM); no result written", file=sys.stderr)
        return 143
    except Exception as exc:  # one line for the user; FLOWERBENCH_DEBUG=1 shows the traceback
        if os.environ.get("FLOWERBENCH_DEBUG"):
            raise
        print(f"flowerbench {args.command}: error: {one_line(exc)}", file=sys.stderr)
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
