"""A LinkedIn carousel's slides: what the spec may ask for, and the words on each slide.

Why a separate template: a carousel is read one slide at a time, a line or two each, so its
words are written for that (templates/dayNN/carousel/slides.md.j2, one ``## name`` section per
slide) rather than cut out of the post. The template goes through the drafts' own Jinja
environment, number filters and no-typed-numbers rule, so a slide can no more carry a typed
figure than a post can. Drawing happens in engine.charts.carousel; this module stays free of
matplotlib so that loading a spec never imports it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from engine.charts import registry
from engine.errors import UserError
from engine.render import posts
from engine.validation import not_one_line

# Our own limits, well inside LinkedIn's (300 pages, see engine.platforms.media): a carousel is
# swiped on a phone, and a slide holds what a person reads in a few seconds.
MAX_SLIDES = 20
MAX_HEADLINE = 120  # characters on a slide's first line
MAX_BODY = 360  # characters on the lines under it
TEMPLATE = "carousel/slides.md.j2"  # under templates/dayNN/; not a draft, so not globbed as one
_SECTION = re.compile(r"^##\s+(\S+)\s*$")
_NAME = r"^[a-z][a-z0-9_]*$"


class Slide(BaseModel):
    """One page: the cover, a chart with a line of text, or the closing slide.

    YAML shorthand: ``cover`` and ``closing`` as bare words, ``{chart: kv_fit}`` for a chart
    slide. ``text`` names the template section with its words (default: the chart's name, or
    'cover' / 'closing'), so two slides can show one chart with different words.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["cover", "chart", "closing"]
    chart: str | None = None
    text: Annotated[str, Field(pattern=_NAME, max_length=40)] | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"kind": value}
        if isinstance(value, dict) and "chart" in value and "kind" not in value:
            return {"kind": "chart", **value}
        return value

    @model_validator(mode="after")
    def _chart_known(self, info: ValidationInfo) -> Slide:
        if self.kind == "chart":
            if self.chart is None:
                raise ValueError("a chart slide needs 'chart'")
            # The charts the day's spec declares are known too (engine.spec passes their names).
            known = known_charts() | set((info.context or {}).get("declared_charts", ()))
            if self.chart not in known:
                raise ValueError(f"unknown chart {self.chart!r}; known: {', '.join(sorted(known))}")
        elif self.chart is not None:
            raise ValueError(f"a '{self.kind}' slide has no chart")
        return self

    @property
    def section(self) -> str:
        """The template section holding this slide's words."""
        return self.text or (self.chart if self.kind == "chart" else self.kind) or self.kind


class CarouselSpec(BaseModel):
    """``carousel:`` in a day's spec: the slides in order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    slides: Annotated[list[Slide], Field(min_length=1, max_length=MAX_SLIDES)]

    def check_sections(self, spec: Any) -> None:
        """Each chart slide's data must be in the spec, as for the spec's own charts."""
        declared = set(spec.declared_charts)
        for i, slide in enumerate(self.slides):
            in_registry = slide.chart is not None and slide.chart not in declared
            needs = registry.get(slide.chart).needs if in_registry and slide.chart else ()
            missing = [need for need in needs if getattr(spec, need, None) is None]
            if missing:
                raise ValueError(
                    f"carousel slide {i + 1}: chart '{slide.chart}' needs a '{missing[0]}' section"
                )


def known_charts() -> set[str]:
    """Chart names a slide may show: every registered chart that draws one still figure.

    Read from the chart registry at validation time (not import time: engine.spec imports
    this module), so a chart registered anywhere is usable on a slide with no edit here.
    """
    return {name for name in registry.names() if not registry.get(name).animated}


# ---- the words ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SlideText:
    """A slide's words: the headline (first line) and the lines under it."""

    headline: str
    body: str


def template_name(day_folder: str) -> str:
    return f"{day_folder}/{TEMPLATE}"


def render_text(
    carousel: CarouselSpec, context: dict[str, Any], templates_root: Path, day_folder: str
) -> list[SlideText]:
    """Render the day's slide template and cut it into one SlideText per slide, in order."""
    name = template_name(day_folder)
    shown = f"templates/{name}"
    if not (templates_root / name).is_file():
        raise UserError("the spec asks for a carousel: write its slide text here (see README)", file=shown)
    posts.check_no_typed_numbers(templates_root, [name])
    text = posts.render(posts.environment(templates_root), name, context)
    sections = split_sections(text, shown)
    used = {slide.section for slide in carousel.slides}
    unused = sorted(set(sections) - used)
    if unused:
        raise UserError(f"section '{unused[0]}' is not a slide in the spec's carousel", file=shown)
    found = []
    for slide in carousel.slides:
        if slide.section not in sections:
            raise UserError(f"no section '## {slide.section}' for slide '{slide.section}'", file=shown)
        found.append(_slide_text(sections[slide.section], slide.section, shown))
    return found


def split_sections(text: str, shown: str) -> dict[str, list[str]]:
    """'## name' lines open sections; the non-empty lines under each are its words."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        match = _SECTION.match(line)
        if match:
            if match.group(1) in sections:
                raise UserError(f"section '{match.group(1)}' is given twice", file=shown)
            current = sections.setdefault(match.group(1), [])
        elif line.strip():
            if current is None:
                raise UserError("text before the first '## section' line", file=shown)
            current.append(line.strip())
    return sections


def _slide_text(lines: list[str], section: str, shown: str) -> SlideText:
    if not lines:
        raise UserError(f"section '{section}' has no text", file=shown)
    headline, body = lines[0], " ".join(lines[1:])
    if len(headline) > MAX_HEADLINE:
        raise UserError(
            f"section '{section}': first line is {len(headline)} characters, over {MAX_HEADLINE}", file=shown
        )
    if len(body) > MAX_BODY:
        raise UserError(f"section '{section}': text is {len(body)} characters, over {MAX_BODY}", file=shown)
    for words in (headline, body):  # a terminal escape, a bell or a direction override is no word
        held = not_one_line(words)
        if held is not None:
            raise UserError(f"section '{section}' holds {held}: a slide's words are plain text", file=shown)
    return SlideText(headline, body)
