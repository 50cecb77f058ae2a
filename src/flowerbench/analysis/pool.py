"""Variance pooled over measurements, honestly: this run beside the committed references of its kind.

Each TensorFlow process has its own speed (sd 0.04-0.11 of log time), a round shares almost none of
it, and one measurement's own sd from 3 rounds (df = 2) is mostly luck: over the five measurements of
2026-12-07 one ratio's sd ranged 0.019-0.244.  So the interval of a ratio (or of a variant's seconds)
uses the within-run variance of a one-way random-effects model (stats.random_effects) pooled over:

  * this run, and
  * every committed reference run under reports/reference/<name>/results/ of the same host
    identity (host schema 2, host.same_identity), the same measuring engine (schedule.ENGINE) and
    the same measured params (seed, data, model, train, variants); the estimator is the same by
    construction, since every run is re-estimated from its raw per-process results here.

The between-run component is reported beside it, for claims about the host.  A new identity starts
from its own run, and the report says so.  Nothing accumulates across `dvc repro` runs: the pool is
read from committed folders only, so experiments and branches stay clean.  A reference that is this
run itself (the same processes, by start time) is counted once.

A run is a rounds.Study (its headline rounds and its secondary rounds): a ratio pools over the part of
each run that measured both of its variants.  Two variants no part measured together (the threads
run of the secondary rounds against a headline mirrored run) are compared through a baseline both
parts measured: the two paired ratios are independent, so their spreads add (`bridged`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Union

from flowerbench.core import host, paths
from flowerbench.analysis import stats as S
from flowerbench.analysis.rounds import Rounds, RoundsError, Study, load as load_rounds, load_study

REFERENCE = paths.REPORTS / "reference"
# the params a process's time depends on (train.verbose aside): runs of other params never pool
MEASURED = ("seed", "data", "model", "train", "variants")


def params_key(r) -> dict:
    p = {k: r.params.get(k) for k in MEASURED}
    p["train"] = {k: v for k, v in (p.get("train") or {}).items() if k != "verbose"}
    return p


Run = Union[Rounds, Study]


def processes(rounds: Run) -> frozenset:
    """The processes a run holds (variant, start time): two runs that share one are one measurement."""
    return frozenset((r.variant, r.started_at) for r in rounds.results())


def kind_of(rounds: Run) -> tuple[Optional[dict], int, dict]:
    """(host description, engine, measured params) of a run, from its first process's result and its
    headline's engine."""
    first = rounds.parts[0].results()[0]
    return first.host, rounds.parts[0].schedule.engine, params_key(first)


def same_kind(a: Run, b: Run) -> bool:
    """Two runs whose within-run variances may pool: one known host identity, engine and measured params."""
    (ha, ea, pa), (hb, eb, pb) = kind_of(a), kind_of(b)
    return host.same_identity(ha, hb) and ea == eb and pa == pb


@dataclass
class Pool:
    """This run (runs[0]) and the references pooled with it; `left_out`: folder -> why not pooled."""
    runs: list[Run]
    names: list[str]
    left_out: dict[str, str] = field(default_factory=dict)

    @property
    def here(self) -> Run:
        return self.runs[0]

    @property
    def identity_known(self) -> bool:
        return host.identity_known(kind_of(self.here)[0])

    def _groups(self, values: Callable[[Run], Optional[list[float]]]) -> list[list[float]]:
        return [g for rr in self.runs if (g := values(rr)) is not None]

    def components(self, numerator: str, denominator: Optional[str] = None) -> dict:
        """stats.random_effects over the pooled runs of the log paired ratio numerator over
        denominator (baseline seconds over a run's: a speed-up), or of a variant's log seconds, each
        from the part of a run that measured both (or the variant)."""
        names = (numerator,) if denominator is None else (numerator, denominator)

        def values(rr: Run) -> Optional[list[float]]:
            part = rr.holding(*names)
            if part is None:
                return None
            if denominator is None:
                return [math.log(x) for x in part.seconds(numerator)]
            return S.logs_of(part.seconds(numerator), part.seconds(denominator))
        return S.random_effects(self._groups(values))

    def estimate(self, logs: Callable[[Run], Optional[list[float]]]) -> S.Estimate:
        """Any per-round log quantity of this run (`logs(run)`, None where a run lacks it) with its
        spread pooled over the runs: a ratio of two paired ratios, say."""
        c = S.random_effects(self._groups(logs))
        return S.from_logs(logs(self.here), None if c["within_sd"] is None else (c["within_sd"], c["df_within"]))

    def spread(self, numerator: str, denominator: Optional[str] = None) -> Optional[tuple[float, float]]:
        """(pooled within-run sd, its df) for stats.paired / from_logs, None with nothing to pool (one
        round in one run)."""
        c = self.components(numerator, denominator)
        return None if c["within_sd"] is None else (c["within_sd"], c["df_within"])

    def paired(self, baseline: str, variant: str) -> S.Estimate:
        """This run's speed-up of `variant` over `baseline` with the pooled spread: paired inside the
        part that measured both, else `bridged` through a baseline both parts measured."""
        part = self.here.holding(baseline, variant)
        if part is None:
            return self.bridged(baseline, variant)
        return S.paired(part.seconds(baseline), part.seconds(variant), self.spread(baseline, variant))

    def bridged(self, baseline: str, variant: str) -> S.Estimate:
        """`variant` over `baseline` when no part measured both: (c / variant) / (c / baseline), for the
        first variant c that the homes of both measured, each paired ratio in its own part, their
        spreads added (stats.independent_ratio).  ValueError when no such c exists."""
        a, b = self.here.home(baseline), self.here.home(variant)
        common = next((c for c in a.variants() if c in b.variants() and c not in (baseline, variant)), None)
        if common is None:
            raise ValueError(f"{baseline} and {variant}: no part of this run measured them, or a baseline, "
                             f"together")
        return S.independent_ratio(self.paired(common, variant), self.paired(common, baseline))

    def seconds(self, variant: str) -> S.Estimate:
        """This run's seconds of `variant` (geometric mean over rounds) with the pooled spread."""
        return S.from_logs([math.log(x) for x in self.here.seconds(variant)], self.spread(variant))

    def describe(self) -> str:
        """One sentence: what the intervals' spread was pooled over."""
        if not self.identity_known:
            return ("This run's host has an unknown identity (host schema 1): its intervals come from its own "
                    "rounds alone.")
        itself = [k for k, why in self.left_out.items() if why.startswith("this run itself")]
        if len(self.runs) == 1:
            return ("A new host identity: no other committed reference of this identity, engine and params, so "
                    "the intervals come from this run's own rounds"
                    + (f" (this run is itself committed as {', '.join(itself)}; later runs of this identity pool "
                       f"with it)." if itself else " (later runs pool with it once it is committed as a reference)."))
        return (f"The intervals' spread is the within-run variance pooled over this run and "
                f"{len(self.runs) - 1} committed reference run(s) of the same host identity, engine and params "
                f"({', '.join(self.names[1:])}); the between-run component is reported beside it.")


def sessions(rounds: Rounds) -> list[Rounds]:
    """A folder's rounds split into the measurements that made them: consecutive rounds measured at one
    git commit (rounds added later with -S rounds.count=N ran at a later commit, another session)."""
    out: list[Rounds] = []
    key = None
    for rnd in rounds.runs:
        k = frozenset(r.git_commit for r in rnd.values())
        if k != key:
            out.append(Rounds(rounds.schedule, []))
            key = k
        out[-1].runs.append(rnd)
    return out


def committed(variants: list[str], root: Path = REFERENCE,
              extra: tuple[Path, ...] = (paths.ROUNDS,)) -> dict[str, Rounds]:
    """Every committed measurement session (sessions) under `root`'s reference folders and `extra`
    rounds folders, each once (a folder that repeats another's processes is skipped): name -> rounds."""
    folders = [(p.name, p / "results" / "rounds") for p in sorted(Path(root).iterdir())] if Path(root).is_dir() else []
    folders += [(str(f), Path(f)) for f in extra]
    out: dict[str, Rounds] = {}
    seen: list[frozenset] = []
    for name, folder in folders:
        if not (folder / "schedule.json").is_file():
            continue
        try:
            rr = load_rounds(variants, folder)
        except RoundsError:
            continue
        for k, part in enumerate(sessions(rr), start=1):
            procs = processes(part)
            if any(procs & other for other in seen):
                continue
            seen.append(procs)
            out[f"{name}#{k}"] = part
    return out


def load(here: Run, variants: list[str], root: Path = REFERENCE, also: Optional[list[Run]] = None) -> Pool:
    """`here` and every committed reference under `root` of its kind (module docstring); `also`: other
    runs of this kind to pool as well (the A/B's other side), each counted once."""
    pool = Pool([here, *(also or [])], ["this run", *(f"run {k}" for k in range(2, 2 + len(also or [])))])
    h_host, h_engine, h_params = kind_of(here)
    if not host.identity_known(h_host) or not Path(root).is_dir():
        return pool
    seen = [processes(rr) for rr in pool.runs]
    for folder in sorted(p for p in Path(root).iterdir() if (p / "results" / "rounds" / "schedule.json").is_file()):
        try:
            rr = load_study(variants, folder / "results", strict=False)
        except RoundsError as exc:
            pool.left_out[folder.name] = f"not readable with these variants ({str(exc)[:80]})"
            continue
        r_host, r_engine, r_params = kind_of(rr)
        why = ("identity unknown (host schema 1)" if not host.identity_known(r_host) else
               "another host identity" if not host.same_identity(r_host, h_host) else
               f"engine {r_engine}, this run's {h_engine}" if r_engine != h_engine else
               "other measured params" if r_params != h_params else
               "this run itself, or a part of it" if any(processes(rr) & other for other in seen) else None)
        if why:
            pool.left_out[folder.name] = why
            continue
        seen.append(processes(rr))
        pool.runs.append(rr)
        pool.names.append(folder.name)
    return pool
