"""The distributed math equals the single-device math (real TensorFlow, logical CPU devices).

One SGD step from the same weights on the same global batch of 16 images:
N replicas x 16/N == 1 replica x 16 for fit and for the custom loop, within 1e-5.
The tests would fail if the loss were scaled by the per-replica batch (the update
is then exactly N times too large) or if BatchNorm statistics were per replica.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import REPO, cli_env, once_per_run

TOL = 1e-5


def _one_step_each(d: Path) -> None:
    """One process per multi-replica count (collective groups of different sizes cannot share one);
    the single replica runs in the first."""
    for counts in ("1,2", "4"):
        proc = subprocess.run([sys.executable, str(REPO / "tests" / "helpers" / "equivalence.py"), counts, str(d)],
                              capture_output=True, text=True, timeout=240, env=cli_env())
        assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="session")
def steps(tmp_path_factory, worker_id) -> dict[int, dict[str, np.ndarray]]:
    """The steps, computed once per test run even when these tests are spread over xdist workers."""
    d = once_per_run(tmp_path_factory, worker_id, "equivalence-steps", _one_step_each)
    out = {}
    for n in (1, 2, 4):
        with np.load(d / f"r{n}.npz") as z:
            out[n] = {k: z[k] for k in z.files}
    return out


def _maxdiff(a, b) -> float:
    return float(np.max(np.abs(a - b)))


def test_the_step_changes_the_weights(steps):
    """Guards the other tests: a step that did nothing would make every comparison pass."""
    assert _maxdiff(steps[1]["custom"], steps[1]["init_trainable"]) > 1e-2


def test_fit_and_custom_loop_agree_on_one_replica(steps):
    assert _maxdiff(steps[1]["fit"], steps[1]["custom"]) < TOL
    assert _maxdiff(steps[1]["custom_step"], steps[1]["custom"]) < TOL  # train.custom_graph=step


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("loop", ["custom", "fit", "custom_step"])
def test_n_replicas_equal_one_replica_with_n_times_the_batch(steps, n, loop):
    assert _maxdiff(steps[n][loop], steps[1][loop]) < TOL


@pytest.mark.parametrize("n", [2, 4])
def test_loss_scaled_by_per_replica_batch_gives_n_times_the_update(steps, n):
    init = steps[1]["init_trainable"]
    wrong = np.linalg.norm(steps[n]["custom_misscaled"] - init)
    right = np.linalg.norm(steps[1]["custom"] - init)
    assert wrong / right == pytest.approx(n, rel=1e-3)


def test_per_replica_batchnorm_differs_synchronized_batchnorm_matches(steps):
    assert _maxdiff(steps[4]["bn_local"], steps[1]["bn_local"]) > 1e-3
    assert _maxdiff(steps[4]["bn_sync"], steps[1]["bn_sync"]) < TOL
    assert _maxdiff(steps[2]["bn_sync"], steps[1]["bn_sync"]) < TOL
    for n in (2, 4):  # and in fit()
        assert _maxdiff(steps[n]["fit_bn_sync"], steps[1]["fit_bn_sync"]) < TOL


@pytest.mark.parametrize("n", [1, 2, 4])
def test_k_steps_per_call_give_the_update_of_k_calls(steps, n):
    """train.custom_steps_per_call: k steps unrolled into one graph call (3, then the remainder's 1;
    and all 4 in one) end where 4 calls of one step end, on 1, 2 and 4 replicas (a call that ran
    only some of its steps, or out of order, would not); and the steps moved the weights."""
    one_call_per_step = steps[n]["epoch_k1"]
    for k in (3, 4):
        assert _maxdiff(steps[n][f"epoch_k{k}"], one_call_per_step) < TOL
    assert _maxdiff(one_call_per_step, steps[1]["epoch_k1"]) < TOL
    init = steps[1]["init_trainable"]
    assert _maxdiff(one_call_per_step, init) > 1e-2
