"""Stage `terms`: the model's terms measured on this host -> results/model-terms.json.

    python -m flowerbench terms [--params params.yaml]

The model (perfmodel/judge.py, docs/model.md) explains an N-replica epoch from parts
measured apart, with the settings of the runs it predicts (image size,
per-replica batch, cache, c = train.cores_per_replica cores per replica), for
every core-matched N from 2 to 4 that fits the host:

  * input: the input pipeline alone on one replica's c cores -> images/s per core;
  * contention: one replica's step alone on its c cores, then N of them side by
    side, each on its own c cores (memory bandwidth and caches the replicas share;
    no GPU model has this term) -> the ratio;
  * all-reduce: the model's gradients across N replicas on N x c cores, through
    the strategy's own cross-device ops -> seconds per step; and the same across
    N worker processes, each on its own c cores (the multi-worker job's);
  * dispatch: N replicas' whole step driven from one process, less the parts
    above (measured after the four-term model missed the in-process runs by
    130-230 ms per step: docs/model.md).

The compute per step is not measured here: it is the in-memory-tensors twin of
each loop (variants single_fit_tensors, single_custom_tensors), a training run
like the others.  The probes are processes of their own (perfmodel/probes.py), pinned
before TensorFlow starts, never sharing a core with another's work except the
side-by-side steps (which is the point), and killed with their process groups at
the stage's deadline.  The file is written at the end, atomically.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Optional

from flowerbench.training import placement
from flowerbench.core import host, paths, provenance
from flowerbench.core.config import Params, resolved_dict
from flowerbench.core.deadline import Deadline, guarded
from flowerbench.core.io import write_json
from flowerbench.core.log import get_logger
from flowerbench.core.tdist import median_interval
from flowerbench.perfmodel.termsfile import TERMS_SCHEMA, check_terms

DEADLINE_S = 900           # the whole stage; a probe that hangs is killed with its group
STEP_COUNT = 12            # timed training steps of each replica probe (alone, side by side)
ALLREDUCE_COUNT = 10       # timed all-reduces
INPUT_EPOCHS = 3           # timed input epochs (after one that fills the cache)

log = get_logger("terms").info


class ProbeError(RuntimeError):
    """A probe failed or printed no result (one line, with its last words)."""


def study_replicas(params: Params, usable: int) -> list[int]:
    """The replica counts N the model is measured for: every core-matched N from 2 up to the blog's 4
    that fits the usable cores at c = train.cores_per_replica each (what `replicas: auto` and the
    sweep can run core-matched here).  Not read from the variants, so editing one leaves the terms."""
    return list(range(2, placement.most_matched(params.train, usable) + 1))


def _probe(kind: str, cores: list[int], params_path: str, *, replicas: int = 1, count: int, batch: int,
           env: Optional[dict] = None, cwd: Optional[Path] = None) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "flowerbench.commands.probe", kind, "--params", params_path, "--cores",
           ",".join(map(str, cores)), "--replicas", str(replicas), "--count", str(count), "--batch", str(batch),
           "--input-epochs", str(INPUT_EPOCHS)]
    return subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env=env, cwd=cwd)


def _name(p: subprocess.Popen) -> str:
    return f"probe {p.args[3]} on cores {p.args[p.args.index('--cores') + 1]}"


def _until_ready(p: subprocess.Popen, said: list[str]) -> None:
    for line in p.stderr:
        if line.strip() == "ready":
            return
        said.append(line.rstrip())
    raise ProbeError(f"{_name(p)} exited before it was ready (rc {p.wait()}): {(said or ['no output'])[-1]}")


def _tell(p: subprocess.Popen, command: str) -> None:
    p.stdin.write(command + "\n")
    p.stdin.flush()


def run_together(procs: list[subprocess.Popen], deadline: Deadline, solo_first: bool = False) -> list[dict]:
    """Wait until every probe is warmed up (`ready`); with `solo_first`, let the first time its solo
    part while the others wait idle; then release them all at once (`go`) and read their results."""
    said: list[list[str]] = [[] for _ in procs]
    with guarded(procs, deadline):
        for p, lines in zip(procs, said):
            _until_ready(p, lines)
        if solo_first:
            _tell(procs[0], "solo")
            _until_ready(procs[0], said[0])
        for p in procs:
            _tell(p, "go")
        outs = []
        for p, lines in zip(procs, said):
            out, err = p.communicate()
            if p.returncode != 0 or not out.strip():   # (guarded kills the others as this raises)
                last = (lines + err.strip().splitlines() or ["no output"])[-1]
                raise ProbeError(f"{_name(p)} failed (rc {p.returncode}): {last}")
            outs.append(json.loads(out.strip().splitlines()[-1]))
    return outs


def _median_iv(what: str, values: list[float]) -> dict:
    m, low, high = median_interval(values)
    return {f"median_{what}": m, f"interval_{what}": [low, high]}


def measure(params: Params, params_path: str, usable_ids: list[int], replicas: list[int],
            deadline: Deadline) -> dict:
    from flowerbench.training.multiworker import free_ports, worker_env

    c = params.train.cores_per_replica
    b = params.train.batch_size_per_replica
    out: dict = {"contention": {}, "allreduce": {}, "allreduce_workers": {}, "dispatch": {}}
    for n in replicas:
        slices = placement.replica_cores(params.train, usable_ids, n)
        together = sum(slices, [])           # the N x c cores of an in-process run of N replicas
        solo = "input" not in out   # the input pipeline and the step alone: once, in the first N's first probe
        log(f"{n} replicas' steps on {slices}" + (", one step and the input pipeline alone first" if solo else ""))
        side = run_together([_probe("replica", s, params_path, count=STEP_COUNT, batch=b) for s in slices],
                            deadline, solo_first=solo)
        if solo:
            inp, alone = side[0]["input"], side[0]["alone_seconds"]
            rate = [inp["images"] / t / c for t in inp["seconds"]]
            # the interval of the epoch seconds, as rates (a rate's own t-interval can dip below 0)
            secs = _median_iv("seconds", inp["seconds"])
            lo, hi = secs["interval_seconds"]
            out["input"] = {**inp, "cores": slices[0], "images_per_second_per_core": rate,
                            "median_rate": inp["images"] / secs["median_seconds"] / c,
                            "interval_rate": [inp["images"] / hi / c if hi else None,
                                              inp["images"] / lo / c if lo and lo > 0 else None]}
            out["step_alone"] = {"seconds": alone, "cores": slices[0], "batch": b, **_median_iv("seconds", alone)}
            log(f"input: {statistics.median(rate):.0f} images/s per core ({inp['images']} images, cache "
                f"{params.data.cache}, {params.data.image_size} px); step alone "
                f"{out['step_alone']['median_seconds'] * 1000:.0f} ms")
        per = [statistics.median(p["seconds"]) for p in side]
        factor = statistics.mean(per) / out["step_alone"]["median_seconds"]
        log(f"side by side: {', '.join(f'{x * 1000:.0f}' for x in per)} ms -> contention factor {factor:.3f}")
        out["contention"][str(n)] = {"cores": slices, "median_seconds_each": per, "factor": factor,
                                     "seconds_each": [p["seconds"] for p in side]}
        log(f"{n} replicas in one process on {together}: the all-reduce of the model's gradients, "
            f"then the whole step")
        mr, = run_together([_probe("mirrored", together, params_path, replicas=n, count=STEP_COUNT,
                                   batch=b)], deadline)
        ar = mr.pop("allreduce")
        out["allreduce"][str(n)] = {**ar, "cores": together, **_median_iv("seconds", ar["seconds"])}
        log(f"all-reduce: {out['allreduce'][str(n)]['median_seconds'] * 1000:.1f} ms for {ar['parameters'] / 1e6:.1f} "
            f"M parameters ({ar['cross_device_ops']})")
        # what N replicas cost in one process beyond the terms above: the rest of the whole step
        parts = factor * out["step_alone"]["median_seconds"] + out["allreduce"][str(n)]["median_seconds"]
        step_n = statistics.median(mr["seconds"])
        out["dispatch"][str(n)] = {**mr, "cores": together, **_median_iv("seconds", mr["seconds"]),
                                   "seconds_beyond_terms": step_n - parts}
        log(f"{n} replicas in one process: {step_n * 1000:.0f} ms per step, {(step_n - parts) * 1000:.0f} ms beyond "
            f"contention x step alone + all-reduce")
        # the same across N worker processes (the multi-worker job's all-reduce: gRPC between them)
        addresses = [f"127.0.0.1:{port}" for port in free_ports(n)]
        log(f"all-reduce across {n} worker processes on {slices}")
        workers = run_together([_probe("allreduce", s, params_path, replicas=n, count=ALLREDUCE_COUNT, batch=b,
                                       env=worker_env(i, addresses, [], base=dict(os.environ)))
                                for i, s in enumerate(slices)], deadline)
        chief = workers[0]
        log(f"all-reduce between processes: {chief['median_seconds'] * 1000:.1f} ms ({chief['cross_device_ops']})")
        out["allreduce_workers"][str(n)] = {**chief, "cores": slices, **_median_iv("seconds", chief["seconds"])}
    return out


def run(params: Params, params_path: str = "params.yaml", out: Path = paths.TERMS) -> dict:
    """Measure the terms and write `out`, holding the host's measurement lock (the probes time steps:
    alone on the host)."""
    from flowerbench.measuring.hostlock import measuring

    with measuring(f"terms of {params_path}"):
        return _measure_and_write(params, params_path, out)


def _measure_and_write(params: Params, params_path: str, out: Path) -> dict:
    from flowerbench.training.trainer import clear_output

    clear_output(out)
    machine = host.describe()
    usable_ids = host.usable_core_ids(machine)
    record = {"schema_version": TERMS_SCHEMA, "host": machine, "cpu_model": host.cpu_label(machine),
              "cores_per_replica": params.train.cores_per_replica,
              "batch_size_per_replica": params.train.batch_size_per_replica,
              "image_size": params.data.image_size, "cache": params.data.cache, "model": params.model.arch,
              "params": resolved_dict(params), "versions": provenance.versions(), **provenance.git_state(),
              "started_at": provenance.now()}
    if placement.on_gpus(params.train, machine["gpu_count"]):
        record.update(skipped="a GPU host: the model's CPU form (shared cores, contention) does not apply; "
                              "its terms are measured on CPU hosts", replicas=[])
    else:
        replicas = study_replicas(params, len(usable_ids))
        record["replicas"] = replicas
        if not replicas:
            record["skipped"] = (f"no core-matched multi-replica run fits {len(usable_ids)} usable core(s) at "
                                 f"{params.train.cores_per_replica} per replica: nothing to predict")
        else:
            record.update(measure(params, params_path, usable_ids, replicas, Deadline(DEADLINE_S)))
    record["finished_at"] = provenance.now()
    check_terms(record, str(out))   # the reader's checks, before anything is written
    if record.get("skipped"):
        log(f"skipped: {record['skipped']}")
    write_json(out, record)
    log(f"-> {out}")
    return record
