"""The schema of results/model-terms.json: what the `terms` stage writes and the performance model reads.

The terms stage imports this and nothing of the analysis (judge.py, analysis/stats.py): a change to how a
prediction is judged must not re-measure the terms, nor void the held-out predictions frozen on the
terms file's sha256.  Every reader takes the typed `Terms` (load_terms) and asks it for the terms at
N replicas (`Terms.at`), never the raw dict.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

TERMS_SCHEMA = 1     # of results/model-terms.json (written by perfmodel/terms.py)

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


@dataclass(frozen=True)
class AtReplicas:
    """The terms the CPU form carries for an N-replica run (forms.cpu_seconds): contention, the
    all-reduce (between processes for a multi-worker job, where that was measured) and the dispatch
    term (in-process runs only, where it was measured); none of them at one replica."""
    replicas: int
    contention: float = 1.0
    allreduce: Optional[_Timed] = None
    allreduce_between_processes: bool = False
    dispatch: Optional[Dispatch] = None

    @property
    def allreduce_seconds(self) -> float:
        return self.allreduce.median_seconds if self.allreduce else 0.0

    @property
    def dispatch_seconds(self) -> float:
        return self.dispatch.seconds_beyond_terms if self.dispatch else 0.0


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

    @property
    def usable(self) -> bool:
        """Measured (not skipped on this host) with at least one multi-replica setting."""
        return not self.skipped and bool(self.contention)

    @property
    def most_replicas(self) -> int:
        """The largest N the multi-replica terms were measured at (1 when none were)."""
        return max((int(n) for n in self.contention), default=1)

    def covers(self, replicas: int) -> bool:
        return replicas == 1 or (str(replicas) in self.contention and str(replicas) in self.allreduce)

    def at(self, replicas: int, *, workers: bool = False) -> AtReplicas:
        """The carried terms for `replicas` (KeyError when they were not measured: `covers` first)."""
        if replicas == 1:
            return AtReplicas(1)
        n = str(replicas)
        across = self.allreduce_workers.get(n) if workers else None
        return AtReplicas(replicas, self.contention[n].factor, across or self.allreduce[n], bool(across),
                          None if workers else self.dispatch.get(n))


def _first_fault(exc: ValidationError) -> str:
    err = exc.errors()[0]
    key = ".".join(str(p) for p in err["loc"])
    msg = err["msg"].removeprefix("Value error, ")
    got = "" if err["type"] == "missing" else f", got {err.get('input')!r}"
    return f"{key + ': ' if key else ''}{msg}{got} (rerun `dvc repro terms`)"


def check_terms(record: dict, source: str = "model-terms") -> Terms:
    """The record, typed, if it is a complete, possible terms file; TermsError naming the first fault."""
    try:
        return Terms.model_validate(record)
    except ValidationError as exc:
        raise TermsError(f"{source}: {_first_fault(exc)}") from None


def load_terms(path: Path) -> Terms:
    """results/model-terms.json, checked: JSON, this schema, every term the model reads present and
    possible (times and rates > 0 and finite, intervals ordered)."""
    from flowerbench.core.records import read_record

    return read_record(path, Terms, TermsError, schema=TERMS_SCHEMA, readable=(TERMS_SCHEMA,),
                       missing="not found; run `dvc repro terms`", rerun="rerun `dvc repro`", describe=_first_fault)
