"""The repo's front door and recipes: Makefile help, CI entry, deploy files, params files."""

from __future__ import annotations

import json
import os
import subprocess

import yaml

from flowerbench.config import exp_set_args, load_params
from tests.conftest import REPO


def test_make_alone_prints_help():
    out = subprocess.run(["make", "--no-print-directory"], cwd=REPO, capture_output=True, text=True, timeout=60).stdout
    targets = [l.split()[0] for l in out.splitlines() if l.strip()]
    for t in ("help", "reproduce", "reproduce-blog", "test", "test-all", "bench", "clean"):
        assert t in targets
    text = (REPO / "Makefile").read_text()
    for line in ("SHELL := bash", ".SHELLFLAGS := -eu -o pipefail -c", ".DELETE_ON_ERROR:",
                 "MAKEFLAGS += --warn-undefined-variables --no-builtin-rules", ".DEFAULT_GOAL := help",
                 "$(PY): requirements.lock pyproject.toml"):
        assert line in text


def test_ci_runs_the_readme_test_command():
    ci = (REPO / ".ci" / "run").read_text()
    assert "set -euo pipefail" in ci and "make test" in ci
    assert "make test" in (REPO / "README.md").read_text()


def test_lock_pins_every_direct_dependency_exactly():
    pins = dict(l.split("==") for l in (REPO / "requirements.lock").read_text().split() if "==" in l)
    for pkg, version in {"tensorflow": "2.21.0", "keras": "3.15.1", "dvc": "3.67.1", "pandas": "2.3.3",
                         "seaborn": "0.13.2"}.items():
        assert pins[pkg] == version
    for pkg in ("matplotlib", "pyyaml", "pydantic", "pillow", "tqdm", "psutil", "numpy", "pytest"):
        assert pkg in {k.lower() for k in pins}, pkg


def test_params_files_are_valid_and_blog_params_are_the_blogs():
    default = load_params(REPO / "params.yaml")
    blog = load_params(REPO / "params-blog.yaml")
    assert default.seed == blog.seed == 123
    assert (blog.data.image_size, blog.train.batch_size_per_replica, blog.train.warmup_epochs,
            blog.train.epochs, blog.data.max_images) == (224, 64, 1, 10, None)
    assert blog.model.arch == default.model.arch == "resnet50"
    assert [(v.name, v.loop, v.replicas) for v in blog.variants] == [
        ("single_fit", "fit", 1), ("mirrored_fit", "fit", 4), ("single_custom", "custom", 1),
        ("mirrored_custom", "custom", 4)]
    args = " ".join(exp_set_args(REPO / "params-blog.yaml"))
    assert "-S data.image_size=224" in args and "-S train.epochs=10" in args


def test_slurm_recipe_builds_tf_config():
    for f in ("deploy/slurm/multiworker.sbatch", "deploy/slurm/tf_config.sh"):
        assert subprocess.run(["bash", "-n", str(REPO / f)]).returncode == 0
    env = dict(os.environ, SLURM_JOB_NODELIST="node-a,node-b", SLURM_PROCID="1", FLOWERBENCH_PORT="2222",
               PATH="/usr/bin:/bin")
    out = subprocess.run(["bash", str(REPO / "deploy/slurm/tf_config.sh")], env=env, capture_output=True,
                         text=True, check=True).stdout
    assert json.loads(out) == {"cluster": {"worker": ["node-a:2222", "node-b:2222"]},
                               "task": {"type": "worker", "index": 1}}
    assert "python -m flowerbench worker" in (REPO / "deploy/slurm/multiworker.sbatch").read_text()


def test_kubernetes_recipe_is_an_indexed_job():
    docs = list(yaml.safe_load_all((REPO / "deploy/k8s/multiworker-indexed-job.yaml").read_text()))
    kinds = {d["kind"]: d for d in docs}
    assert set(kinds) == {"Service", "Job"}
    job = kinds["Job"]["spec"]
    assert job["completionMode"] == "Indexed" and job["completions"] == job["parallelism"]
    assert job["backoffLimit"] == 0 and job["activeDeadlineSeconds"] > 0
    script = job["template"]["spec"]["containers"][0]["args"][0]
    assert "JOB_COMPLETION_INDEX" in script and "python -m flowerbench worker" in script
    env = {e["name"]: e["value"] for e in job["template"]["spec"]["containers"][0]["env"]}
    assert int(env["WORKERS"]) == job["completions"]


def test_reproduce_blog_stops_before_any_work_without_four_gpus(tmp_path):
    """This host has no GPU: the preflight of `make reproduce-blog` refuses, naming the numbers."""
    from tests.conftest import run_cli

    proc = run_cli("preflight", "--params", str(REPO / "params-blog.yaml"), cwd=tmp_path, timeout=120)
    assert proc.returncode == 1
    assert "train.device=gpu but this host has no GPU; the blog's run needs 4 GPUs" in proc.stderr
    assert list(tmp_path.iterdir()) == []  # nothing was written
    ok = run_cli("preflight", "--params", str(REPO / "params.yaml"), cwd=tmp_path, timeout=120)
    assert ok.returncode == 0 and "the variants need up to 4 replica(s)" in ok.stdout
