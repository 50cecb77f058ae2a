"""The report prints metrics.json's numbers, never numbers of its own: each number of the headline
table, the opening sentence and the precision table is read back from report.md (by pattern, not
by the report's own formatting code) and matched against metrics.json to the printed precision.
(Issue 45 asks this of every number in the report; these are the sections a reader quotes.)"""

from __future__ import annotations

import json
import re

import pytest


NUM = r"(-?\d+(?:\.\d+)?)"


def _close(printed: str, value: float) -> bool:
    """`printed` is `value` rounded to the digits it shows (half a unit in its last place)."""
    digits = len(printed.split(".")[1]) if "." in printed else 0
    return abs(float(printed) - value) <= 0.5 * 10 ** -digits + 1e-12


def _table(md: str, heading: str) -> list[dict[str, str]]:
    """The first Markdown table under `heading`: one dict per row, keyed by the header's cells."""
    lines = md.split(heading, 1)[1].splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("|"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    header, body = rows[0], rows[2:]
    return [dict(zip(header, r)) for r in body]


@pytest.fixture(scope="module")
def numbers(rendered) -> tuple[str, dict]:
    """report.md and metrics.json of the hand-made results' report (tests/conftest.py `rendered`)."""
    return ((rendered / "reports" / "report.md").read_text(),
            json.loads((rendered / "reports" / "metrics.json").read_text()))


def test_the_headline_table_prints_metrics_json(numbers):
    md, metrics = numbers
    rows = _table(md, "## Headline")
    assert {r["variant"] for r in rows} == set(metrics["variants"])
    checked = 0
    for row in rows:
        m = metrics["variants"][row["variant"]]
        secs = re.fullmatch(rf"{NUM} \[{NUM}, {NUM}\] \(n=(\d+)\)", row["timed s [95% CI] (rounds)"])
        assert secs, row
        for printed, key in zip(secs.groups()[:3], ("timed_seconds", "timed_seconds_ci_low", "timed_seconds_ci_high")):
            assert _close(printed, m[key]), (row["variant"], key, printed, m[key])
        assert int(secs.group(4)) == m["rounds"]
        assert _close(row["img/s"], m["images_per_second"])
        assert _close(row["whole call / epochs"], m["whole_call_over_epochs"])
        speed = re.match(rf"{NUM}x(?: \[{NUM}-{NUM}\])?", row["speed-up vs single_fit (blog's basis) [95% CI]"])
        assert _close(speed.group(1), m["speedup_vs_baseline"])
        if speed.group(2):
            assert _close(speed.group(2), m["speedup_vs_baseline_ci_low"])
            assert _close(speed.group(3), m["speedup_vs_baseline_ci_high"])
            checked += 1
    assert checked == len(rows) - 1          # every row but the baseline's own has an interval


def test_the_opening_sentence_prints_metrics_json(numbers):
    md, metrics = numbers
    first = md.split("\n\n")[1]
    found = re.findall(rf"(\w+) \(\d+ (?:replicas|workers)\) {NUM}x \[{NUM}-{NUM}\]", first)
    assert found, first
    for name, point, low, high in found:
        m = metrics["variants"][name]
        assert _close(point, m["speedup_vs_baseline"]) and _close(low, m["speedup_vs_baseline_ci_low"])
        assert _close(high, m["speedup_vs_baseline_ci_high"])


def test_the_precision_table_prints_metrics_json(numbers):
    md, metrics = numbers
    rows = _table(md, "Half-widths of the multi-replica speed-ups")
    assert rows
    for row in rows:
        basis = "vs_baseline" if row["against"] == "single_fit" else "vs_single"
        v = metrics["variance"][f"{row['speed-up']}_{basis}"]
        assert _close(row["own sd"], v["own_log_sd"])
        pooled = re.match(rf"{NUM} \(df {NUM}", row["pooled sd"])
        assert _close(pooled.group(1), v["log_sd"]) and _close(pooled.group(2), v["df"])
        assert _close(row["half-width"].lstrip("±").rstrip(" %"), v["half_width_pct"])
        needed = row["rounds for ±10 %"]
        assert (needed == "n/a" and "rounds_needed" not in v) or int(needed) == v["rounds_needed"], row
