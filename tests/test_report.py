"""Report stage from hand-made results with known numbers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import REPO, report_in_process, run_cli, tiny_params, tree_snapshot, write_params
from tests.helpers.fakes import (DRIFT, KNOWN, TEST_HOST, add_result, fake_result, fake_results, fake_terms,  # noqa: F401
                                 per_round, read_rounds, write_rounds)

# the fake rounds' drift, which every variant shares: times read as x its geometric mean
G = (DRIFT[0] * DRIFT[1] * DRIFT[2]) ** (1 / 3)

def _report(workdir: Path, in_process: bool = True):
    proc = report_in_process(workdir) if in_process else run_cli("report", cwd=workdir, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((workdir / "reports" / "metrics.json").read_text())

HOST_LABEL = "TestVendor family 1 model 2 stepping 3, AVX2, L2 1 MiB, L3 32 MiB, 24 GiB"  # fakes.TEST_HOST


def test_metrics_have_exact_speedups_reductions_efficiencies(workdir):
    fake_results(workdir / "results")
    m = _report(workdir)["variants"]
    assert m["single_fit"]["speedup_vs_baseline"] == 1.0 and m["single_fit"]["reduction_vs_baseline_pct"] == 0.0
    assert m["mirrored_fit"]["speedup_vs_baseline"] == pytest.approx(100 / 60, abs=1e-6)
    assert m["mirrored_fit"]["reduction_vs_baseline_pct"] == pytest.approx(40.0, abs=1e-6)
    assert m["mirrored_fit"]["scaling_efficiency"] == pytest.approx(100 / 60 / 2, abs=1e-6)
    assert m["mirrored_custom"]["reduction_vs_baseline_pct"] == pytest.approx(50.0, abs=1e-6)
    assert m["mirrored_custom"]["speedup_vs_single"] == pytest.approx(1.6, abs=1e-6)
    assert m["mirrored_custom"]["reduction_vs_single_same_loop_pct"] == pytest.approx(37.5, abs=1e-6)
    assert m["mirrored_custom"]["scaling_efficiency"] == pytest.approx(0.8, abs=1e-6)
    assert m["multiworker_custom"]["scaling_efficiency"] == pytest.approx(80 / 70 / 2, abs=1e-6)
    assert m["mirrored_fit"]["images_per_second"] == pytest.approx(3670 * 4 / (60 * G), abs=1e-5)
    assert m["mirrored_fit"]["timed_seconds"] == pytest.approx(60 * G, abs=1e-5) and m["mirrored_fit"]["rounds"] == 3
    # a drift every variant shares cancels in the paired ratios: a zero-width interval, and "faster"
    assert m["mirrored_fit"]["speedup_vs_baseline_ci_low"] == pytest.approx(100 / 60, abs=1e-6)
    assert m["mirrored_fit"]["speedup_vs_baseline_verdict_code"] == 1


def test_blog_audit_rederives_62_3_and_67_6(workdir):
    fake_results(workdir / "results")
    audit = _report(workdir)["blog_audit"]
    assert audit["mirrored_fit"]["derived_reduction_pct"] == 62.3
    assert audit["mirrored_custom"]["derived_reduction_pct"] == 67.6
    assert audit["mirrored_fit"]["claimed_reduction_pct"] == 61.0
    assert audit["mirrored_custom"]["claimed_reduction_pct"] == 67.9
    # the blog's own derived figures: 36,700 images / s; speedup; efficiency over 4 GPUs
    assert audit["single_fit"]["images_per_second"] == pytest.approx(36700 / 110.58)
    assert round(audit["mirrored_fit"]["speedup"], 2) == 2.65 and round(audit["mirrored_custom"]["speedup"], 2) == 3.08
    assert round(audit["mirrored_fit"]["efficiency"], 2) == 0.66 and round(audit["mirrored_custom"]["efficiency"], 2) == 0.77
    md = (workdir / "reports" / "report.md").read_text()
    assert "| single_fit | 1 | 110.58 | 332 | 1.00x | 1.00 | n/a | 0.0% | n/a | baseline |" in md
    assert "| mirrored_fit | 4 | 41.66 | 881 | 2.65x | 0.66 | 61.0% | 62.3% | -1.3 pp | 40.0% less time (faster) |" in md
    assert "| mirrored_custom | 4 | 35.88 | 1023 | 3.08x | 0.77 | 67.9% | 67.6% | +0.3 pp | 50.0% less time (faster) |" in md
    assert "| image size | 224 px | 224 px |" in md
    assert "| warm-up + timed epochs | 1 + 10 | 1 + 4 (x 1 repeat(s) per process, 3 round(s)) |" in md


def test_banner_for_core_matched_synthetic_runs_and_the_answer_first(workdir):
    """Replicas on cores of their own: a CORE-MATCHED banner (not emulation), then the answer, one
    sentence with the measured speed-ups, and the speed-up figure, before the tables."""
    fake_results(workdir / "results", kind="logical_cpu", synthetic=True)
    _report(workdir)
    md = (workdir / "reports" / "report.md").read_text()
    head = md.split("## Headline")[0]
    assert "CORE-MATCHED CPU RUN: in mirrored_fit, mirrored_custom, multiworker_custom every replica had its own " \
           "1 CPU core(s)" in head and "not a GPU result" in head
    assert "EMULATION" not in head and "OVERSUBSCRIBED" not in head
    assert "SYNTHETIC DATA" in head and "CPU RUN: no GPU was used; these are not GPU results." in head
    # on the blog's basis (against single_fit), each with its interval and the rule's word
    assert ("data-parallel training was faster than one replica's share running single_fit:** mirrored_fit "
            "(2 replicas) 1.67x [1.67-1.67]: faster; mirrored_custom (2 replicas) 2.00x [2.00-2.00]: faster; "
            "multiworker_custom (2 workers) 1.43x [1.43-1.43]: faster (speed-up against single_fit, the blog's "
            "basis: paired ratios in 3 sequential round(s), every variant once per round, 95 % interval)") in head
    assert "The blog's 4 x V100 (its single-GPU fit() as the basis)" not in head  # (the blog's is named once)
    assert head.index("was faster than one replica") < head.index("![") < len(head)  # the figure, before the tables
    assert "(figures/scaling.png)" in head and md.count("(figures/scaling.png)") == 1


def test_oversubscribed_runs_are_labelled_and_kept_out_of_efficiency(workdir):
    """Replicas that shared cores: an OVERSUBSCRIBED banner naming them, no efficiency (metrics and
    figure), their speed-up vs 1 replica still shown in the table as measured."""
    fake_results(workdir / "results")
    for name in ("mirrored_fit", "mirrored_custom"):
        loop, replicas, secs = KNOWN[name]
        add_result(workdir / "results", fake_result(name, loop, 4, secs * 2, "logical_cpu", True, budget="oversubscribed"))
    m = _report(workdir)["variants"]
    md = (workdir / "reports" / "report.md").read_text()
    assert "OVERSUBSCRIBED: mirrored_fit (4 replicas), mirrored_custom (4 replicas) shared 2 CPU core(s)" in md
    for name in ("mirrored_fit", "mirrored_custom"):
        assert "scaling_efficiency" not in m[name] and m[name]["budget_cores"] == 2  # metrics.json: numbers only
        assert m[name]["speedup_vs_single"] < 1 and m[name]["speedup_vs_single_verdict_code"] == -1
    assert m["multiworker_custom"]["scaling_efficiency"] == pytest.approx(80 / 70 / 2, abs=1e-6)
    answer = md.split("## Headline")[0].split("**On this host")[1].split("Labels: ")[0]
    assert "mirrored_fit (4" not in answer                  # the answer leaves the oversubscribed runs out


def test_efficiency_uses_the_same_budget_baseline_never_the_threads_run(workdir):
    """A 1-replica run on both cores (threads) listed before single_fit: the mirrored runs' efficiency
    stays against single_fit (one replica's share), and the threads run is compared with it too."""
    write_params(workdir / "params.yaml", tiny_params(**{"variants": {
        "single_fit_threads": {"loop": "fit", "replicas": 1, "cores": 2},
        "single_fit": {"loop": "fit", "replicas": 1}, "mirrored_fit": {"loop": "fit", "replicas": 2},
        "single_custom": {"loop": "custom", "replicas": 1}, "mirrored_custom": {"loop": "custom", "replicas": 2}}}))
    fake_results(workdir / "results")
    add_result(workdir / "results",
               fake_result("single_fit_threads", "fit", 1, 55.0, "logical_cpu", True, budget="threads", cores=2))
    m = _report(workdir)["variants"]
    # against single_fit's 100 s, not the threads run's 55 s
    assert m["mirrored_fit"]["speedup_vs_single"] == pytest.approx(100 / 60, abs=1e-6)
    assert m["mirrored_fit"]["scaling_efficiency"] == pytest.approx(100 / 60 / 2, abs=1e-6)
    assert m["single_fit_threads"]["scaling_efficiency"] == pytest.approx(100 / 55 / 2, abs=1e-6)
    md = (workdir / "reports" / "report.md").read_text()
    assert ("On the same 2 cores, mirrored_fit (2 replicas) against single_fit_threads (1 replica, intra-op "
            "threads): 0.92x [0.92-0.92]: threads were faster.") in md


def test_no_banner_for_gpu_real_runs(workdir):
    fake_results(workdir / "results", kind="gpu", synthetic=False)
    _report(workdir)
    md = (workdir / "reports" / "report.md").read_text()
    assert "EMULATION" not in md and "SYNTHETIC DATA" not in md and "CPU RUN" not in md
    assert "CORE-MATCHED" not in md and "OVERSUBSCRIBED" not in md
    assert "TEST-GPU" in md and "On this host (TEST-GPU GPUs)" in md


def test_html_is_self_contained_and_embeds_every_figure(workdir):
    from PIL import Image

    fake_results(workdir / "results")
    _report(workdir)
    html = (workdir / "reports" / "report.html").read_text()
    # No reference to anything on the network: no src/href/url() pointing at http(s).
    assert not re.search(r"""(src|href)\s*=\s*['"]?\s*(https?:)?//""", html, re.I)
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", html, re.I)
    assert "<script" not in html.lower() and "<link" not in html.lower()
    figs = sorted(p.name for p in (workdir / "reports" / "figures").glob("*.png"))
    assert figs == ["epoch_seconds.png", "reduction.png", "scaling.png", "timed_seconds.png", "vs_blog.png"]
    assert len(re.findall(r"""src=["']data:image/png;base64,""", html)) == len(figs)
    for f in figs:
        path = workdir / "reports" / "figures" / f
        assert path.stat().st_size > 10_000
        with Image.open(path) as im:
            im.load()
            assert im.size[0] > 300 and im.size[1] > 200
            assert len(im.convert("L").getcolors(maxcolors=1 << 16) or ()) > 20  # not blank


def test_scaling_plot_appears_with_more_than_two_replica_counts(workdir):
    write_params(workdir / "params.yaml", tiny_params(**{"sweep": {"replicas": [4], "loops": ["custom"]}}))
    fake_results(workdir / "results")
    add_result(workdir / "results", fake_result("sweep_r4_custom", "custom", 4, 45.0, "logical_cpu", True))
    m = _report(workdir)["variants"]
    assert (workdir / "reports" / "figures" / "scaling.png").stat().st_size > 10_000
    assert m["sweep_r4_custom"]["scaling_efficiency"] == pytest.approx(80 / 45 / 4, abs=1e-6)


def test_plots_data_has_one_series_per_variant_and_the_warmup_apart(workdir):
    import pandas as pd

    fake_results(workdir / "results")
    _report(workdir)
    epochs = pd.read_csv(workdir / "reports" / "plots" / "epochs.csv")
    assert list(epochs.columns) == ["variant", "timed_epoch", "repeat", "epoch", "seconds", "loss", "images_per_second"]
    assert len(epochs) == len(KNOWN) * 4 * 3  # the 4 timed epochs of each variant in each of 3 rounds, no warm-up
    for name, g in epochs.groupby("variant"):
        assert list(g.timed_epoch) == list(range(1, 13)) and list(g.loss) == [1.6, 1.2, 0.9, 0.5] * 3, name
    assert epochs[epochs.variant == "mirrored_fit"].seconds.sum() == pytest.approx(60.0 * sum(DRIFT), abs=1e-4)
    warm = pd.read_csv(workdir / "reports" / "plots" / "warmup.csv")
    assert list(warm.columns) == ["variant", "seconds"] and sorted(warm.variant) == sorted(KNOWN)
    assert (warm.seconds == 30.0).all()


def test_metrics_json_holds_numbers_only(workdir):
    """`dvc metrics show` silently drops lists (and strings crowd its table): none anywhere."""
    fake_results(workdir / "results")
    m = _report(workdir)

    def leaves(node, key=""):
        if isinstance(node, dict):
            for k, v in node.items():
                yield from leaves(v, f"{key}.{k}" if key else k)
        else:
            yield key, node

    bad = [(k, v) for k, v in leaves(m) if isinstance(v, (bool, str, list)) or not isinstance(v, (int, float))]
    assert not bad
    assert set(m["variants"]["mirrored_fit"]) >= {"timed_seconds", "images_per_second", "speedup_vs_baseline",
                                                 "reduction_vs_baseline_pct", "scaling_efficiency", "replicas"}
    assert m["warnings"] == 0


def test_generated_text_follows_the_numbers(workdir):
    fake_results(workdir / "results")
    _report(workdir)
    md = (workdir / "reports" / "report.md").read_text()
    shows = md.split("## What this shows")[1].split("##")[0]
    assert ("Faster than single_fit (100.29 s) by the rule: mirrored_fit 1.67x [1.67-1.67], single_custom 1.25x "
            "[1.25-1.25], mirrored_custom 2.00x [2.00-2.00], multiworker_custom 1.43x [1.43-1.43]; the largest, "
            "mirrored_custom, took 50.0% less time.") in shows
    assert "On one replica the custom loop against fit(): 1.25x [1.25-1.25]: custom was faster." in shows
    assert "spread between processes at an sd of 0.0 %" in shows   # the fake drift is the same for every epoch


def _chromium():
    import shutil
    return next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


def test_report_renders_offline_in_headless_chromium(workdir):
    """The HTML report in a real browser with every network path closed: not blank, figures drawn.
    Skipped where no Chromium is installed, except under CI (.ci/run installs it), where that fails."""
    import os
    import subprocess
    from PIL import Image

    if _chromium() is None:
        if os.environ.get("CI"):
            pytest.fail("CI is set but no Chromium is installed (.ci/run installs Debian's chromium)")
        pytest.skip("no Chromium installed (apt-get install chromium)")

    fake_results(workdir / "results")
    _report(workdir)
    shot = workdir / "shot.png"
    # Networking off: every host resolves to nothing and every request goes to a dead proxy.
    subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--proxy-server=127.0.0.1:9",
                    "--host-resolver-rules=MAP * ~NOTFOUND", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={workdir / 'chrome'}",
                    "--window-size=1400,12000", f"--screenshot={shot}",
                    (workdir / "reports" / "report.html").as_uri()], check=True, capture_output=True, timeout=120)
    with Image.open(shot) as im:
        colours = im.convert("RGB").getcolors(maxcolors=1 << 20) or []
    assert len(colours) > 500  # text, tables and the embedded figures, not a blank page


def test_input_ceiling_sets_real_and_tensors_side_by_side(workdir):
    """A `pipeline: tensors` twin of single_fit: its own row, the ratio, and it never 'wins'."""
    p = tiny_params()
    p["variants"]["single_fit_tensors"] = {"loop": "fit", "replicas": 1, "pipeline": "tensors"}
    write_params(workdir / "params.yaml", p)
    fake_results(workdir / "results")
    twin = fake_result("single_fit_tensors", "fit", 1, 40.0, "logical_cpu", True)
    twin["pipeline"] = "tensors"
    add_result(workdir / "results", twin)
    m = _report(workdir)
    assert list(m["input_ceiling"]) == ["single_fit_tensors"]
    assert m["input_ceiling"]["single_fit_tensors"]["real_over_tensors"] == pytest.approx(100 / 40)
    # its speedup is against itself (its own single-replica run of the same loop and input)
    assert m["variants"]["single_fit_tensors"]["speedup_vs_single"] == 1.0
    md = (workdir / "reports" / "report.md").read_text()
    assert "| single_fit | single_fit_tensors | fit | 1 | 100.29 | 40.12 |" in md and "| 2.500 [2.500-2.500] |" in md
    assert "INPUT CEILING: single_fit_tensors fed random in-memory tensors" in md.split("## Headline")[0]
    # The largest speed-up among contenders is a real-input run (mirrored_custom, 50 s), not the 40 s ceiling.
    assert "the largest, mirrored_custom, took 50.0% less time" in md and "single_fit_tensors 2.50x" not in md


def test_the_secondary_rounds_pair_each_variant_with_their_own_baselines(workdir):
    """The study in two parts: the headline four in results/rounds, every other variant beside its
    own single_fit and single_custom in results/secondary (another 90 s single_fit, another drift).
    A secondary variant's speed-up pairs with the secondary's single_fit, round by round (a zero-width
    interval: the drift is shared inside the part), never the headline's; the headline keeps its own;
    threads against the headline's mirrored_fit goes through single_fit, the two parts' ratios
    independent (their spreads add)."""
    p = tiny_params()
    p["variants"]["single_fit_tensors"] = {"loop": "fit", "replicas": 1, "pipeline": "tensors"}
    p["variants"]["single_fit_threads"] = {"loop": "fit", "replicas": 1, "cores": 2}
    write_params(workdir / "params.yaml", p)
    results = workdir / "results"
    write_rounds(results, {n: per_round(fake_result(n, *KNOWN[n], "logical_cpu", True))
                           for n in ("single_fit", "mirrored_fit", "single_custom", "mirrored_custom")})
    twin = fake_result("single_fit_tensors", "fit", 1, 40.0, "logical_cpu", True)
    twin["pipeline"] = "tensors"
    other = (1.0, 0.9, 1.12)
    write_rounds(results, {"single_fit": per_round(fake_result("single_fit", "fit", 1, 90.0, "logical_cpu", True), other),
                           "single_custom": per_round(fake_result("single_custom", "custom", 1, 80.0, "cpu", True), other),
                           "single_fit_tensors": per_round(twin, other),
                           "single_fit_threads": per_round(fake_result("single_fit_threads", "fit", 1, 70.0, "cpu", True,
                                                                       budget="threads", cores=2), other),
                           "multiworker_custom": per_round(fake_result("multiworker_custom", "custom", 2, 70.0,
                                                                       "logical_cpu", True), other)}, "secondary")
    m = _report(workdir)
    v = m["variants"]
    assert v["single_fit"]["timed_seconds"] == pytest.approx(100.0 * (1.0 * 1.04 * 0.97) ** (1 / 3), rel=1e-3)
    assert v["mirrored_fit"]["speedup_vs_baseline"] == pytest.approx(100 / 60)
    sec = v["single_fit_tensors"]
    assert sec["speedup_vs_baseline"] == pytest.approx(90 / 40) and sec["speedup_vs_baseline_ci_low"] == pytest.approx(90 / 40)
    assert v["multiworker_custom"]["speedup_vs_baseline"] == pytest.approx(90 / 70)
    assert v["multiworker_custom"]["speedup_vs_single"] == pytest.approx(80 / 70)
    assert m["input_ceiling"]["single_fit_tensors"]["real_over_tensors"] == pytest.approx(90 / 40)
    threads = m["comparisons"]["replicas_over_threads_single_fit_threads"]
    assert threads["point"] == pytest.approx((100 / 60) / (90 / 70))      # not 70 / 60 across the parts
    md = (workdir / "reports" / "report.md").read_text()
    assert "**The headline rounds:** 3 round(s) x 4 variants" in md
    assert "**The secondary rounds:** 3 round(s) x 5 variants (single_fit, single_custom, single_fit_tensors" in md


def test_without_a_tensors_twin_the_report_says_so(workdir):
    fake_results(workdir / "results")
    m = _report(workdir)
    assert m["input_ceiling"] == {}
    assert "No in-memory-tensors variant ran" in (workdir / "reports" / "report.md").read_text()


def test_the_report_says_where_each_result_was_measured(workdir):
    """Results from this report's host are listed as such; one from another host (another core
    count) gets a MEASURED ELSEWHERE banner naming it, its host and its date."""
    fake_results(workdir / "results")
    (workdir / "data" / "host.json").write_text(json.dumps(TEST_HOST))
    _report(workdir)
    md = (workdir / "reports" / "report.md").read_text()
    assert "MEASURED ELSEWHERE" not in md
    assert f"- this host ({HOST_LABEL}, 2 usable core(s), no GPU; hostname test), 2026-12-04: single_fit," in md
    records = read_rounds(workdir / "results")
    for moved in records["mirrored_fit"]:
        moved["host"]["usable_cores"] = 64
        moved["hostname"], moved["started_at"] = "big", "2026-11-30T09:00:00+00:00"
    write_rounds(workdir / "results", records)
    _report(workdir)
    md = (workdir / "reports" / "report.md").read_text()
    banner = next(l for l in md.splitlines() if "MEASURED ELSEWHERE" in l)
    assert f"1 of 5 results (mirrored_fit) were measured on {HOST_LABEL}, 64 usable core(s), no GPU (hostname big, " \
           f"2026-11-30), not on this report's host ({HOST_LABEL}, 2 usable core(s), no GPU)" in banner
    assert f"- ANOTHER host ({HOST_LABEL}, 64 usable core(s), no GPU; hostname big), 2026-11-30: mirrored_fit" in md


def test_measured_says_what_was_measured_now_and_what_was_reused(workdir):
    fake_results(workdir / "results")
    (workdir / "data" / "host.json").write_text(json.dumps(TEST_HOST))
    now = run_cli("measured", "--since", "2026-12-04T10:00:00+00:00", cwd=workdir)
    assert now.returncode == 0, now.stderr
    # 5 variants x 3 rounds: every process counts
    assert now.stdout.splitlines()[0] == (f"flowerbench: 15 process result(s) measured now on this host ({HOST_LABEL}, "
                                          "2 usable core(s), no GPU), 0 reused")
    later = run_cli("measured", "--since", "2026-12-06T00:00:00+00:00", cwd=workdir).stdout.splitlines()
    assert later[0].endswith(f"0 process result(s) measured now on this host ({HOST_LABEL}, 2 usable core(s), no GPU), "
                             "15 reused")
    assert later[1] == (f"  reused, measured on this host ({HOST_LABEL}, 2 usable core(s), no GPU; hostname test), "
                        "2026-12-04: single_fit, mirrored_fit, single_custom, mirrored_custom, multiworker_custom")
    assert "make remeasure" in later[2]


def test_the_same_results_render_the_same_bytes(workdir):
    """No clock in the report: rerendering unchanged results (a fresh clone's `make reproduce`) gives
    byte-identical files, so DVC's lock stays as committed."""
    fake_results(workdir / "results")
    _report(workdir, in_process=False)      # the command in a process of its own ...
    first = tree_snapshot(workdir / "reports")
    assert {"report.md", "report.html", "metrics.json", "figures/scaling.png"} <= {
        str(Path(f).relative_to(workdir / "reports")) for f in first}
    _report(workdir)                        # ... and in the test's process, as the other tests render
    assert tree_snapshot(workdir / "reports") == first
    first = {str(Path(f).relative_to(workdir / "reports")): b for f, b in first.items()}
    assert "from results measured 2026-12-04T10:00:00+00:00 to 2026-12-04T10:05:00+00:00" in first["report.md"].decode()


def test_the_model_is_tested_on_this_host_before_it_explains_the_blog(workdir):
    """Predicted beside measured for every core-matched multi-replica run, from the terms file and
    the tensors twin; a miss says by how much and which term is missing, and the blog section says
    that the model failed here before it uses it."""

    fake_results(workdir / "results")
    p = tiny_params()
    p["variants"]["single_custom_tensors"] = {"loop": "custom", "replicas": 1, "pipeline": "tensors"}
    write_params(workdir / "params.yaml", p)
    twin = fake_result("single_custom_tensors", "custom", 1, 57.6, "logical_cpu", True)
    twin["pipeline"] = "tensors"
    add_result(workdir / "results", twin, drift=(1.0, 1.0, 1.0))
    write_rounds(workdir / "results", {k: [v[0]] * 3 for k, v in read_rounds(workdir / "results").items()})
    terms = fake_terms()
    terms["dispatch"] = {"2": {"seconds_beyond_terms": 0.02, "median_seconds": 0.4, "interval_seconds": [0.39, 0.41],
                               "cores": [0, 1]}}
    (workdir / "results" / "model-terms.json").write_text(json.dumps(terms))
    m = _report(workdir)["model"]
    md = (workdir / "reports" / "report.md").read_text()
    section = md.split("## The model, tested on this host")[1].split("## The blog explained")[0]
    # mirrored_custom (50 s) predicted 4 x (29 x (1.25 x 0.248 + 0.05) + 3670 / 2000) = 49.14 s: holds
    # against the point, with the null models from single_custom (80 s): no speed-up 80 s, linear 40 s
    assert "| mirrored_custom | 2 replica(s) | test | 49.14 = 36.00 + 5.80 + 7.34 | 50.00 [50.00, 50.00] | -1.7% | " \
           "+60.0% / -20.0% | holds |" in section
    # the 2-worker job (70 s) gets the same prediction and misses: 180 ms per step in no term
    row = next(l for l in section.splitlines() if l.startswith("| multiworker_custom"))
    assert "| -29.8% |" in row and "MISSED: 180 ms per step that no term holds" in row and "gRPC" in row
    assert "| mirrored_fit | 2 replica(s) | test | cannot predict: no in-memory-tensors twin of the fit loop" in section
    # the 1-replica check: 80 s measured is 10.7 % above its 72.28 s (outside the log-symmetric +-10 % band
    # around the prediction, though -9.6 % of the measured point), on a zero-width interval: off
    assert "| single_custom | 1 replica(s) | check of the input term" in section
    assert "| 72.28 = 57.60 + 0.00 + 14.68 | 80.00 [80.00, 80.00] | -9.6% | – | off: " in section
    assert "contention (kappa_2): 1.250" in section and "all-reduce (a_2): 50.0 ms per step" in section
    assert "The model MISSED 1 of 2 multi-replica run(s) (multiworker_custom; errors: mirrored_custom -1.7%, " \
           "multiworker_custom -29.8%)." in section and "It could not predict mirrored_fit" in section
    assert "Mean absolute error 15.8 %, largest 29.8 % (target: mean <= 10 %, largest <= 20 %); the null models on " \
           "the same 2 run(s): no speed-up 37.1 %, linear 31.4 %. The model beats both null models." in section
    assert "s in the compute term, one replica's step of each loop from its in-memory-tensors twin in the rounds: " \
           "custom 248 ms (from single_custom_tensors)" in section
    assert "](../" not in md                   # no link that breaks in a copy under reports/reference/
    # the figure: predicted terms against measured, the null models marked
    assert (workdir / "reports" / "figures" / "model.png").stat().st_size > 10_000
    assert "the null models from the 1-replica run of the same loop marked x (no speed-up) and + (linear)" in md
    # the term the misses pointed to, measured and added to the in-process runs only
    assert "| mirrored_custom | 20 | 49.14 | 51.46 | 50.00 | +2.9% | holds |" in section
    assert "dispatch (d_2, measured after the four terms missed)" in section
    assert "With the dispatch term, of 2 predicted run(s) 1 held; missed: multiworker_custom." in section
    blog = md.split("## The blog explained")[1]
    caution = blog.lstrip().split("\n")[2]
    assert caution.startswith("Caution: in its CPU form this model missed 1 of 2")
    assert "How sure: here its predictions were off by -2 % to -30 % (always too fast)" in caution
    assert m["mirrored_custom"]["verdict_code"] == 1 and m["multiworker_custom"]["verdict_code"] == -1
    assert m["mirrored_custom"]["predicted_seconds"] == pytest.approx(49.14)
    assert m["mirrored_custom"]["null_no_speedup_error_pct"] == pytest.approx(60.0)
    assert m["mirrored_custom"]["verdict_with_dispatch_code"] == 1
    assert "verdict_with_dispatch_code" not in m["multiworker_custom"]
    # a terms file of another schema is refused, naming it, and the report stays as it was
    (workdir / "results" / "model-terms.json").write_text(json.dumps({**terms, "schema_version": 0}))
    proc = report_in_process(workdir)
    assert proc.returncode == 1 and "results/model-terms.json: schema_version 0, this code reads 1" in proc.stderr
    assert (workdir / "reports" / "report.md").read_text() == md


def test_without_terms_the_model_is_not_claimed(workdir):
    fake_results(workdir / "results")
    _report(workdir)
    md = (workdir / "reports" / "report.md").read_text()
    assert "No terms were measured (results/model-terms.json is missing" in md
    assert "This model has not been tested on this host" in md.split("## The blog explained")[1]


def test_no_generated_sentence_holds_a_literal_number():
    """Every number the report's words carry is computed (or a format spec): the string literals of
    the report's sections (docstrings aside) hold no number with a unit.  The 95 % of the intervals
    is the one constant the words may name, and the section modules are each one room of the report."""
    import ast

    pkg = REPO / "src" / "flowerbench" / "report"
    unit = re.compile(r"(?<![\w.{:\[])[-+]?\d+(\.\d+)?\s?(%|x\b|s\b|ms\b|img/s|MB|GB|\simages\b|\scores?\b)")
    found = []
    for path in sorted(pkg.glob("*.py")):
        tree = ast.parse(path.read_text())
        docs = {id(n.body[0].value) for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.FunctionDef))
                and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                found += [f"{path.name}:{node.lineno}: {m.group(0)!r}" for m in unit.finditer(node.value)
                          if not m.group(0).startswith("95")]
    assert found == []
    sections = {p.stem for p in pkg.glob("*.py")} - {"__init__", "cells", "figures"}
    assert sections == {"opening", "headline", "precision", "inputs", "audit", "prediction", "heldout",
                        "blog_explained", "conclusion", "provenance"}
    assert max(len(p.read_text().splitlines()) for p in pkg.glob("*.py")) < 300


def test_the_blog_caution_tells_a_miss_from_a_measurement_too_loose_to_judge():
    from flowerbench.report.blog_explained import blog_validation

    loose = {"tests": 3, "predicted": 3, "held": 0, "missed": [], "undetermined": ["a", "b", "c"],
             "unpredicted": [], "validated": False}
    text = blog_validation(loose)
    assert text.startswith("Caution: in its CPU form this model is not validated on this host: of 3 multi-replica "
                           "run(s) it held for 0, and 3 could not be judged (the measured interval straddles the ±10 % "
                           "band).")
    assert "failed" not in text
    missed = {**loose, "missed": ["a"], "undetermined": ["b", "c"]}
    assert blog_validation(missed).startswith("Caution: in its CPU form this model missed 1 of 3 multi-replica run(s) "
                                              "on this host (a); it failed here")


def _heldout_files(workdir: Path) -> dict:
    """A committed predictions file of two settings and `make validate`'s judgement of it (recorded
    shapes: validate.judge_setting's rows): px64 custom holds, px224 custom misses."""
    from flowerbench.perfmodel import heldout

    def pred(compute, allreduce, dispatch):
        t = {"compute": compute, "allreduce": allreduce, "input": 0.1, "dispatch": dispatch}
        total = sum(t.values())
        return {"seconds": total, "low": total * 0.9, "high": total * 1.1, "terms_seconds": t,
                "carried": {"contention": 1.0, "allreduce_seconds": allreduce / 12, "dispatch_seconds": dispatch / 12}}

    def setting(px, compute):   # 256 images, 32 per replica: 4 steps an epoch at 2 replicas, 8 at one; 3 epochs
        return {"overrides": {"data.image_size": px}, "epochs": 3, "steps_per_epoch": 4, "images": 256,
                "probe": {"batch": 32}, "predictions": {"custom": pred(compute, 0.9, 3.0)}}

    predictions = {"written_at": "2026-12-07T05:00:00+00:00", "git_commit": "d7d1ff9" + "0" * 33,
                   "settings": {"px64": setting(64, 16.0), "px224": setting(224, 100.0)}}
    path = workdir / "predictions" / "heldout.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(predictions))
    frozen = {"predictions_sha256": heldout.sha256(path), "predictions_commit": "bbcc07e" + "0" * 33,
              "head": "abc1234" + "0" * 33}

    def row(setting, predicted, measured, single, verdict):
        return {"setting": setting, "loop": "custom", "replicas": 2, "predicted_seconds": predicted,
                "predicted_low": predicted * 0.9, "predicted_high": predicted * 1.1, "measured_seconds": measured,
                "measured_low": measured * 0.97, "measured_high": measured * 1.03, "measured_half_width_pct": 3.0,
                "error_pct": (predicted / measured - 1) * 100, "verdict": verdict, "rounds": 2,
                "null_source": "single_custom",
                "nulls": {"no_speedup": {"predicted_seconds": single, "error_pct": (single / measured - 1) * 100},
                          "linear": {"predicted_seconds": single / 2,
                                     "error_pct": (single / 2 / measured - 1) * 100}}, **frozen}

    p64, p224 = (predictions["settings"][s]["predictions"]["custom"]["seconds"] for s in ("px64", "px224"))
    validation = {"judged_at": "2026-12-07T09:00:00+00:00", "measured_from": "2026-12-07T06:33:10+00:00",
                  "measured_to": "2026-12-07T08:13:00+00:00", "measured_commits": ["797dbd3" + "0" * 33],
                  "tolerance_pct": 10, "frozen": frozen,
                  "rows": [row("px64", p64, 21.0, 30.0, "holds"), row("px224", p224, 80.0, 150.0, "MISSED")]}
    out = workdir / "reports" / "validation" / "validation.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(validation))
    return validation


def test_strong_scaling_has_no_measured_replica_step_to_diagnose_with(tmp_path):
    """Under strong scaling the 1-replica run steps at the global batch and each replica at 1/N of it:
    the diagnosis does not put the one in place of the other (that row says n/a, the mean leaves it out)."""
    import json as _json

    from flowerbench.perfmodel import heldout as H
    from flowerbench.report import heldout as RH

    v = _heldout_files(tmp_path)
    pred = _json.loads((tmp_path / "predictions" / "heldout.json").read_text())
    pred["settings"]["strong"] = {**pred["settings"]["px64"], "overrides": {"train.scaling": "strong"}}
    rows = v["rows"] + [{**v["rows"][0], "setting": "strong"}]
    diag = H.diagnosis(rows, pred)
    assert [d["step_measured"] is None for d in diag] == [False, False, True]
    assert diag[2]["step_used"] == pytest.approx(diag[0]["step_used"])       # what the prediction used, still shown
    assert "| strong custom | 1.333 | n/a (strong scaling: the 1-replica run steps at the global batch) |" in (
        RH.diagnosis_table(diag))


def test_the_held_out_predictions_are_reported_beside_their_measurement_and_the_nulls(workdir):
    fake_results(workdir / "results")
    v = _heldout_files(workdir)
    m = _report(workdir)
    md = (workdir / "reports" / "report.md").read_text()
    held = md.split("## The model on held-out settings")[1].split("\n## ")[0]
    p64, p224 = (r["predicted_seconds"] for r in v["rows"])
    assert f"| px64 | custom | {p64:.2f} [" in held and "| holds |" in held and "| MISSED |" in held
    assert "committed at bbcc07e00000" in held and ("measured 2026-12-07 06:33 to 2026-12-07 08:13 UTC at commit 797dbd300000, judged 2026-12-07 09:00 "
                                                   "UTC at HEAD abc123400000") in held
    # errors: px64 20.0 predicted, 21.0 measured: -4.8 %; px224 104.0 against 80.0: +30.0 %
    errs = [abs(r["error_pct"]) for r in v["rows"]]
    assert f"mean absolute error {sum(errs) / 2:.1f} %" in held and f"largest {max(errs):.1f} %" in held
    assert "1 of 2 predictions held within ±10 % of the measured point; missed: px224 custom" in held
    assert "px224 custom: predicted" in held                     # every miss is listed
    # what N replicas add: the share of all-reduce + dispatch falls from px64 to px224
    assert f"px64 custom: all-reduce + dispatch {3.9 / p64 * 100:.0f} %" in held
    assert f"px224 custom: all-reduce + dispatch {3.9 / p224 * 100:.0f} %" in held
    assert f"measured {150.0 / 80.0:.2f}x" in held
    # after the fact: px64's probe used 16 / 12 = 1.333 s a step, its 1-replica run took 30 s / 24 steps = 1.25 s;
    # with that step the carried-over terms give 12 x 1.25 + 0.9 + 0.1 + 3.0 = 19.0 s against 21.0 measured
    assert "| px64 custom | 1.333 | 1.250 | +6.7% | 19.00 | -9.5% |" in held
    assert "| px224 custom | 8.333 | 6.250 | +33.3% | 79.00 | -1.2% |" in held
    assert "mean absolute error of 5.4 % (largest 9.5 %)" in held
    assert m["heldout"]["missed"] == 1 and m["heldout"]["mae_pct"] == pytest.approx(sum(errs) / 2, rel=1e-6)
    assert (workdir / "reports" / "figures" / "heldout.png").stat().st_size > 10_000
    # a predictions file changed after the runs is called out
    path = workdir / "predictions" / "heldout.json"
    path.write_text(path.read_text().replace("d7d1ff9", "0000000"))
    _report(workdir)
    assert "WARNING: predictions/heldout.json is not the file these runs were judged against" in (
        workdir / "reports" / "report.md").read_text()


def test_without_held_out_predictions_the_report_says_how_to_make_them(workdir):
    fake_results(workdir / "results")
    _report(workdir)
    md = (workdir / "reports" / "report.md").read_text()
    assert "No held-out predictions are committed (predictions/heldout.json)" in md
    assert "heldout.png" not in md


def test_the_first_screen_is_the_answer_and_its_figure_then_one_line_of_labels(workdir):
    """The answer and its figure come before the labels; the labels are one line, each linking to the
    section that says what it means (an anchor that exists in the HTML page too); warnings stay banners."""
    fake_results(workdir / "results", kind="logical_cpu", synthetic=True)
    _report(workdir)
    md = (workdir / "reports" / "report.md").read_text()
    lines = [l for l in md.split("## Headline")[0].splitlines() if l.strip()]
    answer = next(i for i, l in enumerate(lines) if l.startswith("**On this host"))
    fig = next(i for i, l in enumerate(lines) if l.startswith("![") and "scaling.png" in l)
    labels = next(i for i, l in enumerate(lines) if l.startswith("Labels: "))
    assert answer == 1 and answer < fig < labels
    assert not any(l.startswith("> **CORE-MATCHED") or l.startswith("> **SYNTHETIC") for l in lines)
    line = lines[labels]
    for label in ("CORE-MATCHED CPU RUN", "CPU RUN", "SYNTHETIC DATA"):
        assert f"[**{label}**](#what-the-labels-say)" in line
    section = md.split("## What the labels say")[1].split("##")[0]
    assert "- SYNTHETIC DATA: trained on the generated stand-in, NOT the real flower_photos" in section
    assert "Where each result was measured:" in section
    html = (workdir / "reports" / "report.html").read_text()
    assert '<h2 id="what-the-labels-say">What the labels say</h2>' in html and 'href="#what-the-labels-say"' in html


def test_no_section_calls_a_stats_function_or_imports_another_section():
    """The sections format what analysis/metrics.py (and the pool, the model) computed: from stats they import
    constants only (the rule's words, the band), and from the report package only the shared cells."""
    import ast

    pkg = REPO / "src" / "flowerbench" / "report"
    sections = {p.stem for p in pkg.glob("*.py")} - {"__init__", "cells"}
    bad = []
    for path in sorted(pkg.glob("*.py")):
        if path.stem == "__init__":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                if mod == "stats" and node.level == 2:
                    bad += [f"{path.name}: stats.{a.name}" for a in node.names if not a.name.isupper()]
                if node.level == 2 and mod == "" and any(a.name == "stats" for a in node.names):
                    bad.append(f"{path.name}: imports stats")
                if node.level == 1 and mod in sections:
                    bad.append(f"{path.name}: imports section {mod}")
    assert bad == []
