"""A day's spec: the YAML file a person writes, validated into typed models.

Why pydantic: every mistake must come back as one line naming the file and the field
(``days/day37.yaml: batching.slots: must be at least 1, got 0``; engine.validation writes it),
unknown keys must fail (a typo silently ignored is a wrong post), and the models double as
documentation of what a day can ask for. Sections are optional and registered
(engine.sections): a day runs the experiments whose sections it has.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from engine import limits, sections, yamlfile
from engine.batching import registry as policy_registry
from engine.charts import declared
from engine.charts import registry as chart_registry
from engine.charts.declared import Declared
from engine.errors import UserError
from engine.given import GivenBlock, GivenName
from engine.kvcache import KvDtype
from engine.platforms import posting
from engine.render.slides import CarouselSpec
from engine.validation import GiB, PositiveFloat, PositiveInt, Strict, validate
from engine.workload import WorkloadSpec

__all__ = ["DaySpec", "GiB", "PositiveFloat", "PositiveInt", "day_spec_model", "load_spec"]

# Counts with a stated limit (engine/limits.py): a typo must not ask for a billion of anything.
Slots = Annotated[int, Field(ge=1, le=limits.MAX_SLOTS, strict=True)]
ModelDim = Annotated[int, Field(ge=1, le=limits.MAX_MODEL_DIM, strict=True)]
Layers = Annotated[int, Field(ge=1, le=limits.MAX_LAYERS, strict=True)]
ContextTokens = Annotated[int, Field(ge=1, le=limits.MAX_CONTEXT_TOKENS, strict=True)]
Servers = Annotated[int, Field(ge=1, le=limits.MAX_SERVERS, strict=True)]
DayNumber = Annotated[int, Field(ge=1, le=limits.MAX_SERIES_DAYS, strict=True)]
TensorParallel = Annotated[int, Field(ge=1, le=limits.MAX_TP, strict=True)]  # GPUs per replica


# A key added after days were built: None when not given, and then left out of results.json's
# record of the spec, so the results of those days keep their bytes.
Unset: Any = Field(default=None, exclude_if=lambda value: value is None)


# ---- metadata -------------------------------------------------------------------------------


class Series(Strict):
    name: str
    length: DayNumber


class LinkBack(Strict):
    """An earlier day this post refers to; its spec, when given, supplies a figure to cite."""

    day: DayNumber
    claim: str
    spec: str | None = None  # path relative to this spec's folder, e.g. day04.yaml


# ---- kv_cache -------------------------------------------------------------------------------


class InlineModel(Strict):
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
    def _heads_group(self) -> InlineModel:
        """Grouped-query attention shares each KV head among a whole number of query heads."""
        heads = self.num_attention_heads
        if heads is not None and (self.num_kv_heads > heads or heads % self.num_kv_heads):
            raise ValueError(
                f"num_kv_heads {self.num_kv_heads} must divide num_attention_heads "
                f"{heads} (each KV head serves a whole group of query heads)"
            )
        return self


class ModelRef(Strict):
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
    def _exactly_one(self) -> ModelRef:
        given = [k for k in ("catalog", "config", "inline") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give a catalog name, a config.json path, or an inline shape")
        return self


class InlineGpu(Strict):
    name: str
    memory_gib: Annotated[GiB, Field(gt=0)]


class GpuRef(Strict):
    """A catalog GPU by name, or an inline one: a name and the memory it offers.

    A catalog GPU may state the memory it reports instead of the catalog's figure (a MIG slice,
    a driver that reserves more): ``{catalog: h100-80gb, memory_gib: 79.1}``.
    """

    catalog: str | None = None
    inline: InlineGpu | None = None
    memory_gib: Annotated[GiB, Field(gt=0)] | None = Unset

    @model_validator(mode="before")
    @classmethod
    def _from_shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"catalog": value}
        if isinstance(value, dict) and "memory_gib" in value and "catalog" not in value:
            return {"inline": value}
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> GpuRef:
        if (self.catalog is None) == (self.inline is None):
            raise ValueError("give a catalog GPU name or an inline {name, memory_gib}")
        if self.inline is not None and self.memory_gib is not None:
            raise ValueError("memory_gib overrides a catalog GPU's figure; an inline GPU states its own")
        return self


class ReserveBudgetSpec(Strict):
    """The lab's budget: the card's memory minus a fixed reserve for weights and overhead."""

    kind: Literal["reserve"]
    reserve_gib: GiB
    weights_gib: GiB | None = None  # the reserve's share for weights

    @model_validator(mode="after")
    def _weights_within_reserve(self) -> ReserveBudgetSpec:
        if self.weights_gib is not None and self.weights_gib > self.reserve_gib:
            raise ValueError(f"weights_gib {self.weights_gib} exceeds reserve_gib {self.reserve_gib}")
        return self


class VllmBudgetSpec(Strict):
    """vLLM's own accounting: utilisation × memory − weights − activations − non-torch.

    ``non_torch_gib``: the memory outside PyTorch (CUDA context, NCCL), when known; estimated
    otherwise.
    """

    kind: Literal["vllm"]
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = 0.9
    max_num_batched_tokens: ContextTokens | None = None
    max_num_seqs: Slots = 256
    non_torch_gib: GiB | None = Unset


class GivenBudgetSpec(Strict):
    """A KV budget taken as given, as vLLM's 'Available KV cache memory' log line reports it."""

    kind: Literal["given"]
    kv_memory_gib: Annotated[GiB, Field(gt=0)]


BUDGET_SPECS = (ReserveBudgetSpec, VllmBudgetSpec, GivenBudgetSpec)
BudgetSpec = Annotated[ReserveBudgetSpec | VllmBudgetSpec | GivenBudgetSpec, Field(discriminator="kind")]
WeightDtype = Literal["fp16", "bf16", "fp8", "int8", "int4"]


class KvView(Strict):
    """One way of sizing the cache: a model on a GPU under a budget.

    ``max_model_len`` (default: the model's own limit) marks longer contexts and sets vLLM's
    default prefill budget; ``weight_dtype`` (default: the checkpoint's) sizes the weights.
    """

    label: str | None = None
    model: ModelRef
    gpu: GpuRef
    budget: BudgetSpec
    kv_dtype: KvDtype = "auto"
    tp: TensorParallel = 1
    block_size: Annotated[int, Field(ge=1, le=limits.MAX_BLOCK_SIZE, strict=True)] = 16
    max_model_len: ContextTokens | None = Unset
    weight_dtype: WeightDtype | None = Unset


class KvCacheSection(KvView):
    """The post's memory table, plus optional second views (real accounting, GQA, …)."""

    contexts: Annotated[list[ContextTokens], Field(min_length=1, max_length=limits.MAX_CONTEXTS)]
    highlight: Annotated[list[ContextTokens], Field(max_length=limits.MAX_CONTEXTS)] = []
    compare: Annotated[list[KvView], Field(max_length=limits.MAX_VIEWS)] = []

    @field_validator("contexts")
    @classmethod
    def _increasing(cls, contexts: list[int]) -> list[int]:
        if contexts != sorted(set(contexts)):
            raise ValueError("contexts must be increasing and distinct")
        return contexts

    @model_validator(mode="after")
    def _highlight_in_contexts(self) -> KvCacheSection:
        missing = [c for c in self.highlight if c not in self.contexts]
        if missing:
            raise ValueError(f"highlight {missing} must be among contexts {self.contexts}")
        return self


# ---- batching -------------------------------------------------------------------------------


class UnitStepTimeSpec(Strict):
    kind: Literal["unit"]
    # An hour a step is no GPU's; a larger figure is a typo.
    seconds_per_step: Annotated[PositiveFloat, Field(le=limits.MAX_SECONDS_PER_STEP)]


class RooflineStepTimeSpec(Strict):
    """Peak bandwidth and FLOPs for the model on the card: a lower bound on every step."""

    kind: Literal["roofline"]
    model: str
    gpu: str
    kv_dtype: KvDtype = "auto"
    tp: TensorParallel = 1


class CalibratedStepTimeSpec(Strict):
    """The roofline for the model on the card, with efficiencies and a per-layer kernel cost
    fitted to the device measurement the spec's ``measured:`` key picks (or to `file`, a
    per-operator CSV next to the spec); the fit error is reported with it."""

    kind: Literal["calibrated"]
    model: str
    gpu: str
    kv_dtype: KvDtype = "auto"
    tp: TensorParallel = 1
    file: str | None = None


class MeasuredStepTimeSpec(Strict):
    """Step time fitted to the device measurement the spec's ``measured:`` key picks."""

    kind: Literal["measured"]


StepTimeModel = UnitStepTimeSpec | RooflineStepTimeSpec | CalibratedStepTimeSpec | MeasuredStepTimeSpec
StepTimeSpec = Annotated[StepTimeModel, Field(discriminator="kind")]


def _registered_policy(name: str) -> str:
    """A policy name the registry knows (engine.batching.registry), checked when the spec is
    read, so a policy registered by a plugin or a test is accepted and a typo is not."""
    if policy_registry.find(name) is None:
        choices = [repr(n) for n in policy_registry.names()]
        listed = ", ".join(choices[:-1]) + " or " + choices[-1] if len(choices) > 1 else choices[0]
        raise ValueError(f"must be one of {listed}, got {name!r}")
    return name


PolicyName = Annotated[str, AfterValidator(_registered_policy)]


class PagedSpec(Strict):
    """The paged scheduler's pool, limits and vLLM rules. num_blocks is vLLM's num_gpu_blocks;
    the four rules default to vLLM 0.33.0 as shipped (engine.batching.paged.PagedPolicy)."""

    num_blocks: Annotated[int, Field(ge=1, le=limits.MAX_BLOCKS, strict=True)]
    block_size: Annotated[int, Field(ge=1, le=limits.MAX_BLOCK_SIZE, strict=True)] = 16
    max_num_seqs: Slots | None = None
    max_num_batched_tokens: ContextTokens | None = None
    chunked_prefill: bool = False
    reserve_full_prompt: bool = True  # vLLM's scheduler_reserve_full_isl
    async_scheduling: bool = True
    null_block: bool = True
    allow_empty_prompt: bool = False


class BatchingSection(Strict):
    slots: Slots
    workload: WorkloadSpec
    policies: Annotated[list[PolicyName], Field(min_length=1)] = ["static", "continuous"]
    step_time: StepTimeSpec | None = None
    paged: PagedSpec | None = None
    # Static batching's wait for a partial group, seconds; 0 launches it at once.
    static_max_wait: (
        Annotated[float, Field(ge=0, le=limits.MAX_ARRIVAL_SECONDS, allow_inf_nan=False)] | None
    ) = None

    @model_validator(mode="after")
    def _paged_needs_blocks(self) -> BatchingSection:
        if len(set(self.policies)) != len(self.policies):
            raise ValueError(f"policies {self.policies} name a policy twice")

        for name in self.policies:
            if policy_registry.kind(name).needs_blocks and self.paged is None:
                raise ValueError(f"policy '{name}' needs a 'paged' section with num_blocks")
        return self


# ---- queueing (Day 4) -----------------------------------------------------------------------


class SharedLineSpec(Strict):
    """One shared line feeding c servers, at a fixed arrival rate (the lab's M/M/c table)."""

    arrival_rate: PositiveFloat
    servers: Annotated[list[Servers], Field(min_length=1, max_length=limits.MAX_QUEUE_ROWS)]


class LinesSpec(Strict):
    """One shared line against c separate lines, at the same load per server."""

    servers: Annotated[int, Field(ge=2, le=limits.MAX_SERVERS, strict=True)]
    load: Annotated[float, Field(gt=0, lt=1)]


class QueueingSection(Strict):
    service_ms: PositiveFloat
    requests: Annotated[int, Field(ge=1000, le=limits.MAX_QUEUEING_REQUESTS, strict=True)]
    seed: Annotated[int, Field(ge=0, le=2**63 - 1, strict=True)] = 0
    service: Literal["exponential", "deterministic", "lognormal"] = "exponential"
    service_cv: PositiveFloat | None = None
    utilisations: Annotated[
        list[Annotated[float, Field(gt=0, lt=1)]], Field(min_length=1, max_length=limits.MAX_QUEUE_ROWS)
    ]
    shared: SharedLineSpec | None = None
    lines: LinesSpec


# ---- the day --------------------------------------------------------------------------------


def _known_chart(name: str) -> str:
    """A chart name must be registered (engine.charts); the list of names lives there alone."""
    known = chart_registry.names()
    if name not in known:
        expected = ", ".join(repr(k) for k in known[:-1]) + f" or {known[-1]!r}" if known else "none"
        raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})
    return name


def _registered_platform(name: str) -> str:
    """A platform name the registry knows (engine.platforms), so a typo is refused."""
    return posting.known(name)


PlatformName = Annotated[str, AfterValidator(_registered_platform)]
ChartName = Annotated[str, AfterValidator(_known_chart)]
ChartEntry = Annotated[ChartName | Declared, BeforeValidator(declared.check_shape)]
# A chart by name, registered or declared in the same spec (checked by DaySpec).
ChartRef = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,39}$")]

# One word each, CamelCase for screen readers; LinkedIn wants 3 to 5 at the end of a post.
# A tag may start with a digit (#100DaysOfCode) but not be digits only (#2024 is no hashtag).
Hashtag = Annotated[str, Field(pattern=r"^#?[0-9_]*[A-Za-z][A-Za-z0-9_]*$", max_length=100)]


# One line, bounded: the title is drawn on charts, where a newline overlaps the plot.
def _drawable_title(value: str) -> str:
    """The title is drawn on charts: a line break overlaps the plot, and the chart font has no
    emoji beyond the Basic Multilingual Plane (matplotlib draws an empty box and only warns)."""
    bad = next(
        (
            c
            for c in value
            if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co") or ord(c) > 0xFFFF
        ),
        None,
    )
    if bad is not None:
        raise ValueError(f"must be one line of plain text: U+{ord(bad):04X} cannot be drawn on a chart")
    return value


Title = Annotated[
    str, Field(min_length=1, max_length=limits.MAX_TITLE_CHARS), AfterValidator(_drawable_title)
]


class DaySpec(Strict):
    """A day's metadata; each registered section (engine.sections) adds an optional field of
    its own model under its key, so ``spec.batching`` is there when batching is registered.
    Validate through :func:`day_spec_model`, which builds that full model from the registry."""

    day: DayNumber
    series: Series
    title: Title
    repository: str
    hashtags: Annotated[list[Hashtag], Field(min_length=3, max_length=5)]
    links_back: list[LinkBack] = []
    # Registered chart names, and charts declared here (engine.charts.declared).
    charts: Annotated[list[ChartEntry], Field(max_length=limits.MAX_CHARTS)] = []
    linkedin_image: ChartRef | None = None  # one of charts, drawn again at LinkedIn's portrait size
    measured: str | None = None
    carousel: CarouselSpec | None = None  # a LinkedIn document: engine.render.slides
    given: GivenBlock = {}  # values the person set, posted as "set" (engine.given)
    # The figures or set values the build's summary leads with, by name (default: each
    # section's own headline, a lab's from its ``table:``).
    headline: Annotated[list[GivenName], Field(max_length=8)] = []
    # The platforms the day posts to, the required ones (linkedin, x) among them; left out: only
    # those (engine.platforms.posting). Unset when left out, so an older day's results keep
    # their bytes.
    platforms: Annotated[list[PlatformName], Field(min_length=1)] | None = Unset

    def section(self, key: str) -> Any:
        """The validated model of section ``key``, or None when the spec does not have it."""
        return getattr(self, key, None)

    @property
    def chart_names(self) -> list[str]:
        """Every chart the day draws, by name (a declared chart's name is its file name)."""
        return [declared.entry_name(c) for c in self.charts]

    @property
    def declared_charts(self) -> list[str]:
        return [declared.name_of(c) for c in self.charts if not isinstance(c, str)]

    @field_validator("hashtags")
    @classmethod
    def _distinct_tags(cls, tags: list[str]) -> list[str]:
        """#LLM #LLM #LLM is one hashtag said three times: a typo, never meant."""
        seen = [t.lstrip("#").lower() for t in tags]
        twice = next((t for t, key in zip(tags, seen) if seen.count(key) > 1), None)
        if twice is not None:
            raise ValueError(f"'{twice}' is given twice")
        return tags

    @field_validator("platforms")
    @classmethod
    def _platforms_listed(cls, names: list[str] | None) -> list[str] | None:
        if names is not None:
            posting.check_listed(names)
        return names

    @field_validator("links_back")
    @classmethod
    def _links_point_back(cls, links: list[LinkBack], info: ValidationInfo) -> list[LinkBack]:
        """A link back credits an earlier day: "Day 50's lesson again" on Day 37 is false."""
        day = info.data.get("day")
        for link in links:
            if day is not None and link.day >= day:
                raise ValueError(
                    f"day {link.day} is not before day {day}; a post can only point back to an earlier day"
                )
        return links

    @model_validator(mode="after")
    def _consistent(self) -> DaySpec:
        if self.day > self.series.length:
            raise ValueError(f"day {self.day} is past the series' length {self.series.length}")
        names = self.chart_names
        twice = next((n for n in names if names.count(n) > 1), None)
        if twice is not None:
            raise ValueError(f"chart '{twice}' is listed twice (a declared chart's name is its file name)")
        if self.charts:
            for name in self.declared_charts:
                if name in chart_registry.CHARTS:
                    raise ValueError(f"declared chart '{name}' has the name of a built-in chart: rename it")
            for entry in self.charts:
                if not isinstance(entry, str):
                    continue
                name = entry
                chart = chart_registry.get(name)
                missing = [need for need in chart.needs if self.section(need) is None]
                if missing:
                    raise ValueError(f"chart '{name}' needs a '{missing[0]}' section")
                problem = chart.check(self) if chart.check is not None else None
                if problem:
                    raise ValueError(f"chart '{name}' {problem}")
        if self.linkedin_image is not None and self.linkedin_image not in names:
            raise ValueError(f"linkedin_image '{self.linkedin_image}' must be one of charts")
        if self.carousel is not None:
            self.carousel.check_sections(self)
        return self


_MODEL: tuple[int, type[DaySpec]] | None = None


def day_spec_model() -> type[DaySpec]:
    """DaySpec with one optional field per registered section, rebuilt when the registry changes."""
    global _MODEL
    registered = sections.sections()
    if _MODEL is None or _MODEL[0] != sections.SECTIONS.generation:
        fields: dict[str, Any] = {s.key: (s.model | None, None) for s in registered}
        model = create_model("DaySpec", __base__=DaySpec, **fields)
        _MODEL = (sections.SECTIONS.generation, model)
    return _MODEL[1]


# ---- loading --------------------------------------------------------------------------------


def load_spec(path: str | Path) -> DaySpec:
    """Read and validate a day's YAML; every failure is a UserError naming file and field."""
    path = Path(path)
    return spec_of(yamlfile.read(path, limits.MAX_SPEC_BYTES, "spec"), path)


def spec_of(data: Any, path: Path) -> DaySpec:
    """The day spec in ``data``, as parsed from the file at ``path`` (named in every error)."""
    if not isinstance(data, dict):
        raise UserError("the spec must be a mapping of fields", file=path)
    spec = validate(day_spec_model(), data, file=path, context={"declared_charts": declared.names_in(data)})
    named = re.fullmatch(r"day0*(\d+)", path.stem)
    if named and int(named.group(1)) != spec.day:  # day37.yaml copied to day38.yaml, unchanged
        raise UserError(
            f"the file is named for day {int(named.group(1))} but says day {spec.day}", file=path, field="day"
        )
    return spec
