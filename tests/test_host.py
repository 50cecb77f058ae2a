"""The usable-core count under a CPU quota (host.cgroup_cpu_limit, host.usable_cores), on fake cgroup
trees: v2 (cpu.max in the unified hierarchy), v1 (cpu,cpuacct cfs_quota_us / cfs_period_us), a quota
below one core, none at all.  Under Kubernetes CPU limits (deploy/) a wrong count would label
oversubscribed runs core-matched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flowerbench import host


def _v2(tmp_path: Path, cpu_max: str, rel: str = "kubepods/pod1") -> tuple[Path, Path]:
    root = tmp_path / "cgroup"
    (root / rel).mkdir(parents=True)
    (root / rel / "cpu.max").write_text(cpu_max + "\n")
    proc = tmp_path / "proc-self-cgroup"
    proc.write_text(f"0::/{rel}\n")
    return root, proc


def _v1(tmp_path: Path, quota: int, period: int, rel: str = "docker/abc") -> tuple[Path, Path]:
    root = tmp_path / "cgroup"
    base = root / "cpu,cpuacct" / rel
    base.mkdir(parents=True)
    (base / "cpu.cfs_quota_us").write_text(f"{quota}\n")
    (base / "cpu.cfs_period_us").write_text(f"{period}\n")
    proc = tmp_path / "proc-self-cgroup"
    proc.write_text(f"12:memory:/{rel}\n4:cpu,cpuacct:/{rel}\n1:name=systemd:/{rel}\n")
    return root, proc


@pytest.mark.parametrize("cpu_max,cores", [("150000 100000", 1.5), ("50000 100000", 0.5), ("400000 100000", 4.0),
                                           ("max 100000", None)])
def test_cgroup_v2_quota_in_cores(tmp_path, cpu_max, cores):
    assert host.cgroup_cpu_limit(*_v2(tmp_path, cpu_max)) == cores


@pytest.mark.parametrize("quota,period,cores", [(150000, 100000, 1.5), (25000, 100000, 0.25), (-1, 100000, None)])
def test_cgroup_v1_quota_in_cores(tmp_path, quota, period, cores):
    assert host.cgroup_cpu_limit(*_v1(tmp_path, quota, period)) == cores


def test_no_cgroup_file_means_no_quota(tmp_path):
    assert host.cgroup_cpu_limit(tmp_path / "none", tmp_path / "no-proc-file") is None


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs 2 cores in this process's mask")
@pytest.mark.parametrize("tree", ["v1", "v2"])
def test_a_quota_caps_the_usable_cores_below_the_mask(tmp_path, tree):
    """1.5 cores of quota on a 2-core mask is 1 usable core (half a core is not a core a replica can
    own), and a quota below one core still leaves 1; without a quota the mask counts."""
    mask = len(os.sched_getaffinity(0))
    one_and_a_half = _v2(tmp_path / "a", "150000 100000") if tree == "v2" else _v1(tmp_path / "a", 150000, 100000)
    assert host.usable_cores(*one_and_a_half) == 1
    a_fifth = _v2(tmp_path / "b", "20000 100000") if tree == "v2" else _v1(tmp_path / "b", 20000, 100000)
    assert host.usable_cores(*a_fifth) == 1
    wide = _v2(tmp_path / "c", f"{mask * 300000} 100000") if tree == "v2" else _v1(tmp_path / "c", mask * 300000, 100000)
    assert host.usable_cores(*wide) == mask
