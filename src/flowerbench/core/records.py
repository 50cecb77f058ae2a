"""Reading back a JSON record a stage wrote (a result, a schedule, the terms): one shape for all of
them (and the two helpers the YAML readers, config.load_params and heldout.load, share).  Found, JSON, an object, of a schema this code reads, valid against its typed model; any
fault is the caller's error type with one line naming the file and what to do."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Collection, Optional, TypeVar

from pydantic import BaseModel, ValidationError

from flowerbench.core.io import OutputError, read_json

M = TypeVar("M", bound=BaseModel)


def yaml_position(exc: Exception) -> str:
    """Where a YAML parse failed, as "line L, column C" ("" when PyYAML did not say)."""
    mark = getattr(exc, "problem_mark", None)
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""


def first_error(exc: ValidationError) -> str:
    """The first fault of a validation, as one line (the field, then what is wrong with it)."""
    err = exc.errors()[0]
    key = ".".join(str(p) for p in err["loc"])
    if err["type"] == "missing":
        return f"missing field {key} (written by an older or broken run? rerun `dvc repro`)"
    if err["type"] == "extra_forbidden":
        return f"unknown field {key} (written by another version of flowerbench? rerun `dvc repro`)"
    msg = err["msg"].removeprefix("Value error, ")
    return f"{key}: {msg}" if key else msg


def read_record(path: Path, model: type[M], error: Callable[[str], Exception], *, schema: int,
                readable: Collection[int], missing: str, rerun: str = "rerun `dvc repro`",
                upgrade: Optional[Callable[[dict[str, Any]], dict[str, Any]]] = None,
                describe: Callable[[ValidationError], str] = first_error) -> M:
    """`path` as `model`; `error(line)` for a file that is missing (`missing` says what to run), not
    JSON, not an object, of a schema_version outside `readable` (this code writes `schema`) or
    invalid (`describe` words the first fault).  `upgrade` lifts an older readable schema."""
    path = Path(path)
    if not path.is_file():
        raise error(f"{path}: {missing}")
    try:
        raw = read_json(path)
    except (OSError, ValueError, OutputError) as exc:     # io names the file
        raise error(str(exc)) from None
    if not isinstance(raw, dict):
        raise error(f"{path}: expected a JSON object, got {type(raw).__name__}")
    version = raw.get("schema_version")
    if version not in readable:
        raise error(f"{path}: schema_version {version!r}, this code reads {schema} (written by another version "
                    f"of flowerbench); {rerun}")
    try:
        return model.model_validate(upgrade(raw) if upgrade else raw)
    except ValidationError as exc:
        raise error(f"{path}: {describe(exc)}") from None
