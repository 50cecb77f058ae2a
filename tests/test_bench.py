"""The benchmark's peer: benchmarks/blog_port.py must stay a faithful port that still trains."""

import json
import subprocess
import sys

from tests.conftest import REPO, cli_env


def test_blog_port_still_trains_with_both_loops(workdir):
    """The real ResNet50 of the post on the stand-in (30 images, 32 px): one batch per epoch, so
    after the warm-up and 3 timed epochs Adam has fitted it and the loss has fallen well below the
    warm-up's.  Both loops run side by side (each is its own process; most of the time is tracing)."""
    procs = {loop: subprocess.Popen(
        [sys.executable, str(REPO / "benchmarks" / "blog_port.py"), "--data", str(workdir / "data" / "flower_photos"),
         "--loop", loop, "--image-size", "32", "--batch-size", "32", "--epochs", "3"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env()) for loop in ("fit", "custom")}
    for loop, proc in procs.items():
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
        line = json.loads(out.strip().splitlines()[-1])  # the last stdout line is the result
        assert line["loop"] == loop and line["replicas"] == 1
        losses = line["epoch_loss"]
        assert len(losses) == 1 + 3 and line["final_loss"] == losses[-1]  # warm-up + timed epochs
        assert line["timed_seconds"] > 0
        assert min(losses[1:]) < 0.5 * losses[0], losses  # it learns: the loss falls
