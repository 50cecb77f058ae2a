"""The `terms` stage for real: `python -m flowerbench terms` on the tiny data, then the report's model
section from what it measured.  (Its DVC wiring, deps and params, is checked in test_dvc.py; the
tiny pipeline leaves the stage out so that its serial build stays short.)"""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import report_in_process, run_cli, tiny_params, write_params


@pytest.mark.slow
def test_the_terms_stage_measures_the_model_on_this_host(workdir):
    """Every core-matched N that fits, each probe on the cores it should have had, the all-reduce of
    the model's real gradients within a process and between worker processes, the whole step of N
    replicas in one process; the report's model section built from it."""
    proc = run_cli("terms", cwd=workdir, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    t = json.loads((workdir / "results" / "model-terms.json").read_text())
    cores = sorted(os.sched_getaffinity(0))
    assert "git_commit" in t and t["params"]["train"]["batch_size_per_replica"] == 4  # (a workdir, not a git checkout)
    if len(cores) < 2:
        assert t["replicas"] == [] and "nothing to predict" in t["skipped"]
        return
    assert t["replicas"] == list(range(2, min(4, len(cores)) + 1)) and t["cores_per_replica"] == 1
    assert t["input"]["images"] == 30 and t["input"]["cache"] is True and t["input"]["cores"] == cores[:1]
    assert len(t["input"]["seconds"]) == 3 and t["input"]["median_rate"] > 0
    alone = t["step_alone"]
    assert alone["cores"] == cores[:1] and alone["batch"] == 4 and len(alone["seconds"]) == 12
    k = t["contention"]["2"]
    assert k["cores"] == [cores[:1], cores[1:2]] and len(k["seconds_each"]) == 2 and k["factor"] > 0
    assert k["factor"] == pytest.approx(sum(k["median_seconds_each"]) / 2 / alone["median_seconds"])
    a = t["allreduce"]["2"]
    assert a["cores"] == cores[:2] and a["replicas"] == 2 and a["cross_device_ops"] == "CollectiveAllReduce"
    assert a["parameters"] == 277 and a["tensors"] == 5 and len(a["seconds"]) == 12  # the tiny model's
    w = t["allreduce_workers"]["2"]  # the same gradients across 2 worker processes, one per core
    assert w["cores"] == [cores[:1], cores[1:2]] and w["strategy"] == "CollectiveAllReduceStrategy"
    assert (w["parameters"], w["tensors"]) == (a["parameters"], a["tensors"]) and len(w["seconds"]) == 10
    d = t["dispatch"]["2"]  # 2 replicas' whole step in one process, less the parts above
    assert d["cores"] == cores[:2] and d["replicas"] == 2 and len(d["seconds"]) == 12
    assert d["seconds_beyond_terms"] == pytest.approx(d["median_seconds"] - k["factor"] * alone["median_seconds"]
                                                      - a["median_seconds"])
    # the report: the measured terms listed; with no tensors twin, the core-matched runs not predicted
    from tests.helpers.fakes import fake_results

    fake_results(workdir / "results")
    write_params(workdir / "params.yaml", tiny_params())
    assert report_in_process(workdir).returncode == 0
    md = (workdir / "reports" / "report.md").read_text()
    section = md.split("## The model, tested on this host")[1].split("## The blog explained")[0]
    assert "contention (kappa_2)" in section and "all-reduce (a_2)" in section and "dispatch (d_2" in section
    assert "| mirrored_custom | 2 replica(s) | test | cannot predict: no in-memory-tensors twin of the custom loop" \
           in section
