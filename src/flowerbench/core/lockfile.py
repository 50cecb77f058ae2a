"""Keep dvc.lock about the pipeline dvc.yaml describes.

    python -m flowerbench prune-lock      # (make prune-lock; make reproduce runs it after dvc repro)

DVC writes a lock entry for every stage it runs and never removes one: a
renamed variant, a sweep point an experiment added, a stage that was dropped
all leave entries that describe code and results that no longer exist.
`prune()` drops every entry whose stage dvc.yaml (expanded with params.yaml,
as DVC expands it) does not have, with DVC's own YAML round-trip, so the
entries that stay are byte-identical.
"""

from __future__ import annotations

from pathlib import Path

LOCK = Path("dvc.lock")


def stage_names(root: str | Path = ".") -> set[str]:
    """The stages dvc.yaml defines, foreach/matrix expanded (`train@single_fit`, `sweep@2-fit`)."""
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        return {stage.addressing for stage in repo.index.stages}


def dead_entries(lock_stages: set[str], defined: set[str]) -> list[str]:
    return sorted(lock_stages - defined)


def prune(root: str | Path = ".") -> list[str]:
    """Remove dead entries from `root`/dvc.lock; return their names."""
    from dvc.utils.serialize import load_yaml, modify_yaml

    lock = Path(root) / LOCK
    if not lock.is_file():
        return []
    dead = dead_entries(set((load_yaml(lock) or {}).get("stages", {})), stage_names(root))
    if dead:
        with modify_yaml(lock) as data:
            for name in dead:
                del data["stages"][name]
    return dead


# What `dvc status --json` says of the `host` stage when nothing changed: it is always_changed, so
# it is never absent.  Anything more (its output's hash changed) is a real change.
HOST_STAGE = "host"
ALWAYS_CHANGED = ["always changed"]


def pending_stages(status: dict) -> dict:
    """`dvc status --json` without the host stage's permanent "always changed" entry: {} means
    the pipeline is up to date.  Raises ValueError when the host stage is missing from the status
    (then dvc.yaml has no host stage, or DVC changed how it reports one)."""
    if status.get(HOST_STAGE) is None:
        raise ValueError(f"dvc status names no {HOST_STAGE!r} stage; expected {HOST_STAGE}: {ALWAYS_CHANGED}")
    if status[HOST_STAGE] == ALWAYS_CHANGED:
        return {k: v for k, v in status.items() if k != HOST_STAGE}
    return status
