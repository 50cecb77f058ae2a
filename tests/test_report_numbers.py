"""The report prints metrics.json's numbers, never numbers of its own.  The sections a reader quotes
(the headline table, the opening sentence, the precision table) are read back from report.md by
pattern, each number matched against its own key; then every other number in the report is found
in metrics.json at its printed precision (test_every_number_in_the_report_is_in_metrics_json)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

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


# --- every number -----------------------------------------------------------------------------------
# What is not a number the analysis computed, and so need not be in metrics.json: a date or a time, a
# commit or a digest, a version (the provenance's versions line), a number inside a name (r01, resnet50, V100, fp32), inside a code
# span or a link's target (a params key, a command, a file), after a colon (a port of a device's
# address), or written as such in a section's own prose (a citation's year, a stated target).
SKIP = [r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:[+-]\d{2}:\d{2})?)?", r"\b\d{2}:\d{2}\b",
        r"\b[0-9a-f]{12}\b", r"\b[0-9a-f]{40}\b", r"\b[0-9a-f]{64}\b", r"\b\d+(?:\.\d+){2,}\b", r"`[^`]*`",
        r"\]\([^)]*\)", r"[A-Za-z_][\w.-]*\d[\w.]*", r"\d+[A-Za-wyz_]\w*", r":\d+", r"versions: [^\n]*"]
TOKEN = re.compile(r"(?<![\d.])([+\-−]?)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?")
UNITS = (1, 100, 1000, 1e-6)    # as stored; a share in %; seconds in ms; parameters in M


def leaves(x) -> list[float]:
    if isinstance(x, dict):
        return [v for y in x.values() for v in leaves(y)]
    return [float(x)] if isinstance(x, (int, float)) else []


def prose_numbers() -> set[str]:
    """The numbers written in the report's own code as text (string constants and the literal parts
    of f-strings): a section's words, not a result."""
    out = set()
    for path in (Path(__file__).resolve().parents[1] / "src" / "flowerbench" / "report").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                out |= {m.group(2) + (m.group(3) or "") for m in TOKEN.finditer(node.value)}
    return out


def unmatched(md: str, metrics: dict) -> list[str]:
    """The numbers of `md` (outside SKIP) that no value of `metrics`, in one of the UNITS, rounds to."""
    values = leaves(metrics)
    prose = prose_numbers()
    text = re.sub("|".join(SKIP), " ", md)
    out = []
    for m in TOKEN.finditer(text):
        sign, whole, frac = m.groups()
        printed = whole.replace(",", "") + (frac or "")
        if printed in prose:
            continue
        x = float(printed) * (-1 if sign in "-−" and sign else 1)
        tol = 0.5 * 10 ** -len(frac[1:] if frac else "") + 1e-9
        if not any(abs(v * u - x) <= tol or abs(abs(v * u) - abs(x)) <= tol for v in values for u in UNITS):
            out.append(text[max(0, m.start() - 50):m.end() + 10].replace("\n", " "))
    return out


def test_every_number_in_the_report_is_in_metrics_json(numbers):
    md, metrics = numbers
    assert unmatched(md, metrics) == []


# Real runs' reports: main's (DVC-cached, so only where `make reproduce` or `dvc pull` put it) and the
# reference committed with the code that renders every number into metrics.json (git-tracked: in every
# clone, CI's included).
REAL = ["reports", "reports/reference/cpu-packages-amd-f25m17-2core"]


@pytest.mark.parametrize("folder", REAL)
def test_a_real_report_prints_only_its_metrics(folder):
    """The same on a real run's report.md and metrics.json (real rounds, terms, held-out rows and the
    blog's model)."""
    root = Path(__file__).resolve().parents[1] / folder
    if folder == "reports" and not (root / "report.md").exists():
        pytest.skip("reports/report.md is DVC-cached: not in this clone until `make reproduce` or `make pull`")
    md = (root / "report.md").read_text()
    assert unmatched(md, json.loads((root / "metrics.json").read_text())) == []


def test_a_number_the_metrics_do_not_hold_is_caught(numbers):
    md, metrics = numbers
    got = unmatched(md + "\nA new sentence: 123.457 s over 98765.4 images.\n", metrics)
    assert len(got) == 2 and "123.457" in got[0] and "98765.4" in got[1]
