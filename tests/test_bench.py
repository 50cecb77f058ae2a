"""The benchmark's peer: benchmarks/blog_port.py must stay a faithful port that still trains."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, cli_env


def _blog_port_trains(workdir, model: str, epochs: int, learning_rate_bound: float, batch: int = 32) -> None:
    """Both loops of the port side by side (each its own process), on the stand-in (30 images,
    32 px): each prints its JSON line and its loss falls."""
    procs = {loop: subprocess.Popen(
        [sys.executable, str(REPO / "benchmarks" / "blog_port.py"), "--data", str(workdir / "data" / "flower_photos"),
         "--loop", loop, "--image-size", "32", "--batch-size", str(batch), "--epochs", str(epochs), "--model", model],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env()) for loop in ("fit", "custom")}
    for loop, proc in procs.items():
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
        line = json.loads(out.strip().splitlines()[-1])  # the last stdout line is the result
        assert line["loop"] == loop and line["replicas"] == 1
        losses = line["epoch_loss"]
        assert len(losses) == 1 + epochs and line["final_loss"] == losses[-1]  # warm-up + timed epochs
        assert line["timed_seconds"] > 0
        assert min(losses[1:]) < learning_rate_bound * losses[0], losses  # it learns: the loss falls


@pytest.mark.slow
def test_blog_port_still_trains_with_both_loops(workdir):
    """The port's code path, both loops, with a two-layer model in place of ResNet50 (seconds, not a
    minute): 15 epochs of 8 batches take the loss below half the warm-up's (0.12 for both loops here;
    the model, unpooled, fits the 30 images; the pooled one it replaced needed 120 epochs for 0.6)."""
    _blog_port_trains(workdir, "tiny", epochs=15, learning_rate_bound=0.5, batch=4)


@pytest.mark.slow
def test_blog_port_still_trains_resnet50_with_both_loops(workdir):
    """The real ResNet50 of the post: after the warm-up and 3 timed epochs Adam has fitted the one
    batch and the loss has fallen well below the warm-up's (most of the time is tracing)."""
    _blog_port_trains(workdir, "resnet50", epochs=3, learning_rate_bound=0.5)


def _bench_module():
    from benchmarks import run   # a package: no path edit, no loading by file name

    return run


def test_bench_workdir_holds_the_chosen_images_and_valid_params(workdir, tmp_path):
    """The bench's peers read one folder of exactly --images files; every params file it writes
    validates and differs from params.yaml only in the knob that file is for."""
    from flowerbench.core.config import load_params

    work = _bench_module().make_workdir(tmp_path / "bench", 20, 32, 8, 1, data_root=workdir)
    assert len([f for f in (work / "data" / "flower_photos").rglob("*") if f.is_file()]) == 20
    base = load_params(work / "params.yaml")
    assert (base.data.image_size, base.data.max_images, base.train.batch_size_per_replica, base.train.epochs) == \
        (32, None, 8, 1)
    assert [(v.name, v.replicas) for v in base.declared_variants()] == [("single_fit", 1), ("single_custom", 1),
                                                              ("r2_fit", 2), ("r4_fit", 4), ("rn_fit", "auto"),
                                                              ("rn_custom", "auto")]
    knobs = {"tensors": ("tensors", "per_replica", "epoch", False, 32),
             "tfdefault": ("files", "tf_default", "epoch", False, 32),
             "step": ("files", "per_replica", "step", False, 32),
             "steptimed": ("files", "per_replica", "step", True, 32),
             "px64": ("files", "per_replica", "epoch", False, 64)}
    for name, want in knobs.items():
        p = load_params(work / f"params-{name}.yaml")
        assert (p.data.pipeline, p.train.thread_policy, p.train.custom_graph, p.train.step_timing,
                p.data.image_size) == want, name
        assert [v.name for v in p.declared_variants()] == [v.name for v in base.declared_variants()]


def test_keep_outputs_copies_the_pipeline_outputs_and_replaces_old_ones(tmp_path):
    """--keep-reproduce: the clone's dvc.lock, results/ and report land in DIR; a result file left
    there by an earlier run does not survive beside the new ones."""
    bench = _bench_module()
    clone, dest = tmp_path / "clone", tmp_path / "kept"
    for rel in bench.KEPT:
        target = clone / rel
        if "." in Path(rel).name:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(f"new {rel}\n")
        else:
            (target / "a.json").parent.mkdir(parents=True, exist_ok=True)
            (target / "a.json").write_text(f"new {rel}\n")
    (dest / "results").mkdir(parents=True)
    (dest / "results" / "stale.json").write_text("old\n")
    bench.keep_outputs(clone, dest)
    assert sorted(p.name for p in dest.iterdir()) == sorted(Path(r).name for r in bench.KEPT)
    assert (dest / "dvc.lock").read_text() == "new dvc.lock\n"
    assert (dest / "report.md").read_text() == "new reports/report.md\n"
    assert [p.name for p in (dest / "results").iterdir()] == ["a.json"]
    assert (dest / "figures" / "a.json").read_text() == "new reports/figures\n"


def test_bench_main_summarises_and_writes_json_and_table(tmp_path, monkeypatch, capsys):
    """main() end to end on recorded run values (the runs themselves are real ResNet50 processes,
    minutes each, so they are replaced here; the summary, the ratios and the writing are what is
    tested): medians per peer, every ratio row with its target, the table, a JSON that holds."""
    bench = _bench_module()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "manifest.json").write_text("{}")
    monkeypatch.setattr(bench, "REPO", tmp_path)
    monkeypatch.setattr(bench, "make_workdir", lambda *a, **k: tmp_path)
    monkeypatch.setattr(bench, "auto_replicas", lambda: 2)
    from flowerbench.training.placement import CoreBudget

    monkeypatch.setattr(bench, "same_budget", lambda n: CoreBudget("core_matched", 1, n, list(range(n)), 2, 1, n))
    seconds = {"blog_fit_1": [10.0, 12.0, 11.0], "blog_custom_1": [30.0, 31.0, 29.0],
               "blog_fit_2": [8.0, 8.0, 8.0], "blog_custom_2": [20.0, 22.0, 21.0]}
    budget = {"budget_kind": "core_matched", "budget_affinity": [0, 1], "intra_op_threads": 1, "inter_op_threads": 2}

    def blog(work, loop, replicas, *rest):
        s = seconds[f"blog_{loop}_{replicas}"].pop(0)
        return {"timed_seconds": s, "call_seconds": s, "wall_seconds": s + 40, "rss_mib": 1600, "final_loss": 1.0,
                "images_per_second": 384 / s, "budget": budget}

    def ours(work, variant, params="params.yaml"):
        base = {"single_fit": 6.0, "single_custom": 31.0, "r2_fit": 8.0, "r4_fit": 10.0, "rn_fit": 4.0,
                "rn_custom": 15.5}[variant]
        if params == "params-step.yaml":
            base = 7.0
        if params == "params-tensors.yaml":
            base = 5.0
        if params == "params-px64.yaml":
            base = 19.2  # 384 / 19.2 = 20 img/s
        return {"timed_seconds": base, "call_seconds": base + 0.5, "wall_seconds": base + 50.0,
                "stage_seconds": base + 49.0, "warmup_seconds": 30.0, "images_per_second": 384 / base,
                "call_images_per_second": 384 / (base + 0.5),
                "harness_ratio": 1.01 if "steptimed" in params else None, "rss_mib": 1500, "budget": budget}

    monkeypatch.setattr(bench, "blog", blog)
    monkeypatch.setattr(bench, "ours", ours)
    monkeypatch.setattr(bench, "machine_ceiling", lambda work, cores: {"matmul_gflops": 200.0, "conv3x3_gflops": 246.0,
                                                                       "budget": cores.as_dict()})
    monkeypatch.setattr(sys, "argv", ["run.py", "--no-reproduce", "--keep-reproduce", str(tmp_path / "k")])
    assert bench.main() == 0
    out = json.loads((tmp_path / "reports" / "bench.json").read_text())
    assert out["settings"]["keep_reproduce"] == str(tmp_path / "k") and out["settings"]["rounds"] == 3
    rows = {r["measure"]: r for r in out["ratios"]}
    # paired inside each round: the geometric mean of ours / blog's, with its interval over the rounds
    geo = (10.0 * 12.0 * 11.0) ** (1 / 3)
    fit = rows["ours/blog seconds, fit"]
    assert fit["value"] == pytest.approx(6.5 / geo) and fit["low"] < fit["value"] < fit["high"] <= 0.9 and fit["meets"]
    custom = rows["ours/blog seconds, custom loop (custom_graph=epoch, as the blog)"]
    assert custom["value"] == pytest.approx(31.5 / 30.0, rel=1e-3) and custom["low"] < 1.0 < custom["high"]
    assert not custom["meets"]   # "at least as fast" only where the whole interval says so
    assert rows["real/tensors epoch time (input ceiling)"]["value"] == pytest.approx(6.0 / 5.0)
    assert not rows["real/tensors epoch time (input ceiling)"]["meets"]
    assert rows["harness: timed / sum of step seconds, fit"]["value"] == 1.01
    # the same budgets: ours at 2 replicas (4.5 s a call) against the blog's code pinned alike (8 s)
    assert rows["ours/blog seconds at 2 replicas (same cores and threads), fit"]["value"] == pytest.approx(4.5 / 8.0)
    assert rows["ours/blog seconds at 2 replicas (same cores and threads), fit"]["target"] == 1.0
    peers = {(r["loop"], r["code"]): r for r in out["same_budget"]}
    assert peers["fit", "ours"]["efficiency"] == pytest.approx((384 / 4.5) / (384 / 6.5) / 2)
    md_peers = (tmp_path / "reports" / "bench.md").read_text()
    assert "| loop | code | 1 x c img/s | 2 x c img/s |" in md_peers and "1 x c and 2 x c cores" in md_peers
    assert peers["fit", "blog"]["efficiency"] == pytest.approx(geo / 8.0 / 2)
    # the custom loop's one-replica baseline is the whole-epoch graph: labelled wherever its efficiency is
    assert peers["custom", "blog"]["pathological_baseline"] and not peers["fit", "blog"]["pathological_baseline"]
    assert "(PATHOLOGICAL BASELINE: the whole-epoch graph on one replica)" in md_peers
    assert peers["custom", "blog"]["img_s_n"]["median"] == pytest.approx(384 / 21.0)
    lo, hi = peers["custom", "blog"]["efficiency_low"], peers["custom", "blog"]["efficiency_high"]
    assert lo < peers["custom", "blog"]["efficiency"] < hi  # an interval from the three rounds
    # three identical rounds of ours: an interval of zero width
    assert peers["fit", "ours"]["efficiency_low"] == pytest.approx(peers["fit", "ours"]["efficiency"])
    assert "no-op dvc repro seconds" not in rows  # not a DVC repo here: skipped, not invented
    assert out["fixed_cost_seconds_per_stage"] == 20.0
    assert out["scaling_images_per_second"]["4"] == {"per_replica": 38.4, "tf_default": 38.4}
    md = (tmp_path / "reports" / "bench.md").read_text()
    assert f"| ours/blog seconds, fit | {6.5 / geo:.3f} [{fit['low']:.3f}, {fit['high']:.3f}] | <= 0.9 | yes |" in md
    assert "| real/tensors epoch time (input ceiling) | 1.200 [1.200, 1.200] | <= 1.05 | NO |" in md
    assert "so no speed-up is possible;" not in md and "more replicas than cores share them" in md
    assert out["machine_ceiling"]["budget"]["budget_cores"] == 1   # the single-replica runs' budget
    assert "| blog_fit | 11.00 [10.00, 12.00] |" in md
    # 246 GFLOP/s over 24.6 GFLOP x (px/224)^2 per image: 490 img/s at 32 px, 122.5 at 64 px
    assert out["closeness"]["32"]["ceiling_images_per_second"] == pytest.approx(246 / (24.6 * (32 / 224) ** 2))
    assert out["closeness"]["32"]["fraction_of_ceiling"] == pytest.approx(64.0 / 490.0)
    assert out["closeness"]["64"]["fraction_of_ceiling"] == pytest.approx(20.0 / 122.5)
    assert "| 64 px | 20.0 | 122 | 0.16 |" in md
    assert md in capsys.readouterr().out
    # measure, analyse and render are apart: the table is rendered again from bench.json alone
    again = bench.render_md(json.loads((tmp_path / "reports" / "bench.json").read_text()))
    assert [l for l in again.splitlines() if l not in md.splitlines()] == []
    assert again == md


def test_machine_ceiling_measures_real_kernels():
    """benchmarks/ceiling.py runs real TensorFlow kernels (small shapes here) and prints positive
    GFLOP/s for both; the ResNet50 ceiling scales with pixel area."""
    from benchmarks.ceiling import images_per_second_ceiling

    proc = subprocess.run([sys.executable, str(Path(__file__).resolve().parents[1] / "benchmarks" / "ceiling.py"),
                           "--seconds", "0.2", "--small"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["matmul_gflops"] > 0.1 and out["conv3x3_gflops"] > 0.1 and out["onednn"] == "1"
    assert images_per_second_ceiling(24.6, 224) == pytest.approx(1.0)
    assert images_per_second_ceiling(246.0, 32) == pytest.approx(10 * 49)


def test_the_ceiling_is_measured_on_the_budget_of_the_run_it_is_compared_with(tmp_path):
    """machine_ceiling pins benchmarks/ceiling.py to the budget it is given (one core here, as a
    single-replica run has), and TensorFlow sizes its pool from that mask: never the whole host."""
    import os

    bench = _bench_module()
    from flowerbench.training.placement import CoreBudget

    core = sorted(os.sched_getaffinity(0))[-1]
    one = CoreBudget("core_matched", 1, 1, [core], len(os.sched_getaffinity(0)), 1, 1)
    out = bench.machine_ceiling(tmp_path, one, small=True)
    assert out["cpus_allowed"] == [core] and out["thread_env"]["TF_NUM_INTRAOP_THREADS"] == "1"
    assert out["budget"]["budget_affinity"] == [core] and out["matmul_gflops"] > 0.1


def test_window_workdir_params_are_valid_and_cover_every_replica_count(workdir, tmp_path):
    """benchmarks/window.py's variants: fit and custom at each replica count, in valid params whose
    custom loop is the one `make reproduce` runs."""
    from flowerbench.core.config import load_params

    from benchmarks import window

    work = _bench_module().make_workdir(tmp_path / "w", 20, 32, 8, 1, data_root=workdir)
    names = window.add_variants(work, [1, 2, 4])
    p = load_params(work / "params.yaml")
    assert names == ["r1_fit", "r2_fit", "r4_fit", "r1_custom", "r2_custom", "r4_custom"]
    assert [(v.loop, v.replicas) for v in p.declared_variants()] == [(l, n) for l in ("fit", "custom") for n in (1, 2, 4)]
    assert p.train.custom_graph == load_params(REPO / "params.yaml").train.custom_graph


@pytest.mark.slow
def test_blog_port_quiet_autotune_diagnostic_turns_autotune_off_and_still_trains(workdir):
    """--quiet-autotune (a diagnostic, never the blog's code): the custom loop at 2 logical replicas
    runs with tf.data autotuning off on its input (its line reads the dataset's options; the
    per-replica datasets' are tested in test_train) and still learns; without the flag it autotunes."""
    base = [sys.executable, str(REPO / "benchmarks" / "blog_port.py"), "--data", str(workdir / "data" / "flower_photos"),
            "--loop", "custom", "--replicas", "2", "--image-size", "32", "--batch-size", "2", "--epochs", "15",
            "--model", "tiny"]
    lines = {}
    for quiet in (True, False):
        proc = subprocess.run(base + (["--quiet-autotune"] if quiet else []), capture_output=True, text=True,
                              env=cli_env(), timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]
        lines[quiet] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert lines[True]["quiet_autotune"] and not lines[True]["autotune_enabled"]
    assert not lines[False]["quiet_autotune"] and lines[False]["autotune_enabled"]
    for line in lines.values():
        losses = line["epoch_loss"]
        assert line["replicas"] == 2 and len(losses) == 16
        assert min(losses[1:]) < 0.5 * losses[0], losses


def test_the_interleave_schedule_is_balanced():
    """Every pair releases each arm 4k times, 2k back to back and 2k interleaved; which design comes
    first and which arm leads alternate over the pairs; in an interleaved phase no arm runs twice in a row."""
    from benchmarks.interleave import schedule

    for pair in range(4):
        order = schedule(pair, 3)
        for arm in "AB":
            mine = [d for a, d in order if a == arm]
            assert mine.count("b2b") == mine.count("il") == 6
        il = [a for a, d in order if d == "il"]
        assert all(x != y for x, y in zip(il[:3], il[1:4]))
    assert schedule(0, 3)[0] == ("A", "b2b") and schedule(1, 3)[0] == ("B", "b2b")
    assert schedule(2, 3)[0] == ("A", "il") and schedule(3, 3)[0] == ("B", "il")


def test_held_processes_run_their_epochs_one_release_at_a_time(workdir):
    """benchmarks.interleave end to end on the tiny model: two pairs of real held processes (1 and
    2 replicas), every epoch released one at a time, each arm 4 x k epochs in the designed order, the
    equivalence test's verdict over the pairs, the JSON and the table."""
    proc = subprocess.run([sys.executable, "-m", "benchmarks.interleave", "--pairs", "2", "--k", "2",
                           "--out", "il.json"], cwd=workdir, capture_output=True, text=True, timeout=240,
                          env={**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads((workdir / "il.json").read_text())
    assert out["settings"]["pairs"] == 2 and len(out["pairs"]) == 2 and out["analysis"]["pairs"] == 2
    for p in out["pairs"]:
        for arm in "AB":
            designs = [e["design"] for e in p["epochs"][arm]]
            assert designs.count("b2b") == designs.count("il") == 4
            assert [e["epoch"] for e in p["epochs"][arm]] == list(range(1, 9))   # epoch 0: the warm-up
            assert all(e["seconds"] > 0 and e["cpu_seconds"] > 0 for e in p["epochs"][arm])
    assert out["tost"]["verdict"] in ("equivalent", "different", "undetermined") and out["tost"]["band_pct"] == 5.0
    md = (workdir / "il.md").read_text()
    assert "B/A back to back" in md and f": {out['tost']['verdict']}**" in md
    # --more: one pair added to those two, the alternation continued, the analysis over all three
    more = subprocess.run([sys.executable, "-m", "benchmarks.interleave", "--pairs", "1", "--k", "2", "--more",
                           "il.json", "--out", "il.json"], cwd=workdir, capture_output=True, text=True, timeout=240,
                          env={**os.environ, "PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "3"})
    assert more.returncode == 0, more.stderr[-2000:]
    out = json.loads((workdir / "il.json").read_text())
    assert [p["pair"] for p in out["pairs"]] == [0, 1, 2] and out["analysis"]["pairs"] == 3 and len(out["runs"]) == 2
    refused = subprocess.run([sys.executable, "-m", "benchmarks.interleave", "--pairs", "1", "--k", "3", "--more",
                              "il.json", "--out", "x.json"], cwd=workdir, capture_output=True, text=True, timeout=60,
                             env={**os.environ, "PYTHONPATH": str(REPO)})
    assert refused.returncode != 0 and "k = 2, not 3" in refused.stderr
