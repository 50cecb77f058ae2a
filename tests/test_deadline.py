"""The one kill-on-deadline helper (flowerbench.core.deadline), used by the launcher, the bench's clone
and gpu-check: every way a child can end, with real processes (and their children) in their own
process groups."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from flowerbench.core.deadline import Deadline, DeadlineExceeded, guarded, wait

# A child that forks a grandchild (which a kill of the child alone would leave behind), then:
QUIET = "import subprocess, sys, time; g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); print(g.pid, flush=True); time.sleep(60)"
CHATTY = "import subprocess, sys, time; g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); print(g.pid, flush=True)\nwhile True: print('tick', flush=True); time.sleep(0.05)"
QUICK = "print('done')"


def start(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie still answers kill(0): count it as gone once its state says so (or once it is reaped)
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[1].startswith("Z")
    except FileNotFoundError:
        return True


def test_guarded_in_time_leaves_the_child_alone():
    procs = [start(QUICK)]
    with guarded(procs, Deadline(30)):
        lines = procs[0].stdout.readlines()
        rc = procs[0].wait()
    assert rc == 0 and lines == ["done\n"]


@pytest.mark.parametrize("code", [QUIET, CHATTY], ids=["silent", "printing"])
def test_guarded_kills_the_whole_group_at_the_deadline(code):
    """Blocked reading the child's pipe, silent or not: the timer kills the group, the pipe closes,
    the block ends and DeadlineExceeded names the child."""
    procs = [start(code)]
    t0 = time.monotonic()
    with pytest.raises(DeadlineExceeded) as info:
        with guarded(procs, Deadline(1.5)):
            grandchild = int(procs[0].stdout.readline())
            for _ in procs[0].stdout:
                pass
    assert 1.4 < time.monotonic() - t0 < 15
    assert info.value.alive == [0] and "1.5 s deadline" in str(info.value)
    assert procs[0].returncode == -9
    deadline = time.monotonic() + 5
    while not gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(grandchild)


def test_guarded_kills_the_children_when_the_block_raises():
    procs = [start(QUIET)]
    with pytest.raises(KeyError):
        with guarded(procs, Deadline(30)):
            raise KeyError("caller failed")
    assert procs[0].returncode == -9


def test_wait_in_time_returns_every_exit_code():
    procs = [start(QUICK), start(QUICK)]
    assert wait(procs, Deadline(30)) == [0, 0]


def test_wait_stops_everything_at_the_first_failure():
    procs = [start("import sys; sys.exit(3)"), start(QUIET)]
    t0 = time.monotonic()
    codes = wait(procs, Deadline(30))
    assert codes[0] == 3 and procs[1].returncode == -9 and time.monotonic() - t0 < 10


@pytest.mark.parametrize("code", [QUIET, CHATTY], ids=["silent", "printing"])
def test_wait_kills_everything_at_the_deadline(code):
    procs = [start(QUICK), start(code)]
    t0 = time.monotonic()
    with pytest.raises(DeadlineExceeded) as info:
        wait(procs, Deadline(1.5))
    assert 1.4 < time.monotonic() - t0 < 15
    assert info.value.alive == [1] and procs[1].returncode == -9 and procs[0].returncode == 0
