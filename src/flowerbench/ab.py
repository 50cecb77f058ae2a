"""Reproducibility, tested: the rounds measured twice, A then B, and every paired ratio compared.

    python -m flowerbench ab                 # B measured now, A = the committed results/rounds
    python -m flowerbench ab --fresh         # A and B both measured now, one after the other
    python -m flowerbench ab --split 3       # nothing measured: A = rounds 1-3 of results/rounds, B = the
                                             # later ones (rounds added afterwards with -S rounds.count=N)

Each measurement is the rounds stage's own (measure.run, with the params' rounds.count), written to
.dvc/tmp/ab/<A|B>/rounds (resumable like the stage).  For every multi-replica (and threads) run, its
speed-up against the baseline (the blog's basis), against one replica of the same loop, and its
efficiency are compared with stats.agree: the difference of the two log means within the two-sided
t-interval of the difference, Bonferroni-corrected over every number compared, so a clean pair agrees
on all of them at least 95 % of the time.  Both half-widths are printed beside it: wide intervals
agree trivially.  Absolute seconds are not compared (they differ between machines of one kind).
Writes reports/ab.md and reports/ab.json; exit 0 when every ratio agrees, 1 otherwise.
"""

from __future__ import annotations

from pathlib import Path

from . import measure, paths, rounds as R, stats as S
from .config import Params
from .io import atomic_write, write_json
from .log import get_logger
from .metrics import budget_scale, compared_ratios, same_budget_single
from .render import table

log = get_logger("ab").info

SCRATCH = Path(".dvc/tmp/ab")
AB_MD, AB_JSON = paths.REPORTS / "ab.md", paths.REPORTS / "ab.json"


def ratios(rounds: R.Rounds, baseline: str) -> dict[str, S.Estimate]:
    """Every paired ratio a multi-replica (or threads) run is judged by (metrics.compared_ratios), and
    its efficiency against its same-loop single run: name -> estimate."""
    results = rounds.pooled()
    out = {}
    for r, other, est in compared_ratios(rounds, results, baseline):
        out[f"{r.variant} speed-up vs {other}"] = est
        single, scale = same_budget_single(r, results), budget_scale(r)
        if single is not None and other == single.variant and scale is not None:
            out[f"{r.variant} efficiency vs {other}"] = est.scaled(scale)
    return out


def compare(a: R.Rounds, b: R.Rounds, baseline: str) -> dict:
    ra, rb = ratios(a, baseline), ratios(b, baseline)
    names = [n for n in ra if n in rb]
    rows = []
    for n in names:
        x = S.agree(ra[n], rb[n], compared=len(names))
        rows.append({"ratio": n, "a": ra[n].point, "a_half_width_pct": ra[n].half_width_pct, "b": rb[n].point,
                     "b_half_width_pct": rb[n].half_width_pct, **x})
    return {"compared": len(names), "rounds_a": a.count, "rounds_b": b.count, "rows": rows,
            "agree": all(r["agree"] for r in rows) if rows else None}


def verdict(out: dict) -> str:
    """The comparison in one sentence (the table's bold line and the log's)."""
    if out["agree"] is None:
        return "Nothing to compare."
    if out["agree"]:
        return "A and B agree on every paired ratio."
    return (f"A and B DISAGREE on {sum(1 for r in out['rows'] if r['agree'] is False)} of {out['compared']} "
            f"paired ratio(s).")


def markdown(out: dict, a_label: str, b_label: str) -> str:
    def pct(x):
        return "n/a" if x is None else f"±{x:.1f} %"

    rows = [[r["ratio"], f"{r['a']:.3f}", pct(r["a_half_width_pct"]), f"{r['b']:.3f}", pct(r["b_half_width_pct"]),
             f"{r['difference_pct']:+.1f} %", "n/a" if r["limit_pct"] is None else f"±{r['limit_pct']:.1f} %",
             {True: "agree", False: "DISAGREE", None: "n/a (one round)"}[r["agree"]]] for r in out["rows"]]
    return "\n\n".join([
        "# A/B: the same measurement twice", f"A: {a_label} ({out['rounds_a']} round(s)). B: {b_label} "
        f"({out['rounds_b']} round(s)).",
        f"**{verdict(out)}** Agreement: B's log mean minus A's within the two-sided t-interval of the difference "
        f"(Welch), at 1 - 0.05 / {out['compared']} per ratio (Bonferroni over the {out['compared']} numbers "
        f"compared), so a clean pair agrees on all of them at least 95 % of the time. The half-widths are "
        f"each side's own 95 % interval: wide intervals agree trivially.",
        table(["paired ratio", "A", "A half-width", "B", "B half-width", "B - A", "limit", "verdict"], rows)]) + "\n"


def split(rounds: R.Rounds, k: int) -> tuple[R.Rounds, R.Rounds]:
    """Rounds 1..k and k+1..n of one folder: two measurements made one after the other when the
    later rounds were added afterwards (resumed with a larger rounds.count)."""
    if not 1 <= k < rounds.count:
        raise ValueError(f"--split: {k} must leave rounds on both sides of {rounds.count} rounds")
    return R.Rounds(rounds.schedule, rounds.runs[:k]), R.Rounds(rounds.schedule, rounds.runs[k:])


def _write(out: dict, md: str, reports_dir: Path, extra: dict) -> int:
    write_json(reports_dir / AB_JSON.name, {**out, **extra})
    atomic_write(reports_dir / AB_MD.name, md)
    log(f"{verdict(out)} -> {reports_dir / AB_MD.name}")
    return 0 if out["agree"] in (True, None) else 1


def run(params: Params, params_path: str = "params.yaml", fresh: bool = False,
        against: Path = paths.ROUNDS, reports_dir: Path = paths.REPORTS, split_at: int | None = None) -> int:
    names = [v.name for v in params.all_variants()]
    if split_at is not None:
        a, b = split(R.load(names, Path(against)), split_at)
        out = compare(a, b, params.report.baseline)
        md = markdown(out, f"rounds 1-{split_at} of {against}",
                      f"rounds {split_at + 1}-{split_at + b.count} of {against}, measured after A")
        return _write(out, md, reports_dir, {"a": f"{against} rounds 1-{split_at}",
                                             "b": f"{against} rounds {split_at + 1}-{split_at + b.count}"})
    if fresh:
        log("A: measuring the rounds (1 of 2)")
        measure.run(params, params_path, SCRATCH / "A" / "rounds")
        a_dir, a_label = SCRATCH / "A" / "rounds", "measured now, before B"
    else:
        a_dir, a_label = Path(against), f"{against} (the committed measurement)"
        R.load(names, a_dir)   # refuse now, not after B's hour, when A is missing or incomplete
    log("B: measuring the rounds" + (" (2 of 2)" if fresh else ""))
    measure.run(params, params_path, SCRATCH / "B" / "rounds")
    out = compare(R.load(names, a_dir), R.load(names, SCRATCH / "B" / "rounds"), params.report.baseline)
    md = markdown(out, a_label, "measured now" + (", after A" if fresh else ""))
    return _write(out, md, reports_dir, {"a": str(a_dir), "b": str(SCRATCH / "B" / "rounds")})
