"""engine.charts.canvas draws what matplotlib's own Agg canvas draws, pixel for pixel, and asks
FreeType for each string's font size once a run instead of once a glyph."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from engine.charts import canvas, style


def _page(fig: Any) -> None:
    """Text of every kind the renderer's glyph loop takes: sizes, weights, rotations, mathtext
    (glyphs and rule boxes), colours, unantialiased text, a multi-line block and a glyph the
    font lacks."""
    fig.patch.set_facecolor("white")
    fig.text(0.02, 0.95, "Continuous batching: step 1,234, 56 of 200 requests done", fontsize=20)
    fig.text(0.02, 0.88, "Static batching idles (gjpqy)", fontsize=11, fontweight="bold", color="#0072B2")
    fig.text(0.02, 0.80, "tiny 7 pt · 99.9 % busy", fontsize=7)
    fig.text(0.02, 0.70, "Day 37", fontsize=64, fontweight="bold")
    fig.text(0.60, 0.30, "rotated thirty", fontsize=14, rotation=30)
    fig.text(0.90, 0.20, "ninety degrees", fontsize=12, rotation=90)
    fig.text(0.02, 0.55, r"$\frac{KV}{2} = \sqrt{x^2 + y_i}$", fontsize=18)
    fig.text(0.02, 0.45, "no antialiasing here", fontsize=13, antialiased=False)
    fig.text(0.02, 0.35, "a block\nof three\nlines", fontsize=12, linespacing=1.4)
    fig.text(0.02, 0.20, "missing: \u4e2d", fontsize=12)
    ax = fig.add_axes((0.55, 0.5, 0.4, 0.35))
    ax.plot([0, 1, 2], [3, 1, 2])
    ax.set_title("axes title", fontsize=12)
    ax.set_xlabel("decode step")


@pytest.mark.parametrize("dpi", [100.0, 150.0])
def test_the_canvas_draws_matplotlibs_pixels(dpi: float) -> None:
    import warnings

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    pictures = []
    for attach in (FigureCanvasAgg, canvas.attach):
        with style.theme(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the glyph DejaVu lacks
            fig = Figure(figsize=(8, 4.5), dpi=dpi)
            attach(fig)
            _page(fig)
            fig.canvas.draw()
            pictures.append(np.array(fig.canvas.buffer_rgba()))
    assert isinstance(fig.canvas, canvas.canvas_class())
    plain, ours = pictures
    assert (plain != 255).any()  # text was drawn
    assert np.array_equal(plain, ours)


class _Font:
    """A FreeType face as the glyph loop sees it: a size, set by set_size, that also sets the
    sizes of its fallback fonts (as FT2Font.set_size does), and glyphs drawn at the size set."""

    def __init__(self, log: list[tuple[str, float]], name: str, fallbacks: tuple[_Font, ...] = ()) -> None:
        self.log, self.name, self.fallbacks = log, name, fallbacks
        self.size: float | None = None

    def set_size(self, size: float, dpi: float) -> None:
        self.log.append((self.name, size))
        for font in (self, *self.fallbacks):
            font.size = size

    def _render_glyph(self, index: int) -> tuple[str, int, float | None]:
        return (self.name, index, self.size)


def _draw(glyphs: list[tuple[_Font, float, int]]) -> list[tuple[str, int, float | None]]:
    """What matplotlib's loop does with each glyph: set the size, then render."""
    drawn = []
    for font, size, index in canvas.sized_once(glyphs):
        font.set_size(size, 72.0)
        drawn.append(font._render_glyph(index))
    return drawn


def test_a_run_of_glyphs_in_one_font_and_size_sets_the_size_once() -> None:
    """Hand-worked: A at 10 pt for two glyphs, B, A again, then A at 12 pt for two."""
    log: list[tuple[str, float]] = []
    a, b = _Font(log, "A"), _Font(log, "B")
    glyphs = [(a, 10.0, 1), (a, 10.0, 2), (b, 10.0, 3), (a, 10.0, 4), (a, 12.0, 5), (a, 12.0, 6)]
    assert _draw(glyphs) == [
        ("A", 1, 10.0),
        ("A", 2, 10.0),
        ("B", 3, 10.0),
        ("A", 4, 10.0),
        ("A", 5, 12.0),
        ("A", 6, 12.0),
    ]
    assert log == [("A", 10.0), ("B", 10.0), ("A", 10.0), ("A", 12.0)]


def test_a_fallback_font_resized_through_its_parent_is_sized_again() -> None:
    """Sizing a font sizes its fallbacks: a string alternating between a font at 10 pt and its
    own fallback at 14 pt draws every glyph at its own size."""
    log: list[tuple[str, float]] = []
    fallback = _Font(log, "B")
    main = _Font(log, "A", fallbacks=(fallback,))
    glyphs = [(main, 10.0, 1), (fallback, 14.0, 2), (main, 10.0, 3), (fallback, 14.0, 4), (fallback, 14.0, 5)]
    assert [size for _, _, size in _draw(glyphs)] == [10.0, 14.0, 10.0, 14.0, 14.0]
    assert len(log) == 4  # the last glyph's request, a repeat, was dropped
