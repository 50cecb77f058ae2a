"""The measuring engine: the stages `rounds` (the headline) and `secondary`, each variant in its own process.

    python -m flowerbench rounds [--params params.yaml]       the headline variants (rounds.headline), held
    python -m flowerbench secondary [--params params.yaml]    every other variant beside its baselines

One generic runner (`run`) measures a set of variants in `count` rounds, in the order schedule.order
gives (a Williams square shuffled by the order seed, rounds.order_seed or drawn afresh for each
measurement; recorded).  Each process is `python -m flowerbench.commands.train --variant V --out
results/<stage>/rKK/V.json --first-core K` (the one-replica runs move across the cores from round to
round), or the multi-worker launcher for `multiworker_custom`.  Two ways to run a round:

  held (engine 2, the headline)   the round's processes start two at a time, each pinned to the cores
      it is timed on, and warm up; each then blocks (core/hold.py) before every timed epoch.  With all of
      the round held, the scheduler releases one epoch of one process at a time, nothing else
      running, cycling through the round in its order: a slow minute of the host lands on every arm
      alike.  At most one round is held at once (memory: ~8 GiB for the headline's four).  The load
      is read around each released epoch: a held process that took CPU would show as other work.
  sequential (engine 1, the secondary)   one process after another, each from start to exit.  The
      multi-worker job runs here: its workers' heartbeats must not be held.

Beside every process the stage records the host's load: /proc/loadavg, and from /proc/stat the share
of the host's CPU time the hypervisor stole and the share other work used (the host's busy time less
this process's own CPU time); a process above `rounds.busy_share` is flagged busy (`is_busy`).

Interrupted measurements resume: schedule.json is rewritten (atomically) after every process (held:
after every round), and a rerun keeps every process whose result is there and whose inputs (params,
code, data, host: `fingerprint`) are unchanged.  Raising the count adds rounds; DVC keeps the folder
between runs for this (`persist: true`); `make remeasure` empties it.

One measurement at a time on a host: the stage holds an exclusive lock (`measuring`) for its whole run,
and waits, saying so, while another holds it -- `make reproduce`, `dvc exp run`, `dvc queue` workers
and `make ab` all take it, whatever checkout or temporary workspace they run in.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from flowerbench.core import hold, host, paths, provenance
from flowerbench.measuring import schedule as R
from flowerbench.core.closure import PACKAGE_DIR, closure
from flowerbench.core.config import MULTIWORKER_VARIANT, Params, Variant, resolved_dict
from flowerbench.core.deadline import Deadline, DeadlineExceeded, guarded, wait
from flowerbench.core.failpoints import checkpoint
from flowerbench.measuring.hostlock import measuring
from flowerbench.core.io import write_json
from flowerbench.core.log import get_logger

log = get_logger("rounds").info

# What a process's time depends on: every section but the rounds' own bookkeeping and the report.
MEASURED_SECTIONS = ("seed", "data", "model", "train", "variants", "sweep", "multiworker")
# The commands the stages run: their own and the processes they start (the closure of these is their code).
SPAWNED = ("rounds", "secondary", "train", "launch", "worker")


class MeasureError(RuntimeError):
    """A process of the rounds failed or ran past its deadline (one line; the rounds resume)."""


# --------------------------------------------------------------------------- the host's load


def _cpu_jiffies() -> Optional[tuple[int, int, int]]:
    """(busy, steal, total) of the host's CPUs from /proc/stat's first line; None where unreadable."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = fields + [0] * (8 - len(fields))
    total = user + nice + system + idle + iowait + irq + softirq + steal
    return total - idle - iowait - steal, steal, total


def _loadavg() -> list[float]:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except (OSError, ValueError):
        return []


def _children_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


class LoadMeter:
    """The host's load around one child process (started and waited for between `start` and `stop`)."""

    def start(self) -> None:
        self.load_before, self.cpu, self.own = _loadavg(), _cpu_jiffies(), _children_cpu_s()
        self.t0 = time.monotonic()

    def stop(self) -> dict:
        wall = time.monotonic() - self.t0
        cpu, own = _cpu_jiffies(), _children_cpu_s() - self.own
        steal = foreign = None
        if self.cpu and cpu and cpu[2] > self.cpu[2]:
            total = cpu[2] - self.cpu[2]
            hz = os.sysconf("SC_CLK_TCK")
            steal = (cpu[1] - self.cpu[1]) / total
            foreign = max(0.0, (cpu[0] - self.cpu[0]) - own * hz) / total
        return {"wall_seconds": round(wall, 3), "load_before": self.load_before, "load_after": _loadavg(),
                "steal_share": None if steal is None else round(steal, 4),
                "foreign_share": None if foreign is None else round(foreign, 4)}


def is_busy(load: dict, limit: float) -> bool:
    """A process ran on a busy host when other work, or the hypervisor's steal, took more than `limit`
    (rounds.busy_share) of the host's CPU time while it ran; an unread share flags nothing."""
    return any(x is not None and x > limit for x in (load.get("foreign_share"), load.get("steal_share")))


# --------------------------------------------------------------------------- the rounds


def fingerprint(params: Params, variants: list[Variant]) -> str:
    """What the processes' times depend on: the measured params (not train.verbose, rounds.*, report)
    with the variants narrowed to the stage's own (so editing a variant of the other stage re-measures
    nothing here), the code the stages run (their import closure, as dvc.yaml's deps),
    requirements.lock, the data manifest and the host description."""
    p = resolved_dict(params)
    p["train"] = {k: v for k, v in p["train"].items() if k != "verbose"}
    measured = {k: p[k] for k in MEASURED_SECTIONS if k not in ("variants", "sweep", "multiworker")}
    measured["variants"] = [v.model_dump(mode="json") for v in variants]
    if any(v.workers for v in variants):
        measured["multiworker"] = p["multiworker"]
    h = hashlib.sha256(json.dumps(measured, sort_keys=True).encode())
    for name in sorted(closure(PACKAGE_DIR, list(SPAWNED))):
        h.update(name.encode() + b"\0" + (PACKAGE_DIR / name).read_bytes())
    for f in (Path("requirements.lock"), paths.MANIFEST, paths.HOST):
        h.update(str(f).encode() + b"\0" + (f.read_bytes() if f.is_file() else b"(absent)"))
    return h.hexdigest()


def command(variant: str, out: Path, first_core: int, params_path: str) -> list[str]:
    """The process one variant runs as."""
    if variant == MULTIWORKER_VARIANT:
        return [sys.executable, "-m", "flowerbench.commands.launch", "--params", params_path, "--out", str(out)]
    return [sys.executable, "-m", "flowerbench.commands.train", "--params", params_path, "--variant", variant,
            "--out", str(out), "--first-core", str(first_core)]


def order_seed(params: Params, old: Optional[R.Schedule], fingerprint_: str, names: list[str]) -> int:
    """The order seed of this measurement: rounds.order_seed when set; else the one an interrupted or
    shorter measurement of the same inputs drew (so it resumes in its own order); else a fresh one."""
    if params.rounds.order_seed is not None:
        return params.rounds.order_seed
    if old is not None and old.fingerprint == fingerprint_ and old.variants == names and old.seed == params.seed:
        return old.order_seed
    return R.draw_order_seed()


def _kept(old: Optional[R.Schedule], fresh: dict, rounds_dir: Path) -> list[R.Process]:
    """The processes of an earlier, interrupted or shorter run that this one keeps: same inputs,
    engine, variants, seeds and order, a round this run still has, and its result on disk."""
    if old is None or any(getattr(old, k) != fresh[k]
                          for k in ("fingerprint", "engine", "seed", "order_seed", "variants")):
        return []
    return [p for p in old.processes if p.round <= fresh["count"]
            and paths.round_result(p.round, p.variant, rounds_dir).is_file()]


@dataclass(frozen=True)
class Plan:
    """What one stage measures: its variants, rounds, folder and engine."""
    stage: str
    variants: list[Variant]
    count: int
    rounds_dir: Path
    held: bool

    @property
    def engine(self) -> int:
        return R.HELD_ENGINE if self.held else R.ENGINE


def headline(params: Params, rounds_dir: Path = paths.ROUNDS) -> Plan:
    """Stage `rounds`: the headline variants, held, rounds.count rounds."""
    return Plan("rounds", params.headline_variants(), params.rounds.count, rounds_dir, held=True)


def secondary(params: Params, rounds_dir: Path = paths.SECONDARY) -> Plan:
    """Stage `secondary`: every other variant beside its baselines, sequential, secondary.count rounds."""
    return Plan("secondary", params.secondary_variants(), params.secondary.count, rounds_dir, held=False)


def stage(plan_of: Callable[[Params], Plan]) -> Callable:
    """A measuring stage's command body (entry.command's `func`): run the plan `plan_of` makes."""
    def run_stage(args, params: Params) -> None:
        run(params, params_path=args.params, plan=plan_of(params))
    return run_stage


def run(params: Params, params_path: str = "params.yaml", plan: Optional[Plan] = None) -> R.Schedule:
    plan = plan or headline(params)
    with measuring(f"{plan.stage} of {params_path}"):
        return _run(params, params_path, plan)


def _run(params: Params, params_path: str, plan: Plan) -> R.Schedule:
    names = [v.name for v in plan.variants]
    count, rounds_dir = plan.count, plan.rounds_dir
    usable = host.describe()["usable_cores"]
    sched_path = rounds_dir / paths.SCHEDULE.name
    try:
        old = R.load_schedule(sched_path) if sched_path.is_file() else None
    except R.RoundsError:
        old = None
    fp = fingerprint(params, plan.variants)
    oseed = order_seed(params, old, fp, names)
    fresh = {"schema_version": R.SCHEDULE_SCHEMA, "engine": plan.engine, "fingerprint": fp, "seed": params.seed,
             "order_seed": oseed, "count": count, "variants": names, "order": R.order(names, count, oseed),
             "usable_cores": usable, "busy_share": params.rounds.busy_share}
    done = _kept(old, fresh, rounds_dir)
    if not done and rounds_dir.exists():
        shutil.rmtree(rounds_dir)          # another plan's processes: none may pass for this one's
    for extra in (rounds_dir.glob("r[0-9]*") if rounds_dir.exists() else []):
        if int(extra.name[1:]) > count:    # rounds a larger count measured earlier
            shutil.rmtree(extra)
    rounds_dir.mkdir(parents=True, exist_ok=True)
    processes = list(done)

    def save() -> R.Schedule:
        sched = R.Schedule.model_validate({**fresh, "processes": [p.model_dump() for p in processes]})
        write_json(sched_path, sched.model_dump(mode="json"))
        return sched

    sched = save()
    total = count * len(names)
    how = "held, one epoch released at a time" if plan.held else "sequential"
    if not names:
        log(f"{plan.stage}: no variants to measure (rounds.headline holds them all)")
        return sched
    if done:
        log(f"{plan.stage}: resuming: {len(done)} of {total} processes already measured with these inputs "
            f"(order seed {oseed})")
    else:
        log(f"{plan.stage}: {count} round(s) x {len(names)} variants ({how}), order seed {oseed}"
            f"{'' if params.rounds.order_seed is not None else ' (drawn for this measurement)'}")
    walls: list[float] = []
    t_stage = time.monotonic()
    for k, round_order in enumerate(fresh["order"], start=1):
        core = R.first_core(k - 1, usable)
        todo = [(pos, name) for pos, name in enumerate(round_order, start=1) if not sched.done(k, name)]
        if not todo:
            continue
        left = total - len(processes)
        eta = f", about {left * sum(walls) / len(walls) / 60:.0f} min left" if walls else ""
        if plan.held:
            log(f"{plan.stage}: round {k}/{count}: {', '.join(n for _, n in todo)} (processes "
                f"{len(processes) + 1}-{len(processes) + len(todo)} of {total}{eta})")
            t0 = time.monotonic()
            processes += _held_round(params, params_path, rounds_dir, k, todo, core)
            walls += [(time.monotonic() - t0) / len(todo)] * len(todo)
            sched = save()
            checkpoint("process-recorded")
        else:
            for pos, name in todo:
                log(f"{plan.stage}: round {k}/{count}, {pos}/{len(names)}: {name} (process "
                    f"{len(processes) + 1} of {total}{eta})")
                processes.append(_sequential_one(params, params_path, rounds_dir, k, pos, name, core))
                walls.append(processes[-1].wall_seconds)
                sched = save()
                checkpoint("process-recorded")
        for p in processes[-len(todo):]:
            if p.busy:
                log(f"note: round {k}, {p.variant} ran on a busy host (other work {p.foreign_share:.0%}, "
                    f"steal {p.steal_share:.0%} of the CPU time); the report flags it")
    log(f"{plan.stage}: {count} round(s) x {len(names)} variants complete ({time.monotonic() - t_stage:.0f} s "
        f"this run, {sum(1 for p in processes if p.busy)} busy process(es)) -> {rounds_dir}")
    return sched


def _failed(k: int, name: str, code: Optional[int], out: Path) -> Optional[str]:
    if code != 0 or not out.is_file():
        return f"round {k}, {name}: the process " + (f"exited with code {code}" if code else "wrote no result")
    return None


def _sequential_one(params: Params, params_path: str, rounds_dir: Path, k: int, pos: int, name: str,
                    core: int) -> R.Process:
    """One process from start to exit, with the host's load around it (engine 1)."""
    out = paths.round_result(k, name, rounds_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    meter = LoadMeter()
    meter.start()
    started = provenance.now()
    code = _run_one(command(name, out, core, params_path), params.rounds.process_deadline_s, name, k)
    load = meter.stop()
    if why := _failed(k, name, code, out):
        raise MeasureError(f"{why}; the processes measured are kept and `dvc repro` resumes from here")
    return R.Process(round=k, position=pos, variant=name, first_core=core, started_at=started, exit_code=code,
                     busy=is_busy(load, params.rounds.busy_share), **load)


class EpochMeter:
    """The host's load over the released epochs of one held process: what the host's CPUs did while
    it alone was meant to run, less its own CPU time (each epoch's, as the process reported it)."""

    def __init__(self):
        self.busy = self.steal = self.total = 0.0
        self.own = 0.0

    def around(self, release) -> dict:
        before = _cpu_jiffies()
        rec = release()
        after = _cpu_jiffies()
        if before and after and after[2] > before[2]:
            self.busy += after[0] - before[0]
            self.steal += after[1] - before[1]
            self.total += after[2] - before[2]
            self.own += rec["cpu_seconds"] * os.sysconf("SC_CLK_TCK")
        return rec

    def shares(self) -> dict:
        if not self.total:
            return {"steal_share": None, "foreign_share": None}
        return {"steal_share": round(self.steal / self.total, 4),
                "foreign_share": round(max(0.0, self.busy - self.own) / self.total, 4)}


def _held_round(params: Params, params_path: str, rounds_dir: Path, k: int, todo: list[tuple[int, str]],
                core: int, cmd_of=command) -> list[R.Process]:
    """One round, held (engine 2; module docstring): start and warm the processes two at a time, then
    release one timed epoch at a time in the round's order until each has run all of its epochs; wait
    for their results.  Every process has its own deadline from its start, holds included; any
    failure kills the round's processes and records none of them (the rounds before are kept).
    `cmd_of(variant, out, first_core, params_path)`: the process a variant runs as (`command`)."""
    epochs = params.train.epochs * params.train.repeats
    limit = params.rounds.process_deadline_s
    held: list[hold.Held] = []
    deadlines: list[Deadline] = []
    info: list[dict] = []
    names = [name for _, name in todo]
    try:
        with contextlib.ExitStack() as stack:
            for i in range(0, len(todo), 2):                 # warm two at a time
                pair = todo[i:i + 2]
                for pos, name in pair:
                    out = paths.round_result(k, name, rounds_dir)
                    out.parent.mkdir(parents=True, exist_ok=True)
                    info.append({"out": out, "load_before": _loadavg(), "started_at": provenance.now()})
                    h = hold.Held(cmd_of(name, out, core, params_path), label=name)
                    held.append(h)
                    deadlines.append(Deadline(limit))
                    stack.enter_context(guarded([h.proc], deadlines[-1]))
                for h in held[-len(pair):]:
                    h.until_ready()
            warm = time.monotonic()
            meters = [EpochMeter() for _ in held]
            codes: list = [None] * len(held)
            exits: list[dict] = [{}] * len(held)          # each process's wall time and load, at its exit
            for e in range(epochs):                           # one cycle: each process's next epoch
                for i, (h, meter) in enumerate(zip(held, meters)):
                    meter.around(h.release)
                    if e < epochs - 1:
                        h.until_ready()                       # held again before the next is released
                    else:                                     # its result written and TensorFlow gone,
                        codes[i] = wait([h.proc], deadlines[i])[0]   # before the next one's last epoch
                        exits[i] = {"wall_seconds": round(time.monotonic() - h.started, 3), "load_after": _loadavg()}
            release_s = time.monotonic() - warm
    except DeadlineExceeded:
        raise MeasureError(f"round {k} ({', '.join(names)}): a process ran past rounds.process_deadline_s="
                           f"{limit:g} s (its holds included) and the round was killed; no result of it is "
                           f"kept, and `dvc repro` resumes from this round") from None
    except hold.HoldError as exc:
        raise MeasureError(f"round {k}: {exc}; the round's processes were killed and none is kept; "
                           f"`dvc repro` resumes from this round") from None
    finally:
        for h in held:
            h.close()
    out = []
    for (pos, name), h, code, meter, rec, at_exit in zip(todo, held, codes, meters, info, exits):
        if why := _failed(k, name, code, rec["out"]):
            raise MeasureError(f"{why}; the round is not kept, and `dvc repro` resumes from this round")
        load = {**at_exit, "load_before": rec["load_before"], **meter.shares()}
        out.append(R.Process(round=k, position=pos, variant=name, first_core=core, started_at=rec["started_at"],
                             exit_code=code, busy=is_busy(load, params.rounds.busy_share), held=True,
                             ready_after_seconds=round(h.ready_after, 3),
                             released_seconds=round(sum(x["seconds"] for x in h.epochs), 3),
                             round_release_seconds=round(release_s, 3), **load))
    return out


def _run_one(cmd: list[str], deadline_s: float, name: str, k: int) -> int:
    procs: list[subprocess.Popen] = []
    deadline = Deadline(deadline_s)
    try:
        with guarded(procs, deadline):
            procs.append(subprocess.Popen(cmd, start_new_session=True))
            return wait(procs, deadline)[0]
    except DeadlineExceeded:
        raise MeasureError(f"round {k}, {name}: ran past rounds.process_deadline_s={deadline_s:g} s and was "
                           f"killed with its process group; no result written") from None
