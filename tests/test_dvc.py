"""The DVC pipeline for real, in a temporary git repo on tiny settings: the stage deps match the
code, `dvc repro` then a no-op rerun, metrics and plots a DVC user can read, what a change reruns,
two named experiments (show, diff, apply), and push -> fresh clone -> pull."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from flowerbench.core import paths
from flowerbench.core.closure import closure
from flowerbench.core.config import TrainParams
from flowerbench.measuring.scheduler import SPAWNED
from tests.conftest import REPO, VENV_BIN, cli_env, copy_pipeline, dvc, dvc_status as status, git, write_params

PKG_DIR = REPO / "src" / "flowerbench"
# The commands a stage's command runs: `launch` starts worker processes, `terms` probe processes.
SPAWNS = {"launch": ["launch", "worker"], "terms": ["terms", "probe"], "rounds": list(SPAWNED),
          "secondary": list(SPAWNED)}
# Params every training stage reads (train.verbose only changes progress output).
TRAIN_PARAMS = ["seed", "data.image_size", "data.max_images", "data.pipeline", "data.cache", "model",
                *[f"train.{k}" for k in TrainParams.model_fields if k != "verbose"]]

def stages() -> dict:
    return yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]


def _body(stage: dict) -> dict:
    return stage.get("do", stage)


def _names(items) -> list[str]:
    return [next(iter(o)) if isinstance(o, dict) else o for o in items]


def test_dvc_yaml_outputs_match_paths_module():
    st = stages()
    assert st["host"]["outs"] == [{str(paths.HOST): {"cache": False}}] and st["host"]["always_changed"] is True
    # every stage that measures depends on the host description, and so does the report
    assert set(st) == {"host", "fetch", "rounds", "secondary", "terms", "report"}
    for name in ("rounds", "secondary", "terms", "report"):
        assert str(paths.HOST) in _body(st[name])["deps"], name
    assert str(paths.HOST) not in st["fetch"]["deps"]  # the data do not depend on the machine
    assert _names(st["fetch"]["outs"]) == [str(paths.FLOWERS), str(paths.QUARANTINE), str(paths.MANIFEST)]
    report = st["report"]
    assert _names(report["outs"]) == [str(paths.REPORT_MD), str(paths.REPORT_HTML), str(paths.FIGURES), str(paths.PLOTS)]
    assert _names(report["metrics"]) == [str(paths.METRICS)]
    # git-tracked, and kept between runs so that an interrupted one resumes (measuring/scheduler.py)
    assert st["rounds"]["outs"] == [{str(paths.ROUNDS): {"cache": False, "persist": True}}]
    assert st["secondary"]["outs"] == [{str(paths.SECONDARY): {"cache": False, "persist": True}}]
    assert st["secondary"]["deps"] == st["rounds"]["deps"]      # one runner, one closure (a YAML alias)
    assert st["terms"]["outs"] == [{str(paths.TERMS): {"cache": False}}]
    assert str(paths.RESULTS) in report["deps"]   # the rounds and the terms (where the pipeline has them)
    # small results are git-tracked (cache: false, not git-ignored); the report and figures are cached
    assert all(o[next(iter(o))] == {"cache": False} for o in report["outs"] + report["metrics"] if isinstance(o, dict))
    assert [o for o in report["outs"] if isinstance(o, str)] == [str(paths.REPORT_MD), str(paths.REPORT_HTML),
                                                               str(paths.FIGURES)]
    ignored = subprocess.run(["git", "check-ignore", "--no-index", "results/x.json", "reports/metrics.json",
                              "reports/plots/epochs.csv"], cwd=REPO, capture_output=True, text=True).stdout
    assert ignored == ""
    plots = yaml.safe_load((REPO / "dvc.yaml").read_text())["plots"]
    files = {f for p in plots for spec in p.values() for f in spec["y"]}
    assert files == {str(paths.EPOCHS_PLOT), str(paths.WARMUP_PLOT)}


def _code_deps(stage: dict) -> set[str]:
    """The stage's code deps as module files: a package folder stands for every module in it."""
    out = set()
    for d in (d for d in stage["deps"] if d.startswith("src/")):
        path = REPO / d
        out |= ({str(f.relative_to(REPO)) for f in path.glob("*.py")} if path.is_dir() else {d})
    return out


@pytest.mark.parametrize("name", sorted(stages()))
def test_stage_deps_are_the_code_its_command_runs(name):
    """Each stage lists exactly the flowerbench modules its command runs (commands/<name>.py,
    followed through every flowerbench import, with each package's __init__.py), plus
    requirements.lock.  A package it runs whole is one folder dep; one it runs in part, its files."""
    stage = _body(stages()[name])
    sub = stage["cmd"].split("python -m flowerbench.commands.")[1].split()[0]
    subs = SPAWNS.get(sub, [sub])
    if sub == "launch":
        assert '"-m", "flowerbench.commands.worker"' in (PKG_DIR / "training" / "multiworker.py").read_text()
    if sub == "terms":
        assert '"-m", "flowerbench.commands.probe"' in (PKG_DIR / "perfmodel" / "terms.py").read_text()
    if sub in ("rounds", "secondary"):
        text = (PKG_DIR / "measuring" / "scheduler.py").read_text()
        assert all(f'"-m", "flowerbench.commands.{c}"' in text for c in ("train", "launch"))
    want = {f"src/flowerbench/{m}" for m in closure(PKG_DIR, subs)}
    have = _code_deps(stage)
    assert want - have == set(), f"{name}: dvc.yaml misses {sorted(want - have)}"
    assert have - want == set(), f"{name}: dvc.yaml lists modules its command never runs: {sorted(have - want)}"
    # a package run whole is named as its folder, not file by file (the folders are the concerns)
    for pkg in {Path(m).parent for m in want if m.count("/") == 3 and "/commands/" not in m}:
        whole = {str(f.relative_to(REPO)) for f in (REPO / pkg).glob("*.py")} <= want
        assert (str(pkg) in stage["deps"]) == whole, (name, str(pkg))
    assert "requirements.lock" in stage["deps"]


def test_the_closure_follows_imports_and_stages_stand_on_shared_modules():
    """Each command stands alone: fetch does not depend on TensorFlow code, report not on training, and
    no stage on cli.py (the users' dispatcher) or on another stage's command."""
    assert "training/process.py" not in closure(PKG_DIR, ["fetch"])
    assert "report/__init__.py" not in closure(PKG_DIR, ["train"])
    assert {"commands/fetch.py", "core/__init__.py", "core/entry.py", "core/config.py", "data/__init__.py",
            "data/fetch.py", "data/standin.py"} <= closure(PKG_DIR, ["fetch"])
    for command in ("host", "fetch", "rounds", "secondary", "train", "report", "launch", "worker", "terms", "probe",
                    "ab"):
        mods = closure(PKG_DIR, [command])
        assert "cli.py" not in mods and "__main__.py" not in mods, command
        assert {m for m in mods if m.startswith("commands/")} == {"commands/__init__.py", f"commands/{command}.py"}
        # every package on the way is imported through its __init__.py
        assert all(str(Path(m).parent / "__init__.py") in mods for m in mods if "/" in m), command
    # Layering: stages stand on shared modules, never on each other.  The worker runs the shared
    # training path (training/trainer.py), not the `train` command's process; training does not import
    # the fetch stage.
    assert {"training/multiworker.py", "training/trainer.py", "training/devices.py"} <= closure(
        PKG_DIR, ["launch", "worker"])
    assert "training/process.py" not in closure(PKG_DIR, ["launch", "worker"])
    assert {"data/fetch.py", "data/standin.py", "training/multiworker.py"}.isdisjoint(closure(PKG_DIR, ["train"]))
    # the rounds run train and launch as processes, never in their own: no TensorFlow code in-process
    for stage in ("rounds", "secondary"):
        assert not any(m.startswith("training/") for m in closure(PKG_DIR, [stage]))
    # the report reads the rounds, it does not run them (it names the commands they run, to tell which
    # uncommitted files a result ran with: the same as the stage's own list)
    report = closure(PKG_DIR, ["report"])
    assert "analysis/rounds.py" in report and "measuring/scheduler.py" not in report
    assert not any(m.startswith(("training/", "data/")) for m in report)
    from flowerbench.report import MEASURED_COMMANDS

    assert sorted(MEASURED_COMMANDS) == sorted(SPAWNED)


def test_param_deps_are_narrow():
    st = stages()
    # the headline reads no sweep or multi-worker settings: those variants are the secondary stage's
    assert st["rounds"]["params"] == [{"params.yaml": TRAIN_PARAMS}, "variants", "rounds"]
    # the secondary stage: not the headline's round count, so adding headline rounds leaves it
    assert st["secondary"]["params"] == [{"params.yaml": TRAIN_PARAMS}, "variants", "sweep", "multiworker",
                                         "rounds.headline", "rounds.busy_share", "rounds.order_seed",
                                         "rounds.process_deadline_s", "secondary", "report.baseline"]
    assert st["terms"]["params"] == [{"params.yaml": TRAIN_PARAMS}]  # not the variants: editing one leaves it
    assert not any(p.startswith("train") for p in st["fetch"]["params"])


def test_training_params_are_named_once_and_aliased():
    """dvc.yaml lists the training params once (a YAML anchor in the rounds' meta) and the terms stage
    aliases it, so they can never disagree; DVC resolves the alias to the same keys."""
    text = (REPO / "dvc.yaml").read_text()
    training = text[text.index("\n  rounds:\n"):text.index("\n  report:\n")]  # fetch reads `seed` too
    for key in TRAIN_PARAMS:
        assert len([l for l in training.splitlines() if l.strip() == f"- {key}"]) == 1, key
    assert text.count("&training_params") == 1 and text.count("*training_params") == 3  # rounds, secondary, terms
    listed = dvc("stage", "list", cwd=REPO).stdout  # DVC itself parses the anchors
    assert "rounds" in listed and "terms" in listed


# --------------------------------------------------------------------------- a real pipeline


def test_repro_produces_every_result_and_the_report(pipeline_repo):
    """The headline four in the held rounds, every other variant beside its baselines in the
    secondary rounds, each folder with its schedule, run in the recorded order."""
    repo = pipeline_repo
    headline = ["single_fit", "mirrored_fit", "single_custom", "mirrored_custom"]
    secondary = ["single_fit", "single_custom", "sweep_r2_fit", "multiworker_custom"]
    for folder, variants, engine in (("rounds", headline, 2), ("secondary", secondary, 1)):
        names = sorted(p.stem for p in (repo / "results" / folder / "r01").glob("*.json"))
        assert names == sorted(variants), folder
        sched = json.loads((repo / "results" / folder / "schedule.json").read_text())
        assert sched["count"] == 1 and sched["variants"] == variants and sched["engine"] == engine
        assert sorted(sched["order"][0]) == sorted(variants)
        assert [p["variant"] for p in sched["processes"]] == sched["order"][0]   # run in the recorded order
        assert all(p["exit_code"] == 0 and p["wall_seconds"] > 0 and len(p["load_before"]) == 3
                   for p in sched["processes"])
        # held: each process warmed up, then ran its released epochs; sequential: none of that
        assert all(p["held"] == (engine == 2) and (p["ready_after_seconds"] is not None) == (engine == 2)
                   for p in sched["processes"]), folder
    assert not list((repo / "results").glob("*.json"))
    manifest = json.loads((repo / "data" / "manifest.json").read_text())
    assert manifest["synthetic"] is True and manifest["total"] == 3670
    r = json.loads((repo / "results" / "rounds" / "r01" / "mirrored_fit.json").read_text())
    assert r["replicas"] == 4 and r["device_kind"] == "logical_cpu" and r["git_commit"]
    # made from the committed code: the rewritten outputs of the run (data/host.json included) do not
    # make the tree dirty
    assert r["git_dirty"] is False and r["git_changed"] == []
    # the result carries the description of the machine that measured it, the host stage's output
    assert r["host"] == json.loads((repo / "data" / "host.json").read_text())
    assert r["host"]["usable_cores"] == len(os.sched_getaffinity(0)) and "hostname" not in r["host"]
    assert "data/host.json" in git("ls-files", "data", cwd=repo).split()
    figs = sorted(p.name for p in (repo / "reports" / "figures").glob("*.png"))
    assert figs == ["epoch_seconds.png", "heldout.png", "reduction.png", "scaling.png", "timed_seconds.png",
                    "vs_blog.png"]                       # heldout.png: the committed held-out validation
    html = (repo / "reports" / "report.html").read_text()
    assert html.count("data:image/png;base64,") == len(figs) and "SYNTHETIC DATA" in html
    # the 4-replica runs shared 2 cores: labelled; the 2-replica sweep point owned its cores
    assert "OVERSUBSCRIBED: mirrored_fit (4 replicas), mirrored_custom (4 replicas)" in html
    assert json.loads((repo / "results" / "secondary" / "r01" / "sweep_r2_fit.json").read_text())["budget_kind"] == (
        "core_matched" if len(os.sched_getaffinity(0)) >= 2 else "oversubscribed")
    # git tracks the small results, DVC's cache holds the rest
    tracked = git("ls-files", "results", "reports", "data", cwd=repo).split()
    assert {"results/rounds/r01/single_fit.json", "results/rounds/schedule.json", "results/secondary/schedule.json",
            "results/secondary/r01/multiworker_custom.json", "reports/metrics.json",
            "reports/plots/epochs.csv"} <= set(tracked)
    assert "reports/report.md" not in tracked and "data/manifest.json" not in tracked


def test_metrics_show_lists_the_headline_numbers_per_variant(pipeline_repo):
    data = json.loads(dvc("metrics", "show", "--json", cwd=pipeline_repo).stdout)
    metrics = next(iter(data.values()))["data"]["reports/metrics.json"]["data"]["variants"]
    assert metrics["single_fit"]["speedup_vs_baseline"] == 1.0
    owned = len(os.sched_getaffinity(0)) >= 2  # 2 replicas (or workers) x 1 core fit: core-matched
    for name in ("mirrored_fit", "sweep_r2_fit", "multiworker_custom"):
        assert set(metrics[name]) >= {"timed_seconds", "images_per_second", "speedup_vs_baseline",
                                      "reduction_vs_baseline_pct"}, name
        # an efficiency only where the replicas owned their cores: 4 replicas on 2 cores have none
        assert ("scaling_efficiency" in metrics[name]) == (owned and name != "mirrored_fit"), name
    table = dvc("metrics", "show", cwd=pipeline_repo).stdout
    assert "variants.mirrored_fit.speedup_vs_baseline" in table
    assert ("variants.sweep_r2_fit.scaling_efficiency" in table) == owned


def test_plots_draw_one_line_per_variant_warmup_apart(pipeline_repo):
    out = json.loads(dvc("plots", "show", "--json", cwd=pipeline_repo).stdout)["data"]
    seconds = out["Timed epoch seconds"][0]
    spec = json.dumps(seconds["content"])
    assert '"color": {"field": "variant"' in spec and '"strokeDash": {"field": "rev"' in spec
    rows = seconds["content"]["data"]["values"]
    assert {r["variant"] for r in rows} == {"single_fit", "mirrored_fit", "single_custom", "mirrored_custom",
                                            "sweep_r2_fit", "multiworker_custom"}
    single = json.loads((pipeline_repo / "results" / "rounds" / "r01" / "single_fit.json").read_text())
    got = [float(r["seconds"]) for r in rows if r["variant"] == "single_fit"]
    assert got == pytest.approx(single["epoch_seconds"], abs=1e-5)  # timed epochs only, no warm-up
    warm = out["Warm-up epoch seconds (includes tracing)"][0]["content"]["data"]["values"]
    assert float(next(r["seconds"] for r in warm if r["variant"] == "single_fit")) == \
        pytest.approx(single["warmup_seconds"], abs=1e-5)


def test_second_repro_is_a_no_op(pipeline_repo):
    """On the same host only the (cheap, always-changed) host stage runs; its output keeps its bytes,
    so the rounds and the report are skipped."""
    before = (pipeline_repo / "results" / "rounds" / "r01" / "single_fit.json").read_bytes()
    host = (pipeline_repo / "data" / "host.json").read_bytes()
    t0 = time.monotonic()
    proc = dvc("repro", cwd=pipeline_repo)
    print(f"no-op dvc repro: {time.monotonic() - t0:.1f} s")
    ran = [l.split("'")[1] for l in proc.stdout.splitlines() if l.startswith("Running stage")]
    assert ran == ["host"], proc.stdout
    assert "Stage 'rounds' didn't change, skipping" in proc.stdout
    assert (pipeline_repo / "results" / "rounds" / "r01" / "single_fit.json").read_bytes() == before
    assert (pipeline_repo / "data" / "host.json").read_bytes() == host
    assert git("status", "--porcelain", cwd=pipeline_repo) == ""


def test_another_core_count_reruns_the_rounds_and_the_report(pipeline_repo):
    """The host as a dependency: the host stage run under a one-core affinity mask (as under
    `taskset -c 0`) describes another machine, and DVC then finds the rounds and the report
    changed, through data/host.json alone (nothing is retrained here)."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("one core is all this host has: no other core count to move to")
    env = cli_env(DVC_NO_ANALYTICS="1", DVC_SITE_CACHE_DIR=str(pipeline_repo / ".dvc" / "tmp" / "site-cache"))
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env['PATH']}"
    try:
        proc = subprocess.run([str(VENV_BIN / "dvc"), "repro", "host"], cwd=pipeline_repo, capture_output=True,
                              text=True, timeout=120, env=env, preexec_fn=lambda: os.sched_setaffinity(0, cores[:1]))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert json.loads((pipeline_repo / "data" / "host.json").read_text())["usable_cores"] == 1
        assert_only_the_host_changed(status(pipeline_repo))
    finally:
        git("checkout", "--", "data/host.json", "dvc.lock", cwd=pipeline_repo)
    assert status(pipeline_repo) == {}


def assert_only_the_host_changed(changed: dict) -> None:
    """dvc status after the host stage described another machine: both measuring stages and the
    report are stale, through data/host.json alone."""
    assert set(changed) == {"rounds", "secondary", "report"}
    for name, entries in changed.items():
        deps = {k: v for e in entries if isinstance(e, dict) for k, v in e.get("changed deps", {}).items()}
        assert deps == {"data/host.json": "modified"}, (name, entries)


def _host_stage_on(pipeline_repo, cpuinfo: Path) -> dict:
    """The host stage run with /proc/cpuinfo read from `cpuinfo`; -> dvc status of the other stages."""
    env = cli_env(DVC_NO_ANALYTICS="1", DVC_SITE_CACHE_DIR=str(pipeline_repo / ".dvc" / "tmp" / "site-cache"),
                  FLOWERBENCH_CPUINFO=str(cpuinfo))
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env['PATH']}"
    proc = subprocess.run([str(VENV_BIN / "dvc"), "repro", "host"], cwd=pipeline_repo, capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return status(pipeline_repo)


def test_another_cpu_identity_measures_again_and_the_same_one_reuses(pipeline_repo, tmp_path):
    """The host identity (host schema 2) with a faked /proc/cpuinfo: this machine's, with another clock,
    bogomips and microcode, is the same identity (nothing reruns); the same text with another CPU
    family and model (a Zen 5 beside a Zen 4, both "AMD EPYC") reruns the rounds and the report."""
    import re

    real = Path("/proc/cpuinfo").read_text()
    if "cpu family" not in real:
        pytest.skip("no x86 /proc/cpuinfo here")
    same = re.sub(r"(?m)^(cpu MHz\s*:).*$", r"\1 1234.567", real)
    same = re.sub(r"(?m)^(bogomips\s*:).*$", r"\1 42.00", same)
    same = re.sub(r"(?m)^(microcode\s*:).*$", r"\1 0xdeadbeef", same)
    (tmp_path / "same").write_text(same)
    other = re.sub(r"(?m)^(cpu family\s*:).*$", r"\1 99", real)
    (tmp_path / "other").write_text(re.sub(r"(?m)^(model\s*:).*$", r"\1 7", other))
    before = (pipeline_repo / "data" / "host.json").read_bytes()
    try:
        assert _host_stage_on(pipeline_repo, tmp_path / "same") == {}
        assert (pipeline_repo / "data" / "host.json").read_bytes() == before
        changed = _host_stage_on(pipeline_repo, tmp_path / "other")
        assert json.loads((pipeline_repo / "data" / "host.json").read_text())["cpu"]["family"] == 99
        assert_only_the_host_changed(changed)
    finally:
        git("checkout", "--", "data/host.json", "dvc.lock", cwd=pipeline_repo)
    assert status(pipeline_repo) == {}


def test_editing_one_commands_code_reruns_only_its_stage(pipeline_repo):
    """Each stage's command line is its own module: an edit to train's reruns the stages that run it
    (rounds, secondary), not fetch or the report's inputs; an edit to any analysis-only module (one of
    each concern: the statistics, the metrics, the reader of the rounds, the model's judging, a report
    section) reruns the report alone, no measuring stage; an edit to the shared entry (core/entry.py)
    reruns every stage, as it should."""
    pkg = pipeline_repo / "src" / "flowerbench"
    analysis_only = ["analysis/stats.py", "analysis/metrics.py", "analysis/rounds.py", "perfmodel/judge.py",
                     "perfmodel/forms.py", "report/cells.py"]
    edits = [(pkg / "commands" / "train.py", {"rounds", "secondary"}),
             *((pkg / m, {"report"}) for m in analysis_only),
             (pkg / "core" / "entry.py", {"host", "fetch", "rounds", "secondary", "report"})]
    for path, want in edits:
        text = path.read_text()
        try:
            path.write_text(text + "\n# an edit\n")
            changed = status(pipeline_repo)
            assert set(changed) == want, (path.name, sorted(changed))
            rel = str(path.relative_to(pipeline_repo))
            for name, entries in changed.items():  # dvc status: [{"changed deps": {path: "modified"}}]
                deps = {k: v for e in entries if isinstance(e, dict) for k, v in e.get("changed deps", {}).items()}
                # the module, or its package's folder where the stage runs the package whole
                assert deps in ({rel: "modified"}, {str(Path(rel).parent): "modified"}), (name, entries)
        finally:
            path.write_text(text)
    assert status(pipeline_repo) == {}


def test_a_variant_or_the_round_count_reruns_the_rounds_and_a_report_param_only_the_report(pipeline_repo):
    """A variant is compared inside rounds: adding or editing one reruns both measuring stages (each then
    keeps every process its own fingerprint still covers, so only the stage that holds the variant
    measures); a round count reruns its own stage; a report param reruns the report alone."""
    params_file = pipeline_repo / "params.yaml"
    text = params_file.read_text()
    try:
        for edit, want in ((("variants", "quad_fit", {"loop": "fit", "replicas": 4, "pipeline": None}),
                            {"rounds", "secondary", "report"}),
                           (("rounds", "count", 3), {"rounds", "report"}),
                           (("secondary", "count", 3), {"secondary", "report"}),
                           (("report", "precision_target_pct", 5.0), {"report"})):
            p = yaml.safe_load(text)
            p[edit[0]][edit[1]] = edit[2]
            write_params(params_file, p)
            assert set(status(pipeline_repo)) == want, edit
    finally:
        params_file.write_text(text)
    assert status(pipeline_repo) == {}


@pytest.mark.slow
def test_named_experiments_are_kept_compared_and_restored(pipeline_built, tmp_path):
    """On a copy of its own, with two variants (single_fit and mirrored_custom; the other variants,
    the sweep point and the multi-worker job are dropped and committed first, which reruns the rounds).
    Experiment a changes the batch: it reruns the rounds and the report.  Experiment b changes only a
    report param: it measures nothing.  Both are listed, compared and restorable."""
    repo = copy_pipeline(pipeline_built, tmp_path / "exp")
    p = yaml.safe_load((repo / "params.yaml").read_text())
    p["variants"] = {k: v for k, v in p["variants"].items() if k in ("single_fit", "mirrored_custom")}
    p["sweep"]["replicas"] = []
    p["multiworker"]["workers"] = 0
    write_params(repo / "params.yaml", p)
    ran = dvc("repro", cwd=repo).stdout
    assert [l.split("'")[1] for l in ran.splitlines() if l.startswith("Running stage")] == [
        "host", "rounds", "secondary", "report"], ran
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "two variants", cwd=repo)
    assert status(repo) == {}
    run_a = dvc("exp", "run", "-n", "a", "-S", "train.batch_size_per_replica=8", cwd=repo)
    assert [l.split("'")[1] for l in run_a.stdout.splitlines() if l.startswith("Running stage")] == [
        "host", "rounds", "secondary", "report"], run_a.stdout
    report_a = (repo / "reports" / "report.html").read_text()
    run_b = dvc("exp", "run", "-n", "b", "-S", "train.batch_size_per_replica=8", "-S", "report.figure_dpi=60",
                cwd=repo)
    assert [l.split("'")[1] for l in run_b.stdout.splitlines() if l.startswith("Running stage")] == [
        "host", "report"], run_b.stdout
    assert (repo / "reports" / "report.html").read_text() != report_a  # the figures, at another dpi

    rows = json.loads(dvc("exp", "show", "--json", cwd=repo).stdout)
    exps = {e["name"]: e for row in rows for e in (row.get("experiments") or []) for e in e["revs"]}
    assert {"a", "b"} <= set(exps)
    for name, dpi in (("a", 110), ("b", 60)):
        data = exps[name]["data"]
        assert data["params"]["params.yaml"]["data"]["train"]["batch_size_per_replica"] == 8
        assert data["params"]["params.yaml"]["data"]["report"]["figure_dpi"] == dpi
        m = data["metrics"]["reports/metrics.json"]["data"]["variants"]["single_fit"]
        assert m["timed_seconds"] > 0 and m["images_per_second"] > 0, name

    diff = json.loads(dvc("exp", "diff", "a", "b", "--json", cwd=repo).stdout)
    assert diff["params"]["params.yaml"]["report.figure_dpi"] == {"old": 110, "new": 60, "diff": -50}
    base = json.loads(dvc("exp", "diff", "HEAD", "a", "--json", cwd=repo).stdout)
    assert base["params"]["params.yaml"]["train.batch_size_per_replica"] == {"old": 4, "new": 8, "diff": 4}
    assert "variants.single_fit.images_per_second" in base["metrics"]["reports/metrics.json"]

    dvc("exp", "apply", "a", cwd=repo)
    for name in ("single_fit", "mirrored_custom"):
        rec = json.loads((repo / "results" / "rounds" / "r01" / f"{name}.json").read_text())
        assert rec["batch_size_per_replica"] == 8, name
    assert (repo / "reports" / "report.html").read_text() == report_a  # a cached output, restored too
    assert yaml.safe_load((repo / "params.yaml").read_text())["train"]["batch_size_per_replica"] == 8
    # back to the committed baseline for the tests after this one
    git("checkout", "--", ".", cwd=repo)
    dvc("checkout", cwd=repo)
    assert status(repo) == {}


@pytest.mark.slow   # a remote and a clone of the pipeline repo: about 20 s
def test_push_then_a_fresh_clone_pulls_to_a_clean_status(pipeline_repo, tmp_path):
    """The Makefile's push / pull with a local DVC remote; the clone reruns nothing."""
    remote = tmp_path / "remote"

    def make(target: str, cwd: Path) -> subprocess.CompletedProcess:
        env = cli_env()
        env["DVC_NO_ANALYTICS"] = "1"
        proc = subprocess.run(["make", "--no-print-directory", "-f", str(REPO / "Makefile"), target,
                               f"VENV={VENV_BIN.parent}", f"DVC_REMOTE={remote}"], cwd=cwd, capture_output=True,
                              text=True, timeout=300, env=env)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
        return proc

    assert "DVC remote 'local'" in make("push", pipeline_repo).stdout
    assert any(remote.rglob("*")) and not (pipeline_repo / ".dvc" / "config.local").read_text() == ""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(pipeline_repo), str(clone)], check=True, capture_output=True)
    assert not (clone / "reports" / "report.html").exists() and not (clone / "data" / "flower_photos").exists()
    make("pull", clone)
    assert (clone / "reports" / "report.html").read_bytes() == (pipeline_repo / "reports" / "report.html").read_bytes()
    assert len(list((clone / "data" / "flower_photos").rglob("*.jpg"))) == 3670
    assert status(clone) == {}
    proc = dvc("repro", cwd=clone)  # the same host: only the host stage runs, and nothing changes
    assert [l.split("'")[1] for l in proc.stdout.splitlines() if l.startswith("Running stage")] == ["host"]
    assert git("status", "--porcelain", cwd=clone) == ""


# The analysis: what reads measurements back and judges them: the analysis and report packages, and
# the performance model but for what the terms stage runs (its probes and the terms file's schema).
# No measuring stage may run it, so an edit to it reruns the report alone (and the held-out
# predictions, frozen on the terms' sha256, survive it).
MEASURED_PERFMODEL = {"perfmodel/__init__.py", "perfmodel/terms.py", "perfmodel/probes.py", "perfmodel/termsfile.py"}


def _analysis(module: str) -> bool:
    return module.startswith(("analysis/", "report/")) or (
        module.startswith("perfmodel/") and module not in MEASURED_PERFMODEL)


@pytest.mark.parametrize("stage", ["rounds", "terms"])
def test_a_measuring_stage_imports_no_analysis(stage):
    from flowerbench.core.closure import PACKAGE_DIR

    runs = closure(PACKAGE_DIR, SPAWNS[stage])
    assert sorted(m for m in runs if _analysis(m)) == []
    # what it does run of the shared pieces: the schedule, the terms file's schema, Student's t
    assert ("measuring/schedule.py" in runs) == (stage == "rounds")
    assert ("perfmodel/termsfile.py" in runs) == (stage == "terms")
    deps = _code_deps(stages()[stage])
    assert not any(_analysis(d.removeprefix("src/flowerbench/")) for d in deps)
    assert not any(d.startswith(("src/flowerbench/analysis", "src/flowerbench/report")) for d in stages()[stage]["deps"])
