"""A day's spec: the YAML file a person writes, validated into typed models.

Why pydantic: every mistake must come back as one line naming the file and the field
(``days/day37.yaml: batching.slots: must be at least 1, got 0``; engine.validation writes it),
unknown keys must fail (a typo silently ignored is a wrong post), and the models double as
documentation of what a day can ask for. Sections are optional and registered
(engine.sections): a day runs the experiments whose sections it has. This module holds the day's
own fields; each section's model is where its section is registered (engine/experiments/).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path
from typing import Annotated, Any

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
from engine.charts import declared
from engine.charts import registry as chart_registry
from engine.charts.declared import Declared
from engine.errors import UserError
from engine.given import GivenBlock, GivenName
from engine.platforms import posting
from engine.render.slides import CarouselSpec
from engine.validation import GiB, OneLine, PositiveFloat, PositiveInt, Strict, Unset, validate

__all__ = ["DaySpec", "GiB", "PositiveFloat", "PositiveInt", "day_spec_model", "load_spec"]

# A day of the series: within its stated limit (engine/limits.py).
DayNumber = Annotated[int, Field(ge=1, le=limits.MAX_SERIES_DAYS, strict=True)]


# ---- metadata -------------------------------------------------------------------------------


class Series(Strict):
    name: OneLine  # on every post ("Day 37 of 60 days of …"): one line, or it splits a thread
    length: DayNumber


class LinkBack(Strict):
    """An earlier day this post refers to; its spec, when given, supplies a figure to cite."""

    day: DayNumber
    claim: OneLine
    spec: str | None = None  # path relative to this spec's folder, e.g. day04.yaml


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
    repository: OneLine
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
