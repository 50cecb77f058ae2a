"""The rounds, read back: every process's result by round and variant, with its schedule.

A round runs every variant once, each as its own process (the core mask, the thread pools and
the logical devices are fixed when TensorFlow starts, so variants cannot share one), in the order
measuring/schedule.py plans; measuring/scheduler.py runs them.  This module is what the report, the A/B and validate read,
and no measured process imports it (an edit here re-measures nothing):

    results/rounds/schedule.json        the plan and the record of every process (schedule.Schedule)
    results/rounds/r01/<variant>.json   one result (results.Result) per process
    results/secondary/...               the same for the secondary stage's variants and baselines

A run is a `Study`: its headline rounds and, where the secondary stage ran, its secondary rounds.  A
ratio pairs the processes of one round of one of them (`holding`), never across them.

What one process contributes to a comparison is estimators.process_seconds (the chosen estimator).
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any, Optional

from flowerbench.core import paths
from flowerbench.core.results import Result, ResultError, load as load_result
from flowerbench.analysis.estimators import CHOSEN, SETTLE_TOLERANCE, process_seconds, settled_epochs  # noqa: F401
from flowerbench.measuring.schedule import (  # noqa: F401 (re-exported: the readers' one import)
    SCHEDULE_SCHEMA,
    Process,
    RoundsError,
    Schedule,
    first_core,
    load_schedule,
    order,
    williams,
)

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

    def seconds(self, variant: str, estimator: str = CHOSEN) -> list[float]:
        """Per round, the variant's process time (estimators.process_seconds, by default the chosen
        estimator): the input of every paired ratio."""
        return [process_seconds(r, estimator) for r in self.of(variant)]

    def unsettled(self) -> list[tuple[int, str]]:
        return [(k + 1, v) for k, rnd in enumerate(self.runs) for v, r in rnd.items() if settled_epochs(r)[1]]

    def epochs(self, variant: str) -> list[list[list[float]]]:
        """runs[round][repeat][epoch] of timed epoch seconds, every epoch kept (stats.components' input)."""
        return [[list(r.epoch_seconds[i * r.epochs:(i + 1) * r.epochs]) for i in range(r.repeats)]
                for r in self.of(variant)]

    def busy(self) -> list[Process]:
        return [p for p in self.schedule.processes if p.busy]

    # the Study interface, for a run measured in one folder (every reference before engine 2)
    @property
    def parts(self) -> list["Rounds"]:
        return [self]

    def variants(self) -> list[str]:
        return list(self.runs[0]) if self.runs else []

    def holding(self, *names: str) -> Optional["Rounds"]:
        """Itself when it measured every one of `names` (a ratio of them pairs inside its rounds)."""
        return self if all(n in self.variants() for n in names) else None

    def home(self, variant: str) -> Optional["Rounds"]:
        return self.holding(variant)

    def results(self) -> list[Result]:
        """Every process's result, round by round."""
        return [r for rnd in self.runs for r in rnd.values()]

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
    d: dict[str, Any] = first.as_dict()     # keeps its schema (a reference's 5 reads as 5)
    for key in ("epoch_seconds", "epoch_loss", "epoch_accuracy", "epoch_images", "repeat_seconds",
                "repeat_wall_seconds", "epoch_cpu_seconds", "repeat_cpu_seconds"):
        parts = [getattr(r, key) for r in runs]
        d[key] = None if any(x is None for x in parts) else [x for part in parts for x in part]
    steps = [r.step_seconds for r in runs]
    d["step_seconds"] = None if any(s is None for s in steps) else [x for s in steps for x in s]
    d["repeats"] = sum(r.repeats for r in runs)
    d["timed_seconds"] = statistics.median(d["repeat_seconds"])
    d["images_per_second"] = first.images_per_epoch * first.epochs / d["timed_seconds"]
    d["warmup_seconds"] = statistics.median(r.warmup_seconds for r in runs)
    d["stage_seconds"] = sum(r.stage_seconds for r in runs)
    d["final_loss"], d["final_accuracy"] = runs[-1].final_loss, runs[-1].final_accuracy
    d["started_at"], d["finished_at"] = runs[0].started_at, runs[-1].finished_at
    return Result.model_validate(d)


def load(variants: list[str], rounds_dir: Path = paths.ROUNDS, subset: bool = False) -> Rounds:
    """The complete rounds for `variants` (the params' variants, in their order), checked against the
    schedule: every process recorded, every result present and of the variant it names.  `subset`:
    the folder may hold other variants too (only `variants` are read: the A/B's headline from a
    reference that measured more)."""
    sched = load_schedule(rounds_dir / paths.SCHEDULE.name)
    if (not set(variants) <= set(sched.variants)) if subset else sorted(sched.variants) != sorted(variants):
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


class Study:
    """The measurements of one run: the headline rounds first, then the secondary rounds (each a
    Rounds of its own variants and processes).  A variant's home is the first part that measured it
    (a baseline measured in both is the headline's); a ratio pairs processes of one part (`holding`).
    It answers what a Rounds answers about a variant from its home."""

    def __init__(self, parts: list[Rounds]):
        self.parts = parts

    @property
    def headline(self) -> Rounds:
        return self.parts[0]

    @property
    def schedule(self) -> Schedule:
        return self.headline.schedule

    @property
    def count(self) -> int:
        return self.headline.count

    def variants(self) -> list[str]:
        return list(dict.fromkeys(v for part in self.parts for v in part.variants()))

    def holding(self, *names: str) -> Optional[Rounds]:
        return next((part for part in self.parts if part.holding(*names)), None)

    def home(self, variant: str) -> Optional[Rounds]:
        return self.holding(variant)

    def _home(self, variant: str) -> Rounds:
        part = self.home(variant)
        if part is None:
            raise KeyError(variant)
        return part

    def of(self, variant: str) -> list[Result]:
        return self._home(variant).of(variant)

    def seconds(self, variant: str, estimator: str = CHOSEN) -> list[float]:
        return self._home(variant).seconds(variant, estimator)

    def epochs(self, variant: str) -> list[list[list[float]]]:
        return self._home(variant).epochs(variant)

    def pooled(self) -> list[Result]:
        return [pool(self.of(v)) for v in self.variants()]

    def results(self) -> list[Result]:
        return [r for part in self.parts for r in part.results()]

    def busy(self) -> list[Process]:
        return [p for part in self.parts for p in part.busy()]

    def unsettled(self) -> list[tuple[int, str]]:
        return [x for part in self.parts for x in part.unsettled()]


def load_study(variants: list[str], results_dir: Path = paths.RESULTS, strict: bool = True) -> Study:
    """The run under `results_dir`: its headline rounds (rounds/) and, where the secondary stage
    measured, its secondary rounds (secondary/), each complete and checked (load); together they
    must hold `variants` (the params' variants, in their order) and nothing else; not `strict`, any
    part of them will do (a reference read for its spread may have measured more, or only the
    headline: an A/B's other side)."""
    parts = []
    for sub in (paths.ROUNDS.name, paths.SECONDARY.name):
        folder = Path(results_dir) / sub
        if sub == paths.SECONDARY.name and not (folder / paths.SCHEDULE.name).is_file():
            continue
        sched = load_schedule(folder / paths.SCHEDULE.name)
        unknown = [v for v in sched.variants if v not in variants]
        if unknown and strict:
            raise RoundsError(f"{folder / paths.SCHEDULE.name}: ran {', '.join(unknown)}, which the params do "
                              f"not declare; rerun `dvc repro`")
        mine = [v for v in variants if v in sched.variants]
        if mine:
            parts.append(load(mine, folder, subset=True))
    have = {v for part in parts for v in part.variants()}
    missing = [v for v in variants if v not in have]
    if (missing and strict) or not parts:
        raise RoundsError(f"{results_dir}: no rounds measured {', '.join(missing or variants)}; rerun `dvc repro` "
                          f"(stages rounds and secondary)")
    return Study(parts)
