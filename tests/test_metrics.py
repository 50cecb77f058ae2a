"""The report's statistics, in-process on hand-made results: intervals over repeats, the two
timing windows, and the words the headline uses for them."""

from __future__ import annotations

import pytest

from flowerbench import metrics as M
from flowerbench.report.cells import versus
from flowerbench.results import Result
from tests.helpers.fakes import fake_result


def _result(name: str, loop: str, replicas: int, repeats: list[float], calls: list[float] | None = None) -> Result:
    r = fake_result(name, loop, replicas, sorted(repeats)[len(repeats) // 2], "logical_cpu", True)
    r.update(repeats=len(repeats), repeat_seconds=repeats, repeat_wall_seconds=calls or repeats,
             epoch_seconds=[s / 4 * f for s in repeats for f in (0.9, 1.1, 1.0, 1.0)],
             epoch_loss=[1.0] * 4 * len(repeats), epoch_accuracy=[0.5] * 4 * len(repeats),
             epoch_images=[3670] * 4 * len(repeats))
    return Result.model_validate(r)


def test_t_interval_of_three_repeats():
    iv = M.interval([10.0, 12.0, 14.0])
    # mean 12, sd 2, se 2/sqrt(3); t(0.975, df=2) = 4.303
    assert (iv["n"], iv["median"], iv["mean"]) == (3, 12.0, 12.0)
    assert iv["low"] == pytest.approx(12 - 4.303 * 2 / 3 ** 0.5) and iv["high"] == pytest.approx(12 + 4.303 * 2 / 3 ** 0.5)
    assert M.interval([5.0])["low"] is None  # one repeat: no interval, never a fake one
    assert M.t975(11) == 2.228 and M.t975(2000) == 1.960


def test_overlapping_repeats_are_not_distinguishable_and_separated_ones_are():
    base = _result("single_fit", "fit", 1, [10.0, 11.0, 12.0])
    same = _result("mirrored_fit", "fit", 2, [10.5, 11.5, 12.5])
    fast = _result("mirrored_custom", "custom", 2, [5.0, 5.1, 5.2])
    m = M.compute_metrics([base, same, fast], "single_fit")
    assert m["single_fit"]["speedup_ci_low"] is None  # the baseline against itself
    assert m["mirrored_fit"]["distinguishable_from_baseline"] is False
    assert m["mirrored_fit"]["speedup_ci_low"] < 1.0 < m["mirrored_fit"]["speedup_ci_high"]
    assert m["mirrored_custom"]["distinguishable_from_baseline"] is True
    assert 1.0 < m["mirrored_custom"]["speedup_ci_low"] < 11 / 5.1 < m["mirrored_custom"]["speedup_ci_high"]
    lo, hi = m["mirrored_custom"]["reduction_ci_low_pct"], m["mirrored_custom"]["reduction_ci_high_pct"]
    assert lo < M.reduction_pct(11.0, 5.1) < hi
    assert versus(m["mirrored_fit"], False).endswith("(not distinguishable from the baseline)")
    assert versus(m["mirrored_custom"], False) == f"{M.reduction_pct(11.0, 5.1):.1f}% less time"


def test_slower_variants_read_as_times_slower_and_both_windows_are_kept():
    base = _result("single_fit", "fit", 1, [10.0])
    slow = _result("mirrored_fit", "fit", 2, [12.1], calls=[13.31])
    m = M.compute_metrics([base, slow], "single_fit")["mirrored_fit"]
    assert versus(m, False) == "1.21x slower"
    assert m["whole_call_seconds"] == 13.31 and m["whole_call_over_epochs"] == pytest.approx(1.1)
    assert m["distinguishable_from_baseline"] is None  # n = 1: nothing claimed either way


def test_code_state_covers_every_result_not_only_the_first():
    from flowerbench.report.provenance import code_state

    clean = _result("single_fit", "fit", 1, [10.0])
    dirty = Result.model_validate({**_result("mirrored_fit", "fit", 2, [8.0]).as_dict(),
                                   "git_dirty": True, "git_changed": ["src/flowerbench/loops.py"]})
    assert code_state([clean, clean]) == "git commit abc (clean tree for all 2 results)"
    assert code_state([clean, dirty]) == ("git commit abc; 1 of 2 results ran with uncommitted changes "
                                          "(src/flowerbench/loops.py): mirrored_fit")
    other = Result.model_validate({**clean.as_dict(), "git_commit": "def"})
    assert code_state([clean, other]).startswith("git commits abc, def (MIXED)")


def test_blog_model_arithmetic():
    """The model of the blog's 4-GPU run, on the default inputs: compute 110.58 / 4, 15 steps x 10
    epochs, PCIe 18.9 ms and NVLink 3.8 ms per step, the blog-era decoder at 800 / 1359 img/s."""
    from flowerbench.config import Params
    from flowerbench import blog
    from flowerbench.report.blog_explained import blog_model_text

    p = Params().report
    m = blog.model(p.blog_seconds, p.scaling_model)
    rows = {(r["interconnect"], r["input"]): r for r in m["rows"]}
    assert m["steps"] == 150 and m["compute_seconds"] == pytest.approx(27.645)
    pcie, nvlink = 27.645 + 150 * 0.0189, 27.645 + 150 * 0.0038
    assert m["compute_link_seconds"] == pytest.approx({"pcie": pcie, "nvlink": nvlink})
    one, two = rows[("pcie", "blog-era pipeline, 1 core")], rows[("nvlink", "blog-era pipeline, 2 cores")]
    assert (one["predicted_seconds"], one["bound"]) == (pytest.approx(36700 / 800), "input")
    assert (two["predicted_seconds"], two["bound"]) == (pytest.approx(nvlink), "compute + all-reduce")
    assert two["efficiency"] == pytest.approx(110.58 / (4 * nvlink))
    assert m["ring_mb_per_step"] == pytest.approx(1.5 * 94.4)
    assert m["blog_implied_images_per_second"] == pytest.approx({"mirrored_fit": 36700 / 41.66,
                                                                 "mirrored_custom": 36700 / 35.88})
    assert m["cores_needed_ours"] == pytest.approx(36700 / (27.645 + 150 * 0.0038) / 704)
    _, verdict = blog_model_text(m, p.scaling_model, p.blog_seconds)
    text = " ".join(verdict)
    assert "They correspond to 1023 and 881 decoded images/s, within the 800-1359 img/s" in text
    assert "The input pipeline (every JPEG decoded every epoch, the map sequential) is the likely bound." in text


def test_findings_never_call_an_indistinguishable_variant_the_winner():
    from flowerbench.report.headline import findings

    base = _result("single_fit", "fit", 1, [10.0, 11.0, 12.0])
    close = _result("single_custom", "custom", 1, [10.2, 10.8, 11.4])
    m = M.compute_metrics([base, close], "single_fit")
    text = findings([base, close], m, "single_fit")
    assert text.startswith("No variant was distinguishably faster than single_fit")
    assert "(within the repeats spread: not distinguishable)" in text
    fast = _result("single_custom", "custom", 1, [5.0, 5.1, 5.2])
    text = findings([base, fast], M.compute_metrics([base, fast], "single_fit"), "single_fit")
    assert text.startswith("The fastest variant was single_custom at 5.10 s")
    assert "not distinguishable" not in text
