"""Reproducibility, tested: the headline rounds measured twice, A then B, and every distinct paired
ratio judged by an equivalence test.

    python -m flowerbench ab                 # B measured now, A = the committed results/rounds
    python -m flowerbench ab --fresh         # A and B both measured now, one after the other
    python -m flowerbench ab --split 3       # nothing measured: A = rounds 1-3 of results/rounds, B = the
                                             # later ones (rounds added afterwards with -S rounds.count=N)
    python -m flowerbench ab --against reports/reference/<name>/results/rounds
    python -m flowerbench ab --against DIR_A --with DIR_B    # nothing measured: two committed measurements

Each measurement is the headline stage's own (measure.run with measure.headline: the headline
variants, held, the params' rounds.count), written to .dvc/tmp/ab/<A|B>/rounds (resumable like the
stage); a folder given (--against, --with) may hold more variants, and only the headline's are read.  The ratios compared are the distinct ones
(metrics.compared_ratios: each multi-replica or threads run against the baseline and against its
same-loop single run; an efficiency is a speed-up over N, not another number).  Each is judged by
stats.tost on the log of B's ratio over A's, in a band of +-BAND_PCT (symmetric on the log scale):

  * "reproduces" when the 90 % interval of B/A lies inside the band;
  * "differs" when the 95 % interval, Bonferroni-corrected over the ratios compared (a claim that
    *any* differs), lies wholly outside it;
  * "undetermined" otherwise: agreement by a wide interval is absence of evidence, and says so.

"Reproduces on every ratio" is an intersection of tests and needs no correction.  Beside each: whether
the (uncorrected) 95 % interval excludes 1, a detectable shift.  The standard error comes from the
within-run variance pooled (analysis/pool.py) over A, B and the committed references of their kind when A and B
are of one host identity, engine and params; otherwise each side keeps its own pool (Welch).  The
between-run component is reported.  Absolute seconds are not compared (they differ between machines).
Writes reports/ab.md and reports/ab.json; exit 0 when every ratio reproduces, 1 otherwise.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Optional

from flowerbench.measuring import scheduler as measure
from flowerbench.core import paths
from flowerbench.analysis import pool as P, rounds as R, stats as S
from flowerbench.core.config import Params
from flowerbench.core.io import atomic_write, write_json
from flowerbench.core.log import get_logger
from flowerbench.analysis.metrics import compared_ratios
from flowerbench.core.render import table

log = get_logger("ab").info

SCRATCH = Path(".dvc/tmp/ab")
AB_MD, AB_JSON = paths.REPORTS / "ab.md", paths.REPORTS / "ab.json"
BAND_PCT = 15.0
REPRODUCES, DIFFERS, UNDETERMINED = "reproduces", "differs", "undetermined"
WORD = {S.EQUIVALENT: REPRODUCES, S.DIFFERENT: DIFFERS, S.UNDETERMINED: UNDETERMINED}


def ratios(rounds: R.Rounds, baseline: str) -> dict[str, tuple[str, str]]:
    """The distinct paired ratios the runs are judged by: name -> (against, variant)."""
    return {f"{r.variant} speed-up vs {other}": (other, r.variant)
            for r, other, _ in compared_ratios(rounds, rounds.pooled(), baseline)}


def _side(pool: P.Pool, against: str, variant: str) -> tuple[list[float], Optional[tuple[float, float]]]:
    rr = pool.here
    return S.logs_of(rr.seconds(against), rr.seconds(variant)), pool.spread(against, variant)


def compare(a: R.Rounds, b: R.Rounds, baseline: str, pool_a: Optional[P.Pool] = None,
            pool_b: Optional[P.Pool] = None) -> dict:
    """Every distinct ratio of A and B, judged (module docstring).  `pool_a`, `pool_b`: each side's pool
    (pool.load); default: each run alone."""
    in_a, in_b = ratios(a, baseline), ratios(b, baseline)
    names = [n for n in in_a if n in in_b]
    one = P.same_kind(a, b)
    pool_a = pool_a or P.Pool([a], ["A"])
    pool_b = pool_b or P.Pool([b], ["B"])
    refs = [(r, n) for r, n in zip(pool_a.runs[1:], pool_a.names[1:]) if not P.processes(r) & P.processes(b)]
    both = P.Pool([a, *[r for r, _ in refs], b], ["A", *[n for _, n in refs], "B"]) if one else None
    rows = []
    for n in names:
        against, variant = in_a[n]
        la, sa = _side(pool_a, against, variant)
        lb, sb = _side(pool_b, against, variant)
        d = statistics.fmean(lb) - statistics.fmean(la)
        between = None
        if both is not None:
            c = both.components(against, variant)
            se = None if c["within_sd"] is None else c["within_sd"] * math.sqrt(1 / len(la) + 1 / len(lb))
            df, between = c["df_within"], c["between_sd"]
        elif sa and sb:
            se, df = S.welch(sa[0] ** 2 / len(la), sa[1], sb[0] ** 2 / len(lb), sb[1])
        else:
            se = df = None
        t = S.tost(d, se, df, BAND_PCT, alpha_differs=0.05 / len(names))
        shift = S.tost(d, se, df, BAND_PCT)["shift"]
        ea, eb = S.from_logs(la, sa), S.from_logs(lb, sb)
        rows.append({"ratio": n, "a": ea.point, "a_half_width_pct": ea.half_width_pct, "b": eb.point,
                     "b_half_width_pct": eb.half_width_pct, "difference_pct": t["difference_pct"],
                     "interval90_pct": t["equivalence_interval_pct"], "interval95_pct": t["difference_interval_pct"],
                     "verdict": WORD[t["verdict"]], "shift": shift, "se": se, "df": df,
                     "between_run_sd": between})
    verdicts = [r["verdict"] for r in rows]
    overall = (None if not rows else DIFFERS if DIFFERS in verdicts else
               REPRODUCES if all(v == REPRODUCES for v in verdicts) else UNDETERMINED)
    return {"compared": len(names), "rounds_a": a.count, "rounds_b": b.count, "band_pct": BAND_PCT,
            "pooled": "A, B and their references (one host identity, engine and params)" if one else
                      "each side's own (another host identity, engine or params: Welch)",
            "rows": rows, "verdict": overall}


def sentence(out: dict) -> str:
    """The comparison in one sentence (the table's bold line and the log's)."""
    v, k = out["verdict"], out["compared"]
    if v is None:
        return "Nothing to compare."
    if v == REPRODUCES:
        return f"B REPRODUCES A on every one of the {k} paired ratios (within ±{out['band_pct']:g} %)."
    if v == DIFFERS:
        bad = [r["ratio"] for r in out["rows"] if r["verdict"] == DIFFERS]
        return f"B DIFFERS from A on {len(bad)} of {k} paired ratio(s): {', '.join(bad)}."
    und = [r["ratio"] for r in out["rows"] if r["verdict"] == UNDETERMINED]
    return (f"UNDETERMINED: {len(und)} of {k} paired ratio(s) can neither be shown to reproduce nor to differ "
            f"(their intervals are too wide): {', '.join(und)}.")


def markdown(out: dict, a_label: str, b_label: str) -> str:
    def pct(x):
        return "n/a" if x is None else f"±{x:.1f} %"

    def iv(x):
        return "n/a" if x is None else f"[{x[0]:+.1f}, {x[1]:+.1f}] %"

    rows = [[r["ratio"], f"{r['a']:.3f}", pct(r["a_half_width_pct"]), f"{r['b']:.3f}", pct(r["b_half_width_pct"]),
             f"{r['difference_pct']:+.1f} %", iv(r["interval90_pct"]), iv(r["interval95_pct"]),
             {True: "yes", False: "no", None: "n/a"}[r["shift"]], r["verdict"]] for r in out["rows"]]
    k = out["compared"]
    return "\n\n".join([
        "# A/B: the same measurement twice", f"A: {a_label} ({out['rounds_a']} round(s)). B: {b_label} "
        f"({out['rounds_b']} round(s)).",
        f"**{sentence(out)}** The rule (an equivalence test, stats.tost, on the log of B's ratio over A's): "
        f"*reproduces* when the 90 % interval of B/A lies inside ±{out['band_pct']:g} % (symmetric on the log "
        f"scale); *differs* when the 95 % interval, Bonferroni-corrected over the {k} ratios (1 - 0.05 / {k}), lies "
        f"wholly outside it; *undetermined* otherwise. \"Shift\": the uncorrected 95 % interval excludes 1. "
        f"Spread: {out['pooled']}. Only distinct numbers are compared (an efficiency is its speed-up over N).",
        table(["paired ratio", "A", "A half-width", "B", "B half-width", "B/A - 1", "90 % interval",
               "95 % interval (corrected)", "shift", "verdict"], rows)]) + "\n"


def split(rounds: R.Rounds, k: int) -> tuple[R.Rounds, R.Rounds]:
    """Rounds 1..k and k+1..n of one folder: two measurements made one after the other when the
    later rounds were added afterwards (resumed with a larger rounds.count)."""
    if not 1 <= k < rounds.count:
        raise ValueError(f"--split: {k} must leave rounds on both sides of {rounds.count} rounds")
    return R.Rounds(rounds.schedule, rounds.runs[:k]), R.Rounds(rounds.schedule, rounds.runs[k:])


def _write(out: dict, md: str, reports_dir: Path, extra: dict) -> int:
    write_json(reports_dir / AB_JSON.name, {**out, **extra})
    atomic_write(reports_dir / AB_MD.name, md)
    log(f"{sentence(out)} -> {reports_dir / AB_MD.name}")
    return 0 if out["verdict"] == REPRODUCES else 1


def judge(a: R.Rounds, b: R.Rounds, baseline: str, names: list[str]) -> dict:
    """compare() with each side pooled with the committed references of its kind."""
    return compare(a, b, baseline, P.load(a, names), P.load(b, names))


def run(params: Params, params_path: str = "params.yaml", fresh: bool = False,
        against: Path = paths.ROUNDS, reports_dir: Path = paths.REPORTS, split_at: int | None = None,
        with_b: Path | None = None) -> int:
    names = [v.name for v in params.headline_variants()]

    def load(folder: Path) -> R.Rounds:
        return R.load(names, Path(folder), subset=True)

    if with_b is not None:
        out = judge(load(against), load(with_b), params.report.baseline, names)
        md = markdown(out, f"{against}", f"{with_b}")
        return _write(out, md, reports_dir, {"a": str(against), "b": str(with_b)})
    if split_at is not None:
        a, b = split(load(against), split_at)
        out = judge(a, b, params.report.baseline, names)
        md = markdown(out, f"rounds 1-{split_at} of {against}",
                      f"rounds {split_at + 1}-{split_at + b.count} of {against}, measured after A")
        return _write(out, md, reports_dir, {"a": f"{against} rounds 1-{split_at}",
                                             "b": f"{against} rounds {split_at + 1}-{split_at + b.count}"})
    if fresh:
        log("A: measuring the headline rounds (1 of 2)")
        measure.run(params, params_path, measure.headline(params, SCRATCH / "A" / "rounds"))
        a_dir, a_label = SCRATCH / "A" / "rounds", "measured now, before B"
    else:
        a_dir, a_label = Path(against), f"{against} (the committed measurement)"
        load(a_dir)   # refuse now, not after B's measurement, when A is missing or incomplete
    log("B: measuring the headline rounds" + (" (2 of 2)" if fresh else ""))
    measure.run(params, params_path, measure.headline(params, SCRATCH / "B" / "rounds"))
    out = judge(load(a_dir), load(SCRATCH / "B" / "rounds"), params.report.baseline, names)
    md = markdown(out, a_label, "measured now" + (", after A" if fresh else ""))
    return _write(out, md, reports_dir, {"a": str(a_dir), "b": str(SCRATCH / "B" / "rounds")})
