"""Precision: how many rounds ran, in what order, where the variance lives (and what pairing removed),
what the intervals' spread was pooled over, which speed-ups reached the precision target, and what
the variance split says the next run should use."""

from __future__ import annotations

from flowerbench.analysis.metrics import ESTIMATOR_WORDS, SETTLE_TOLERANCE
from flowerbench.core.render import bullets, table
from flowerbench.report.cells import fmt, pairing_words

CLOSE = 0.10   # two spreads this close (relative) are "about as noisy"
LEVELS = (("round", "between processes (one per round)"), ("repeat", "between repeats in one process"),
          ("epoch", "between epochs in one repeat"))


def where_words(variance: dict) -> str:
    """Which level holds the variance, in one sentence."""
    pooled = variance["pooled"]
    proc, epoch = pooled["round"]["sd_pct"], pooled["epoch"]["sd_pct"]
    if proc is None or epoch is None:
        return "Where the variance lives cannot be split with one round."
    if proc >= epoch:
        return (f"The variance lives between processes: an sd of {proc:.1f} % between processes against {epoch:.1f} % "
                f"between epochs of one process (log seconds); each process has its own speed, so the process is "
                f"the unit of replication, and {pairing_words(variance)}.")
    return (f"In this run the variance lived between epochs of one process: an sd of {epoch:.1f} % between epochs "
            f"against {proc:.1f} % between processes (log seconds), so more epochs per process would pay (the "
            f"counts below); {pairing_words(variance)}.")


def _part_lines(title: str, part, facts: dict) -> list[str]:
    """One part's rounds: how they ran, their order, cores, minutes (metrics.rounds_facts) and busy
    processes."""
    s = part.schedule
    minutes = facts["minutes"]
    rotated = s.usable_cores > 1 and len({p.first_core for p in s.processes}) > 1
    held = all(p.held for p in s.processes)
    how = (f"held (engine {s.engine}): a round's processes warmed up two at a time, each on the cores it is "
           f"timed on, then were released one timed epoch at a time, cycling through the round in its order, "
           f"nothing else running" if held else f"sequential (engine {s.engine}): each process from its start to "
           f"its exit, one after another")
    return [f"**{title}:** {s.count} round(s) x {len(s.variants)} variants ({', '.join(s.variants)}), each a "
            f"process of its own, {how}. Order: the rows of a Williams square (every place, and every variant "
            f"after every other, equally often, in each complete square of {len(s.variants)} rounds: "
            f"{facts['complete_squares']} complete here), the variants placed in it by a shuffle with order seed {s.order_seed} "
            f"(drawn for this measurement unless rounds.order_seed fixes it; the training seed {s.seed} is "
            f"another); the one-replica runs' cores were "
            + (f"rotated: each round starts them at its own first core (over {s.usable_cores})" if rotated else
               "not rotated (one usable core, or one round)")
            + f". A round took {facts['minutes_min']:.1f}-{facts['minutes_max']:.1f} min, "
              f"{facts['minutes_total']:.1f} min in all.",
            table(["round", "order", "first core", "minutes", "busy processes"],
                  [[k, " > ".join(order), next(p.first_core for p in s.processes if p.round == k),
                    f"{minutes[k - 1]:.1f}",
                    ", ".join(p.variant for p in s.processes if p.round == k and p.busy) or "none"]
                   for k, order in enumerate(s.order, start=1)])]


def precision(rounds, variance: dict, facts: dict) -> list[str]:
    """The section: rounds and order, the components, each ratio's half-width against the target, the
    counts the components call for, busy processes and unsettled warm-ups.  `facts`:
    metrics.rounds_facts."""
    s = rounds.schedule
    target = variance["target_pct"]
    out = ["## Precision: rounds, and where the variance lives"]
    for (title, name), part in zip((("The headline rounds", "headline"), ("The secondary rounds", "secondary")),
                                   rounds.parts):
        out += _part_lines(title if len(rounds.parts) > 1 else "The rounds", part, facts[name])
    rows = []
    for level, words in LEVELS:
        c = variance["pooled"][level]
        rows.append([words, "not separable (1 repeat per process: inside the level above)"
                     if c["sd_pct"] is None else f"{c['sd_pct']:.2f} %", c["variants"]])
    out += ["Variance components of log epoch seconds (method of moments for the nested design of Kalibera & "
            "Jones, ISMM 2013; the sd of a log is close to a relative sd), averaged over the headline's variants in "
            "every run the intervals pool (the column counts them):",
            table(["level", "sd", "variants x runs"], rows), where_words(variance)]
    est = variance.get("estimator")
    if est:
        out.append(f"A process's time: the {ESTIMATOR_WORDS[est]}, the estimator with the smallest between-process variance "
                   f"on the committed measurements (analysis/estimators.py; docs/performance.md). Every epoch counts: the "
                   f"warm-up rule of earlier runs (a first epoch more than {SETTLE_TOLERANCE:.0%} slower than the rest "
                   f"left out) only ever shortened a time. The blog's whole-call window gives the ratio beside each "
                   f"speed-up below.")
    pool = variance.get("pool")
    if pool:
        out.append(pool["words"] + (" Not pooled: " + "; ".join(f"{k} ({v})" for k, v in pool["left_out"].items())
                                    + "." if pool["left_out"] else ""))
    ratios = variance["ratios"]
    if ratios:
        targeted = [x for x in ratios.values() if x["targeted"]]
        missed = [x for x in targeted if x["half_width_pct"] is None or x["half_width_pct"] > target]

        def target_word(x: dict) -> str:
            if not x["targeted"]:
                return "not targeted (one replica)"
            if x["half_width_pct"] is None:
                return "n/a"
            return "reached" if x["half_width_pct"] <= target else "MISSED"

        def whole(x: dict) -> str:
            return "n/a" if x.get("whole_call") is None else (
                f"{x['whole_call']:.2f}" + ("" if x["whole_call_low"] is None else
                                            f" [{x['whole_call_low']:.2f}, {x['whole_call_high']:.2f}]"))

        def pooled_sd(x: dict) -> str:
            return f"{fmt(x['log_sd'], '.3f')} (df {fmt(x.get('df'), '.0f')}, {x.get('pooled_runs', 1)} run(s))"

        out += [f"Half-widths of the multi-replica speed-ups against the target of ±{target:g} % (95 %), and the "
                f"threads run's beside them. The spread of a log ratio: this run's own over its rounds, and the "
                f"pooled within-run one the interval uses; between runs: the sd between measurements of this "
                f"kind (n/a with one); pairing removed: 1 - var(paired) / (var(arm) + var(baseline)) over this "
                f"run's rounds; CPU time: the sd of the same ratio of the processes' CPU times over their timed "
                f"epochs.",
                table(["speed-up", "against", "own sd", "pooled sd", "between runs", "pairing removed",
                       "CPU-time sd", "half-width", "target", f"rounds for ±{target:g} %", "whole call [95% CI]"],
                      [[x["variant"], x["against"], fmt(x.get("own_log_sd"), ".3f"), pooled_sd(x),
                        fmt(x.get("between_run_sd"), ".3f"),
                        "n/a" if x.get("removed_pct") is None else f"{x['removed_pct']:.0f} %",
                        fmt(x.get("cpu_log_sd"), ".3f"),
                        "n/a" if x["half_width_pct"] is None else f"±{x['half_width_pct']:.1f} %",
                        target_word(x), fmt(x["rounds_needed"], "d"), whole(x)] for x in ratios.values()]),
                cpu_words(variance),
                (f"{len(missed)} of {len(targeted)} multi-replica speed-ups missed ±{target:g} %: "
                 + ", ".join(f"{x['variant']} vs {x['against']} ({x.get('part', 'headline')} rounds, "
                             f"{rounds.home(x['variant']).count} of them)" for x in missed) + "."
                 if missed else f"Every multi-replica speed-up reached ±{target:g} % with the rounds measured.")]
    c, cost = variance["counts"], variance["costs_seconds"]
    need, per = c.get("rounds"), facts["headline"]["minutes_mean"] * 60
    sec = facts.get("secondary")
    out.append(
        f"What these components call for at this run's costs (the headline rounds: a timed epoch "
        f"{cost['epoch']:.2f} s, a process's start and warm-up {cost['process']:.0f} s of wall time"
        + (", half of its own since two warm up at once" if all(p.held for p in s.processes) else "")
        + f"): {c['epochs_per_repeat']} timed epoch(s) per repeat and {c['repeats_per_process']} repeat(s) per "
        f"process (Kalibera & Jones's rule: repetitions at a level in proportion to the square root of its variance "
        f"over the level above's, times the cost ratio)"
        + (f"; the {c['configured_epochs']} configured cost {c['configured_excess_pct']:.0f} % more minutes for the same "
           f"variance than {c['epochs_per_repeat']} would" if c.get("configured_excess_pct") is not None
           and c["configured_epochs"] != c["epochs_per_repeat"] else "")
        + ", and "
        + (f"{need} headline round(s) for every headline multi-replica speed-up to reach ±{target:g} % (about "
           f"{need * per / 60:.0f} min at this run's {per / 60:.1f} min per headline round; from the pooled "
           f"spread, itself an estimate)" if need else "no round count (no spread measured)")
        + (f"; {c['secondary_rounds']} secondary round(s) for the secondary's multi-replica ones (about "
           f"{c['secondary_rounds'] * sec['minutes_mean']:.0f} min at {sec['minutes_mean']:.1f} min per secondary "
           f"round)." if c.get("secondary_rounds") and sec else "."))
    notes = []
    unsettled = rounds.unsettled()
    if unsettled:
        notes.append(f"{len(unsettled)} of {len(rounds.results())} process(es) had a first timed epoch more than "
                     f"{SETTLE_TOLERANCE:.0%} slower than the median of the rest; the estimator keeps it (no rule "
                     f"drops epochs): " + ", ".join(f"round {k} {v}" for k, v in unsettled) + ".")
    busy = rounds.busy()
    notes.append(f"{len(busy)} process(es) ran on a busy host (other work or steal above {s.busy_share:.0%} of the "
                 f"CPU time, from /proc/stat beside each process)" + (": " + ", ".join(
                     f"round {p.round} {p.variant}" for p in busy) if busy else "") + ".")
    return out + [bullets(notes)]


def cpu_words(variance: dict) -> str:
    """Whether the processes' CPU-time ratios are less noisy than their wall-time ones (this run:
    metrics.variance_split's cpu_against_wall)."""
    c = variance["cpu_against_wall"]
    if not c:
        return "CPU time: not recorded by these results (result schema 5), so no comparison."
    cpu, wall = c["cpu_median_sd"], c["wall_median_sd"]
    word = ("less noisy here" if cpu < (1 - CLOSE) * wall else "more noisy here" if cpu > (1 + CLOSE) * wall else
            f"about as noisy here (the medians within {CLOSE:.0%} of each other)")
    return (f"CPU time against wall time: the CPU-time ratios had the smaller spread on {c['cpu_smaller']} of "
            f"{c['ratios']} ratios (median sd {cpu:.3f} against {wall:.3f}), so CPU time is " + word
            + "; it measures cost, not speed (a multi-replica run spends CPU on every core it has), so the "
              "speed-ups stay on wall time.")
