"""Fixtures the fault tests share: a rendered report to break inputs under."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import assert_clean_failure, report_in_process, run_cli, tiny_params, tree_snapshot, write_params


@pytest.fixture(scope="session")
def rendered(tiny_data, tmp_path_factory) -> Path:
    """Hand-made results for every variant and the good report rendered from them, once per worker."""
    from tests.helpers.fakes import fake_results

    root = tmp_path_factory.mktemp("rendered")
    shutil.copytree(tiny_data, root / "data")
    write_params(root / "params.yaml", tiny_params())
    fake_results(root / "results")
    ok = report_in_process(root)
    assert ok.returncode == 0, ok.stderr[-2000:]
    return root


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


