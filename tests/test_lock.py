"""dvc.lock matches the code at HEAD: main is a reference run, so its lock must describe exactly the
committed dvc.yaml, code, params and results.  Everything is read from HEAD's tree (`git show`), so
a work-in-progress edit in the checkout does not turn this red; a commit that changes a stage's
code without rerunning the pipeline does.  The host description is left aside (it describes the
machine, which differs between the reference host and yours)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from flowerbench.core import paths
from flowerbench.core.lockfile import dead_entries, prune
from tests.conftest import REPO, git

pytestmark = pytest.mark.skipif(not (REPO / ".git").exists(), reason="needs the git checkout")


def at_head(path: str, repo: Path = REPO) -> bytes | None:
    proc = subprocess.run(["git", "show", f"HEAD:{path}"], cwd=repo, capture_output=True)
    return proc.stdout if proc.returncode == 0 else None


def head_stages(tmp_path: Path) -> dict[str, set[str]]:
    """The stages HEAD's dvc.yaml defines with HEAD's params (DVC expands foreach/matrix), each
    with the paths of its deps, as DVC itself reads them."""
    tree = tmp_path / "head"
    tree.mkdir()
    for rel in ("dvc.yaml", "params.yaml", ".dvc/config"):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_bytes(at_head(rel))
    git("init", "-q", cwd=tree)
    code = ("import json, os; from dvc.repo import Repo; r = Repo('.'); print(json.dumps({s.addressing: "
            "sorted(os.path.relpath(d.fs_path, r.root_dir) for d in s.deps if not hasattr(d, 'params')) "
            "for s in r.index.stages}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=tree, capture_output=True, text=True, check=True).stdout
    return {name: set(deps) for name, deps in json.loads(out).items()}


def lookup(params: dict, dotted: str):
    node = params
    for part in dotted.split("."):
        node = node[part]
    return node


def test_the_lock_names_only_stages_dvc_yaml_has_with_their_deps(tmp_path):
    lock = yaml.safe_load(at_head("dvc.lock"))["stages"]
    defined = head_stages(tmp_path)
    assert dead_entries(set(lock), set(defined)) == [], "dvc.lock has entries of removed stages: make prune-lock"
    assert set(defined) - set(lock) == set(), "stages never run for the committed lock: make reproduce"
    # and each entry was written for the deps dvc.yaml lists now (DVC does not flag a dep that was
    # dropped from dvc.yaml; a forced rerun of the stage rewrites its entry)
    for name, deps in defined.items():
        assert {d["path"] for d in lock[name].get("deps", [])} == deps, name


def test_every_locked_dep_and_committed_output_matches_head():
    """Each stage's code deps (md5 of the committed file), params (values in the committed
    params.yaml) and git-tracked outputs (results/*.json, reports/metrics.json) equal their hashes
    and values in HEAD's lock."""
    lock = yaml.safe_load(at_head("dvc.lock"))["stages"]
    params = yaml.safe_load(at_head("params.yaml"))
    stale = []
    for name, stage in lock.items():
        files = [d for d in stage.get("deps", []) + stage.get("outs", [])
                 if "md5" in d and not d["md5"].endswith(".dir") and d["path"] != str(paths.HOST)]
        for entry in files:
            committed = at_head(entry["path"])
            if committed is None:  # DVC-cached (data/, the report): not in git, checked by DVC itself
                continue
            if hashlib.md5(committed).hexdigest() != entry["md5"]:
                stale.append(f"{name}: {entry['path']}")
        for file, values in (stage.get("params") or {}).items():
            assert file == "params.yaml", (name, file)
            for key, value in values.items():
                if lookup(params, key) != value:
                    stale.append(f"{name}: params {key}")
    assert stale == [], ("HEAD's dvc.lock does not match HEAD's files; commit the code, run `make reproduce` "
                         "on that clean tree, then commit dvc.lock, results/ and reports/metrics.json: "
                         + "; ".join(stale))


def test_prune_lock_drops_exactly_the_dead_entries(tmp_path):
    """`make prune-lock` on a lock with a stage dvc.yaml lost (a sweep point an experiment ran):
    that entry goes, every other entry keeps its bytes."""
    repo = tmp_path / "r"
    repo.mkdir()
    for rel in ("dvc.yaml", "params.yaml", "dvc.lock", ".dvc/config"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_bytes(at_head(rel))
    git("init", "-q", cwd=repo)
    import os

    cwd = os.getcwd()
    os.chdir(repo)  # DVC's Repo reads params.yaml relative to the working directory
    try:
        prune(repo)  # (HEAD's lock is pruned already; the test after this one holds that)
        original = (repo / "dvc.lock").read_text()
        lock = yaml.safe_load(original)
        ghost = dict(lock["stages"]["rounds"])
        text = original + "  sweep@8-fit:\n" + "".join(
            "    " + line + "\n" for line in yaml.safe_dump(ghost, sort_keys=False).splitlines())
        (repo / "dvc.lock").write_text(text)
        assert yaml.safe_load(text)["stages"]["sweep@8-fit"] == ghost
        assert prune(repo) == ["sweep@8-fit"]
        assert prune(repo) == []
    finally:
        os.chdir(cwd)
    assert (repo / "dvc.lock").read_text() == original
