"""One variant's process -> a result (the rounds stage runs one per variant per round).

    python -m flowerbench train --variant mirrored_fit [--out PATH] [--first-core K] [--params params.yaml]

Resolves the variant on this host, starts the process (runtime.start: core
budget and pin, TensorFlow, devices, strategy) and runs the shared training
path (training/trainer.py).  The result is
written atomically at the very end: an interrupted or failed run leaves no
result file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from flowerbench.training import devices, placement, runtime
from flowerbench.core import hold, host, paths
from flowerbench.core.config import Params, ParamsError
from flowerbench.core.io import write_json
from flowerbench.core.results import Result
from flowerbench.training.trainer import clear_output, log, prepare, train_variant


def run(params: Params, variant_name: str, results_dir: Path = paths.RESULTS, out: Optional[Path] = None,
        first_core: int = 0) -> Result:
    """One variant's process: resolve the variant and its core budget on this host, pin the cores, plan
    the devices, build the strategy, train, write the result to `out` (default results/<variant>.json).
    `first_core`: start the core list there (the rounds rotate a one-replica run across the cores)."""
    variant = params.variant(variant_name)
    if variant.workers is not None:
        raise ParamsError(f"variant: {variant.name} is a {variant.workers}-worker job; it runs under "
                          f"`python -m flowerbench launch`, not `train`")
    machine = host.describe()          # before pinning: the host, not this process's share of it
    variant = placement.resolve(variant, params.train, machine["usable_cores"], machine["gpu_count"],
                             sweep=params.is_sweep(variant.name))
    devices.refuse_before_tensorflow(variant.replicas, params.train)
    out_path = Path(out) if out is not None else paths.result_path(variant.name, results_dir)
    clear_output(out_path)
    batches, images = prepare(params, variant)

    ids = host.usable_core_ids(machine)
    if not 0 <= first_core < len(ids):
        raise ParamsError(f"--first-core: {first_core} is not one of the {len(ids)} usable core positions")
    rt = runtime.start(params.train, variant.replicas, cores=variant.cores, machine=machine,
                       core_ids=ids[first_core:] + ids[:first_core])
    cores, plan = rt.budget, rt.plan
    log(variant.name, f"core budget {cores.kind}: {cores.budget_cores} of {cores.usable_cores} usable core(s) "
        f"{cores.affinity or '(not pinned)'}, threads intra {cores.intra_op_threads or 'default'} / inter "
        f"{cores.inter_op_threads or 'default'}")
    log(variant.name, f"{variant.loop} loop, {variant.replicas} replica(s) on {plan.device_kind} "
        f"{plan.devices}, global batch {batches.global_batch_size}, {len(images.files)} images at "
        f"{params.data.image_size}px, {params.train.warmup_epochs} warm-up + {params.train.epochs} timed epoch(s)")
    for note in plan.notes:
        log(variant.name, f"note: {note}")
    gate = hold.from_env()             # held by the measuring engine (measuring/scheduler.py), or None
    if gate is not None:
        log(variant.name, "held: each timed epoch waits for the scheduler's release")
    result, _ = train_variant(params, variant, rt.strategy, batches, images, rt.devices_record(), gate=gate)
    write_json(out_path, result.as_dict())
    log(variant.name, f"timed {result.timed_seconds:.2f}s ({result.images_per_second:.1f} img/s, "
        f"{plan.device_kind}) -> {out_path}")
    return result
