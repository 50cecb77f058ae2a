"""Precision: how many rounds ran, in what order, where the variance lives, which speed-ups reached
the precision target, and what the variance split says the next run should use."""

from __future__ import annotations

from ..render import bullets, table
from ..rounds import SETTLE_TOLERANCE
from .cells import fmt

LEVELS = (("round", "between rounds (processes)"), ("repeat", "between repeats in one process"),
          ("epoch", "between epochs in one repeat"))


def between_rounds_words(variance: dict) -> str:
    """'4.1 %': the sd between processes this run measured (the drift a sentence may quote)."""
    sd = variance["pooled"]["round"]["sd_pct"]
    return "n/a (one round)" if sd is None else f"{sd:.1f} %"


def precision(rounds, variance: dict) -> list[str]:
    """The section: rounds and order, the components, each ratio's half-width against the target, the
    counts the components call for, busy processes and unsettled warm-ups."""
    s = rounds.schedule
    target = variance["target_pct"]
    per_round = [sum(p.wall_seconds for p in s.processes if p.round == k) for k in range(1, s.count + 1)]
    out = ["## Precision: rounds, and where the variance lives",
           f"{s.count} round(s) x {len(s.variants)} variants, each a process of its own; order: the rows of a "
           f"Williams square (every place, and every variant after every other, equally often), the variants "
           f"placed in it by a shuffle seeded with {s.seed}; the one-replica runs start their cores at the round's "
           f"first core (rotated over {s.usable_cores}). A round took {min(per_round) / 60:.1f}-"
           f"{max(per_round) / 60:.1f} min.",
           table(["round", "order", "first core", "busy processes"],
                 [[k, " > ".join(order), next(p.first_core for p in s.processes if p.round == k),
                   ", ".join(p.variant for p in s.processes if p.round == k and p.busy) or "none"]
                  for k, order in enumerate(s.order, start=1)])]
    rows = []
    for level, words in LEVELS:
        c = variance["pooled"][level]
        rows.append([words, "not separable (1 repeat per process: inside the level above)"
                     if c["sd_pct"] is None else f"{c['sd_pct']:.2f} %", c["variants"]])
    out += ["Variance components of log epoch seconds (method of moments for the nested design of Kalibera & "
            "Jones, ISMM 2013; the sd of a log is close to a relative sd), averaged over variants:",
            table(["level", "sd", "variants"], rows)]
    ratios = variance["ratios"]
    if ratios:
        targeted = [x for x in ratios.values() if x["targeted"]]
        missed = [x for x in targeted if x["half_width_pct"] is None or x["half_width_pct"] > target]

        def verdict(x: dict) -> str:
            if not x["targeted"]:
                return "not targeted (one replica)"
            if x["half_width_pct"] is None:
                return "n/a"
            return "reached" if x["half_width_pct"] <= target else "MISSED"

        out += [f"Half-widths of the multi-replica speed-ups against the target of ±{target:g} % (95 %), and the "
                f"threads run's beside them:",
                table(["speed-up", "against", "sd of log ratio over rounds", "half-width", "target",
                       f"rounds for ±{target:g} %"],
                      [[x["variant"], x["against"], fmt(x["log_sd"], ".3f"),
                        "n/a" if x["half_width_pct"] is None else f"±{x['half_width_pct']:.1f} %",
                        verdict(x), fmt(x["rounds_needed"], "d")] for x in ratios.values()]),
                (f"{len(missed)} of {len(targeted)} multi-replica speed-ups missed ±{target:g} % with "
                 f"{s.count} round(s): " + ", ".join(f"{x['variant']} vs {x['against']}" for x in missed) + "."
                 if missed else f"Every multi-replica speed-up reached ±{target:g} % with {s.count} round(s).")]
    c, cost = variance["counts"], variance["costs_seconds"]
    need = c.get("rounds")
    per = sum(per_round) / len(per_round)
    out.append(
        f"What these components call for at this run's costs (a timed epoch {cost['epoch']:.2f} s, a process's "
        f"start and warm-up {cost['process']:.0f} s): {c['epochs_per_repeat']} timed epoch(s) per repeat and "
        f"{c['repeats_per_process']} repeat(s) per process (Kalibera & Jones's rule: repetitions at a level in "
        f"proportion to the square root of its variance over the level above's, times the cost ratio), and "
        + (f"{need} round(s) for every multi-replica speed-up to reach ±{target:g} % (about "
           f"{need * per / 60:.0f} min at this run's {per / 60:.1f} min per round; from this run's spread, "
           f"itself an estimate from {s.count} round(s))." if need else "no round count (no spread measured)."))
    notes = []
    unsettled = rounds.unsettled()
    if unsettled:
        notes.append(f"{len(unsettled)} of {len(s.processes)} process(es) had a first timed epoch more than "
                     f"{SETTLE_TOLERANCE:.0%} slower than the median of the rest (still warming up); by rule it was "
                     f"left out of their time: " + ", ".join(f"round {k} {v}" for k, v in unsettled) + ".")
    busy = rounds.busy()
    notes.append(f"{len(busy)} process(es) ran on a busy host (other work or steal above {s.busy_share:.0%} of the "
                 f"CPU time, from /proc/stat beside each process)" + (": " + ", ".join(
                     f"round {p.round} {p.variant}" for p in busy) if busy else "") + ".")
    return out + [bullets(notes)]
