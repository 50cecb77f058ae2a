"""Bad params: exit 2, one line naming the dotted key, before TensorFlow is imported, nothing written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import (assert_clean_failure, assert_tensorflow_not_loaded, run_cli, tiny_params, tree_snapshot,
                            write_params)

CASES = {
    "unknown_key": ({"train.epoch": 3}, "train.epoch: unknown key"),
    "wrong_type": ({"train.epochs": "two"}, "train.epochs: must be of type int, got 'two'"),
    "zero_batch": ({"train.batch_size_per_replica": 0}, "train.batch_size_per_replica: must be >= 1, got 0"),
    "negative_batch": ({"train.batch_size_per_replica": -8}, "train.batch_size_per_replica: must be >= 1, got -8"),
    "zero_epochs": ({"train.epochs": 0}, "train.epochs: must be >= 1, got 0"),
    "zero_replicas": ({"variants": {"single_fit": {"loop": "fit", "replicas": 0}}},
                      "variants.single_fit.replicas: must be >= 1, got 0"),
    "image_too_small": ({"data.image_size": 16}, "data.image_size: must be >= 32, got 16"),
    "unknown_loop": ({"variants": {"single_fit": {"loop": "keras", "replicas": 1}}},
                     "variants.single_fit.loop: must be one of 'fit' or 'custom', got 'keras'"),
    "bad_variant_name": ({"variants": {"Single-Fit": {"loop": "fit", "replicas": 1}}},
                         "variants: 'Single-Fit' is not a valid variant name"),
    # the shape before variants became a name-keyed mapping: one line naming the new shape
    "old_variants_list": ({"variants": [{"name": "single_fit", "loop": "fit", "replicas": 1}]},
                          "variants: a list of {name: ..., loop: ..., replicas: ...} is the old shape; "
                          "variants is now a mapping keyed by name, e.g. variants: {single_fit: {loop: fit, "
                          "replicas: 1}, ...}"),
    "bad_source": ({"data.source": "ftp"}, "data.source: must be one of"),
    "bad_sha": ({"data.sha256": "abc"}, "data.sha256: must be 64 hex digits"),
    # well typed, but cannot do what the key is for
    "baseline_names_no_variant": ({"report.baseline": "singel_fit"},
                                  "report.baseline: 'singel_fit' names no variant (have: single_fit, mirrored_fit, "
                                  "single_custom, mirrored_custom, multiworker_custom)"),
    "baseline_is_an_input_ceiling": ({"variants": {"single_fit": {"loop": "fit", "replicas": 1, "pipeline": "tensors"}}},
                                     "report.baseline: 'single_fit' feeds in-memory tensors (an input ceiling)"),
    "sweep_point_twice": ({"sweep": {"replicas": [2, 2], "loops": ["fit"]}},
                          "sweep.replicas: 2 is listed twice (it would run the same variant twice)"),
    "sweep_shadows_a_variant": ({"variants": {"single_fit": {"loop": "fit", "replicas": 1},
                                              "sweep_r2_fit": {"loop": "fit", "replicas": 4}},
                                 "sweep": {"replicas": [2], "loops": ["fit"]}},
                                "sweep: expands to variant 'sweep_r2_fit', which variants already declares"),
    "url_without_scheme": ({"data.url": "flower_photos.tgz"},
                           "data.url: must be an http(s) URL with a host, got 'flower_photos.tgz'"),
    "join_timeout_past_deadline": ({"multiworker.join_timeout_s": 200.0},
                                   "multiworker.join_timeout_s: 200 s is not shorter than multiworker.deadline_s "
                                   "(120 s)"),
    "blog_baseline_dropped": ({"report.blog_seconds": {"mirrored_fit": 41.66}},
                              "report.blog_seconds: must keep single_fit, the blog's baseline"),
    # values no run could have produced (issue 25's hostile review)
    "blog_time_negative": ({"report.blog_seconds": {"single_fit": -110.58}},
                           "report.blog_seconds: single_fit: a time must be > 0 s, got -110.58"),
    "blog_time_nan": ({"report.blog_seconds": {"single_fit": float("nan")}},
                      "report.blog_seconds.single_fit: Input should be a finite number, got nan"),
    "blog_run_it_never_ran": ({"report.blog_seconds": {"single_fit": 110.58, "mirrored_fit_8": 20.0}},
                              "report.blog_seconds: 'mirrored_fit_8' is not one of the blog's runs"),
    "claimed_reduction_of_100_pct": ({"report.blog_claimed_reduction_pct": {"mirrored_fit": 100.0}},
                                     "report.blog_claimed_reduction_pct: mirrored_fit: a reduction of time must "
                                     "be < 100 % (100 % is zero seconds), got 100.0"),
    "claimed_reduction_of_the_baseline": ({"report.blog_claimed_reduction_pct": {"single_fit": 5.0}},
                                          "report.blog_claimed_reduction_pct: single_fit: the blog's reductions "
                                          "are against single_fit"),
    "model_without_an_interconnect": ({"report.scaling_model": {"allreduce_seconds_per_step": {}}},
                                      "report.scaling_model.allreduce_seconds_per_step: must name at least one"),
    "model_zero_decode_rate": ({"report.scaling_model": {"blog_input_images_per_second": {"1 core": 0.0}}},
                               "report.scaling_model.blog_input_images_per_second: '1 core': must be > 0, got 0.0"),
    "model_infinite_parameters": ({"report.scaling_model": {"parameters": float("inf")}},
                                  "report.scaling_model.parameters: Input should be a finite number, got inf"),
    "learning_rate_nan": ({"train.learning_rate": float("nan")},
                          "train.learning_rate: Input should be a finite number, got nan"),
    "sweep_with_no_loop": ({"sweep": {"replicas": [2], "loops": []}},
                           "sweep.loops: empty, so sweep.replicas [2] would run nothing"),
    "empty_archive_path": ({"data.archive_path": ""}, "data.archive_path: "),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_params_exit_2_naming_the_key(workdir: Path, case: str):
    overrides, needle = CASES[case]
    write_params(workdir / "params.yaml", tiny_params(**overrides))
    before = tree_snapshot(workdir / "data")
    proc = run_cli("train", "--variant", "single_fit", cwd=workdir, timeout=30)
    assert_clean_failure(proc, 2, needle, before, (workdir / "data", workdir / "results"))
    assert not (workdir / "results").exists()
    assert_tensorflow_not_loaded(proc)


def test_missing_params_file(workdir: Path):
    proc = run_cli("train", "--variant", "single_fit", "--params", "nope.yaml", cwd=workdir, timeout=30)
    assert_clean_failure(proc, 2, "nope.yaml: params file not found")


def test_yaml_syntax_error(workdir: Path):
    (workdir / "params.yaml").write_text("train:\n  epochs: [1, 2\n")
    proc = run_cli("fetch", cwd=workdir, timeout=30)
    assert_clean_failure(proc, 2, "params.yaml: YAML syntax error at line 3")


def test_duplicate_variant_key(workdir: Path):
    """Plain YAML keeps the last of two equal keys; a second `single_fit:` would silently win."""
    (workdir / "params.yaml").write_text("variants:\n  single_fit: {loop: fit, replicas: 1}\n"
                                         "  single_fit: {loop: custom, replicas: 2}\n")
    proc = run_cli("fetch", cwd=workdir, timeout=30)
    assert_clean_failure(proc, 2, "params.yaml: YAML syntax error at line 3, column 3: duplicate key 'single_fit'")


def test_unknown_variant_name(workdir: Path):
    proc = run_cli("train", "--variant", "quad_fit", cwd=workdir, timeout=30)
    line = assert_clean_failure(proc, 2, "variant: unknown variant 'quad_fit'")
    assert "single_fit" in line  # lists the known ones


def test_params_file_that_is_not_text(workdir: Path):
    """Not UTF-8 (a binary, or a Latin-1 file): one line naming the file, as DVC's own path does."""
    (workdir / "params.yaml").write_bytes(b"seed: 1\ndata:\n  url: caf\xe9\n")
    proc = run_cli("fetch", cwd=workdir, timeout=30)
    assert_clean_failure(proc, 2, "params.yaml: not UTF-8 text (byte 0xe9 at offset 24); a params file is YAML")


def test_strong_scaling_indivisible_batch(workdir: Path):
    write_params(workdir / "params.yaml", tiny_params(**{"train.scaling": "strong", "train.batch_size_per_replica": 5}))
    proc = run_cli("train", "--variant", "mirrored_fit", cwd=workdir, timeout=30)
    assert_clean_failure(proc, 2, "must be divisible by 2")


def test_fewer_images_than_one_global_batch(workdir: Path):
    """30 images, 8 per replica x 4 replicas = 32: refused in one line before TensorFlow loads (it
    used to fail inside fit() with an AddN shape mismatch)."""
    p = tiny_params(**{"train.batch_size_per_replica": 8})
    p["variants"]["mirrored_fit"]["replicas"] = 4
    write_params(workdir / "params.yaml", p)
    proc = run_cli("train", "--variant", "mirrored_fit", cwd=workdir, timeout=60)
    assert_clean_failure(proc, 2, "train.batch_size_per_replica: one global batch of mirrored_fit (8 x 4 replicas "
                                  "= 32) needs at least 32 images, but the data has 30")
    assert_tensorflow_not_loaded(proc)


NO_GPU_DEVICE = "this host has no GPU device (/dev/nvidia*, /dev/kfd, /dev/dxg)"


def _gpu_device_here() -> bool:
    from flowerbench.core.host import no_gpu_device

    return not no_gpu_device()


@pytest.mark.skipif(_gpu_device_here(), reason="a GPU device node here: TensorFlow decides")
def test_more_replicas_than_host_allows(workdir: Path):
    """No GPU device here: 2 replicas without emulation is refused, naming the numbers, before
    TensorFlow starts (it cannot see a GPU without a device node)."""
    write_params(workdir / "params.yaml", tiny_params(**{"train.emulate": False}))
    proc = run_cli("train", "--variant", "mirrored_fit", cwd=workdir, timeout=120)
    assert_clean_failure(proc, 1, f"2 replicas requested but this host has 0 GPUs ({NO_GPU_DEVICE})")
    assert_tensorflow_not_loaded(proc)
    assert not (workdir / "results" / "mirrored_fit.json").exists()


@pytest.mark.skipif(_gpu_device_here(), reason="a GPU device node here: TensorFlow decides")
def test_gpu_required_but_absent(workdir: Path):
    write_params(workdir / "params.yaml", tiny_params(**{"train.device": "gpu"}))
    proc = run_cli("train", "--variant", "single_fit", cwd=workdir, timeout=120)
    assert_clean_failure(proc, 1, f"train.device=gpu but {NO_GPU_DEVICE} (1 replica(s) requested)")
    assert_tensorflow_not_loaded(proc)


def test_tensorflow_without_a_gpu_refuses_the_same(tmp_path):
    """Where a device node exists, TensorFlow's device list decides (plan_devices), with the same
    refusals; here TensorFlow sees no GPU, and nothing is configured before the refusal."""
    from flowerbench.training import placement
    from flowerbench.core.config import validate
    from flowerbench.training.devices import DeviceError, plan_devices

    train = validate(tiny_params(**{"train.emulate": False})).train
    one = placement.plan(1, 1, train, [0], 0)
    with pytest.raises(DeviceError, match=r"^2 replicas requested but this host has 0 GPUs \(TensorFlow sees no GPU"):
        plan_devices(2, train, one)
    gpu = validate(tiny_params(**{"train.device": "gpu"})).train
    with pytest.raises(DeviceError, match=r"^train.device=gpu but TensorFlow sees no GPU on this host \(1 replica"):
        plan_devices(1, gpu, one)


def test_a_sweep_point_that_does_not_fit_the_cores_is_refused(workdir: Path):
    """The sweep is core-matched: 2 replicas x 256 cores each fit no host here; refused in one line
    naming the numbers, before TensorFlow loads and before any result is touched."""
    write_params(workdir / "params.yaml", tiny_params(**{"train.cores_per_replica": 256,
                                                         "sweep": {"replicas": [2], "loops": ["fit"]}}))
    proc = run_cli("train", "--variant", "sweep_r2_fit", cwd=workdir, timeout=30)
    cores = len(__import__("os").sched_getaffinity(0))
    assert_clean_failure(proc, 2, f"sweep.replicas: 2 replicas x 256 core(s) per replica need 512 cores, but this "
                                  f"host has {cores} usable")
    assert_tensorflow_not_loaded(proc)
