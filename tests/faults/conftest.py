"""Fixtures the fault tests share: a rendered report (tests/conftest.py `rendered`) to break inputs under."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import assert_clean_failure, run_cli, tree_snapshot


@pytest.fixture
def report_dir(workdir, rendered):
    """results/ with hand-made files for every variant, and a good report already rendered (a copy)."""
    for folder in ("results", "reports"):
        shutil.copytree(rendered / folder, workdir / folder)
    return workdir


def report_fails(workdir, needle):
    before = tree_snapshot(workdir / "reports")
    proc = run_cli("report", cwd=workdir, timeout=120)
    assert_clean_failure(proc, 1, needle, before, (workdir / "reports",))


