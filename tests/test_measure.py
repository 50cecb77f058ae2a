"""The rounds stage's machinery without TensorFlow: the host-wide measurement lock, the load beside a
process, and which earlier processes a rerun keeps (the resume itself, with DVC and a hard kill, is in
tests/faults/test_pipeline_faults.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from flowerbench.measuring import scheduler as measure, schedule as S
from flowerbench.core import paths
from flowerbench.analysis import rounds as R
from tests.conftest import cli_env, read_until
from tests.helpers.fakes import schedule

HOLD = """
import sys, time
from pathlib import Path
from flowerbench.measuring.hostlock import measuring
from flowerbench.core.log import setup
setup()
with measuring(sys.argv[1]):
    print("held", flush=True)
    go = Path(sys.argv[2])
    while not go.exists():
        time.sleep(0.05)
print("released", flush=True)
"""


def test_a_second_measurement_waits_for_the_first_and_says_who_holds_the_lock(tmp_path):
    env = cli_env(FLOWERBENCH_MEASURE_LOCK=str(tmp_path / "measure.lock"))
    go_a, go_b = tmp_path / "go-a", tmp_path / "go-b"
    go_b.touch()
    a = subprocess.Popen([sys.executable, "-c", HOLD, "rounds A", str(go_a)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    b = None
    try:
        read_until(a, a.stdout, "held", timeout=60)
        b = subprocess.Popen([sys.executable, "-c", HOLD, "rounds B", str(go_b)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
        said = read_until(b, b.stderr, "waiting for the measurement lock", timeout=60)
        assert f"(held by pid {a.pid} (rounds A," in said[-1]
        assert b.poll() is None                      # B waits while A holds it ...
        go_a.touch()
        out, _ = b.communicate(timeout=60)           # ... and runs once A lets go
        assert b.returncode == 0 and out.split() == ["held", "released"]
    finally:
        go_a.touch()
        a.communicate(timeout=60)
        if b and b.poll() is None:
            b.kill()
    assert a.returncode == 0


def test_the_load_beside_a_process_counts_other_work_not_its_own(tmp_path):
    """A child that only sleeps, measured while another process burns a core: the other work shows
    as the foreign share (about 1 of the host's cores); a child that burns a core itself does not."""
    burn = "import time\nt = time.time()\nwhile time.time() - t < {s}: pass\n"
    meter = measure.LoadMeter()
    other = subprocess.Popen([sys.executable, "-c", burn.format(s=3)])
    try:
        meter.start()
        subprocess.run([sys.executable, "-c", "import time; time.sleep(1.5)"], check=True)
        busy = meter.stop()
    finally:
        other.wait()
    cores = measure.host.describe()["usable_cores"]
    assert busy["foreign_share"] > 0.5 / cores and 0 <= busy["steal_share"] < 1
    assert len(busy["load_before"]) == 3 and busy["wall_seconds"] >= 1.5
    meter.start()
    subprocess.run([sys.executable, "-c", burn.format(s=1.5)], check=True)
    own = meter.stop()
    assert own["foreign_share"] < busy["foreign_share"]


def test_a_rerun_keeps_only_processes_measured_with_the_same_inputs(tmp_path):
    rounds_dir = tmp_path / "rounds"
    old = R.Schedule.model_validate(schedule(["single_fit", "mirrored_fit"], 2))
    for p in old.processes[:3]:        # three results on disk, the fourth never written
        path = paths.round_result(p.round, p.variant, rounds_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}")
    fresh = {"fingerprint": old.fingerprint, "engine": old.engine, "seed": 123, "order_seed": old.order_seed,
             "variants": ["single_fit", "mirrored_fit"], "count": 2}
    assert measure._kept(old, fresh, rounds_dir) == old.processes[:3]
    assert measure._kept(old, {**fresh, "count": 1}, rounds_dir) == [p for p in old.processes[:3] if p.round == 1]
    for other in ({"fingerprint": "1" * 64}, {"seed": 7}, {"order_seed": old.order_seed + 1},
                  {"variants": ["single_fit"]}, {"engine": S.HELD_ENGINE}):
        assert measure._kept(old, {**fresh, **other}, rounds_dir) == [], other
    assert measure._kept(None, fresh, rounds_dir) == []


def test_the_fingerprint_follows_what_a_time_depends_on(workdir):
    """The fingerprint covers the measured params, narrowed to the stage's own variants: editing a
    secondary variant leaves the headline's processes valid, and the other way round."""
    from flowerbench.core.config import VariantSpec, load_params

    p = load_params("params.yaml")
    head = measure.headline(p).variants
    base = measure.fingerprint(p, head)
    assert measure.fingerprint(p, head) == base
    assert measure.fingerprint(p.model_copy(update={"rounds": p.rounds.model_copy(update={"count": 9})}), head) == base
    assert measure.fingerprint(p.model_copy(update={"seed": 7}), head) != base
    more = p.model_copy(update={"variants": {**p.variants, "single_fit_threads": VariantSpec(loop="fit", replicas=1,
                                                                                           cores="auto")}})
    assert [v.name for v in measure.headline(more).variants] == [v.name for v in head]
    assert measure.fingerprint(more, measure.headline(more).variants) == base
    sec = measure.secondary(p).variants
    assert measure.fingerprint(more, measure.secondary(more).variants) != measure.fingerprint(p, sec)
    (workdir / "data" / "host.json").write_text('{"another": "host"}')
    assert measure.fingerprint(p, head) != base


@pytest.mark.parametrize("limit", [0.1, 0.25])
def test_the_busy_flag_decides_at_its_threshold(limit):
    """A process is busy when other work or steal took more than rounds.busy_share of the CPU: just
    above flags it, at or just below does not; an unread share flags nothing.  (A threshold moved in
    measure.is_busy, tenfold or by a hair, turns this red.)"""
    eps = 1e-6
    for share in ("foreign_share", "steal_share"):
        quiet = {"foreign_share": 0.0, "steal_share": 0.0}
        assert measure.is_busy({**quiet, share: limit + eps}, limit) is True
        assert measure.is_busy({**quiet, share: limit}, limit) is False
        assert measure.is_busy({**quiet, share: limit - eps}, limit) is False
    assert measure.is_busy({"foreign_share": None, "steal_share": None}, limit) is False
    assert measure.is_busy({"foreign_share": 1.0, "steal_share": None}, limit) is True


def test_the_order_seed_is_drawn_per_measurement_kept_on_resume_and_fixed_when_set(workdir):
    """rounds.order_seed: null draws a fresh seed for each measurement (so 3-round runs do not all use
    the same three rows of the square); an interrupted measurement of the same inputs resumes with its
    own; a set value is used as it is.  The training seed is not the order seed."""
    from flowerbench.core.config import load_params

    p = load_params("params.yaml")
    names = [v.name for v in p.all_variants()]
    fp = measure.fingerprint(p, p.all_variants())
    drawn = {measure.order_seed(p, None, fp, names) for _ in range(8)}
    assert len(drawn) >= 7 and p.seed not in drawn
    old = R.Schedule.model_validate({**schedule(names, 2), "fingerprint": fp, "order_seed": 4242})
    assert measure.order_seed(p, old, fp, names) == 4242
    assert len({measure.order_seed(p, old, "1" * 64, names) for _ in range(4)}) > 1
    fixed = p.model_copy(update={"rounds": p.rounds.model_copy(update={"order_seed": 99})})
    assert measure.order_seed(fixed, old, fp, names) == 99
    # different seeds give different orders of the same square, and the order extends, never reshuffles
    assert R.order(names, 3, 1) != R.order(names, 3, 2)
    assert R.order(names, 5, 1)[:3] == R.order(names, 3, 1)


def test_a_schedule_of_schema_1_reads_with_its_training_seed_as_order_seed(tmp_path):
    raw = schedule(["single_fit", "mirrored_fit"], 2)
    raw = {k: v for k, v in raw.items() if k not in ("order_seed", "engine")}
    raw["schema_version"] = 1
    (tmp_path / "schedule.json").write_text(json.dumps(raw))
    old = R.load_schedule(tmp_path / "schedule.json")
    assert (old.order_seed, old.engine, old.seed) == (123, 0, 123)


def test_the_headline_runs_in_complete_williams_blocks_from_a_fresh_order_seed(workdir):
    """rounds.count 4 (the default) is one complete Williams square of the headline's four: every
    variant once at every place and every ordered pair of neighbours once; each measurement draws its
    own seed, so two measurements run different squares, and 8 rounds are two complete squares."""
    from flowerbench.core.config import load_params

    p = load_params("params.yaml")
    plan = measure.headline(p.model_copy(update={"rounds": p.rounds.model_copy(update={"count": 4})}))
    names = [v.name for v in plan.variants]
    assert names == ["single_fit", "mirrored_fit", "single_custom", "mirrored_custom"] and plan.held
    squares = []
    for _ in range(6):
        seed = measure.order_seed(p, None, measure.fingerprint(p, plan.variants), names)
        rows = R.order(names, plan.count, seed)
        for place in range(4):
            assert sorted(row[place] for row in rows) == sorted(names)
        pairs = [(a, b) for row in rows for a, b in zip(row, row[1:])]
        assert sorted(pairs) == sorted((a, b) for a in names for b in names if a != b)
        assert R.order(names, 8, seed)[4:] == rows            # the next block repeats the square's rows
        squares.append(rows)
    assert len({str(s) for s in squares}) > 1
