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

from engine.charts import memo, style
from engine.charts.declared import resolve
from engine.charts.registry import CHARTS, Chart, register_chart
from engine.outdir import atomic

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
    key = size or chart.size
    if key not in style.SIZES:
        raise ValueError(f"unknown size '{key}'; known: {', '.join(style.SIZES)}")
    stem = name if key == chart.size else f"{name}-{key}"
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{stem}.png"
    # Drawn before in this process from the same numbers by the same function: the same bytes.
    # The function's identity is in the key, so a replaced chart function never gets old bytes;
    # the numbers are those of results the function read (memo.read_key), so a build whose other
    # sections or measurement differ does not draw this chart again.
    function = drawing_id(name, key, results)
    digest = memo.read_key("chart", function, results)
    if digest is not None and memo.recall(digest, out_dir):
        alt, drawn = memo.noted(digest)
        return ChartFile(name, path, alt, drawn.width, drawn.height, drawn.platform)
    with style.theme():
        fig, alt = figure(name, key, results)
        drawn = style.size_of(fig)
        _check_alt(name, alt)
        style.save_png(fig, path)
    atomic.write_text(out_dir / f"{stem}.alt.txt", alt + "\n", what="alt text", durable=False)
    digest = memo.read_key("chart", function, results)
    if digest is not None:
        memo.remember(digest, out_dir, [path.name, f"{stem}.alt.txt"])
        memo.note(digest, (alt, drawn))
    return ChartFile(name, path, alt, drawn.width, drawn.height, drawn.platform)


def figure(name: str, size: str, results: dict[str, Any]) -> tuple[Any, str]:
    """Still chart ``name``'s figure at size key ``size`` and its alt text, drawn (inside
    style.theme) from a view of ``results`` that notes what it read: the memory of drawings keys
    this drawing on those values (memo.read_key), and a carousel on what its slides' charts read."""
    reads = memo.Reads(results)
    fig, alt = resolve(name, results).draw(reads, size=style.SIZES[size])
    memo.noted_reads(drawing_id(name, size, results), reads)
    return fig, alt


def drawing_id(name: str, size: str, results: dict[str, Any]) -> str:
    """Which drawing: the chart, the size key it is drawn at, and the function that draws it
    (what memo.read_part keeps what it read under)."""
    return f"{name}|{size}|{_identity(resolve(name, results).draw)}"


def _identity(function: Any) -> str:
    """Which function drew: its name and, for one swapped in at run time, its object (a
    declared chart's function is made anew for each build: its name holds its declaration)."""
    name = f"{getattr(function, '__module__', '')}.{getattr(function, '__qualname__', '')}"
    if name.startswith("engine.charts.declared.declared."):
        return name
    return f"{name}@{id(function)}"


def _animate(chart: Chart, results: dict[str, Any], out_dir: Path) -> ChartFile:
    """An animation writes its own file; its alt text sits beside it like a chart's."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with style.theme():
        path, alt, size = cast(Any, chart.draw)(results, out_dir)
    _check_alt(chart.name, alt)
    atomic.write_text(out_dir / f"{path.stem}.alt.txt", alt + "\n", what="alt text", durable=False)
    return ChartFile(chart.name, path, alt, size.width, size.height, size.platform)


def _check_alt(name: str, alt: str) -> None:
    """Alt text is generated, so a failure here is a bug in the chart, not the user's spec."""
    from engine.platforms import registry

    limit = registry.strictest_alt_limit()  # one text that fits every platform
    if not alt.strip():
        raise ValueError(f"chart '{name}' produced no alt text")
    if len(alt) > limit:
        raise ValueError(f"chart '{name}' alt text is {len(alt)} characters, over {limit}")
