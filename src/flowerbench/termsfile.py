"""The schema of results/model-terms.json: what the `terms` stage writes and the performance model reads.

The terms stage imports this and nothing of the analysis (predict.py, stats.py): a change to how a
prediction is judged must not re-measure the terms, nor void the held-out predictions frozen on the
terms file's sha256.  predict.py re-exports these names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

TERMS_SCHEMA = 1     # of results/model-terms.json (written by terms.py)

Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Finite = Annotated[float, Field(allow_inf_nan=False)]


class TermsError(RuntimeError):
    """results/model-terms.json is unreadable, of another schema or impossible (one line naming it)."""


class _Term(BaseModel):
    """A measured term: the fields the model and the report read are typed and checked; the rest
    (raw samples, cores, probe details) is kept as written."""
    model_config = ConfigDict(extra="allow")


class _Timed(_Term):
    median_seconds: Seconds
    interval_seconds: tuple[Finite, Finite]

    @model_validator(mode="after")
    def _ordered(self):
        lo, hi = self.interval_seconds
        if lo > hi:
            raise ValueError(f"interval_seconds [{lo}, {hi}] is not an interval")
        return self


class InputTerm(_Term):
    seconds: list[Seconds] = Field(min_length=1)
    images: int = Field(ge=1)
    image_size: int = Field(ge=1)
    cache: bool
    median_rate: Seconds                      # images/s per core: > 0, finite
    interval_rate: tuple[Optional[Seconds], Optional[Seconds]]


class StepAlone(_Timed):
    batch: int = Field(ge=1)


class Contention(_Term):
    factor: Seconds
    median_seconds_each: list[Seconds] = Field(min_length=1)
    cores: list


class AllReduce(_Timed):
    tensors: int = Field(ge=1)
    parameters: int = Field(ge=1)
    cross_device_ops: str


class WorkersAllReduce(_Timed):
    cores: list
    cross_device_ops: str


class Dispatch(_Timed):
    cores: list
    seconds_beyond_terms: Finite               # may be negative: the rest can come out below the parts


class Terms(BaseModel):
    """results/model-terms.json: written by the `terms` stage, read by the report, both through this."""
    model_config = ConfigDict(extra="allow")

    schema_version: Literal[TERMS_SCHEMA]
    cpu_model: str
    cores_per_replica: int = Field(ge=1)
    started_at: str
    replicas: list[int]
    skipped: Optional[str] = None
    input: Optional[InputTerm] = None
    step_alone: Optional[StepAlone] = None
    contention: dict[str, Contention] = {}
    allreduce: dict[str, AllReduce] = {}
    allreduce_workers: dict[str, WorkersAllReduce] = {}
    dispatch: dict[str, Dispatch] = {}

    @model_validator(mode="after")
    def _complete(self):
        if self.skipped:
            return self
        if self.input is None or self.step_alone is None:
            raise ValueError("the input and step-alone terms are missing (and the stage was not skipped)")
        missing = [f"{part} for {n} replicas" for n in self.replicas for part in ("contention", "allreduce")
                   if str(n) not in getattr(self, part)]
        if missing:
            raise ValueError(f"no {', '.join(missing)}")
        return self


def check_terms(record: dict, source: str = "model-terms") -> dict:
    """The record if it is a complete, possible terms file; TermsError naming the first fault."""
    try:
        Terms.model_validate(record)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        got = "" if err["type"] == "missing" else f", got {err.get('input')!r}"
        raise TermsError(f"{source}: {key + ': ' if key else ''}{msg}{got}"
                         f" (rerun `dvc repro terms`)") from None
    return record


def load_terms(path: Path) -> dict:
    """results/model-terms.json, checked: JSON, this schema, every term the model reads present and
    possible (times and rates > 0 and finite, intervals ordered)."""
    from .io import read_json

    try:
        record = read_json(path)
    except (OSError, ValueError) as exc:      # io names the file: not found, unreadable, not JSON
        raise TermsError(str(exc)) from None
    if not isinstance(record, dict) or record.get("schema_version") != TERMS_SCHEMA:
        got = record.get("schema_version") if isinstance(record, dict) else type(record).__name__
        raise TermsError(f"{path}: schema_version {got!r}, this code reads {TERMS_SCHEMA} (rerun `dvc repro`)")
    return check_terms(record, str(path))
