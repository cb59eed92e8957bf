"""A day's spec: the YAML file a person writes, validated into typed models.

Why pydantic: every mistake must come back as one line naming the file and the field
(``days/day37.yaml: batching.slots: must be at least 1, got 0``), unknown keys must fail
(a typo silently ignored is a wrong post), and the models double as documentation of what a
day can ask for. Sections are optional: a day runs the experiments whose sections it has.
"""
from __future__ import annotations

import difflib
import re
import unicodedata
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from engine import limits
from engine.errors import UserError
from engine.workload import WorkloadSpec

# strict: YAML's `true` must not pass for 1, nor 16.5 for 16.
PositiveInt = Annotated[int, Field(ge=1, strict=True)]
# Counts with a stated limit (engine/limits.py): a typo must not ask for a billion of anything.
Slots = Annotated[int, Field(ge=1, le=limits.MAX_SLOTS, strict=True)]
ModelDim = Annotated[int, Field(ge=1, le=limits.MAX_MODEL_DIM, strict=True)]
Layers = Annotated[int, Field(ge=1, le=limits.MAX_LAYERS, strict=True)]
ContextTokens = Annotated[int, Field(ge=1, le=limits.MAX_CONTEXT_TOKENS, strict=True)]
Servers = Annotated[int, Field(ge=1, le=limits.MAX_SERVERS, strict=True)]
DayNumber = Annotated[int, Field(ge=1, le=limits.MAX_SERIES_DAYS, strict=True)]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
# Memory sizes in GiB: no device holds a pebibyte, so anything larger is a typo.
GiB = Annotated[float, Field(ge=0, le=2**20, allow_inf_nan=False)]


class _Strict(BaseModel):
    """Unknown keys are errors, and models are immutable once loaded."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# ---- metadata -------------------------------------------------------------------------------


class Series(_Strict):
    name: str
    length: DayNumber


class LinkBack(_Strict):
    """An earlier day this post refers to; its spec, when given, supplies a figure to cite."""

    day: DayNumber
    claim: str
    spec: str | None = None  # path relative to this spec's folder, e.g. day04.yaml


# ---- kv_cache -------------------------------------------------------------------------------


class InlineModel(_Strict):
    """A model described by its shape alone, as the lab's '7B-class' model is."""

    name: str
    num_layers: Layers
    num_kv_heads: ModelDim
    head_dim: ModelDim
    dtype: Literal["float16", "bfloat16", "float32"] = "float16"
    num_attention_heads: ModelDim | None = None
    hidden_size: ModelDim | None = None
    num_params: Annotated[int, Field(ge=1, le=limits.MAX_PARAMS, strict=True)] | None = None

    @model_validator(mode="after")
    def _heads_group(self) -> "InlineModel":
        """Grouped-query attention shares each KV head among a whole number of query heads."""
        heads = self.num_attention_heads
        if heads is not None and (self.num_kv_heads > heads or heads % self.num_kv_heads):
            raise ValueError(f"num_kv_heads {self.num_kv_heads} must divide num_attention_heads "
                             f"{heads} (each KV head serves a whole group of query heads)")
        return self


class ModelRef(_Strict):
    """Exactly one of: a catalog name, a Hugging Face config.json path, or an inline shape.

    A bare string in YAML is a catalog name, or a config path when it ends in ``.json``.
    """

    catalog: str | None = None
    config: str | None = None
    inline: InlineModel | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"config": value} if value.endswith(".json") else {"catalog": value}
        if isinstance(value, dict) and "name" in value and "num_layers" in value:
            return {"inline": value}
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> "ModelRef":
        given = [k for k in ("catalog", "config", "inline") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give a catalog name, a config.json path, or an inline shape")
        return self


class InlineGpu(_Strict):
    name: str
    memory_gib: Annotated[GiB, Field(gt=0)]


class GpuRef(_Strict):
    """A catalog GPU by name, or an inline one: a name and the memory it offers."""

    catalog: str | None = None
    inline: InlineGpu | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"catalog": value}
        if isinstance(value, dict) and "memory_gib" in value:
            return {"inline": value}
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> "GpuRef":
        if (self.catalog is None) == (self.inline is None):
            raise ValueError("give a catalog GPU name or an inline {name, memory_gib}")
        return self


class ReserveBudgetSpec(_Strict):
    """The lab's budget: the card's memory minus a fixed reserve for weights and overhead."""

    kind: Literal["reserve"]
    reserve_gib: GiB
    weights_gib: GiB | None = None  # the reserve's share for weights

    @model_validator(mode="after")
    def _weights_within_reserve(self) -> "ReserveBudgetSpec":
        if self.weights_gib is not None and self.weights_gib > self.reserve_gib:
            raise ValueError(f"weights_gib {self.weights_gib} exceeds reserve_gib {self.reserve_gib}")
        return self


class VllmBudgetSpec(_Strict):
    """vLLM's own accounting: utilisation × memory − weights − activations − non-torch."""

    kind: Literal["vllm"]
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)] = 0.9
    max_num_batched_tokens: ContextTokens | None = None
    max_num_seqs: Slots = 256


class GivenBudgetSpec(_Strict):
    """A KV budget taken as given, as vLLM's 'Available KV cache memory' log line reports it."""

    kind: Literal["given"]
    kv_memory_gib: Annotated[GiB, Field(gt=0)]


BudgetSpec = Annotated[
    ReserveBudgetSpec | VllmBudgetSpec | GivenBudgetSpec, Field(discriminator="kind")
]
KvDtype = Literal["auto", "fp16", "bf16", "fp8", "int8", "int4"]


class KvView(_Strict):
    """One way of sizing the cache: a model on a GPU under a budget."""

    label: str | None = None
    model: ModelRef
    gpu: GpuRef
    budget: BudgetSpec
    kv_dtype: KvDtype = "auto"
    tp: Annotated[int, Field(ge=1, le=limits.MAX_TP, strict=True)] = 1
    block_size: Annotated[int, Field(ge=1, le=limits.MAX_BLOCK_SIZE, strict=True)] = 16


class KvCacheSection(KvView):
    """The post's memory table, plus optional second views (real accounting, GQA, …)."""

    contexts: Annotated[list[ContextTokens], Field(min_length=1, max_length=limits.MAX_CONTEXTS)]
    highlight: Annotated[list[ContextTokens], Field(max_length=limits.MAX_CONTEXTS)] = []
    compare: Annotated[list[KvView], Field(max_length=limits.MAX_VIEWS)] = []

    @model_validator(mode="after")
    def _highlight_in_contexts(self) -> "KvCacheSection":
        missing = [c for c in self.highlight if c not in self.contexts]
        if missing:
            raise ValueError(f"highlight {missing} must be among contexts {self.contexts}")
        if self.contexts != sorted(set(self.contexts)):
            raise ValueError("contexts must be increasing and distinct")
        return self


# ---- batching -------------------------------------------------------------------------------


class UnitStepTimeSpec(_Strict):
    kind: Literal["unit"]
    seconds_per_step: PositiveFloat


class RooflineStepTimeSpec(_Strict):
    kind: Literal["roofline"]
    model: str
    gpu: str
    kv_dtype: KvDtype = "auto"


class MeasuredStepTimeSpec(_Strict):
    """Step time fitted to the device measurement the spec's ``measured:`` key picks."""

    kind: Literal["measured"]


StepTimeSpec = Annotated[
    UnitStepTimeSpec | RooflineStepTimeSpec | MeasuredStepTimeSpec, Field(discriminator="kind")
]
PolicyName = Literal["static", "continuous", "paged"]


class PagedSpec(_Strict):
    num_blocks: Annotated[int, Field(ge=1, le=limits.MAX_BLOCKS, strict=True)]
    block_size: Annotated[int, Field(ge=1, le=limits.MAX_BLOCK_SIZE, strict=True)] = 16
    max_num_seqs: Slots | None = None
    max_num_batched_tokens: ContextTokens | None = None
    chunked_prefill: bool = False


class BatchingSection(_Strict):
    slots: Slots
    workload: WorkloadSpec
    policies: Annotated[list[PolicyName], Field(min_length=1)] = ["static", "continuous"]
    step_time: StepTimeSpec | None = None
    paged: PagedSpec | None = None
    static_max_wait: PositiveFloat | None = None

    @model_validator(mode="after")
    def _paged_needs_blocks(self) -> "BatchingSection":
        if len(set(self.policies)) != len(self.policies):
            raise ValueError(f"policies {self.policies} name a policy twice")
        if "paged" in self.policies and self.paged is None:
            raise ValueError("policy 'paged' needs a 'paged' section with num_blocks")
        return self


# ---- queueing (Day 4) -----------------------------------------------------------------------


class SharedLineSpec(_Strict):
    """One shared line feeding c servers, at a fixed arrival rate (the lab's M/M/c table)."""

    arrival_rate: PositiveFloat
    servers: Annotated[list[Servers], Field(min_length=1, max_length=limits.MAX_QUEUE_ROWS)]


class LinesSpec(_Strict):
    """One shared line against c separate lines, at the same load per server."""

    servers: Annotated[int, Field(ge=2, le=limits.MAX_SERVERS, strict=True)]
    load: Annotated[float, Field(gt=0, lt=1)]


class QueueingSection(_Strict):
    service_ms: PositiveFloat
    requests: Annotated[int, Field(ge=1000, le=limits.MAX_QUEUEING_REQUESTS, strict=True)]
    seed: Annotated[int, Field(ge=0, le=2**63 - 1, strict=True)] = 0
    service: Literal["exponential", "deterministic", "lognormal"] = "exponential"
    service_cv: PositiveFloat | None = None
    utilisations: Annotated[list[Annotated[float, Field(gt=0, lt=1)]],
                            Field(min_length=1, max_length=limits.MAX_QUEUE_ROWS)]
    shared: SharedLineSpec | None = None
    lines: LinesSpec


# ---- the day --------------------------------------------------------------------------------

ChartName = Literal[
    "scoreboard",
    "kv_fit",
    "memory_breakdown",
    "slot_timeline",
    "utilisation",
    "latency_cdf",
    "kv_blocks",
    "queue_hockey_stick",
    "shared_vs_separate",
]


# Which spec sections a chart draws from: asking for a chart without its data is a spec error.
CHART_NEEDS: dict[str, tuple[str, ...]] = {
    "scoreboard": ("kv_cache", "batching"),
    "kv_fit": ("kv_cache",),
    "memory_breakdown": ("kv_cache",),
    "slot_timeline": ("batching",),
    "utilisation": ("batching",),
    "latency_cdf": ("batching",),
    "kv_blocks": ("batching",),
    "queue_hockey_stick": ("queueing",),
    "shared_vs_separate": ("queueing",),
}

# One word each, CamelCase for screen readers; LinkedIn wants 3 to 5 at the end of a post.
# A tag may start with a digit (#100DaysOfCode) but not be digits only (#2024 is no hashtag).
Hashtag = Annotated[str, Field(pattern=r"^#?[0-9_]*[A-Za-z][A-Za-z0-9_]*$", max_length=100)]
# One line, bounded: the title is drawn on charts, where a newline overlaps the plot.
def _drawable_title(value: str) -> str:
    """The title is drawn on charts: a line break overlaps the plot, and the chart font has no
    emoji beyond the Basic Multilingual Plane (matplotlib draws an empty box and only warns)."""
    bad = next((c for c in value if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co")
                or ord(c) > 0xFFFF), None)
    if bad is not None:
        raise ValueError(f"must be one line of plain text: U+{ord(bad):04X} cannot be drawn on a chart")
    return value


Title = Annotated[str, Field(min_length=1, max_length=limits.MAX_TITLE_CHARS), AfterValidator(_drawable_title)]


class DaySpec(_Strict):
    day: DayNumber
    series: Series
    title: Title
    repository: str
    hashtags: Annotated[list[Hashtag], Field(min_length=3, max_length=5)]
    links_back: list[LinkBack] = []
    charts: list[ChartName] = []
    linkedin_image: ChartName | None = None  # drawn again at LinkedIn's portrait size
    measured: str | None = None
    kv_cache: KvCacheSection | None = None
    batching: BatchingSection | None = None
    queueing: QueueingSection | None = None

    @field_validator("hashtags")
    @classmethod
    def _distinct_tags(cls, tags: list[str]) -> list[str]:
        """#LLM #LLM #LLM is one hashtag said three times: a typo, never meant."""
        seen = [t.lstrip("#").lower() for t in tags]
        twice = next((t for t, key in zip(tags, seen) if seen.count(key) > 1), None)
        if twice is not None:
            raise ValueError(f"'{twice}' is given twice")
        return tags

    @field_validator("links_back")
    @classmethod
    def _links_point_back(cls, links: list[LinkBack], info: ValidationInfo) -> list[LinkBack]:
        """A link back credits an earlier day: "Day 50's lesson again" on Day 37 is false."""
        day = info.data.get("day")
        for link in links:
            if day is not None and link.day >= day:
                raise ValueError(f"day {link.day} is not before day {day}; a post can only point "
                                 "back to an earlier day")
        return links

    @model_validator(mode="after")
    def _consistent(self) -> "DaySpec":
        if self.day > self.series.length:
            raise ValueError(f"day {self.day} is past the series' length {self.series.length}")

        for chart in self.charts:
            missing = [need for need in CHART_NEEDS[chart] if getattr(self, need) is None]
            if missing:
                raise ValueError(f"chart '{chart}' needs a '{missing[0]}' section")
        requests = getattr(self.batching.workload, "requests", 0) if self.batching else 0
        if "slot_timeline" in self.charts and requests > limits.MAX_TIMELINE_REQUESTS:
            raise ValueError(f"chart 'slot_timeline' draws one bar per request, at most "
                             f"{limits.MAX_TIMELINE_REQUESTS:,}; the workload has {requests:,}")
        if "kv_blocks" in self.charts and "paged" not in (self.batching.policies if self.batching else []):
            raise ValueError("chart 'kv_blocks' needs the 'paged' policy")
        if self.linkedin_image is not None and self.linkedin_image not in self.charts:
            raise ValueError(f"linkedin_image '{self.linkedin_image}' must be one of charts")
        return self


# ---- loading --------------------------------------------------------------------------------


class _UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader that refuses a key given twice: YAML would silently keep the last one."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key '{key}' is given twice", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_spec(path: str | Path) -> DaySpec:
    """Read and validate a day's YAML; every failure is a UserError naming file and field."""
    path = Path(path)
    from engine.limits import MAX_SPEC_BYTES, check_yaml_depth, read_text_limited

    text = read_text_limited(path, MAX_SPEC_BYTES, "spec")
    check_yaml_depth(text, path)
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UserError(f"malformed YAML: {problem}", file=path, field=where) from None
    if not isinstance(data, dict):
        raise UserError("the spec must be a mapping of fields", file=path)
    try:
        spec = DaySpec.model_validate(data)
    except ValidationError as exc:
        raise _first_error(exc, path, data) from None
    named = re.fullmatch(r"day0*(\d+)", path.stem)
    if named and int(named.group(1)) != spec.day:  # day37.yaml copied to day38.yaml, unchanged
        raise UserError(f"the file is named for day {int(named.group(1))} but says day {spec.day}",
                        file=path, field="day")
    return spec


def _first_error(exc: ValidationError, path: Path, data: Any) -> UserError:
    """Turn pydantic's report into one line: the first error, in the spec's own words."""
    errors = exc.errors()
    # A typo shows up twice (the unknown key, and the real key missing): name the typo.
    err = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = list(err["loc"])
    shown = _user_path(data, loc, missing=err["type"] == "missing")
    return UserError(_message(err, [str(p) for p in loc]), file=path, field=".".join(shown) or None)


def _user_path(data: Any, loc: list[Any], *, missing: bool) -> list[str]:
    """The part of pydantic's location the user wrote: keys found in their own YAML.

    pydantic inserts names of its own into locations (a union member's tag, a validator's
    name, our shorthand's 'inline'); walking the user's data tells them apart from real keys.
    """
    shown: list[str] = []
    node = data
    for i, part in enumerate(loc):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        elif not (missing and i == len(loc) - 1):
            continue  # inserted by pydantic, not a key of the user's
        shown.append(str(part))
    return shown


def _message(err: dict[str, Any], loc: list[str]) -> str:
    kind, ctx, got = err["type"], err.get("ctx") or {}, err.get("input")
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return _unknown_field(loc)
    if kind == "greater_than_equal":
        return f"must be at least {_num(ctx['ge'])}, got {_shown(got)}"
    if kind == "greater_than":
        return f"must be greater than {_num(ctx['gt'])}, got {_shown(got)}"
    if kind == "less_than_equal":
        return f"must be at most {_num(ctx['le'])}, got {_shown(got)}"
    if kind == "less_than":
        return f"must be less than {_num(ctx['lt'])}, got {_shown(got)}"
    if kind in {"int_type", "int_parsing", "int_from_float", "bool_type"}:
        return f"must be a whole number, got {_shown(got)}"
    if kind in {"float_type", "float_parsing"}:
        return f"must be a number, got {_shown(got)}"
    if kind in {"string_type"}:
        return f"must be text, got {_shown(got)}"
    if kind in {"list_type"}:
        return f"must be a list, got {_shown(got)}"
    if kind in {"too_short"}:
        return f"must have at least {ctx.get('min_length')} item(s)"
    if kind in {"too_long"}:
        return f"must have at most {ctx.get('max_length')} item(s), the stated limit"
    if kind == "string_too_long":
        return f"must be at most {ctx.get('max_length')} characters, the stated limit; got {len(got):,}"
    if kind == "string_too_short":
        return f"must have at least {ctx.get('min_length')} character(s)"
    if kind == "string_pattern_mismatch":
        return f"{_shown(got)} is not one word (letters, digits, underscores; CamelCase reads best)"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected')}, got {_shown(got)}"
    if kind == "union_tag_invalid":
        return f"kind must be one of {ctx.get('expected_tags')}, got {ctx.get('tag')!r}"
    if kind == "union_tag_not_found":
        return "needs a 'kind'"
    msg = err["msg"]
    return msg.removeprefix("Value error, ")


def _shown(value: Any, limit: int = 60) -> str:
    """A value as the message quotes it, cut short: a 2-million-entry list is not a message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _num(value: Any) -> Any:
    """0.0 → 0 in messages: bounds are written as the user would write them."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _unknown_field(loc: list[str]) -> str:
    name = loc[-1] if loc else "?"
    known = _fields_at(loc[:-1])
    if not known:
        return f"unknown field '{name}': this value takes no fields"
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean '{close[0]}'?" if close else f"; known fields: {', '.join(known)}"
    return f"unknown field '{name}'{hint}"


def _fields_at(loc: list[str]) -> list[str]:
    """The field names valid at a location, for the 'did you mean' hint: every form a union
    allows (a workload is a trace or a generator), not only the first."""
    models: list[Any] = [DaySpec]
    for part in loc:
        nxt = []
        for model in models:
            fields = getattr(model, "model_fields", {})
            if part in fields:
                nxt += _models_of(fields[part].annotation)
        if nxt:  # else a name pydantic inserted (a union's tag), not a key of the user's
            models = nxt
    return sorted({f for m in models for f in getattr(m, "model_fields", {})})


def _models_of(annotation: Any) -> list[Any]:
    """Every BaseModel inside Optional[...] / list[...] / Union[...] / Annotated[...]."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found = []
    for arg in getattr(annotation, "__args__", ()) + tuple(getattr(annotation, "__metadata__", ())):
        found += _models_of(arg)
    return found


def _model_of(annotation: Any) -> Any:
    """The first BaseModel inside Optional[...] / list[...] annotations, if there is one."""
    models = _models_of(annotation)
    return models[0] if models else None
