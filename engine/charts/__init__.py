"""Charts: a registry of named chart functions and one ``draw`` that writes PNG + alt text.

A chart function turns the results dict into a figure at an exact platform size and an alt
text generated from the same numbers, so the picture and its description cannot drift apart.
``draw`` saves both beside the drafts (``<name>.png``, ``<name>.alt.txt``) and checks the alt
text against the platform's limit before anything is posted.

The chart registry imports every module of this package on its first look-up, so each
registers its charts where it is defined; a chart module imports matplotlib inside the functions
that draw, so checking a spec's chart names stays light.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from engine import ansi
from engine.charts import drawcache, reads, style
from engine.charts.declared import resolve
from engine.charts.registry import CHARTS, Chart, register_chart
from engine.outdir import atomic
from engine.platforms import registry as platform_registry

__all__ = ["CHARTS", "Chart", "ChartFile", "draw", "figure", "register_chart"]


@dataclass(frozen=True)
class ChartFile:
    """A drawn chart on disk, as the pipeline records it in results['charts']."""

    name: str
    path: Path
    alt_text: str
    width: int
    height: int
    platform: str  # 'x' or 'linkedin'

    def to_dict(self) -> dict[str, Any]:
        """The results.json entry; 'file' is relative to the day's folder."""
        return {
            "name": self.name,
            "file": self.path.name,
            "alt_text": self.alt_text,
            "width": self.width,
            "height": self.height,
            "platform": self.platform,
        }


def draw(name: str, results: dict[str, Any], out_dir: Path, size: str | None = None) -> ChartFile:
    """Draw chart `name` into out_dir/<name>.png and out_dir/<name>.alt.txt.

    `size` (a style.SIZES key) overrides the chart's default; the file is then
    ``<name>-<size>.png`` so both renders can sit side by side.
    """
    try:
        chart = resolve(name, results)
    except KeyError as err:
        raise ValueError(err.args[0]) from None
    if chart.animated:
        return _animate(chart, results, Path(out_dir))
    picture = still(name, size or chart.size, results)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / picture.file
    atomic.write_bytes(path, picture.png, what="chart", durable=False)
    atomic.write_text(path.with_suffix(".alt.txt"), picture.alt + "\n", what="alt text", durable=False)
    return ChartFile(name, path, picture.alt, picture.size.width, picture.size.height, picture.size.platform)


@dataclass(frozen=True)
class Still:
    """A still chart drawn at one size: the PNG's bytes, the file they go in, and the alt text."""

    file: str  # <name>.png at the chart's own size, <name>-<size>.png at another
    png: bytes
    alt: str
    size: style.Size


def still(name: str, size: str, results: dict[str, Any]) -> Still:
    """Chart ``name`` at size key ``size`` (a style.SIZES key), as a post and a carousel slide
    show it: drawn before, by this code, from the same numbers, the bytes come from the
    drawing cache. The numbers are those of results the function read (reads.part), so a build
    whose other sections or measurement differ does not draw this chart again."""
    if size not in style.SIZES:
        raise ValueError(f"unknown size '{size}'; known: {', '.join(style.SIZES)}")
    file = f"{name}.png" if size == resolve(name, results).size else f"{name}-{size}.png"
    function = drawing_id(name, size, results)
    key = chart_key("chart", function, results)
    kept = drawcache.load_as(key, lambda entry: _kept_still(entry, file))
    if kept is not None:
        _check_alt(name, kept.alt)  # as a drawn one is: a kept alt text is held to the same rule
        return kept
    with style.theme():
        fig, alt = figure(name, size, results)
        drawn = style.size_of(fig)
        _check_alt(name, alt)
        data = style.png_bytes(fig)
    key = chart_key("chart", function, results)  # what it read is known now
    if key is not None:
        drawcache.save(key, drawcache.Entry({file: data}, {"alt": alt, "size": drawn.key}))
    return Still(file, data, alt, drawn)


def _kept_still(entry: drawcache.Entry, file: str) -> Still:
    """The still a drawing-cache entry holds (KeyError, TypeError: not one this code stored)."""
    alt = entry.note["alt"]
    if not isinstance(alt, str):
        raise TypeError("alt")
    return Still(file, entry.parts[file], alt, style.SIZES[entry.note["size"]])


def figure(name: str, size: str, results: dict[str, Any]) -> tuple[Any, str]:
    """Still chart ``name``'s figure at size key ``size`` and its alt text, drawn (inside
    style.theme) from a view of ``results`` that notes what it read: the drawing cache keys this
    drawing on those values (chart_key), and a carousel page on what its slide's chart read."""
    seen = reads.Reads(results)
    fig, alt = resolve(name, results).draw(seen, size=style.SIZES[size])
    function = drawing_id(name, size, results)
    if function is not None:
        reads.noted(function, seen)
    return fig, literal_alt(alt)


def literal_alt(alt: str) -> str:
    """Alt text as a reader's screen reader gets it: the text a terminal would show of it, so an
    escape sequence in a lab's label (a colour, a title change) or a control character is not
    posted (engine.ansi drops every escape and control character)."""
    return ansi.plain(alt) if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in alt) else alt


def chart_key(kind: str, function: str | None, results: dict[str, Any], *more: Any) -> str | None:
    """The drawing cache's key for ``function``'s drawing of ``kind`` from ``results``: what it
    read of them (reads.part), what a chart draws with that results do not hold (the registered
    policies' colours in the charts' order, the alt-text limit it fits its description to), and
    ``more``; None for a function the cache cannot name."""
    if function is None:
        return None
    context = [policies(), platform_registry.strictest_alt_limit()]
    return drawcache.key(kind, function, reads.part(function, results), context, *more)


def policies() -> list[tuple[str, str]]:
    """Every registered batching policy and its colour, in the order every chart draws them."""
    return [(name, style.policy_colour(name)) for name in style.policy_order()]


def drawing_id(name: str, size: str, results: dict[str, Any]) -> str | None:
    """Which drawing: the chart, the size key it is drawn at, and the function that draws it
    (what reads.part keeps what it read under); None for a function not defined in
    engine/charts/ (one swapped in at run time), whose code is not in the cache's keys."""
    function = resolve(name, results).draw
    module = getattr(function, "__module__", "") or ""
    if not module.startswith("engine.charts."):
        return None
    return f"{name}|{size}|{module}.{getattr(function, '__qualname__', '')}"


def _animate(chart: Chart, results: dict[str, Any], out_dir: Path) -> ChartFile:
    """An animation writes its own file (drawn inside style.theme, and only where the drawing
    cache does not have it); its alt text sits beside it like a chart's."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path, alt, size = cast(Any, chart.draw)(results, out_dir)
    alt = literal_alt(alt)
    _check_alt(chart.name, alt)
    atomic.write_text(out_dir / f"{path.stem}.alt.txt", alt + "\n", what="alt text", durable=False)
    return ChartFile(chart.name, path, alt, size.width, size.height, size.platform)


def _check_alt(name: str, alt: str) -> None:
    """Alt text is generated, so a failure here is a bug in the chart, not the user's spec."""
    limit = platform_registry.strictest_alt_limit()  # one text that fits every platform
    if not alt.strip():
        raise ValueError(f"chart '{name}' produced no alt text")
    if len(alt) > limit:
        raise ValueError(f"chart '{name}' alt text is {len(alt)} characters, over {limit}")
