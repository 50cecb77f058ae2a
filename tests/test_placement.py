"""The core budget (training/placement.py), as pure arithmetic: what `replicas: auto` resolves to on hosts of
1, 2 and 8 cores (and with GPUs), which cores each run or worker gets, its threads and its kind."""

from __future__ import annotations

import pytest

from flowerbench.training.placement import auto_replicas, plan, resolve
from flowerbench.core.config import ParamsError, TrainParams, Variant


def train(**kw) -> TrainParams:
    return TrainParams(**kw)


@pytest.mark.parametrize("usable,c,gpus,want", [
    (2, 1, 0, 2),    # this host: 2 core-matched replicas
    (8, 1, 0, 4),    # never more than the blog's 4
    (8, 2, 0, 4),
    (6, 2, 0, 3),
    (3, 2, 0, 2),    # 1 would fit: not data parallel, so 2 oversubscribed
    (1, 1, 0, 2),
    (2, 1, 8, 4),    # GPUs: one replica per GPU, at most 4
    (2, 1, 1, 2),    # one GPU: 2 logical GPUs (labelled emulation by the device plan)
])
def test_auto_replicas(usable, c, gpus, want):
    assert auto_replicas(train(cores_per_replica=c), usable, gpus) == want


def test_core_matched_runs_own_their_cores_and_the_baseline_gets_one_share():
    t = train(cores_per_replica=1)
    single = plan(1, None, t, [4, 5], 0)
    assert (single.kind, single.affinity, single.budget_cores, single.intra_op_threads, single.inter_op_threads) == \
        ("core_matched", [4], 1, 1, 1)
    two = plan(2, None, t, [4, 5], 0)
    assert (two.kind, two.affinity, two.intra_op_threads, two.inter_op_threads) == ("core_matched", [4, 5], 1, 2)
    t2 = train(cores_per_replica=2)
    assert plan(2, None, t2, list(range(8)), 0).affinity == [0, 1, 2, 3]
    assert plan(2, None, t2, list(range(8)), 0).intra_op_threads == 2


def test_one_replica_on_every_core_is_the_threads_run():
    b = plan(1, 2, train(), [0, 1], 0)
    assert (b.kind, b.affinity, b.budget_cores, b.intra_op_threads, b.inter_op_threads) == ("threads", [0, 1], 2, 2, 1)


def test_a_run_that_does_not_fit_is_oversubscribed_on_every_core():
    b = plan(4, None, train(), [0, 1], 0)
    assert (b.kind, b.affinity, b.intra_op_threads, b.inter_op_threads) == ("oversubscribed", [0, 1], 1, 4)


def test_workers_get_disjoint_cores_and_their_own_share_of_threads():
    t = train(cores_per_replica=1)
    w = [plan(2, None, t, [0, 1], 0, worker=i) for i in range(2)]
    assert [x.affinity for x in w] == [[0], [1]] and all(x.kind == "core_matched" for x in w)
    assert [(x.intra_op_threads, x.inter_op_threads) for x in w] == [(1, 1), (1, 1)]  # not divided again
    over = plan(4, None, t, [0, 1], 0, worker=3)
    assert over.kind == "oversubscribed" and over.affinity == [0, 1]


def test_gpus_and_tf_default_pin_nothing():
    assert plan(4, None, train(), [0, 1], 4).kind == "gpu" and plan(4, None, train(), [0, 1], 4).affinity == []
    shared = plan(2, None, train(thread_policy="tf_default"), [0, 1], 0)
    assert shared.kind == "shared" and shared.affinity == [] and shared.intra_op_threads == 0


def test_resolve_auto_and_refuse_a_sweep_point_that_does_not_fit():
    t = train(cores_per_replica=1)
    v = resolve(Variant(name="mirrored_fit", loop="fit", replicas="auto"), t, 2, 0)
    assert v.replicas == 2 and v.cores is None
    w = resolve(Variant(name="single_fit_threads", loop="fit", replicas=1, cores="auto"), t, 8, 0)
    assert (w.replicas, w.cores) == (1, 4)
    assert resolve(Variant(name="big", loop="fit", replicas=4), t, 2, 0).replicas == 4  # declared: oversubscribed
    with pytest.raises(ParamsError, match=r"^sweep.replicas: 8 replicas x 1 core\(s\) per replica need 8 cores, "
                                          r"but this host has 2 usable"):
        resolve(Variant(name="sweep_r8_fit", loop="fit", replicas=8), t, 2, 0, sweep=True)
