"""The formats beyond text: a LinkedIn carousel (PDF) and an animated GIF, drawn and checked.

The pipeline calls two functions here and nothing else: ``draw_carousel`` (slide words from the
day's template, engine.render.slides; pages drawn by engine.charts.carousel) and ``check_media`` (every
such file against its platform's file limits, engine.platforms.media). The GIF itself is a chart
(``slot_timeline_animation`` in engine.charts), drawn with the others.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.charts import carousel, drawcache
from engine.errors import UserError
from engine.limits import sha256_limited
from engine.platforms import media, rules
from engine.platforms.rules import ChecksFailed
from engine.render import slides
from engine.render.context import day_folder_name, template_context

if TYPE_CHECKING:
    from engine.spec import DaySpec


def draw_carousel(
    spec: DaySpec,
    results: dict[str, Any],
    folder: Path,
    templates_root: Path,
    skipped: Collection[str] = (),
) -> dict[str, Any] | None:
    """The LinkedIn carousel: slide words from the day's template, pages drawn to one PDF. A
    slide whose chart is in ``skipped`` (one the results cannot draw yet:
    pipeline.unavailable_charts) is left out of the deck, as the chart is left out of the images;
    a deck left with no slide is not drawn (None)."""
    assert spec.carousel is not None
    seen = template_context(results)
    texts = slides.render_text(spec.carousel, seen, templates_root, day_folder_name(spec.day))
    kept = [(slide, text) for slide, text in zip(spec.carousel.slides, texts) if slide.chart not in skipped]
    if not kept:
        return None
    deck = spec.carousel.model_copy(update={"slides": [slide for slide, _ in kept]})
    try:
        return carousel.build(deck, [text for _, text in kept], results, folder)
    except carousel.Undrawable as err:
        shown = ", ".join(f"{c} (U+{ord(c):04X})" for c in err.characters)
        in_spec = err.section in carousel.FRAME_FIELDS  # the spec's own words (the build names it)
        raise UserError(
            f"{'it' if in_spec else f'section {err.section!r}'} holds {shown}, which the slides' "
            f"font ({carousel.RC['font.family']}) has no glyph for: it would print as an empty box",
            file=None if in_spec else f"templates/{slides.template_name(day_folder_name(spec.day))}",
            field=err.section if in_spec else None,
        ) from None


def check_media(folder: Path, results: dict[str, Any]) -> dict[str, Any]:
    """The carousel PDF and any GIF against their platforms' file limits; ChecksFailed names the file."""
    checks: dict[str, Any] = {}
    violations: list[Any] = []
    files = [c["file"] for c in results.get("charts", []) if c["file"].endswith(".gif")]
    if results.get("carousel"):
        files.append(results["carousel"]["file"])
    for name in files:
        path = folder / name
        found = (
            gif_counts(path) if name.endswith(".gif") else media.document_counts(path, media.page_sizes(path))
        )
        checks[name] = [vars(c) for c in found[0]]
        violations += found[1]
    if violations:
        raise ChecksFailed([str(v) for v in violations])
    return checks


def _kept_counts(entry: drawcache.Entry) -> tuple[list[Any], list[Any]]:
    """The counts and violations a drawing-cache entry holds (TypeError, ValueError: a note of
    another shape)."""
    counts, violations = entry.note
    return [rules.Count(**c) for c in counts], [rules.Violation(**v) for v in violations]


def gif_counts(path: Path) -> tuple[list[Any], list[Any]]:
    """media.gif_counts, read once per GIF: Pillow's reading of the same bytes is the same, so it
    is kept in the drawing cache under the file's digest and the code that reads it, and a build
    whose GIF came from the cache imports no Pillow to check it again."""
    # The engine's own modules, not an input: read as they are.
    code = [Path(module.__file__ or "").read_bytes().decode("utf-8") for module in (media, rules)]
    limits = dataclasses.asdict(media.X_GIF)  # the limits in force, which a caller may change
    digest = sha256_limited(path, media.MAX_MEDIA_BYTES, "image")
    key = drawcache.key("gif-counts", digest, code, limits)
    kept = drawcache.load_as(key, _kept_counts)
    if kept is not None:
        return kept
    found = media.gif_counts(path, media.X_GIF)
    if key is not None:
        drawcache.save(key, drawcache.Entry({}, [[vars(c) for c in found[0]], [vars(v) for v in found[1]]]))
    return found
