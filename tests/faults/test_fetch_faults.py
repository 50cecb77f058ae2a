"""Download, archive and image faults: one line naming the URL/archive/member, data/ untouched."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from tests.conftest import assert_clean_failure, cli_env, run_cli, tiny_params, tree_snapshot, write_params
from tests.helpers.archives import device_member, good_members, jpeg, link_member, make_tgz
from tests.helpers.httpserver import Behaviour, serve


@pytest.fixture(scope="module")
def good_archive(tmp_path_factory) -> tuple[bytes, str]:
    path, digest = make_tgz(tmp_path_factory.mktemp("arch") / "flower_photos.tgz", good_members())
    return path.read_bytes(), digest


def _download_params(workdir: Path, url: str, body: bytes, sha: str, **extra) -> None:
    write_params(workdir / "params.yaml", tiny_params(**{
        "data.source": "download", "data.url": url, "data.sha256": sha, "data.size_bytes": len(body),
        "data.timeout_s": 2, "data.retries": 1, **extra}))


def _fetch(workdir: Path, timeout: float = 60):
    return run_cli("fetch", cwd=workdir, timeout=timeout)


def _assert_download_failed(workdir: Path, proc, needle: str, before):
    line = assert_clean_failure(proc, 1, needle, before, (workdir / "data" / "flower_photos",))
    assert "127.0.0.1" in line or "invalid" in line  # names the URL
    assert not (workdir / "data" / "downloads" / "flower_photos.tgz").exists()  # no half file where a full one goes
    return line


def test_truncated_body(workdir, good_archive):
    body, sha = good_archive
    before = tree_snapshot(workdir / "data" / "flower_photos")
    b = Behaviour(body, mode="truncate")
    with serve(b) as url:
        _download_params(workdir, url, body, sha)
        proc = _fetch(workdir)
    _assert_download_failed(workdir, proc, "connection closed mid-body", before)
    assert len([r for r in b.requests if r[0] == "GET"]) == 2  # retried once
    assert json.loads((workdir / "data" / "manifest.json").read_text())["source"] == "synthetic"  # old manifest kept


def test_wrong_checksum(workdir, good_archive):
    body, _ = good_archive
    before = tree_snapshot(workdir / "data" / "flower_photos")
    with serve(Behaviour(body)) as url:
        _download_params(workdir, url, body, "0" * 64)
        proc = _fetch(workdir)
    _assert_download_failed(workdir, proc, "sha256 mismatch: expected 0000", before)
    assert not (workdir / "data" / "downloads" / "flower_photos.tgz.part").exists()  # a bad file is not kept


@pytest.mark.parametrize("status,retried", [(404, False), (500, True)])
def test_http_errors(workdir, good_archive, status, retried):
    body, sha = good_archive
    before = tree_snapshot(workdir / "data" / "flower_photos")
    b = Behaviour(body, mode="status", status=status)
    with serve(b) as url:
        _download_params(workdir, url, body, sha)
        proc = _fetch(workdir)
    _assert_download_failed(workdir, proc, f"HTTP {status}", before)
    gets = len([r for r in b.requests if r[0] == "GET"])
    assert gets == (2 if retried else 1)  # 404 is permanent, 500 is retried


def test_connection_reset_then_rerun_resumes(workdir, good_archive):
    body, sha = good_archive
    before = tree_snapshot(workdir / "data" / "flower_photos")
    b = Behaviour(body, mode="reset_once")
    with serve(b) as url:
        _download_params(workdir, url, body, sha, **{"data.retries": 0})
        first = _fetch(workdir)
        _assert_download_failed(workdir, first, "download failed after 1 attempt", before)
        part = workdir / "data" / "downloads" / "flower_photos.tgz.part"
        assert 0 < part.stat().st_size < len(body)
        have = part.stat().st_size
        second = _fetch(workdir)
    assert second.returncode == 0, second.stderr[-2000:]
    assert b.requests[-1] == ("GET", f"bytes={have}-")  # the rerun asked only for the rest
    assert not part.exists()
    final = workdir / "data" / "downloads" / "flower_photos.tgz"
    assert hashlib.sha256(final.read_bytes()).hexdigest() == sha
    manifest = json.loads((workdir / "data" / "manifest.json").read_text())
    assert manifest["source"] == "download" and manifest["counts"] == {"daisy": 3, "roses": 3, "tulips": 3}


def test_stalled_server_times_out(workdir, good_archive):
    body, sha = good_archive
    before = tree_snapshot(workdir / "data" / "flower_photos")
    with serve(Behaviour(body, mode="stall", stall_s=20)) as url:
        _download_params(workdir, url, body, sha, **{"data.timeout_s": 1, "data.retries": 0})
        t0 = time.monotonic()
        proc = _fetch(workdir)
    assert time.monotonic() - t0 < 15
    _assert_download_failed(workdir, proc, "timed out", before)


def test_host_does_not_resolve(workdir, good_archive):
    body, sha = good_archive
    before = tree_snapshot(workdir / "data" / "flower_photos")
    _download_params(workdir, "http://flowerbench.invalid/flower_photos.tgz", body, sha, **{"data.retries": 0})
    proc = _fetch(workdir)
    _assert_download_failed(workdir, proc, "host does not resolve", before)


# --------------------------------------------------------------------------- archives

def _archive_case(workdir: Path, files: dict[str, bytes], extra=(), raw: bytes | None = None):
    path = workdir / "data" / "downloads" / "flower_photos.tgz"
    path.parent.mkdir(parents=True, exist_ok=True)
    if raw is not None:
        path.write_bytes(raw)
        sha = hashlib.sha256(raw).hexdigest()
    else:
        _, sha = make_tgz(path, files, extra)
    write_params(workdir / "params.yaml", tiny_params(**{
        "data.source": "archive", "data.sha256": sha, "data.size_bytes": None}))
    return tree_snapshot(workdir / "data" / "flower_photos", workdir / "data" / "quarantine")


ARCHIVE_CASES = {
    "dotdot": (lambda: {**good_members(), "flower_photos/../../evil.txt": b"x"}, (), "escapes the target"),
    "absolute": (lambda: {**good_members(), "/tmp/flowerbench-evil.txt": b"x"}, (), "absolute path"),
    "symlink": (good_members, (link_member("flower_photos/daisy/link.jpg", "/etc/passwd"),), "refusing link member"),
    "hardlink": (good_members, (link_member("flower_photos/daisy/hard.jpg", "flower_photos/daisy/daisy_0.jpg",
                                            hard=True),), "refusing link member"),
    "device": (good_members, (device_member("flower_photos/daisy/null.jpg"),), "refusing special file member"),
    "empty": (dict, (), "archive is empty"),
    "one_class": (lambda: good_members(classes=("daisy",)), (), "expected at least 2 class folders"),
    "nested": (lambda: {**good_members(), "flower_photos/daisy/more/x.jpg": jpeg(7)}, (), "nested folder daisy/more/"),
}


@pytest.mark.parametrize("case", sorted(ARCHIVE_CASES))
def test_hostile_or_broken_archives_are_refused(workdir, case):
    files, extra, needle = ARCHIVE_CASES[case]
    before = _archive_case(workdir, files(), extra)
    proc = _fetch(workdir)
    line = assert_clean_failure(proc, 1, needle, before,
                                (workdir / "data" / "flower_photos", workdir / "data" / "quarantine"))
    assert "flower_photos.tgz" in line
    assert not Path("/tmp/flowerbench-evil.txt").exists() and not (workdir / "evil.txt").exists()
    assert not list((workdir / "data").glob(".fetch-*"))  # no staging left behind


def test_not_a_gzip_tar(workdir):
    before = _archive_case(workdir, {}, raw=b"<html>this is an error page, not an archive</html>")
    proc = _fetch(workdir)
    assert_clean_failure(proc, 1, "not a readable tar archive", before,
                         (workdir / "data" / "flower_photos", workdir / "data" / "quarantine"))


def test_missing_archive(workdir):
    write_params(workdir / "params.yaml", tiny_params(**{"data.source": "archive"}))
    proc = _fetch(workdir)
    assert_clean_failure(proc, 1, "data/downloads/flower_photos.tgz: archive not found")


# --------------------------------------------------------------------------- images

def test_bad_images_are_quarantined_and_listed(workdir):
    import io
    from PIL import Image

    png = io.BytesIO()
    Image.new("RGB", (32, 32), (10, 200, 30)).save(png, format="PNG")
    files = {**good_members(),
             "flower_photos/daisy/corrupt.jpg": jpeg(1)[:200] + b"\x00" * 50,
             "flower_photos/roses/empty.jpg": b"",
             "flower_photos/roses/png_named.jpg": png.getvalue(),
             "flower_photos/tulips/notes.txt": b"not an image\n",
             "flower_photos/tulips/garbage.jpg": b"GIF89a definitely not a jpeg"}
    _archive_case(workdir, files)
    proc = _fetch(workdir)
    assert proc.returncode == 0, proc.stderr[-2000:]
    m = json.loads((workdir / "data" / "manifest.json").read_text())
    reasons = {q["path"]: q["reason"] for q in m["quarantined"]}
    assert set(reasons) == {"daisy/corrupt.jpg", "roses/empty.jpg", "tulips/notes.txt", "tulips/garbage.jpg"}
    assert reasons["roses/empty.jpg"] == "zero-byte file"
    assert reasons["tulips/notes.txt"].startswith("not an image file name")
    assert reasons["daisy/corrupt.jpg"].startswith("does not decode")
    # A PNG named .jpg decodes (TensorFlow sniffs the bytes): kept, and listed as a mismatch.
    assert m["format_mismatch"] == [{"path": "roses/png_named.jpg", "suffix": ".jpg", "format": "PNG"}]
    assert m["counts"] == {"daisy": 3, "roses": 4, "tulips": 3}
    assert (workdir / "data" / "quarantine" / "daisy" / "corrupt.jpg").exists()
    assert not (workdir / "data" / "flower_photos" / "daisy" / "corrupt.jpg").exists()
    for line in ("quarantined daisy/corrupt.jpg", "quarantined roses/empty.jpg"):
        assert line in proc.stderr


def test_unreadable_file_is_quarantined(tmp_path):
    """Permission denied (as a non-root user; root reads everything, so the check is direct)."""
    from flowerbench.data import fetch

    root = tmp_path / "flowers"
    for cls in ("a", "b"):
        (root / cls).mkdir(parents=True)
        (root / cls / "ok.jpg").write_bytes(jpeg(3))
    locked = root / "a" / "locked.jpg"
    locked.write_bytes(jpeg(4))
    locked.chmod(0)
    import os
    if os.geteuid() == 0:
        pytest.skip("running as root: file permissions do not stop reads")
    counts, bad, _ = fetch.validate_images(root, tmp_path / "q")
    assert bad == [{"path": "a/locked.jpg", "reason": "permission denied"}] and counts == {"a": 1, "b": 1}


@pytest.mark.parametrize("status,why", [(404, "so the URL is wrong"), (503, "so the server failed")])
def test_auto_never_covers_a_wrong_url_with_the_standin(workdir, good_archive, status, why):
    """data.source=auto falls back to the stand-in only when nothing answers (no network). A server
    that answers with an HTTP error means the setting is wrong (or the server is down): one line
    naming data.url, and the data already there is left as it was."""
    body, sha = good_archive
    before = tree_snapshot(workdir / "data")
    with serve(Behaviour(body, mode="status", status=status)) as url:
        _download_params(workdir, url, body, sha, **{"data.source": "auto", "data.probe_timeout_s": 2})
        proc = _fetch(workdir)
    line = assert_clean_failure(proc, 1, f"data.url: {url} answered HTTP {status}: the network is up, {why}",
                                before, (workdir / "data",))
    assert "falls back to the stand-in only when nothing answers" in line


def test_extracting_onto_a_full_disk_names_the_file_and_keeps_the_old_data(workdir):
    """The archive's images are extracted onto a disk that fills up (RLIMIT_FSIZE: EFBIG, "File too
    large"): one line naming the file, and the data already there is left exactly as it was."""
    import resource

    big = {**good_members(), "flower_photos/daisy/huge.jpg": jpeg(7) + b"\0" * 200_000}
    before = _archive_case(workdir, big)
    proc = run_cli("fetch", cwd=workdir, timeout=60,
                   preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000)))
    line = assert_clean_failure(proc, 1, "File too large", before,
                                (workdir / "data" / "flower_photos", workdir / "data" / "quarantine"))
    assert "huge.jpg" in line
    assert not list((workdir / "data").glob(".fetch-*"))  # no staging left behind


@pytest.mark.slow   # 30-40 s each: a real fetch killed at a failpoint, then fetched again
@pytest.mark.parametrize("point", ["mid-write", "fetch-swapped"])
def test_a_hard_kill_never_leaves_a_manifest_describing_other_data(workdir, point):
    """SIGKILL of a refetch (another stand-in size, so the data changes) while it writes its scratch
    index (mid-write) or between swapping the new images in and writing their manifest: the
    manifest that remains, if any, describes the images that are there; a rerun completes."""
    from flowerbench.data.fetch import tree_digest

    write_params(workdir / "params.yaml", tiny_params(**{"data.standin_px": 40}))
    env = cli_env(FLOWERBENCH_FAILPOINT=f"kill:{point}")
    proc = run_cli("fetch", cwd=workdir, timeout=120, env=env)
    assert proc.returncode == -9 and f"[failpoint] kill at {point}" in proc.stderr, proc.stderr[-2000:]
    manifest = workdir / "data" / "manifest.json"
    if manifest.exists():
        assert json.loads(manifest.read_text())["tree_sha256"] == tree_digest(workdir / "data" / "flower_photos")
    else:
        assert point == "fetch-swapped"  # the old manifest went before the swap; the new one never came
    again = run_cli("fetch", cwd=workdir, timeout=120)
    assert again.returncode == 0, again.stderr[-2000:]
    m = json.loads(manifest.read_text())
    assert m["standin_px"] == 40 and m["tree_sha256"] == tree_digest(workdir / "data" / "flower_photos")
