"""The Agg canvas every figure here draws on: matplotlib's own, whose text sets each string's
font size once instead of once a glyph, for the same pixels.

Why: matplotlib 3.11's Agg renderer draws a string glyph by glyph and sets the font's size before
every glyph. FreeType treats each size request as a new size, and for a hinted TrueType font
such as DejaVu Sans that reruns the font's hinting set-up program before the next glyph loads:
about half of each glyph's cost, and text is a fifth of a chart's drawing time. Asking once for
the run of glyphs that share a font and size gives FreeType the same size, so the same hinted
outlines and the same bitmaps (tests/test_canvas.py holds the pixels to matplotlib's own
renderer's). matplotlib's development branch has reworked this loop since, caching hinted
outlines among other things (matplotlib/matplotlib#32120, in no release yet); with a release
that no longer sets the size per glyph, this is a pass-through.

How: the renderer hands matplotlib's glyph loop each font through a view whose ``set_size``
reaches FreeType only when the size differs from the one it last set for this string. Nothing
else of matplotlib's is replaced: the loop, its positions and its blending are its own.

matplotlib is imported on first use (canvas_class), not with this module: checking a spec's
chart names must not import it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure


class SizedOnce:
    """One font as one string's glyph loop sees it: a size request that repeats the last one
    this view made is dropped, every other call goes to the font."""

    def __init__(self, font: Any) -> None:
        self.font = font
        self.size: tuple[float, float] | None = None

    def set_size(self, size: float, dpi: float) -> None:
        if self.size != (size, dpi):
            self.font.set_size(size, dpi)
            self.size = (size, dpi)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.font, name)


def sized_once(glyphs: Iterable[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
    """The glyphs of one string (font first in each tuple), each font behind one SizedOnce view
    for the whole string: a fallback font keeps its own."""
    views: dict[int, SizedOnce] = {}
    for font, *rest in glyphs:
        view = views.get(id(font))
        if view is None:
            view = views[id(font)] = SizedOnce(font)
        yield (view, *rest)


@functools.cache
def canvas_class() -> type:
    """FigureCanvasAgg whose renderer draws text through sized_once (made on first use)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg

    class Renderer(RendererAgg):
        def _draw_text_glyphs_and_boxes(
            self, gc: Any, x: Any, y: Any, angle: Any, glyphs: Any, boxes: Any
        ) -> Any:
            return super()._draw_text_glyphs_and_boxes(gc, x, y, angle, sized_once(glyphs), boxes)

    class Canvas(FigureCanvasAgg):
        def get_renderer(self) -> Any:
            """FigureCanvasAgg's: one renderer, made again when the size or dpi changes."""
            width, height = self.get_width_height(physical=True)
            key = (width, height, self.figure.dpi)
            if self._lastKey != key:
                self.renderer = Renderer(width, height, self.figure.dpi)
                self._lastKey = key
            return self.renderer

    return Canvas


def attach(fig: Figure) -> Any:
    """Put ``fig`` on a new Canvas (it draws there from now on) and return the canvas."""
    return canvas_class()(fig)
