"""The variance pool (analysis/pool.py): which committed references a run pools with (same host identity,
engine and measured params; itself once), and what pooling does to an interval.  Fake rounds only."""

from __future__ import annotations

import copy
import json

import pytest

from flowerbench.analysis import pool as P, rounds as R, stats as S
from tests.helpers.fakes import KNOWN, TEST_HOST, fake_result, per_round, write_rounds

NAMES = list(KNOWN)


def _run(folder, stamp: str, drift=(1.0, 1.05, 0.96), host=None, edit=None) -> R.Rounds:
    """A complete fake run under folder/rounds: mirrored_fit drifts on its own (a spread to pool)."""
    records = {}
    for v, (loop, n, secs) in KNOWN.items():
        rec = fake_result(v, loop, n, secs, "logical_cpu", True)
        rec["host"] = copy.deepcopy(host or TEST_HOST)
        if edit:
            edit(rec)
        rs = per_round(rec, drift if v == "mirrored_fit" else (1.0, 1.0, 1.0))
        for k, r in enumerate(rs):
            r["started_at"] = f"{stamp}T10:0{k}:00+00:00"
        records[v] = rs
    write_rounds(folder, records)
    return R.load(NAMES, folder / "rounds")


def _reference(root, name: str, **kw) -> None:
    _run(root / name / "results", **kw)


def test_a_run_pools_only_with_references_of_its_kind(tmp_path):
    root = tmp_path / "reference"
    here = _run(tmp_path / "here" / "results", "2026-12-08")
    _reference(root, "same-a", stamp="2026-12-01", drift=(1.0, 0.93, 1.04))
    _reference(root, "same-b", stamp="2026-12-02", drift=(1.02, 1.0, 0.97))
    zen5 = copy.deepcopy(TEST_HOST)
    zen5["cpu"]["family"] = 26
    _reference(root, "other-cpu", stamp="2026-12-03", host=zen5)
    _reference(root, "schema-1", stamp="2026-12-04", host={"host_schema": 1, "cpu_model": "Test CPU"})
    _reference(root, "other-params", stamp="2026-12-05",
               edit=lambda r: r["params"]["data"].__setitem__("image_size", 64))
    (root / "itself" / "results").mkdir(parents=True)
    import shutil
    shutil.copytree(tmp_path / "here" / "results" / "rounds", root / "itself" / "results" / "rounds")
    (root / "no-rounds").mkdir()

    pool = P.load(here, NAMES, root)
    assert pool.names == ["this run", "same-a", "same-b"]
    assert pool.left_out == {"itself": "this run itself, or a part of it", "other-cpu": "another host identity",
                             "other-params": "other measured params",
                             "schema-1": "identity unknown (host schema 1)"}
    # the pooled spread: df summed over the three runs (3 rounds each), the between component beside it
    c = pool.components("single_fit", "mirrored_fit")
    assert c["runs"] == 3 and c["df_within"] == 6 and c["between_sd"] is not None
    sd, df = pool.spread("single_fit", "mirrored_fit")
    own = R.Rounds(here.schedule, here.runs)
    est, alone = pool.paired("single_fit", "mirrored_fit"), P.Pool([own], ["this run"]).paired("single_fit", "mirrored_fit")
    assert est.point == pytest.approx(alone.point) and est.df == 6 and alone.dof == 2
    assert est.log_sd == pytest.approx(sd) and "2 committed reference run(s)" in pool.describe()


def test_a_new_identity_starts_from_its_own_run_and_says_so(tmp_path):
    root = tmp_path / "reference"
    zen5 = copy.deepcopy(TEST_HOST)
    zen5["cpu"]["model"] = 99
    here = _run(tmp_path / "here" / "results", "2026-12-08", host=zen5)
    _reference(root, "zen4", stamp="2026-12-01")
    pool = P.load(here, NAMES, root)
    assert pool.names == ["this run"] and pool.left_out == {"zen4": "another host identity"}
    assert pool.describe().startswith("A new host identity")
    unknown = _run(tmp_path / "old" / "results", "2026-12-07", host={"host_schema": 1, "cpu_model": "AMD EPYC"})
    assert P.load(unknown, NAMES, root).describe().startswith("This run's host has an unknown identity")


def test_the_report_says_what_the_intervals_were_pooled_over(tmp_path):
    from flowerbench.analysis import metrics as M

    root = tmp_path / "reference"
    here = _run(tmp_path / "here" / "results", "2026-12-08")
    _reference(root, "same-a", stamp="2026-12-01", drift=(1.0, 0.93, 1.04))
    pool = P.load(here, NAMES, root)
    results = here.pooled()
    v = M.variance_split(here, results, "single_fit", 10.0, pool)
    row = v["ratios"]["mirrored_fit vs_baseline"]
    assert row["pooled_runs"] == 2 and row["df"] == 4 and row["own_log_sd"] is not None
    assert row["whole_call"] == pytest.approx(S.paired(here.seconds("single_fit", "whole_call"),
                                                       here.seconds("mirrored_fit", "whole_call")).point)
    assert v["pool"]["names"] == ["this run", "same-a"] and v["estimator"] == "mean"
    json.dumps(M.metrics_file(M.compute_metrics(results, "single_fit", here, pool), [], [], [],
                              variance=v))


def test_a_reference_that_measured_only_some_variants_pools_for_the_ratios_it_holds(tmp_path):
    """An A/B's other side holds only the headline: it pools for the ratios it measured (df adds up)
    and leaves the others to the runs that measured them."""
    root = tmp_path / "reference"
    here = _run(tmp_path / "here" / "results", "2026-12-08")
    records = {}
    for v in ("single_fit", "mirrored_fit"):
        loop, n, secs = KNOWN[v]
        rs = per_round(fake_result(v, loop, n, secs, "logical_cpu", True), (1.0, 0.97, 1.02) if n > 1 else (1, 1, 1))
        for k, r in enumerate(rs):
            r["started_at"] = f"2026-12-02T10:0{k}:00+00:00"
        records[v] = rs
    write_rounds(root / "headline-only" / "results", records)
    pool = P.load(here, NAMES, root)
    assert pool.names == ["this run", "headline-only"]
    assert pool.components("single_fit", "mirrored_fit")["df_within"] == 4          # 2 + 2
    assert pool.components("single_custom", "mirrored_custom")["df_within"] == 2     # this run alone


def test_two_independent_ratios_divide_with_their_spreads_added():
    import math

    a = S.from_logs([math.log(x) for x in (2.0, 2.2, 1.9, 2.1)])
    b = S.from_logs([math.log(x) for x in (1.5, 1.4, 1.6)])
    r = S.independent_ratio(a, b)
    assert r.point == pytest.approx(a.point / b.point) and r.log_mean == pytest.approx(a.log_mean - b.log_mean)
    assert r.log_se == pytest.approx(math.sqrt(a.log_se ** 2 + b.log_se ** 2))
    se, df = S.welch(a.log_se ** 2, a.dof, b.log_se ** 2, b.dof)
    assert r.dof == pytest.approx(df) and 2 < df < 5
    assert math.log(r.high / r.point) == pytest.approx(S.t975(df) * se)
    one = S.from_logs([0.1])
    assert S.independent_ratio(one, b).low is None                      # no interval from one round
