"""The A/B comparison on recorded rounds (no measuring here: `make ab` measures B with the rounds
stage itself, tested in test_dvc / test_measure): every distinct paired ratio of the multi-replica runs,
judged by the equivalence test (reproduces / differs / undetermined), the split of one folder into A
and B, the files."""

from __future__ import annotations

import json
import math

import pytest

from flowerbench.analysis import ab, rounds as R
from flowerbench.core.config import load_params
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


def test_the_same_ratios_reproduce_a_shifted_one_differs_and_a_noisy_one_is_undetermined(tmp_path):
    a = _rounds(tmp_path, "a", {"mirrored_fit": (1.0, 1.06, 0.95, 1.03)})
    b = _rounds(tmp_path, "b", {"mirrored_fit": (1.02, 1.03, 0.99, 1.0)})
    out = ab.compare(a, b, "single_fit")
    names = [r["ratio"] for r in out["rows"]]
    # the distinct ratios only: every multi-replica run vs the baseline and vs its same-loop single (an
    # efficiency is the same number over N, so it is not compared again)
    assert "mirrored_fit speed-up vs single_fit" in names and "mirrored_custom speed-up vs single_custom" in names
    assert not any("efficiency" in n for n in names) and len(names) == len(set(names)) == out["compared"]
    assert not any(n.startswith("single_") for n in names)
    assert out["verdict"] == ab.REPRODUCES and all(r["verdict"] == ab.REPRODUCES for r in out["rows"])
    row = next(r for r in out["rows"] if r["ratio"] == "mirrored_fit speed-up vs single_fit")
    lo, hi = row["interval90_pct"]
    assert -15 < lo <= row["difference_pct"] <= hi < 15 and row["df"] == 6   # pooled: 2 x (4 - 1) rounds
    assert out["pooled"].startswith("A, B")
    slow = _rounds(tmp_path, "c", {"mirrored_fit": (1.30, 1.33, 1.28, 1.31)})
    out = ab.compare(a, slow, "single_fit")
    bad = [r["ratio"] for r in out["rows"] if r["verdict"] == ab.DIFFERS]
    assert out["verdict"] == ab.DIFFERS and bad and all(n.startswith("mirrored_fit") for n in bad)
    assert all(r["shift"] for r in out["rows"] if r["ratio"] in bad)
    md = ab.markdown(out, "A", "B")
    assert f"B DIFFERS from A on {len(bad)} of {out['compared']} paired ratio(s)" in md
    assert f"(1 - 0.05 / {out['compared']})" in md and "| differs |" in md
    # the same mean, but too noisy to show either: undetermined, never "agree"
    noisy = _rounds(tmp_path, "d", {"mirrored_fit": (0.7, 1.45, 0.8, 1.3)})
    out = ab.compare(a, noisy, "single_fit")
    row = next(r for r in out["rows"] if r["ratio"] == "mirrored_fit speed-up vs single_fit")
    assert row["verdict"] == ab.UNDETERMINED and out["verdict"] == ab.UNDETERMINED
    assert "UNDETERMINED: 2 of" in ab.sentence(out) or "UNDETERMINED: 1 of" in ab.sentence(out)


def test_the_equivalence_rule_at_its_edges():
    """stats.tost on constructed cases: inside the band (90 %), outside it (95 %), straddling it, no
    interval; the band is symmetric on the log scale; a correction widens only the 'differs' side."""
    from flowerbench.analysis import stats as S

    band = math.log(1.15)
    t90, t95 = S.t_quantile(0.95, 10), S.t_quantile(0.975, 10)
    se = 0.01
    just_in = band - t90 * se - 1e-9
    assert S.tost(just_in, se, 10, 15)["verdict"] == S.EQUIVALENT
    assert S.tost(-just_in, se, 10, 15)["verdict"] == S.EQUIVALENT
    assert S.tost(just_in + 2e-9, se, 10, 15)["verdict"] == S.UNDETERMINED
    just_out = band + t95 * se + 1e-9
    assert S.tost(just_out, se, 10, 15)["verdict"] == S.DIFFERENT
    assert S.tost(-just_out, se, 10, 15)["verdict"] == S.DIFFERENT
    assert S.tost(just_out, se, 10, 15, alpha_differs=0.05 / 6)["verdict"] == S.UNDETERMINED   # corrected
    assert S.tost(0.0, 0.2, 10, 15)["verdict"] == S.UNDETERMINED           # wide: absence of evidence
    assert S.tost(0.05, None, None, 15)["verdict"] == S.UNDETERMINED
    assert S.tost(0.05, 0.005, 10, 15)["shift"] is True and S.tost(0.0, 0.005, 10, 15)["shift"] is False


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
    assert out["verdict"] == "differs" and out["a"].endswith("rounds 1-2") and out["rounds_b"] == 2
    assert "A: rounds 1-2 of results/rounds" in (workdir / "reports" / "ab.md").read_text()
    both = run_cli("ab", "--split", "2", "--fresh", cwd=workdir)
    assert both.returncode == 2 and "choose one" in both.stderr
    assert load_params(workdir / "params.yaml").rounds.count == 1   # (the tiny params: nothing measured here)


def test_with_compares_two_committed_measurements_without_measuring(workdir):
    """`ab --against A --with B`: two rounds folders already measured (a reference and the last run),
    judged by the same rule; nothing is measured (the tiny params would measure in seconds, and the
    scratch folder stays empty)."""
    for name, drift in (("a", (1.0, 1.04, 0.97)), ("b", (1.01, 0.99, 1.03))):
        write_rounds(workdir / name, {v: per_round(fake_result(v, loop, n, s, "logical_cpu", True), drift)
                                      for v, (loop, n, s) in KNOWN.items()})
    proc = run_cli("ab", "--against", "a/rounds", "--with", "b/rounds", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    out = json.loads((workdir / "reports" / "ab.json").read_text())
    assert out["verdict"] == "reproduces" and out["a"] == "a/rounds" and out["b"] == "b/rounds"
    assert not (workdir / ".dvc" / "tmp" / "ab").exists()
    both = run_cli("ab", "--with", "b/rounds", "--split", "1", cwd=workdir)
    assert both.returncode == 2 and "choose one" in both.stderr
