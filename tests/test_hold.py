"""The held engine's scheduler (measuring/scheduler._held_round, core/hold.py) on small Python children that speak the
hold protocol: no TensorFlow, so the protocol itself is what is tested, in seconds.  The real held
round of TensorFlow processes is tests/test_dvc.py's pipeline and the slow test below."""

from __future__ import annotations

import json
import sys
import time

import pytest

from flowerbench.core import hold, paths
from flowerbench.measuring import scheduler as measure
from flowerbench.core.config import Params

# A held child: logs its start, "warms up" (1 s: longer than a loaded host takes to start its pair), then for each epoch waits for the release, burns
# 50 ms of CPU, reports it; after the last it "tears down" (0.2 s), writes its result and exits.
CHILD = r"""
import json, sys, time
from pathlib import Path
from flowerbench.core import hold
name, epochs, log, out, mode = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]), sys.argv[5]
def note(*x):
    with open(log, "a") as f:
        f.write(json.dumps([name, *x]) + "\n")
note("start", time.time())
if mode == "never-ready":
    time.sleep(60)
time.sleep(1.0)
gate = hold.from_env()
note("ready", time.time())
for e in range(epochs):
    gate.wait()
    if mode == "dies" and e == 1:
        sys.exit(3)
    t0, c0 = time.time(), time.process_time()
    while time.time() - t0 < 0.05:
        pass
    note("epoch", e, t0, time.time())
    gate.done(time.time() - t0, time.process_time() - c0)
time.sleep(0.2)
out.write_text("{}")
note("exit", time.time())
"""

NAMES = ["a", "b", "c", "d"]


def _params(epochs: int = 3, deadline: float = 60.0) -> Params:
    p = Params()
    return p.model_copy(update={"train": p.train.model_copy(update={"epochs": epochs}),
                                "rounds": p.rounds.model_copy(update={"process_deadline_s": deadline})})


def _cmd_of(log, modes: dict, epochs: int):
    def cmd(name, out, core, params_path):
        return [sys.executable, "-c", CHILD, name, str(epochs), str(log), str(out), modes.get(name, "ok")]
    return cmd


def _log(path) -> list[list]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_held_round_warms_two_at_a_time_and_releases_one_epoch_at_a_time_in_order(tmp_path):
    log = tmp_path / "log.jsonl"
    todo = list(enumerate(NAMES, start=1))
    procs = measure._held_round(_params(), "params.yaml", tmp_path / "rounds", 1, todo, 0, _cmd_of(log, {}, 3))
    events = _log(log)
    at = {(n, what): t for n, what, *rest in events if what in ("start", "ready", "exit") for t in rest[:1]}
    # two at a time: c and d start only once a and b are warmed up and held
    assert min(at["c", "start"], at["d", "start"]) >= max(at["a", "ready"], at["b", "ready"])
    assert max(at["a", "start"], at["b", "start"]) < min(at["a", "ready"], at["b", "ready"])  # a and b together
    # one epoch at a time, cycling through the round in its order, never two at once
    epochs = sorted((t0, t1, n) for n, what, *rest in events if what == "epoch" for _, t0, t1 in [rest])
    assert [n for _, _, n in epochs] == NAMES * 3
    assert all(later[0] >= earlier[1] for earlier, later in zip(epochs, epochs[1:]))
    # the last cycle: each process has exited (its teardown done) before the next one's last epoch
    last = epochs[-4:]
    assert all(at[n, "exit"] <= nxt[0] for (_, _, n), nxt in zip(last, last[1:]))
    # every process recorded as held, with its warm-up and its released epochs
    assert [p.variant for p in procs] == NAMES and [p.position for p in procs] == [1, 2, 3, 4]
    for p in procs:
        assert p.held and p.exit_code == 0 and p.round == 1 and p.ready_after_seconds >= 1.0
        assert 3 * 0.05 - 0.001 <= p.released_seconds < 3 * 0.05 + 0.5   # (recorded to the ms)
        assert p.round_release_seconds >= 12 * 0.05 and p.wall_seconds > p.ready_after_seconds
        assert p.foreign_share is not None and p.steal_share is not None
        assert paths.round_result(1, p.variant, tmp_path / "rounds").read_text() == "{}"


def test_a_process_that_dies_while_held_fails_the_round_and_none_of_it_is_kept(tmp_path):
    log = tmp_path / "log.jsonl"
    todo = list(enumerate(NAMES, start=1))
    with pytest.raises(measure.MeasureError, match=r"round 1: c exited.*\(exit code 3\).*none is kept"):
        measure._held_round(_params(), "params.yaml", tmp_path / "rounds", 1, todo, 0,
                            _cmd_of(log, {"c": "dies"}, 3))
    assert not any(what == "exit" for _, what, *_ in _log(log))    # the others were killed, none finished


def test_a_process_that_never_warms_up_is_killed_at_its_deadline(tmp_path):
    log = tmp_path / "log.jsonl"
    t0 = time.monotonic()
    with pytest.raises(measure.MeasureError, match=r"ran past rounds.process_deadline_s=2 s \(its holds included\)"):
        measure._held_round(_params(deadline=2), "params.yaml", tmp_path / "rounds", 1, [(1, "a"), (2, "b")], 0,
                            _cmd_of(log, {"b": "never-ready"}, 2))
    assert time.monotonic() - t0 < 20
    assert sorted(n for n, what, *_ in _log(log) if what == "start") == ["a", "b"]   # both started, together


def test_the_gate_fails_in_one_line_when_the_scheduler_goes_away(monkeypatch):
    import os

    monkeypatch.delenv(hold.ENV, raising=False)
    assert hold.from_env() is None                      # nobody holds this process: nothing waits
    monkeypatch.setenv(hold.ENV, "7")
    with pytest.raises(hold.HoldError, match=r"\$FLOWERBENCH_HOLD='7': not two open pipe descriptors"):
        hold.from_env()
    r, w = os.pipe()
    rr, ww = os.pipe()
    gate = hold.Gate(os.fdopen(r, "r"), os.fdopen(ww, "w"))
    os.close(w)                                          # the scheduler's end: gone
    with pytest.raises(hold.HoldError, match="the scheduler went away while this process was held"):
        gate.wait()
    os.close(rr)


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process and every thread of it (/proc/<pid>/stat), in seconds."""
    import os

    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["single_fit", "mirrored_custom"])
def test_a_held_tensorflow_process_takes_no_cpu_while_it_waits(workdir, variant):
    """A real `train` process (tiny model, 2 timed epochs), held after its warm-up for 3 s: its CPU
    time (every thread: tf.data, the runtime's pools) grows by under 0.15 s meanwhile, so a held
    process cannot slow the one released beside it; released, it runs its epochs, reports each, and
    writes a result whose whole-call window leaves the holds out."""
    import os

    from tests.conftest import cli_env, tiny_params, write_params

    write_params(workdir / "params.yaml", tiny_params(**{"train.epochs": 2, "data.max_images": 60}))
    out = workdir / "r.json"
    env = {**cli_env(), "PYTHONPATH": os.pathsep.join(sys.path)}
    h = hold.Held([sys.executable, "-m", "flowerbench.commands.train", "--variant", variant, "--out", str(out)],
                  env=env, label=variant)
    try:
        h.until_ready()
        time.sleep(1.0)                                  # let whatever would run in the background start
        before = _cpu_seconds(h.proc.pid)
        time.sleep(3.0)
        assert _cpu_seconds(h.proc.pid) - before < 0.15
        first = h.release()
        h.until_ready()
        time.sleep(2.0)                                  # a hold between the epochs, inside the timed call
        second = h.release()
        assert h.proc.wait(timeout=120) == 0
    finally:
        h.close()
        if h.proc.poll() is None:
            h.proc.kill()
    r = json.loads(out.read_text())
    assert r["epoch_seconds"] == pytest.approx([first["seconds"], second["seconds"]])
    assert r["repeat_wall_seconds"][0] < sum(r["epoch_seconds"]) + 1.0    # the 2 s hold is not in it
