"""Interleaved rounds: the order they run in, the record they leave, and what is read back from them.

A round runs every variant once, each as its own process (the core mask, the thread pools and
the logical devices are fixed when TensorFlow starts, so variants cannot share one).  The order
changes from round to round so that the host's drift between processes lands on every variant
alike, and every comparison is made inside a round (stats.paired).  The stage that runs them is
measure.py; this module is what the report reads, and so loads no TensorFlow:

    results/rounds/schedule.json        the plan (seed, order, core rotation) and, per process,
                                        its wall time, exit, and the host's load beside it
    results/rounds/r01/<variant>.json   one result (results.Result) per process

The order: the rows of a Williams square (Williams 1949) over the variants, the variants' places in
it a seeded shuffle.  Over as many rounds as there are variants (twice that for an odd count) every
variant runs once at every position, and every variant follows every other equally often, so neither
a place in the round nor the process that ran just before (a host warmed or cooled by it) lands on
one variant more than another.  A plain rotation kept the neighbours: one variant followed the same
other in every round.  The seed and the orders are recorded.  The one-replica runs rotate their
core too (`first_core`).
"""

from __future__ import annotations

import random
import statistics
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, ValidationError

from . import paths
from .io import OutputError, read_json
from .results import Result, ResultError, load as load_result, make as make_result

SCHEDULE_SCHEMA = 1
# A first timed epoch this much slower than the median of the process's later epochs is still warming
# up: it is left out of the process's time (and counted in the report), by rule, not by eye.
SETTLE_TOLERANCE = 0.10


class RoundsError(RuntimeError):
    """The rounds' record is missing, incomplete, of another schema or disagrees with its results."""


def williams(n: int) -> list[list[int]]:
    """A Williams square on 0..n-1: a Latin square whose rows, taken together, put every ordered pair
    of neighbours once (n even); for n odd the square and its mirror, 2n rows, put each twice."""
    first = [0]
    for k in range(1, n):   # 0, 1, n-1, 2, n-2, ...
        first.append((k + 1) // 2 if k % 2 else n - k // 2)
    rows = [[(x + r) % n for x in first] for r in range(n)]
    return rows if n % 2 == 0 else rows + [row[::-1] for row in rows]


def order(variants: list[str], count: int, seed: int) -> list[list[str]]:
    """The variants' order in each of `count` rounds: the rows of a Williams square in turn, its
    symbols the variants in a seeded shuffle (more rounds extend the list, never reshuffle it)."""
    names = list(variants)
    random.Random(seed).shuffle(names)
    rows = williams(len(names)) if names else [[]]
    return [[names[i] for i in rows[k % len(rows)]] for k in range(count)]


def first_core(round_index: int, usable: int) -> int:
    """The core a round's processes start their core list at: 0, 1, ... in turn (one-replica runs
    move across the cores; runs that use every core are unaffected)."""
    return round_index % max(1, usable)


class Process(BaseModel):
    """One process of one round, as the stage recorded it."""
    model_config = ConfigDict(extra="forbid", frozen=True)

    round: int                 # 1-based
    position: int              # 1-based place in the round's order
    variant: str
    first_core: int            # where its core list started (one-replica runs; a multi-worker job gives
                               # each worker its own slice and is not rotated)
    started_at: str
    wall_seconds: float
    exit_code: int
    load_before: list[float]   # /proc/loadavg: 1, 5, 15 min, just before the process started
    load_after: list[float]
    steal_share: Optional[float]    # of the host's CPU time while it ran (/proc/stat), 0..1
    foreign_share: Optional[float]  # host CPU busy time not spent by this process, of all CPUs, 0..1
    busy: bool                 # foreign_share or steal_share above the stage's limit


class Schedule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int
    fingerprint: str           # params, code, data and host it was planned for (measure.fingerprint)
    seed: int
    count: int
    variants: list[str]
    order: list[list[str]]
    usable_cores: int
    busy_share: float
    processes: list[Process]

    def done(self, round_no: int, variant: str) -> bool:
        return any(p.round == round_no and p.variant == variant for p in self.processes)

    @property
    def complete(self) -> bool:
        return len(self.processes) == self.count * len(self.variants)


def load_schedule(path: Path) -> Schedule:
    if not Path(path).is_file():
        raise RoundsError(f"{path}: no rounds recorded; run `dvc repro` (stage rounds) first")
    try:
        raw = read_json(path)
    except (OSError, ValueError, OutputError) as exc:
        raise RoundsError(str(exc)) from None
    if not isinstance(raw, dict) or raw.get("schema_version") != SCHEDULE_SCHEMA:
        raise RoundsError(f"{path}: not a schedule of schema {SCHEDULE_SCHEMA}; rerun `dvc repro`")
    try:
        return Schedule.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise RoundsError(f"{path}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None


def settled_epochs(r: Result) -> tuple[list[float], int]:
    """The process's timed epochs with a leading unsettled one left out (at most one, and only with
    at least two after it): (epochs kept, epochs dropped)."""
    e = list(r.epoch_seconds)
    if len(e) >= 3 and e[0] > (1.0 + SETTLE_TOLERANCE) * statistics.median(e[1:]):
        return e[1:], 1
    return e, 0


def process_seconds(r: Result) -> float:
    """The one number a process contributes to a comparison: its median settled epoch times the
    epochs of one repeat (the seconds of one timed call, robust to one slow epoch)."""
    kept, _ = settled_epochs(r)
    return statistics.median(kept) * r.epochs


class Rounds:
    """Every process's result, by round and variant, with the schedule that ran them."""

    def __init__(self, schedule: Schedule, runs: list[dict[str, Result]]):
        self.schedule = schedule
        self.runs = runs                      # runs[round - 1][variant]

    @property
    def count(self) -> int:
        return len(self.runs)

    def of(self, variant: str) -> list[Result]:
        return [rnd[variant] for rnd in self.runs]

    def seconds(self, variant: str) -> list[float]:
        """Per round, the variant's process time (process_seconds): the input of every paired ratio."""
        return [process_seconds(r) for r in self.of(variant)]

    def unsettled(self) -> list[tuple[int, str]]:
        return [(k + 1, v) for k, rnd in enumerate(self.runs) for v, r in rnd.items() if settled_epochs(r)[1]]

    def epochs(self, variant: str) -> list[list[list[float]]]:
        """runs[round][repeat][epoch] of settled epoch seconds (stats.components' input)."""
        out = []
        for r in self.of(variant):
            kept, dropped = settled_epochs(r)
            flat = [None] * dropped + kept
            out.append([[s for s in flat[i * r.epochs:(i + 1) * r.epochs] if s is not None]
                        for i in range(r.repeats)])
        return out

    def busy(self) -> list[Process]:
        return [p for p in self.schedule.processes if p.busy]

    def pooled(self) -> list[Result]:
        """One result per variant, in the params' order: every round's repeats side by side (for the
        per-epoch table, the figures and the model); comparisons use `seconds`, never these."""
        return [pool(self.of(v)) for v in self.runs[0]]


def pool(runs: list[Result]) -> Result:
    """The rounds of one variant as one record: epochs and repeats concatenated in round order, the
    median repeat as its time, the first and last times as its span.  What describes the process
    (devices, budget, provenance) is the first round's; the report warns when rounds differ."""
    first = runs[0]
    if len(runs) == 1:
        return first
    d: dict[str, Any] = first.as_dict()
    d.pop("schema_version")
    for key in ("epoch_seconds", "epoch_loss", "epoch_accuracy", "epoch_images", "repeat_seconds",
                "repeat_wall_seconds"):
        d[key] = [x for r in runs for x in getattr(r, key)]
    steps = [r.step_seconds for r in runs]
    d["step_seconds"] = None if any(s is None for s in steps) else [x for s in steps for x in s]
    d["repeats"] = sum(r.repeats for r in runs)
    d["timed_seconds"] = statistics.median(d["repeat_seconds"])
    d["images_per_second"] = first.images_per_epoch * first.epochs / d["timed_seconds"]
    d["warmup_seconds"] = statistics.median(r.warmup_seconds for r in runs)
    d["stage_seconds"] = sum(r.stage_seconds for r in runs)
    d["final_loss"], d["final_accuracy"] = runs[-1].final_loss, runs[-1].final_accuracy
    d["started_at"], d["finished_at"] = runs[0].started_at, runs[-1].finished_at
    return make_result(d)


def load(variants: list[str], rounds_dir: Path = paths.ROUNDS) -> Rounds:
    """The complete rounds for `variants` (the params' variants, in their order), checked against the
    schedule: every process recorded, every result present and of the variant it names."""
    sched = load_schedule(rounds_dir / paths.SCHEDULE.name)
    if sorted(sched.variants) != sorted(variants):
        raise RoundsError(f"{rounds_dir / paths.SCHEDULE.name}: ran variants {', '.join(sched.variants)}, "
                          f"the params declare {', '.join(variants)}; rerun `dvc repro`")
    if not sched.complete:
        raise RoundsError(f"{rounds_dir / paths.SCHEDULE.name}: {len(sched.processes)} of "
                          f"{sched.count * len(sched.variants)} processes recorded (interrupted?); `dvc repro` "
                          f"resumes where it stopped")
    runs = []
    for k in range(1, sched.count + 1):
        rnd = {}
        for v in variants:
            path = paths.round_result(k, v, rounds_dir)
            try:
                r = load_result(path)
            except ResultError as exc:
                raise RoundsError(str(exc)) from None
            if r.variant != v:
                raise RoundsError(f"{path}: holds variant {r.variant!r}, expected {v!r}")
            rnd[v] = r
        runs.append(rnd)
    return Rounds(sched, runs)
