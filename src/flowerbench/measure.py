"""Stage `rounds`: every variant once per round, each in its own process, in a balanced order.

    python -m flowerbench rounds [--params params.yaml]      (dvc.yaml runs it as the stage `rounds`)

For each of `rounds.count` rounds, in the order schedule.order gives (a Williams square shuffled by the
order seed, rounds.order_seed or drawn afresh for each measurement; recorded), it
runs one process per variant: `python -m flowerbench.commands.train --variant V --out
results/rounds/rKK/V.json --first-core K` (the one-replica runs move across the cores from round to
round), or the multi-worker launcher for `multiworker_custom`.  Beside every process it records the
host's load: /proc/loadavg before and after, and from /proc/stat the share of the host's CPU time the
hypervisor stole and the share other work used (the host's busy time less this process's own CPU time,
from getrusage); a process above `rounds.busy_share` is flagged busy (`is_busy`), and the report says so.

Interrupted rounds resume: results/rounds/schedule.json is rewritten (atomically) after every process,
and a rerun keeps every process whose result is there and whose inputs (params, code, data, host:
`fingerprint`) are unchanged.  Raising `rounds.count` adds rounds to the ones already measured;
DVC keeps the folder between runs for this (`persist: true`); `make remeasure` empties it.

One measurement at a time on a host: the stage holds an exclusive lock (`measuring`) for its whole run,
and waits, saying so, while another holds it -- `make reproduce`, `dvc exp run`, `dvc queue` workers
and `make ab` all take it, whatever checkout or temporary workspace they run in.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

from . import host, paths, provenance, schedule as R
from .closure import PACKAGE_DIR, closure
from .config import MULTIWORKER_VARIANT, Params, resolved_dict
from .deadline import Deadline, DeadlineExceeded, guarded, wait
from .failpoints import checkpoint
from .hostlock import measuring
from .io import write_json
from .log import get_logger

log = get_logger("rounds").info

# What a process's time depends on: every section but the rounds' own bookkeeping and the report.
MEASURED_SECTIONS = ("seed", "data", "model", "train", "variants", "sweep", "multiworker")
# The commands the stage runs: its own and the processes it starts (the closure of these is its code).
SPAWNED = ("rounds", "train", "launch", "worker")


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


def fingerprint(params: Params) -> str:
    """What the processes' times depend on: the measured params (not train.verbose, rounds.*, report),
    the code the stage runs (its import closure, as dvc.yaml's deps), requirements.lock, the data
    manifest and the host description."""
    p = resolved_dict(params)
    p["train"] = {k: v for k, v in p["train"].items() if k != "verbose"}
    h = hashlib.sha256(json.dumps({k: p[k] for k in MEASURED_SECTIONS}, sort_keys=True).encode())
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
    same variants, seeds and order, a round this run still has, and its result on disk."""
    if old is None or any(getattr(old, k) != fresh[k] for k in ("fingerprint", "seed", "order_seed", "variants")):
        return []
    return [p for p in old.processes if p.round <= fresh["count"]
            and paths.round_result(p.round, p.variant, rounds_dir).is_file()]


def run(params: Params, params_path: str = "params.yaml", rounds_dir: Path = paths.ROUNDS) -> R.Schedule:
    with measuring(f"rounds of {params_path}"):
        return _run(params, params_path, rounds_dir)


def _run(params: Params, params_path: str, rounds_dir: Path) -> R.Schedule:
    names = [v.name for v in params.all_variants()]
    count = params.rounds.count
    usable = host.describe()["usable_cores"]
    sched_path = rounds_dir / paths.SCHEDULE.name
    try:
        old = R.load_schedule(sched_path) if sched_path.is_file() else None
    except R.RoundsError:
        old = None
    fp = fingerprint(params)
    oseed = order_seed(params, old, fp, names)
    fresh = {"schema_version": R.SCHEDULE_SCHEMA, "engine": R.ENGINE, "fingerprint": fp, "seed": params.seed, "order_seed": oseed,
             "count": count, "variants": names, "order": R.order(names, count, oseed),
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
    if done:
        log(f"resuming: {len(done)} of {total} processes already measured with these inputs (order seed {oseed})")
    else:
        log(f"{count} round(s) x {len(names)} variants, order seed {oseed}"
            f"{'' if params.rounds.order_seed is not None else ' (drawn for this measurement)'}")
    walls: list[float] = []
    t_stage = time.monotonic()
    for k, round_order in enumerate(fresh["order"], start=1):
        core = R.first_core(k - 1, usable)
        for pos, name in enumerate(round_order, start=1):
            if sched.done(k, name):
                continue
            left = total - len(processes)
            eta = f", about {left * sum(walls) / len(walls) / 60:.0f} min left" if walls else ""
            log(f"round {k}/{count}, {pos}/{len(names)}: {name} (process {len(processes) + 1} of {total}{eta})")
            out = paths.round_result(k, name, rounds_dir)
            out.parent.mkdir(parents=True, exist_ok=True)
            meter = LoadMeter()
            meter.start()
            started = provenance.now()
            code = _run_one(command(name, out, core, params_path), params.rounds.process_deadline_s, name, k)
            load = meter.stop()
            if code != 0 or not out.is_file():
                how = f"exited with code {code}" if code else "wrote no result"
                raise MeasureError(f"round {k}, {name}: the process {how}; the {len(processes)} processes "
                                   f"measured are kept and `dvc repro` resumes from here")
            busy = is_busy(load, params.rounds.busy_share)
            processes.append(R.Process(round=k, position=pos, variant=name, first_core=core, started_at=started,
                                       exit_code=code, busy=busy, **load))
            walls.append(load["wall_seconds"])
            if busy:
                log(f"note: round {k}, {name} ran on a busy host (other work {load['foreign_share']:.0%}, "
                    f"steal {load['steal_share']:.0%} of the CPU time); the report flags it")
            sched = save()
            checkpoint("process-recorded")
    log(f"{count} round(s) x {len(names)} variants complete ({time.monotonic() - t_stage:.0f} s this run, "
        f"{sum(1 for p in processes if p.busy)} busy process(es)) -> {rounds_dir}")
    return sched


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
