"""The DVC pipeline for real: `dvc repro` in a temporary copy of the repo on tiny settings,
then a no-op rerun, `dvc metrics show`, and `dvc exp run -S` that reruns training but not fetch."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from flowerbench import paths
from flowerbench.config import resolved_dict, validate
from tests.conftest import REPO, cli_env, tiny_params, write_params

VENV_BIN = Path(sys.executable).parent


def dvc(*args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = cli_env()
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env['PATH']}"
    env["DVC_NO_ANALYTICS"] = "1"
    return subprocess.run([str(VENV_BIN / "dvc"), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_dvc_yaml_outputs_match_paths_module():
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    fetch_outs = [next(iter(o)) if isinstance(o, dict) else o for o in stages["fetch"]["outs"]]
    assert fetch_outs == [str(paths.FLOWERS), str(paths.QUARANTINE), str(paths.MANIFEST)]
    report = stages["report"]
    outs = [next(iter(o)) for o in report["outs"]]
    assert outs == [str(paths.REPORT_MD), str(paths.REPORT_HTML), str(paths.FIGURES)]
    assert [next(iter(m)) for m in report["metrics"]] == [str(paths.METRICS)]
    assert [next(iter(p)) for p in report["plots"]] == [str(paths.TIMINGS)]
    assert stages["train"]["outs"] == [{f"{paths.RESULTS}/${{item.variant.name}}.json": {"cache": False}}]
    # training stages never depend on params fetch does not read, and fetch never on train params
    assert not any(p.startswith("train") for p in stages["fetch"]["params"])
    for name in ("train", "sweep", "multiworker"):
        assert "train" in stages[name]["params"] and str(paths.FLOWERS) in stages[name]["deps"]


@pytest.fixture(scope="module")
def pipeline_repo(tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("pipeline")
    for item in ("dvc.yaml", "src", ".dvc/config", ".gitignore", ".dvcignore"):
        src = REPO / item
        if src.is_dir():
            shutil.copytree(src, repo / item, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        elif src.exists():
            (repo / item).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, repo / item)
    params = tiny_params(**{"data.standin_px": 32, "train.verbose": "quiet",
                            "sweep": {"replicas": [1, 2], "loops": ["fit", "custom"]}})
    params["variants"][1]["replicas"] = params["variants"][3]["replicas"] = 4
    # DVC needs every key a stage declares to be present: write the fully resolved params.
    write_params(repo / "params.yaml", resolved_dict(validate(params)))
    for cmd in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"]):
        subprocess.run(["git", *cmd], cwd=repo, check=True, capture_output=True)
    proc = dvc("repro", cwd=repo)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return repo


def test_repro_produces_every_result_and_the_report(pipeline_repo):
    repo = pipeline_repo
    names = sorted(p.stem for p in (repo / "results").glob("*.json"))
    assert names == sorted(["single_fit", "mirrored_fit", "single_custom", "mirrored_custom", "sweep_r1_fit",
                            "sweep_r1_custom", "sweep_r2_fit", "sweep_r2_custom", "multiworker_custom"])
    manifest = json.loads((repo / "data" / "manifest.json").read_text())
    assert manifest["synthetic"] is True and manifest["total"] == 3670
    r = json.loads((repo / "results" / "mirrored_fit.json").read_text())
    assert r["replicas"] == 4 and r["device_kind"] == "logical_cpu" and r["git_commit"]
    figs = sorted(p.name for p in (repo / "reports" / "figures").glob("*.png"))
    assert "scaling.png" in figs and len(figs) == 4  # replicas 1, 2, 4: the scaling plot is drawn
    html = (repo / "reports" / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 4 and "EMULATION" in html and "SYNTHETIC DATA" in html


def test_metrics_show_lists_per_variant_metrics(pipeline_repo):
    proc = dvc("metrics", "show", "--json", cwd=pipeline_repo)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    metrics = next(iter(data.values()))["data"]["reports/metrics.json"]["data"]["variants"]
    assert metrics["single_fit"]["speedup_vs_baseline"] == 1.0
    assert set(metrics["sweep_r2_custom"]) >= {"timed_seconds", "images_per_second", "scaling_efficiency"}


def test_second_repro_is_a_no_op(pipeline_repo):
    before = (pipeline_repo / "results" / "single_fit.json").read_bytes()
    proc = dvc("repro", cwd=pipeline_repo)
    assert proc.returncode == 0 and "Running stage" not in proc.stdout
    assert (pipeline_repo / "results" / "single_fit.json").read_bytes() == before


def test_exp_run_with_new_epochs_reruns_training_not_fetch(pipeline_repo):
    proc = dvc("exp", "run", "-S", "train.epochs=2", cwd=pipeline_repo)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "Running stage 'fetch'" not in proc.stdout
    assert "Running stage 'train@variant0'" in proc.stdout and "Running stage 'report'" in proc.stdout
    r = json.loads((pipeline_repo / "results" / "single_fit.json").read_text())
    assert r["epochs"] == 2 and len(r["epoch_seconds"]) == 2
    show = dvc("exp", "show", "--json", cwd=pipeline_repo)
    assert show.returncode == 0 and "speedup_vs_baseline" in show.stdout
