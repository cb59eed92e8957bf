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
    def __init__(self, log: list[tuple[str, float, float]], name: str) -> None:
        self.log, self.name = log, name

    def set_size(self, size: float, dpi: float) -> None:
        self.log.append((self.name, size, dpi))

    def _render_glyph(self, index: int) -> str:
        return f"{self.name}{index}"


def test_a_string_sets_each_fonts_size_once_a_run() -> None:
    """A hand-worked run: A at 10 pt for two glyphs, a fallback B, A again, then A at 12 pt."""
    log: list[tuple[str, float, float]] = []
    a, b = _Font(log, "A"), _Font(log, "B")
    glyphs = [(a, 10.0, 1), (a, 10.0, 2), (b, 10.0, 3), (a, 10.0, 4), (a, 12.0, 5), (a, 12.0, 6)]
    drawn = []
    for font, size, index in canvas.sized_once(glyphs):
        font.set_size(size, 72.0)
        drawn.append(font._render_glyph(index))
    assert log == [("A", 10.0, 72.0), ("B", 10.0, 72.0), ("A", 12.0, 72.0)]
    assert drawn == ["A1", "A2", "B3", "A4", "A5", "A6"]  # every other call reaches its font
