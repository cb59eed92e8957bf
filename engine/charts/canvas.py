"""The Agg canvas every figure here draws on: matplotlib's own, whose text sets the font size
once a run of glyphs in one font and size instead of once a glyph, for the same pixels.

Why: matplotlib 3.11's Agg renderer draws a string glyph by glyph and sets the font's size before
every glyph. FreeType treats each size request as a new size, and for a hinted TrueType font
such as DejaVu Sans that reruns the font's hinting set-up program before the next glyph loads:
about half of each glyph's cost, and text is a fifth of a chart's drawing time. Asking once for
the run of glyphs that share a font and size gives FreeType the same size, so the same hinted
outlines and the same bitmaps (tests/test_canvas.py holds the pixels to matplotlib's own
renderer's). matplotlib's development branch has reworked this loop since, caching hinted
outlines among other things (matplotlib/matplotlib#32120, in no release yet); with a release
that no longer sets the size per glyph, this is a pass-through.

How: the renderer hands matplotlib's glyph loop, for each glyph whose font and size are the glyph
before it's, a view of the font whose ``set_size`` does nothing. Nothing else of matplotlib's is
replaced: the loop, its positions and its blending are its own.

matplotlib is imported on first use (canvas_class), not with this module: checking a spec's
chart names must not import it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure


class AlreadySized:
    """A font whose size is already the one the glyph loop is about to ask for: the request is
    dropped, every other call goes to the font."""

    def __init__(self, font: Any) -> None:
        self.font = font

    def set_size(self, size: float, dpi: float) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self.font, name)


def sized_once(glyphs: Iterable[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
    """The glyphs of one string (font and size first in each tuple), a glyph whose font and size
    are those of the glyph before it behind AlreadySized. Only the glyph just before counts:
    setting a font's size also sets its fallback fonts', so after any other font was sized the
    next one is sized again."""
    previous: tuple[Any, Any] | None = None
    for font, size, *rest in glyphs:
        same = previous is not None and previous[0] is font and previous[1] == size
        yield (AlreadySized(font) if same else font, size, *rest)
        previous = (font, size)


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
