"""Provenance: the commit and the uncommitted files a result was made from (real git, temp repo)."""

import subprocess

from flowerbench.core import provenance


def _git(repo, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                   capture_output=True)


def test_git_state_names_the_uncommitted_files(tmp_path, monkeypatch):
    _git(tmp_path, "init", "-q")
    (tmp_path / "results").mkdir()
    (tmp_path / "reports").mkdir()
    for name in ("params.yaml", "dvc.lock", "README.md", "results/single_fit.json", "reports/metrics.json"):
        (tmp_path / name).write_text("a\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "x")
    (tmp_path / "untracked.txt").write_text("not part of the tree\n")
    monkeypatch.chdir(tmp_path)
    clean = provenance.git_state()
    assert len(clean["git_commit"]) == 40
    assert clean["git_dirty"] is False and clean["git_changed"] == []

    # The pipeline's own outputs rewritten by a rerun: not edited code, still a clean tree.
    for name in ("dvc.lock", "results/single_fit.json", "reports/metrics.json"):
        (tmp_path / name).write_text("b\n")
    rerun = provenance.git_state()
    assert rerun["git_dirty"] is False and rerun["git_changed"] == [], rerun

    (tmp_path / "params.yaml").write_text("b\n")
    (tmp_path / "README.md").write_text("b\n")
    dirty = provenance.git_state()
    assert dirty["git_commit"] == clean["git_commit"]
    assert dirty["git_dirty"] is True and dirty["git_changed"] == ["README.md", "params.yaml"]


def test_git_state_outside_git(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    none = provenance.git_state()
    assert none == {"git_commit": None, "git_dirty": None, "git_changed": None}
