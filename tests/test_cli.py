"""CLI plumbing: help on every subcommand, one-line errors."""

from __future__ import annotations

import pytest

from flowerbench.cli import build_parser, command_parser
from flowerbench.core.entry import one_line
from tests.conftest import run_cli

STAGES = ["fetch", "train", "report", "worker", "launch", "terms", "probe", "preflight", "exp-args",
          "predict-heldout", "validate"]


@pytest.mark.parametrize("stage", STAGES)
def test_every_subcommand_has_help(stage, capsys):
    """(the command's own parser, in this process: `python -m flowerbench` and dvc.yaml's
    `python -m flowerbench.commands.<stage>` reach it through its main(), which every stage test
    runs as a subprocess)"""
    with pytest.raises(SystemExit) as done:
        command_parser(stage).parse_args(["--help"])
    assert done.value.code == 0 and "--params" in capsys.readouterr().out


def test_help_from_the_command_line():
    proc = run_cli("train", "--help", timeout=30)
    assert proc.returncode == 0 and "--variant" in proc.stdout and "--params" in proc.stdout
    assert proc.stdout.startswith("usage: python -m flowerbench train")
    unknown = run_cli("trian", timeout=30)
    assert unknown.returncode == 2 and "invalid choice: 'trian'" in unknown.stderr


def test_parser_lists_every_stage():
    text = build_parser().format_help()
    assert all(s in text for s in STAGES)


def test_tensorflow_graph_errors_are_reduced_to_their_cause():
    msg = ("Graph execution error:\n\nDetected at node x defined at:\n  File \"a.py\", line 1\n\n"
           "2 root error(s) found.\n  (0) INVALID_ARGUMENT:  You must feed a value for placeholder tensor 'p'\n"
           "\t [[{{node p}}]]")
    assert one_line(RuntimeError(msg)) == ("Graph execution error: INVALID_ARGUMENT:  You must feed a value for "
                                          "placeholder tensor 'p'")
    assert one_line(ValueError("plain message\nsecond")) == "plain message"
