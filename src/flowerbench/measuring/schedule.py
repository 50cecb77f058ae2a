"""The plan of a measurement in rounds and its record: what the measuring stage writes.

    results/rounds/schedule.json        the plan (order seed, order, core rotation) and, per process,
                                        its wall time, exit, and the host's load beside it

The order: the rows of a Williams square (Williams 1949) over the variants, the variants' places in
it a seeded shuffle.  Over as many rounds as there are variants (twice that for an odd count) every
variant runs once at every position, and every variant follows every other equally often, so neither
a place in the round nor the process that ran just before (a host warmed or cooled by it) lands on
one variant more than another.  The shuffle's seed is the order seed (rounds.order_seed; drawn afresh
for each measurement unless set, recorded here and reused when a measurement resumes), never the
training seed: with one fixed seed every 3-round measurement ran the same three rows of the square.
The one-replica runs rotate their core too (`first_core`).

This module is what measuring/scheduler.py (the measuring stage) imports; reading the rounds back and estimating
from them is analysis/rounds.py, which no measured process imports (an analysis edit re-measures nothing).
"""

from __future__ import annotations

import random
import secrets
from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict

from flowerbench.core.records import read_record

# 2: order_seed, the Williams square's shuffle (schema 1 shuffled with the training seed, `seed`)
# 3: a process's hold (held, ready_after_seconds, released_seconds, round_release_seconds)
SCHEDULE_SCHEMA = 3
READABLE_SCHEMAS = (1, 2, 3)
# The measuring engine's version: how the processes are started, ordered and timed.  Variances are
# pooled only over measurements of one engine (and one host identity, stats.random_effects); 0 is a
# schedule of schema 1, written before engines were numbered.  1: sequential, each process from start
# to exit; 2: held, the round's processes warmed two at a time and released one epoch at a time (core/hold.py).
ENGINE = 1
HELD_ENGINE = 2


class RoundsError(RuntimeError):
    """The rounds' record is missing, incomplete, of another schema or disagrees with its results."""


def draw_order_seed() -> int:
    """A fresh order seed for a measurement that sets none (rounds.order_seed: null)."""
    return secrets.randbelow(2 ** 31)


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
    # engine 2 (held): the shares above are read over the process's released epochs only
    held: bool = False
    ready_after_seconds: Optional[float] = None    # start to warmed up and held (start-up + warm-up)
    released_seconds: Optional[float] = None       # its timed epochs, as it reported them
    round_release_seconds: Optional[float] = None  # the round's whole release phase (every process's epochs)


class Schedule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int
    engine: int                # ENGINE of the code that measured (0: unknown, schema 1)
    fingerprint: str           # params, code, data and host it was planned for (scheduler.fingerprint)
    seed: int                  # the training seed the processes ran with
    order_seed: int            # the order's shuffle (rounds.order_seed, or drawn for this measurement)
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


def _schema_1(raw: dict) -> dict:
    """The committed references of schema 1: ordered by the training seed."""
    if raw["schema_version"] != 1:
        return raw
    return {**raw, "schema_version": SCHEDULE_SCHEMA, "engine": 0, "order_seed": raw.get("seed")}


def load_schedule(path: Path) -> Schedule:
    return read_record(path, Schedule, RoundsError, schema=SCHEDULE_SCHEMA, readable=READABLE_SCHEMAS,
                       missing="no rounds recorded; run `dvc repro` (stage rounds) first", upgrade=_schema_1)
