"""Hand-made pipeline files with known numbers, shared by the report, metrics, model and fault tests:
a complete result (results.Result), a results folder of the tiny params' variants, and a complete
results/model-terms.json."""

from __future__ import annotations

import json
from pathlib import Path

from flowerbench.perfmodel.termsfile import TERMS_SCHEMA
from tests.conftest import tiny_params

# variant -> (loop, replicas, timed seconds); tiny_params() declares exactly these (+ multiworker_custom).
KNOWN = {"single_fit": ("fit", 1, 100.0), "mirrored_fit": ("fit", 2, 60.0), "single_custom": ("custom", 1, 80.0),
         "mirrored_custom": ("custom", 2, 50.0), "multiworker_custom": ("custom", 2, 70.0)}


TEST_HOST = {"host_schema": 2, "cpu": {"vendor": "TestVendor", "family": 1, "model": 2, "stepping": 3,
                                      "isa": ["avx", "avx2", "fma"], "l2_kib": 1024, "l3_kib": 32768},
             "memory_gib": 24, "machine": "x86_64", "usable_cores": 2, "gpu_count": 0,
             "gpu_models": [], "gpu_driver": None, "tensorflow_build": {"installed": True, "is_cuda_build": False}}


def fake_result(name: str, loop: str, replicas: int, seconds: float, kind: str, synthetic: bool,
                budget: str | None = None, cores: int | None = None) -> dict:
    """A complete, valid result (results.Result) with known numbers; on CPUs each replica owns one core
    (core-matched) unless `budget` says otherwise."""
    from flowerbench.core.results import SCHEMA_VERSION

    budget = budget or ("gpu" if "gpu" in kind else "core_matched")
    cores = cores or (replicas if budget == "core_matched" else 2)

    epochs = 4
    per = [seconds / epochs * f for f in (0.9, 1.1, 1.0, 1.0)]
    gpu = "gpu" in kind
    return {
        "schema_version": SCHEMA_VERSION, "variant": name, "loop": loop, "replicas": replicas,
        "workers": replicas if name == "multiworker_custom" else None,
        "batch_size_per_replica": 64, "global_batch_size": 64 * replicas, "scaling": "weak", "image_size": 224,
        "pipeline": "files", "model": "resnet50", "optimizer": "adam", "optimizer_class": "Adam",
        "dtype_policy": "float32", "mixed_precision": False, "jit_compile": False, "steps_per_execution": 1,
        "custom_graph": "epoch", "parameter_count": 23_600_000, "num_classes": 5,
        "class_names": ["daisy", "dandelion", "roses", "sunflowers", "tulips"],
        "images_per_epoch": 3670, "steps_per_epoch": -(-3670 // (64 * replicas)), "warmup_epochs": 1,
        "epochs": epochs, "repeats": 1, "warmup_seconds": 30.0, "epoch_seconds": per,
        "epoch_loss": [1.6, 1.2, 0.9, 0.5], "epoch_accuracy": [0.3, 0.5, 0.7, 0.8], "epoch_images": [3670] * epochs,
        "repeat_seconds": [seconds], "repeat_wall_seconds": [seconds], "timed_seconds": seconds,
        "epoch_cpu_seconds": [x * replicas for x in per], "repeat_cpu_seconds": [seconds * replicas],
        "images_per_second": 3670 * epochs / seconds, "final_loss": 0.5, "final_accuracy": 0.8,
        "step_timing": False, "step_seconds": None, "harness_ratio": None, "harness_note": "step_timing is off",
        "stage_seconds": seconds + 40, "device_kind": kind if replicas > 1 else kind.replace("logical_", ""),
        "devices": [f"/gpu:{i}" for i in range(replicas)], "emulated": kind.startswith("logical") and replicas > 1,
        "device_notes": [], "gpu_model": "TEST-GPU" if gpu else None, "physical_gpus": replicas if gpu else 0,
        "cpu_model": "Test CPU", "cpu_count": 2, "thread_policy": "per_replica", "intra_op_threads": 0,
        "inter_op_threads": 0, "budget_kind": budget, "cores_per_replica": 1, "budget_cores": cores,
        "budget_affinity": list(range(cores)) if budget != "gpu" else [], "usable_cores": 2,
        "readback": {"cpus_allowed_list": f"0-{cores - 1}", "intra_op_threads": 1, "inter_op_threads": replicas},
        "strategy": "MirroredStrategy", "cross_device_ops": "CollectiveAllReduce",
        "onednn": "1", "tf_built_with_cuda": True, "data_source": "synthetic" if synthetic else "download",
        "data_label": None, "data_synthetic": synthetic, "data_tree_sha256": "0" * 64, "params": tiny_params(),
        "versions": {"python": "3.11", "tensorflow": "2.21.0"}, "git_commit": "abc", "git_dirty": False,
        "git_changed": [], "host": dict(TEST_HOST),
        "speed_index": {"gflops": 50.0, "low": 49.0, "high": 51.0, "matrix": 128, "seconds": 1.0}, "hostname": "test", "platform": "Linux", "argv": ["train"],
        "started_at": "2026-12-04T10:00:00+00:00", "finished_at": "2026-12-04T10:05:00+00:00",
    }


# The host's drift from round to round in the fake rounds: shared by every variant, so paired ratios
# come out exact (a zero-width interval) unless a test adds noise of its own.
DRIFT = (1.0, 1.04, 0.97)


def schedule(variants: list[str], count: int) -> dict:
    """A complete results/rounds/schedule.json for `variants` x `count` rounds (rounds.Schedule)."""
    from flowerbench.measuring import schedule as rounds

    order = rounds.order(variants, count, 7)
    procs = [{"round": k, "position": i + 1, "variant": v, "first_core": (k - 1) % 2,
              "started_at": "2026-12-04T10:00:00+00:00", "wall_seconds": 60.0, "exit_code": 0,
              "load_before": [0.1, 0.1, 0.1], "load_after": [1.0, 0.5, 0.2], "steal_share": 0.0,
              "foreign_share": 0.01, "busy": False}
             for k, o in enumerate(order, start=1) for i, v in enumerate(o)]
    return {"schema_version": rounds.SCHEDULE_SCHEMA, "engine": rounds.ENGINE, "fingerprint": "0" * 64, "seed": 123, "order_seed": 7,
            "count": count,
            "variants": variants, "order": order, "usable_cores": 2, "busy_share": 0.1, "processes": procs}


def write_rounds(results_dir: Path, records: dict[str, list[dict]], folder: str = "rounds") -> None:
    """results/rounds/ (or results/<folder>/, say secondary/): each variant's per-round records
    (results.Result dicts) and their schedule."""
    rounds_dir = results_dir / folder
    count = len(next(iter(records.values())))
    for name, recs in records.items():
        for k, rec in enumerate(recs, start=1):
            (rounds_dir / f"r{k:02d}").mkdir(parents=True, exist_ok=True)
            (rounds_dir / f"r{k:02d}" / f"{name}.json").write_text(json.dumps(rec))
    (rounds_dir / "schedule.json").write_text(json.dumps(schedule(list(records), count)))


def per_round(record: dict, drift=DRIFT) -> list[dict]:
    """One record per round: its times scaled by the round's drift."""
    out = []
    for f in drift:
        r = json.loads(json.dumps(record))
        for key in ("epoch_seconds", "repeat_seconds", "repeat_wall_seconds", "epoch_cpu_seconds",
                    "repeat_cpu_seconds"):
            r[key] = [x * f for x in r[key]]
        r["timed_seconds"] *= f
        r["images_per_second"] /= f
        out.append(r)
    return out


def read_rounds(results_dir: Path) -> dict[str, list[dict]]:
    """What write_rounds wrote, back as records (to add a variant or change one)."""
    sched = json.loads((results_dir / "rounds" / "schedule.json").read_text())
    return {v: [json.loads((results_dir / "rounds" / f"r{k:02d}" / f"{v}.json").read_text())
                for k in range(1, sched["count"] + 1)] for v in sched["variants"]}


def add_result(results_dir: Path, record: dict, drift=DRIFT) -> None:
    """Add (or replace) one variant in every round of the fake rounds."""
    records = read_rounds(results_dir)
    records[record["variant"]] = per_round(record, drift[:len(next(iter(records.values())))])
    write_rounds(results_dir, records)


def fake_results(results_dir: Path, kind: str = "logical_cpu", synthetic: bool = True, drift=DRIFT) -> None:
    """The tiny params' variants (KNOWN) in len(drift) rounds."""
    write_rounds(results_dir, {name: per_round(fake_result(name, loop, replicas, secs, kind, synthetic), drift)
                               for name, (loop, replicas, secs) in KNOWN.items()})


# one replica's step from the custom twin: 57.6 s / (4 epochs x 58 steps of 64 of 3,670 images)
STEP = 57.6 / (4 * 58)


def fake_terms(factor: float = 1.25, allreduce_s: float = 0.05, rate: float = 1000.0) -> dict:
    """A complete results/model-terms.json for N = 2 (the shape perfmodel/terms.py writes)."""
    return {"schema_version": TERMS_SCHEMA, "cpu_model": "Test CPU", "cores_per_replica": 1,
            "started_at": "2026-12-04T09:00:00+00:00", "replicas": [2],
            "input": {"median_rate": rate, "interval_rate": [rate * 0.9, rate * 1.1], "images": 3670,
                      "image_size": 224, "cache": True, "seconds": [3.67, 3.67, 3.67]},
            "step_alone": {"median_seconds": STEP, "interval_seconds": [STEP * 0.9, STEP * 1.1], "batch": 64},
            "contention": {"2": {"factor": factor, "cores": [[0], [1]],
                                 "median_seconds_each": [STEP * factor, STEP * factor]}},
            "allreduce": {"2": {"median_seconds": allreduce_s, "interval_seconds": [allreduce_s, allreduce_s],
                                "tensors": 161, "parameters": 23_600_000, "cross_device_ops": "CollectiveAllReduce"}}}


def fake_dispatch(beyond: float, median: float = 0.8, interval=(0.75, 0.9)) -> dict:
    """A measured dispatch term for N = 2: `beyond` seconds per step past the four terms."""
    return {"2": {"seconds_beyond_terms": beyond, "median_seconds": median, "interval_seconds": list(interval),
                  "cores": [0, 1]}}


def fake_workers_allreduce(seconds: float) -> dict:
    """A measured all-reduce between 2 worker processes."""
    return {"2": {"median_seconds": seconds, "interval_seconds": [seconds, seconds], "cores": [[0], [1]],
                  "cross_device_ops": "CollectiveAllReduce"}}
