"""`python -m flowerbench <command>`: every command, by name.

    python -m flowerbench host                                  (describe this machine: data/host.json)
    python -m flowerbench fetch  [--params params.yaml] [--source ...]
    python -m flowerbench train  --variant NAME [--params ...]
    python -m flowerbench report [--params ...]
    python -m flowerbench worker --variant multiworker_custom   (one TF_CONFIG worker)
    python -m flowerbench launch [--workers N]                  (N local workers)
    python -m flowerbench terms  [--params ...]                 (the model's terms: results/model-terms.json)
    python -m flowerbench probe  KIND --cores 0,1 --batch B     (one term, one process; run by `terms`)
    python -m flowerbench rounds [--params ...]                 (the headline variants, held: results/rounds/)
    python -m flowerbench secondary [--params ...]              (every other variant and its baselines: results/secondary/)
    python -m flowerbench ab [--fresh | --split K] [--against DIR]  (the rounds measured again, judged: reports/ab.md)
    python -m flowerbench predict-heldout                       (the model's predictions: predictions/heldout.json)
    python -m flowerbench validate [--rejudge]                  (the held-out settings measured and judged)
    python -m flowerbench preflight --params params-blog.yaml   (can this host run it?)
    python -m flowerbench exp-args --params params-blog.yaml    (-S args for dvc exp run)
    python -m flowerbench measured --since ISO-TIME             (what `make reproduce` measured, reused)
    python -m flowerbench prune-lock                            (drop dvc.lock entries of removed stages)
    python -m flowerbench estimators                            (each estimator's between-process sd on the
                                                                 committed measurements; the chosen one)

The pipeline's commands live in flowerbench/commands/ (dvc.yaml runs them as
`python -m flowerbench.commands.<stage>`, so no stage depends on this file); the
tools the Makefile runs around the pipeline are here.  Exit codes: core/entry.py.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Optional, Sequence

from flowerbench.core import entry

STAGE_COMMANDS = ("host", "fetch", "rounds", "secondary", "train", "report", "worker", "launch", "terms", "probe", "ab",
                  "predict-heldout", "validate")


def _preflight(args, params):
    from flowerbench.training import devices

    return devices.preflight(params)


def _exp_args(args, params):
    from flowerbench.core.config import exp_set_args

    print(" ".join(exp_set_args(args.params)))


def _measured(args, params):
    from flowerbench import report

    print(report.measured_summary(params, since=args.since))


def _prune_lock(args, params):
    from flowerbench.core import lockfile

    removed = lockfile.prune()
    print(f"dvc.lock: removed {len(removed)} entr{'y' if len(removed) == 1 else 'ies'} of stages dvc.yaml no "
          f"longer has{': ' + ', '.join(removed) if removed else ''}")


def _estimators(args, params):
    from flowerbench.analysis import estimators as E, pool

    names = [v.name for v in params.all_variants()]
    runs = pool.committed(names)
    if not runs:
        raise RuntimeError("no committed measurements of these variants (reports/reference/*/results/rounds, "
                           "results/rounds)")
    measurements = [{v: rr.of(v) for v in names} for rr in runs.values()]
    out = E.choose(measurements)
    bias = E.settle_bias(measurements)
    print(f"{len(runs)} measurement(s), {sum(rr.count for rr in runs.values())} rounds: {', '.join(runs)}")
    print("between-process sd of log process time, pooled over variants and measurements (df):")
    for name, x in sorted(out["estimators"].items(), key=lambda kv: kv[1]["sd"] or 1e9):
        mark = "  <- smallest" if name == out["chosen"] else ""
        print(f"  {name:15s} {x['sd']:.5f} (df {x['df']}){mark}   {E.WORDS[name]}")
    print(f"in use: {E.CHOSEN}; the warm-up rule dropped a first epoch in {bias['dropped']} of {bias['processes']} "
          f"processes and shortened a time by {-bias['mean_log_ratio'] * 100:.2f} % on average")
    return 0 if out["chosen"] == E.CHOSEN else 1


def _tool_parser(name: str) -> argparse.ArgumentParser:
    helps = {"preflight": "check that this host can run every variant of the params (GPUs, emulation) "
                          "before any work starts",
             "exp-args": "print `-S key=value` arguments that turn params.yaml into this params file "
                         "(for `dvc exp run`)",
             "measured": "say which results were measured since a time and which were reused (and where)",
             "prune-lock": "remove dvc.lock entries of stages that dvc.yaml no longer has",
             "estimators": "each estimator of a process's time, its between-process sd on the committed "
                           "measurements (reports/reference/, results/rounds), and the one in use; exit 1 when "
                           "the data now favour another"}
    p = entry.parser(name, helps[name])
    if name == "measured":
        p.add_argument("--since", required=True, help="ISO time the run started (make reproduce passes it)")
    return p


TOOLS = {"preflight": _preflight, "exp-args": _exp_args, "measured": _measured, "prune-lock": _prune_lock,
         "estimators": _estimators}


def _command(name: str):
    return importlib.import_module(f"flowerbench.commands.{name.replace('-', '_')}")


def build_parser() -> argparse.ArgumentParser:
    """The overview `python -m flowerbench --help` prints; each command parses its own flags."""
    parser = argparse.ArgumentParser(prog="python -m flowerbench", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in STAGE_COMMANDS:
        sub.add_parser(name, help=_command(name).HELP, add_help=False)
    for name in TOOLS:
        sub.add_parser(name, help=_tool_parser(name).description, add_help=False)
    return parser


def command_parser(name: str) -> argparse.ArgumentParser:
    """The parser of one command (its --help)."""
    return _command(name).parser() if name in STAGE_COMMANDS else _tool_parser(name)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in STAGE_COMMANDS:
        return _command(argv[0]).main(argv[1:])
    if argv and argv[0] in TOOLS:
        return entry.run(command_parser(argv[0]), TOOLS[argv[0]], argv[1:])
    build_parser().parse_args(argv)   # --help, or a usage error naming the commands (exit 2)
    return 2
