"""The usable-core count under a CPU quota (host.cgroup_cpu_limit, host.usable_cores), on fake cgroup
trees: v2 (cpu.max in the unified hierarchy), v1 (cpu,cpuacct cfs_quota_us / cfs_period_us), a quota
below one core, none at all.  Under Kubernetes CPU limits (deploy/) a wrong count would label
oversubscribed runs core-matched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flowerbench.core import host


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


CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: {family}
model\t\t: {model}
model name\t: AMD EPYC
stepping\t: 1
microcode\t: 0x{micro}
cpu MHz\t\t: {mhz}
bogomips\t: {bogo}
flags\t\t: fpu sse4_2 avx avx2 fma {extra}

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: {family}
model\t\t: {model}
flags\t\t: fpu
"""


def fake_machine(root: Path, family: int = 25, model: int = 17, extra: str = "avx512f avx512_bf16",
                 mhz: str = "2595.124", bogo: str = "5190.24", micro: str = "a0011d1", l3: str = "32768K",
                 mem_kb: int = 24683772) -> dict[str, str]:
    """A /proc/cpuinfo, /proc/meminfo and cpu0's sysfs caches under `root`; -> the environment that
    points core/host.py at them."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "cpuinfo").write_text(CPUINFO.format(family=family, model=model, extra=extra, mhz=mhz, bogo=bogo,
                                                 micro=micro))
    (root / "meminfo").write_text(f"MemTotal:       {mem_kb} kB\nMemFree:        1000 kB\n")
    for i, (level, kind, size) in enumerate([(1, "Data", "32K"), (1, "Instruction", "32K"), (2, "Unified", "1024K"),
                                             (3, "Unified", l3)]):
        d = root / "sys" / "cpu0" / "cache" / f"index{i}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    return {"FLOWERBENCH_CPUINFO": str(root / "cpuinfo"), "FLOWERBENCH_MEMINFO": str(root / "meminfo"),
            "FLOWERBENCH_CPU_SYSFS": str(root / "sys")}


def _describe(monkeypatch, env: dict[str, str]) -> dict:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return host.describe()


def test_the_identity_tells_cpu_generations_apart_and_ignores_what_changes_on_one_machine(tmp_path, monkeypatch):
    """Two CPUs that both say "AMD EPYC" (Zen 4 and Zen 5) are two identities; the clock, bogomips,
    microcode and a few MB of memory on the same machine are one."""
    zen4 = _describe(monkeypatch, fake_machine(tmp_path / "a"))
    assert zen4["host_schema"] == host.HOST_SCHEMA == 2 and "cpu_model" not in zen4
    assert zen4["cpu"] == {"vendor": "AuthenticAMD", "family": 25, "model": 17, "stepping": 1,
                           "isa": ["sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16"],
                           "l2_kib": 1024, "l3_kib": 32768}
    assert zen4["memory_gib"] == 24
    same = _describe(monkeypatch, fake_machine(tmp_path / "b", mhz="3700.000", bogo="7400.00", micro="a0011ff",
                                               mem_kb=24683772 - 3000))
    assert same == zen4 and host.same_identity(same, zen4)
    zen5 = _describe(monkeypatch, fake_machine(tmp_path / "c", family=26, model=2))
    assert zen5 != zen4 and not host.same_identity(zen5, zen4)
    no_avx512 = _describe(monkeypatch, fake_machine(tmp_path / "d", extra=""))
    assert not host.same_identity(no_avx512, zen4)
    smaller_l3 = _describe(monkeypatch, fake_machine(tmp_path / "e", l3="16384K"))
    assert not host.same_identity(smaller_l3, zen4)
    assert host.cpu_label(zen4) == "AuthenticAMD family 25 model 17 stepping 1, AVX-512 (bf16), L2 1 MiB, L3 32 MiB"


def test_a_schema_1_description_has_an_unknown_identity():
    old = {"host_schema": 1, "cpu_model": "AMD EPYC", "machine": "x86_64", "usable_cores": 2, "gpu_count": 0,
           "gpu_models": [], "gpu_driver": None, "tensorflow_build": {}}
    assert not host.identity_known(old) and not host.same_identity(old, old)
    assert "identity unknown" in host.label(old)
    with pytest.raises(host.HostError, match="host_schema 1"):
        p = Path(pytest.importorskip("tempfile").mkdtemp()) / "host.json"
        p.write_text(__import__("json").dumps(old))
        host.load(p)


def test_the_speed_index_is_a_rate_with_its_spread():
    s = host.speed_index(seconds=0.2, n=64)
    assert s["low"] <= s["gflops"] <= s["high"] and s["gflops"] > 0.01 and s["matrix"] == 64
