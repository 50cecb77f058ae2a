"""The params schema and its one strict loader.

`load_params(path)` reads `params.yaml` (or any params file), validates it
against the typed schema below and returns a frozen `Params`.  Every problem
(unknown key, wrong type, out-of-range value, duplicate key, missing file,
YAML syntax error) raises `ParamsError` whose message is a single line naming
the dotted key, e.g. ``train.batch_size_per_replica: must be >= 1, got 0``.
The CLI turns it into exit code 2.  Nothing here imports TensorFlow, so bad
params fail in well under a second.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from flowerbench.core.records import yaml_position

# ResNet50 with include_top=True refuses inputs smaller than 32x32.
MIN_IMAGE_SIZE = 32
VARIANT_NAME = r"^[a-z][a-z0-9_]{0,63}$"
# The shape `variants:` had before it became a name-keyed mapping (one DVC stage per key).
MULTIWORKER_VARIANT = "multiworker_custom"
VARIANTS_SHAPE = "variants: {single_fit: {loop: fit, replicas: 1}, ...}"
# `replicas: auto` (and multiworker.workers: auto): the largest N <= the blog's 4 GPUs for which
# N x train.cores_per_replica fits the usable cores (training/placement.py resolves it at run time).
AUTO_MAX_REPLICAS = 4
# The blog's three timed runs (report.blog_seconds may give only these).
BLOG_RUNS = ("single_fit", "mirrored_fit", "mirrored_custom")


# The defaults below are params.yaml's values (tests/test_config.py holds the two together), so a
# params file that leaves a key out -- params-blog.yaml, a test's tiny params -- is an overlay on
# params.yaml, never on a second, drifting set of defaults.


class ParamsError(ValueError):
    """A params problem, always a single line that names the dotted key."""


class _Section(BaseModel):
    # allow_inf_nan=False: `.nan` / `.inf` are floats to YAML, never a duration, rate or size.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)


class DataParams(_Section):
    source: Literal["auto", "download", "archive", "synthetic"] = "auto"
    url: str = "https://storage.googleapis.com/download.tensorflow.org/example_images/flower_photos.tgz"
    sha256: str = "4c54ace7911aaffe13a365c34f650e71dd5bf1be0a58b464e5a7183e3e595d9c"
    size_bytes: Optional[int] = Field(228_813_984, ge=1)
    archive_path: str = Field("data/downloads/flower_photos.tgz", min_length=1)
    probe_timeout_s: float = Field(3.0, gt=0, le=60)
    timeout_s: float = Field(30.0, gt=0, le=600)
    retries: int = Field(4, ge=0, le=20)
    image_size: int = Field(32, ge=MIN_IMAGE_SIZE, le=1024)
    max_images: Optional[int] = Field(256, ge=1)
    pipeline: Literal["files", "tensors"] = "files"
    standin_px: int = Field(64, ge=8, le=512)
    cache: bool = True

    @field_validator("sha256")
    @classmethod
    def _hex64(cls, v: str) -> str:
        if len(v) != 64 or any(c not in "0123456789abcdef" for c in v.lower()):
            raise ValueError(f"must be 64 hex digits, got {v!r}")
        return v.lower()


class ModelParams(_Section):
    arch: Literal["resnet50", "tiny"] = "resnet50"
    # tiny only (ResNet50 keeps its own per-replica BatchNorm, as the blog):
    # local = per-replica statistics, sync = synchronized across replicas, none.
    batchnorm: Literal["local", "sync", "none"] = "local"


Replicas = Union[Annotated[int, Field(ge=1, le=64)], Literal["auto"]]


class TrainParams(_Section):
    batch_size_per_replica: int = Field(32, ge=1, le=4096)
    # CPU hosts: the cores each replica owns (affinity mask); N replicas get N x this, the
    # single-replica baselines one replica's share (training/placement.py)
    cores_per_replica: int = Field(1, ge=1, le=256)
    warmup_epochs: int = Field(1, ge=0, le=100)
    epochs: int = Field(3, ge=1, le=1000)
    repeats: int = Field(1, ge=1, le=20)
    optimizer: Literal["adam", "sgd"] = "adam"
    learning_rate: float = Field(0.001, gt=0, le=10)
    scaling: Literal["weak", "strong"] = "weak"
    deterministic: bool = False
    mixed_precision: bool = False
    jit_compile: bool = False
    steps_per_execution: int = Field(1, ge=1, le=1000)
    # custom loop: epoch = the whole epoch in one tf.function (the blog); step = one per batch
    custom_graph: Literal["epoch", "step"] = "step"
    # custom loop, custom_graph=step: global batches per tf.function call, unrolled (training/loops.py); fit()
    # has steps_per_execution, refused at >= 2 replicas (keras-team/keras#19246)
    custom_steps_per_call: int = Field(1, ge=1, le=1000)
    # time every step too (one host sync per step): results gain step_seconds and harness_ratio
    step_timing: bool = False
    device: Literal["auto", "gpu", "cpu"] = "auto"
    emulate: bool = True
    thread_policy: Literal["per_replica", "tf_default"] = "per_replica"
    verbose: Literal["auto", "quiet", "progress"] = "auto"


class VariantSpec(_Section):
    """One entry of `variants:` (the mapping key is the variant's name)."""
    loop: Literal["fit", "custom"]
    replicas: Replicas
    # The cores of this run (CPU hosts), when not replicas x train.cores_per_replica: `auto` = the
    # cores of the `replicas: auto` runs, given to this variant (one replica: intra-op threads).
    cores: Optional[Union[Annotated[int, Field(ge=1, le=4096)], Literal["auto"]]] = None
    # Overrides data.pipeline for this variant: a `tensors` twin of a files variant gives the
    # input-pipeline ceiling, and the report sets the two side by side.
    pipeline: Optional[Literal["files", "tensors"]] = None


class Variant(VariantSpec):
    """A variant with its name: a declared one, a sweep point or the multi-worker run."""
    name: str = Field(pattern=VARIANT_NAME)
    # None: one process (`train`); N (or auto): an N-worker MultiWorkerMirroredStrategy job (`launch`).
    workers: Optional[Replicas] = None


class SweepParams(_Section):
    replicas: list[int] = Field(default_factory=list)
    loops: list[Literal["fit", "custom"]] = Field(default_factory=lambda: ["fit"])

    @field_validator("replicas")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        for r in v:
            if not 1 <= r <= 64:
                raise ValueError(f"each entry must be between 1 and 64, got {r}")
        return v


class MultiworkerParams(_Section):
    # auto: as `replicas: auto` (one process per replica's c cores); 0: no multi-worker job
    workers: Union[Annotated[int, Field(ge=0, le=16)], Literal["auto"]] = "auto"
    deadline_s: float = Field(600.0, gt=0, le=86400)
    join_timeout_s: float = Field(120.0, gt=0, le=3600)


HEADLINE = ("single_fit", "mirrored_fit", "single_custom", "mirrored_custom")


class RoundsParams(_Section):
    """The headline rounds (stage `rounds`, measuring/scheduler.py, engine 2): the headline variants, each its own
    process, held after its warm-up and released one timed epoch at a time, cycling through the round;
    `count` rounds, a Williams square of the headline's 4 variants every 4 rounds."""
    count: int = Field(4, ge=1, le=100)
    # the variants measured held in the headline rounds (those of them the params declare); every other
    # variant goes to stage `secondary`
    headline: list[str] = Field(default_factory=lambda: list(HEADLINE), min_length=1)
    # a process is flagged busy when other work took more than this share of the host's CPU time
    # (or the hypervisor stole it) while it ran
    busy_share: float = Field(0.10, gt=0, le=1)
    # the order's shuffle (schedule.order): null draws a fresh one for each measurement (recorded in
    # schedule.json and reused when the measurement resumes); an integer fixes it
    order_seed: Optional[int] = Field(None, ge=0, lt=2 ** 31)
    process_deadline_s: float = Field(1800.0, gt=0, le=86400)   # one process; killed with its group past it


class SecondaryParams(_Section):
    """The secondary rounds (stage `secondary`, measuring/scheduler.py, engine 1): every variant not in
    rounds.headline, beside the baselines it is compared with (params.secondary_variants), in
    sequential rounds of their own; rounds.busy_share, order_seed and process_deadline_s apply."""
    count: int = Field(3, ge=1, le=100)


class ScalingModelParams(_Section):
    """Inputs of the report's model of the blog's 4-GPU run (docs/performance.md, "The blog explained")."""
    gpus: int = Field(4, ge=2, le=64)
    parameters: float = Field(23.6e6, ge=1, le=1e12)  # ResNet50 with the 5-class head, fp32 (results record it)
    # Ring all-reduce of those gradients per step, seconds: PCIe from Baidu DeepBench (67 MB in
    # 13.4 ms, scaled to 94.4 MB), NVLink-class assumed 5x faster ("a few ms").
    allreduce_seconds_per_step: dict[str, float] = Field(
        default_factory=lambda: {"pcie": 0.0189, "nvlink": 0.0038})
    # Decode + resize to 224 px of 320 px JPEGs (~43 KB), measured on the 2-core AMD EPYC host,
    # 2026-12-05 (benchmarks/input_pipeline.py; reports/reference/cpu-emulation-amd-epyc-2core/
    # input_pipeline.json): the blog-era pipeline on 1 and 2 cores, and ours per core on 2 cores.
    blog_input_images_per_second: dict[str, float] = Field(
        default_factory=lambda: {"1 core": 800.0, "2 cores": 1359.0})
    ours_input_images_per_second_per_core: float = Field(704.0, gt=0)

    @field_validator("allreduce_seconds_per_step", "blog_input_images_per_second")
    @classmethod
    def _positive_named(cls, v: dict[str, float]) -> dict[str, float]:
        # One row of the model per entry: a name to show and a time or rate that can be divided by.
        if not v:
            raise ValueError("must name at least one entry (the model has a row per entry)")
        for name, x in v.items():
            if not name.strip():
                raise ValueError("an entry has an empty name")
            if not x > 0:
                raise ValueError(f"{name!r}: must be > 0, got {x!r}")
        return v


class ReportParams(_Section):
    baseline: str = "single_fit"
    figure_dpi: int = Field(110, ge=50, le=400)
    # the 95 % half-width every multi-replica speed-up should reach; the report says which did and
    # how many rounds the variance split says each needs
    precision_target_pct: float = Field(10.0, gt=0, le=100)
    # The blog's 4xV100 timings (seconds for 10 timed epochs), audited in the report.
    blog_seconds: dict[str, float] = Field(
        default_factory=lambda: {"single_fit": 110.58, "mirrored_fit": 41.66, "mirrored_custom": 35.88}
    )
    blog_claimed_reduction_pct: dict[str, float] = Field(
        default_factory=lambda: {"mirrored_fit": 61.0, "mirrored_custom": 67.9}
    )
    scaling_model: ScalingModelParams = Field(default_factory=ScalingModelParams)

    @field_validator("blog_seconds")
    @classmethod
    def _blog_runs(cls, v: dict[str, float]) -> dict[str, float]:
        for name, x in v.items():
            if name not in BLOG_RUNS:
                raise ValueError(f"{name!r} is not one of the blog's runs ({', '.join(BLOG_RUNS)})")
            if not x > 0:
                raise ValueError(f"{name}: a time must be > 0 s, got {x!r}")
        return v

    @field_validator("blog_claimed_reduction_pct")
    @classmethod
    def _reductions(cls, v: dict[str, float]) -> dict[str, float]:
        for name, x in v.items():
            if name == "single_fit":
                raise ValueError("single_fit: the blog's reductions are against single_fit; it has none of its own")
            if not x < 100:
                raise ValueError(f"{name}: a reduction of time must be < 100 % (100 % is zero seconds), got {x!r}")
        return v


class Params(_Section):
    seed: int = Field(123, ge=0, le=2**31 - 1)
    data: DataParams = Field(default_factory=DataParams)
    model: ModelParams = Field(default_factory=ModelParams)
    train: TrainParams = Field(default_factory=TrainParams)
    # name -> spec; DVC expands one stage per key (train@single_fit, ...), each depending on
    # variants.<name> only, so adding or editing one variant reruns just that one.
    variants: dict[str, VariantSpec] = Field(
        default_factory=lambda: {
            "single_fit": VariantSpec(loop="fit", replicas=1),
            "mirrored_fit": VariantSpec(loop="fit", replicas="auto"),
            "single_custom": VariantSpec(loop="custom", replicas=1),
            "mirrored_custom": VariantSpec(loop="custom", replicas="auto"),
            "single_fit_tensors": VariantSpec(loop="fit", replicas=1, pipeline="tensors"),
            "single_custom_tensors": VariantSpec(loop="custom", replicas=1, pipeline="tensors"),
            "single_fit_threads": VariantSpec(loop="fit", replicas=1, cores="auto"),
        }
    )
    sweep: SweepParams = Field(default_factory=SweepParams)
    multiworker: MultiworkerParams = Field(default_factory=MultiworkerParams)
    rounds: RoundsParams = Field(default_factory=RoundsParams)
    secondary: SecondaryParams = Field(default_factory=SecondaryParams)
    report: ReportParams = Field(default_factory=ReportParams)

    @field_validator("variants")
    @classmethod
    def _variant_names(cls, v: dict[str, VariantSpec]) -> dict[str, VariantSpec]:
        import re

        for name in v:
            if not re.match(VARIANT_NAME, name):
                raise ValueError(f"{name!r} is not a valid variant name (must match {VARIANT_NAME})")
        return v

    @model_validator(mode="after")
    def _meaningful(self) -> "Params":
        """Values that are well typed but cannot do what their key is for (each message starts
        with its dotted key)."""
        from urllib.parse import urlsplit

        url = urlsplit(self.data.url)
        if url.scheme not in ("http", "https") or not url.netloc:
            raise ValueError(f"data.url: must be an http(s) URL with a host, got {self.data.url!r}")
        k = self.train.custom_steps_per_call
        if k > 1 and self.train.custom_graph != "step":
            raise ValueError(f"train.custom_steps_per_call: {k} steps per call needs train.custom_graph: step "
                             f"(custom_graph {self.train.custom_graph!r} runs the whole epoch in one call already)")
        if k > 1 and self.train.step_timing:
            raise ValueError(f"train.custom_steps_per_call: {k} steps per call hides the steps inside one graph "
                             f"call, so train.step_timing cannot time them; set one of the two back (1 / false)")
        if self.sweep.replicas and not self.sweep.loops:
            raise ValueError(f"sweep.loops: empty, so sweep.replicas {self.sweep.replicas} would run nothing; "
                             f"list fit and/or custom")
        for key, values in (("sweep.replicas", self.sweep.replicas), ("sweep.loops", self.sweep.loops)):
            twice = sorted({v for v in values if values.count(v) > 1})
            if twice:
                raise ValueError(f"{key}: {twice[0]!r} is listed twice (it would run the same variant twice)")
        seen: dict[str, str] = {}
        declared = len(self.variants)
        for i, v in enumerate(self.all_variants()):
            origin = "variants" if i < declared else "multiworker" if v.workers else "sweep"
            if v.name in seen:
                raise ValueError(f"{origin}: expands to variant {v.name!r}, which {seen[v.name]} already "
                                 f"declares; rename one of them")
            seen[v.name] = origin
        names = list(seen)
        # the blog's four may be absent (a params file that declares other variants measures them all
        # in the secondary rounds); any other name must be declared (a typo never passes)
        for i, name in enumerate(self.rounds.headline):
            if name not in seen and name not in HEADLINE:
                raise ValueError(f"rounds.headline: {name!r} names no variant (have: {', '.join(names)})")
            if name in self.rounds.headline[:i]:
                raise ValueError(f"rounds.headline: {name!r} is listed twice")
            if name in seen and self.variant(name).workers:
                raise ValueError(f"rounds.headline: {name!r} is a multi-worker job, which the held engine does not "
                                 f"hold; it belongs to the secondary rounds")
        if self.report.baseline not in seen:
            raise ValueError(f"report.baseline: {self.report.baseline!r} names no variant (have: {', '.join(names)})")
        files = [n for n in names if self.pipeline_of(self.variant(n)) == "files"]
        if files and self.report.baseline not in files:
            # (a run with data.pipeline=tensors everywhere compares tensors with tensors: fine)
            raise ValueError(f"report.baseline: {self.report.baseline!r} feeds in-memory tensors (an input "
                             f"ceiling) while {', '.join(files)} read the data; pick one of those")
        blog = self.report.blog_seconds
        if "single_fit" not in blog:
            raise ValueError("report.blog_seconds: must keep single_fit, the blog's baseline (its reductions are "
                             "against it)")
        extra = sorted(set(self.report.blog_claimed_reduction_pct) - set(blog))
        if extra:
            raise ValueError(f"report.blog_claimed_reduction_pct: {extra[0]!r} has no time in report.blog_seconds")
        if self.multiworker.workers and self.multiworker.join_timeout_s >= self.multiworker.deadline_s:
            raise ValueError(f"multiworker.join_timeout_s: {self.multiworker.join_timeout_s:g} s is not shorter "
                             f"than multiworker.deadline_s ({self.multiworker.deadline_s:g} s): the deadline "
                             f"would fire before a worker that never joins is reported")
        return self

    def declared_variants(self) -> list[Variant]:
        return [Variant(name=name, **spec.model_dump()) for name, spec in self.variants.items()]

    def all_variants(self) -> list[Variant]:
        """The declared variants, then the sweep's (`sweep_r<N>_<loop>`), then the multi-worker run
        (unless multiworker.workers is 0)."""
        out = self.declared_variants()
        out += [Variant(name=sweep_name(r, loop), loop=loop, replicas=r)
                for r in self.sweep.replicas for loop in self.sweep.loops]
        if self.multiworker.workers:
            out.append(Variant(name=MULTIWORKER_VARIANT, loop="custom", replicas=self.multiworker.workers,
                               workers=self.multiworker.workers))
        return out

    def headline_variants(self) -> list[Variant]:
        """The variants of the headline rounds (stage `rounds`), in the params' order."""
        return [v for v in self.all_variants() if v.name in self.rounds.headline]

    def secondary_variants(self) -> list[Variant]:
        """The variants of the secondary rounds (stage `secondary`): every variant not in the headline,
        and beside them the baselines they are compared with, measured again in these rounds (a ratio
        pairs only processes of one round): report.baseline, and for each loop the 1-replica
        files-fed run of that loop.  Empty when the headline holds every variant."""
        rest = [v for v in self.all_variants() if v.name not in self.rounds.headline]
        if not rest:
            return []
        loops = {v.loop for v in rest}
        keep = {self.report.baseline} | {v.name for v in self.all_variants()
                                         if v.loop in loops and v.replicas == 1 and v.cores is None
                                         and not v.workers and self.pipeline_of(v) == "files"}
        return [v for v in self.all_variants() if v.name in keep or v in rest]

    def is_sweep(self, name: str) -> bool:
        return name in {sweep_name(r, loop) for r in self.sweep.replicas for loop in self.sweep.loops}

    def pipeline_of(self, variant: Variant) -> str:
        return variant.pipeline or self.data.pipeline

    def variant(self, name: str) -> Variant:
        for v in self.all_variants():
            if v.name == name:
                return v
        known = ", ".join(v.name for v in self.all_variants())
        raise ParamsError(f"variant: unknown variant {name!r} (known: {known})")


def sweep_name(replicas: int, loop: str) -> str:
    return f"sweep_r{replicas}_{loop}"


def _dotted(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, str) and (part in ("int", "str", "float", "constrained-int") or "[" in part):
            continue  # pydantic's name for a member of a union (`int | "auto"`), not a key
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _describe(err: dict[str, Any]) -> str:
    kind, ctx, got = err["type"], err.get("ctx") or {}, err.get("input")
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required key is missing"
    bounds = {"greater_than_equal": ">=", "greater_than": ">", "less_than_equal": "<=", "less_than": "<"}
    if kind in bounds:
        bound = next(iter(ctx.values()))
        return f"must be {bounds[kind]} {bound}, got {got!r}"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected')}, got {got!r}"
    if kind.endswith("_type") or kind.endswith("_parsing"):
        expected = kind.split("_")[0]
        return f"must be of type {expected}, got {got!r} ({type(got).__name__})"
    if kind == "string_pattern_mismatch":
        return f"must match {ctx.get('pattern')}, got {got!r}"
    if kind == "value_error":
        return str(ctx.get("error", err["msg"]))
    return f"{err['msg']}, got {got!r}"


def validate(raw: Any, source: str = "params") -> Params:
    """Validate an already-parsed mapping; raise ParamsError with a dotted key."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ParamsError(f"{source}: top level must be a mapping, got {type(raw).__name__}")
    if isinstance(raw.get("variants"), list):
        raise ParamsError(f"{source}: variants: a list of {{name: ..., loop: ..., replicas: ...}} is the old shape; "
                          f"variants is now a mapping keyed by name, e.g. {VARIANTS_SHAPE}")
    try:
        return Params.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = _dotted(err["loc"])
        msg = _describe(err)
        # Model-level checks carry their own dotted key in the message.
        if not key and ":" in msg:
            return _raise(f"{source}: {msg}")
        return _raise(f"{source}: {key or '<top>'}: {msg}")


def _raise(message: str) -> Params:
    raise ParamsError(message)


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (plain YAML keeps the last one,
    so a second `single_fit:` under `variants:` would silently replace the first)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_params(path: str | Path = "params.yaml") -> Params:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ParamsError(f"{path}: params file not found") from None
    except UnicodeDecodeError as exc:
        raise ParamsError(f"{path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start}); "
                          f"a params file is YAML") from None
    except OSError as exc:
        raise ParamsError(f"{path}: cannot read params file ({exc.strerror})") from None
    try:
        raw = yaml.load(text, Loader=_StrictLoader)
    except yaml.YAMLError as exc:
        where = yaml_position(exc) or "unknown position"
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ParamsError(f"{path}: YAML syntax error at {where}: {problem}") from None
    if raw is None or raw == {}:
        # Every key has a default, so an empty file would run on the code's defaults without a word:
        # a truncated or blanked params.yaml is refused instead.
        raise ParamsError(f"{path}: the params file is empty (no keys); restore it (`git checkout {path}`) "
                          f"or give at least the keys you mean to set")
    return validate(raw, source=str(path))


def resolved_dict(params: Params) -> dict[str, Any]:
    """The params as plain data, written next to every result."""
    return params.model_dump(mode="json")


def exp_set_args(path: str | Path) -> list[str]:
    """`-S key=value` arguments that make params.yaml equal to the (validated) file at `path`.

    Top-level sections are flattened to dotted keys; `variants` and lists (sweep entries) are
    passed whole as JSON, which DVC parses as YAML, so that the file's variants replace
    params.yaml's instead of being merged into them."""
    import json
    import shlex

    flat: dict[str, Any] = {}

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, dict) and value and prefix != "variants":
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else k, v)
        else:
            flat[prefix] = value

    walk("", resolved_dict(load_params(path)))
    return [f"-S {shlex.quote(f'{k}={json.dumps(v)}')}" for k, v in flat.items()]
