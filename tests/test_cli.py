"""CLI plumbing: help on every subcommand, one-line errors."""

from __future__ import annotations

import pytest

from flowerbench.cli import build_parser, one_line
from tests.conftest import cli_env, run_cli

STAGES = ["fetch", "train", "report", "worker", "launch", "preflight", "exp-args"]


@pytest.mark.parametrize("stage", STAGES)
def test_every_subcommand_has_help(stage):
    proc = run_cli(stage, "--help", timeout=30)
    assert proc.returncode == 0 and "--params" in proc.stdout


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


def test_a_training_stage_says_in_its_own_words_what_tensorflow_found(workdir):
    """TensorFlow's C++ start-up lines (pre-absl INFO lines, cuInit at ERROR level without a GPU
    driver) are filtered out; the stage says once, in its own format, what it found.  Every
    stderr line is a flowerbench line."""
    proc = run_cli("train", "--variant", "single_fit", cwd=workdir, env=cli_env(drop=("TF_CPP_MIN_LOG_LEVEL",)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert [l for l in lines if not l.startswith("[")] == []
    found = [l for l in lines if l.startswith("[tensorflow] TensorFlow ")]
    assert len(found) == 1 and ("no GPU found, CPU only" in found[0] or "GPU(s)" in found[0])
    assert any(l.startswith("[train single_fit] timed ") for l in lines)
