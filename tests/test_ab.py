"""The A/B comparison on recorded rounds (no measuring here: `make ab` measures B with the rounds
stage itself, tested in test_dvc / test_measure): every paired ratio of the multi-replica runs, the
Bonferroni-corrected agreement, both half-widths, the split of one folder into A and B, the files."""

from __future__ import annotations

import json

import pytest

from flowerbench import ab, rounds as R
from flowerbench.config import load_params
from tests.conftest import run_cli
from tests.helpers.fakes import KNOWN, fake_result, per_round, write_rounds

NAMES = list(KNOWN)


def _rounds(tmp_path, name: str, drift_of: dict) -> R.Rounds:
    """Rounds of the tiny params' variants; drift_of[variant] = its per-round factors (the others
    drift together, so their paired ratios are exact)."""
    base = (1.0, 1.04, 0.97, 1.02)
    folder = tmp_path / name
    write_rounds(folder, {v: per_round(fake_result(v, loop, n, secs, "logical_cpu", True), drift_of.get(v, base))
                          for v, (loop, n, secs) in KNOWN.items()})
    return R.load(NAMES, folder / "rounds")


def test_two_measurements_of_the_same_ratios_agree_and_a_shifted_one_does_not(tmp_path):
    a = _rounds(tmp_path, "a", {"mirrored_fit": (1.0, 1.06, 0.95, 1.03)})
    b = _rounds(tmp_path, "b", {"mirrored_fit": (1.02, 1.03, 0.99, 1.0)})
    out = ab.compare(a, b, "single_fit")
    names = [r["ratio"] for r in out["rows"]]
    # every multi-replica run: vs the baseline (the blog's basis), vs its same-loop single, its efficiency
    assert "mirrored_fit speed-up vs single_fit" in names and "mirrored_fit efficiency vs single_fit" in names
    assert "mirrored_custom speed-up vs single_custom" in names and "multiworker_custom efficiency vs single_custom" in names
    assert not any(n.startswith("single_") for n in names) and out["compared"] == len(names)
    assert out["agree"] is True
    row = next(r for r in out["rows"] if r["ratio"] == "mirrored_fit speed-up vs single_fit")
    assert row["a_half_width_pct"] > 0 and row["b_half_width_pct"] > 0 and row["limit_pct"] > abs(row["difference_pct"])
    slow = _rounds(tmp_path, "c", {"mirrored_fit": (1.30, 1.33, 1.28, 1.31)})
    out = ab.compare(a, slow, "single_fit")
    bad = [r["ratio"] for r in out["rows"] if r["agree"] is False]
    assert out["agree"] is False and "mirrored_fit speed-up vs single_fit" in bad
    assert all(n.startswith("mirrored_fit") for n in bad)   # the others were measured alike
    md = ab.markdown(out, "A", "B")
    assert f"A and B DISAGREE on {len(bad)} of {out['compared']} paired ratio(s)." in md
    assert f"at 1 - 0.05 / {out['compared']} per ratio (Bonferroni" in md and "| DISAGREE |" in md


def test_split_compares_the_first_rounds_with_the_later_ones(tmp_path):
    r = _rounds(tmp_path, "a", {})
    first, later = ab.split(r, 2)
    assert (first.count, later.count) == (2, 2) and later.runs == r.runs[2:]
    with pytest.raises(ValueError):
        ab.split(r, 4)


def test_the_ab_command_writes_its_table_and_exits_by_the_verdict(workdir):
    write_rounds(workdir / "results", {v: per_round(fake_result(v, loop, n, s, "logical_cpu", True),
                                                    (1.0, 1.04, 0.97, 1.02) if v != "mirrored_fit" else
                                                    (1.0, 1.04, 1.6, 1.65))
                                       for v, (loop, n, s) in KNOWN.items()})
    proc = run_cli("ab", "--split", "2", cwd=workdir)
    assert proc.returncode == 1, proc.stderr   # mirrored_fit became slower in rounds 3-4
    out = json.loads((workdir / "reports" / "ab.json").read_text())
    assert out["agree"] is False and out["a"].endswith("rounds 1-2") and out["rounds_b"] == 2
    assert "A: rounds 1-2 of results/rounds" in (workdir / "reports" / "ab.md").read_text()
    both = run_cli("ab", "--split", "2", "--fresh", cwd=workdir)
    assert both.returncode == 2 and "choose one" in both.stderr
    assert load_params(workdir / "params.yaml").rounds.count == 1   # (the tiny params: nothing measured here)
