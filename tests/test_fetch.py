"""Fetch stage, the good paths: stand-in generation, a verified download from a local server, auto choice."""

from __future__ import annotations

import hashlib
import json

import pytest

from flowerbench.data import fetch, standin
from tests.conftest import run_cli, tiny_params, write_params
from tests.helpers.archives import good_members, make_tgz
from tests.helpers.httpserver import Behaviour, serve


def test_standin_is_deterministic_and_has_the_real_layout(tmp_path):
    counts = {"daisy": 3, "roses": 2}
    standin.generate(tmp_path / "a", seed=123, px=32, counts=counts)
    standin.generate(tmp_path / "b", seed=123, px=32, counts=counts)
    standin.generate(tmp_path / "c", seed=7, px=32, counts=counts)
    assert fetch.tree_digest(tmp_path / "a") == fetch.tree_digest(tmp_path / "b")
    assert fetch.tree_digest(tmp_path / "a") != fetch.tree_digest(tmp_path / "c")
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["daisy", "roses"]
    assert len(list((tmp_path / "a" / "daisy").glob("*.jpg"))) == 3
    assert sum(standin.REAL_COUNTS.values()) == 3670


def test_standin_classes_are_learnably_different(tmp_path):
    import numpy as np
    from PIL import Image

    standin.generate(tmp_path, seed=1, px=32, counts={"daisy": 20, "roses": 20})
    mean = {c: np.mean([np.asarray(Image.open(f)) for f in sorted((tmp_path / c).iterdir())], axis=(0, 1, 2))
            for c in ("daisy", "roses")}
    assert np.abs(mean["daisy"] - mean["roses"]).max() > 10  # per-channel colour differs


def test_download_verifies_extracts_and_writes_manifest(workdir):
    path, sha = make_tgz(workdir / "src.tgz", good_members(per_class=2))
    body = path.read_bytes()
    b = Behaviour(body)
    with serve(b) as url:
        write_params(workdir / "params.yaml", tiny_params(**{
            "data.source": "auto", "data.url": url, "data.sha256": sha, "data.size_bytes": len(body),
            "data.archive_path": "data/downloads/x.tgz"}))
        proc = run_cli("fetch", cwd=workdir, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "source: download" in proc.stderr  # auto: the URL answered
    m = json.loads((workdir / "data" / "manifest.json").read_text())
    assert m["source"] == "download" and m["synthetic"] is False and m["archive_sha256"] == sha
    assert m["counts"] == {"daisy": 2, "roses": 2, "tulips": 2} and m["quarantined"] == []
    assert m["tree_sha256"] == fetch.tree_digest(workdir / "data" / "flower_photos")
    assert hashlib.sha256((workdir / "data" / "downloads" / "x.tgz").read_bytes()).hexdigest() == sha
    assert (workdir / "data" / "flower_photos" / "LICENSE.txt").exists()
    # A second fetch with the archive present uses it without the network.
    proc = run_cli("fetch", cwd=workdir, timeout=60)
    assert proc.returncode == 0 and "source: archive" in proc.stderr


@pytest.mark.slow   # about 19 s: the full-count stand-in (3,670 images) is generated
def test_auto_falls_back_to_the_labelled_standin(workdir):
    write_params(workdir / "params.yaml", tiny_params(**{
        "data.source": "auto", "data.url": "http://127.0.0.1:9/none.tgz", "data.probe_timeout_s": 1,
        "data.standin_px": 16}))
    proc = run_cli("fetch", cwd=workdir, timeout=120)
    assert proc.returncode == 0, proc.stderr
    m = json.loads((workdir / "data" / "manifest.json").read_text())
    assert m["source"] == "synthetic" and m["label"] == "synthetic stand-in (NOT the real flower_photos)"
    assert m["counts"] == standin.REAL_COUNTS and "unreachable" in m["source_reason"]
