"""How every chart looks: platform sizes, a colour-blind-safe palette, phone-sized fonts, and a
save that gives the same bytes for the same numbers.

Why one width in inches: every figure is 8 inches wide and its dpi is ``width_px / 8``. Font
sizes in points then scale with the image, so a 14 pt label is the same share of the picture on
a 1600 px X image as on a 1080 px LinkedIn one, and both survive being shrunk to a phone's
~375 px column. The pixel size is exact because figsize × dpi is computed from the pixels and
the PNG is saved with that same dpi and no ``bbox_inches='tight'``.

Why Okabe–Ito: the eight colours stay distinct for the common colour-vision deficiencies, and
greys carry "nothing here" (idle slots, unused memory) without competing with them.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from cycler import cycler  # matplotlib's own dependency, a small module that does not import it

# One spelling of a figure on every surface: the posts' own formatters (charts use style.pct).
from engine import numbers
from engine.batching import registry
from engine.charts import png
from engine.numbers import gib_short as gib  # noqa: F401  (style.gib: a chart label in GiB)
from engine.numbers import pct as pct
from engine.numbers import thousands as thousands
from engine.outdir import atomic

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.text import Text

# matplotlib (about a second of imports) is imported by the functions that draw, never at module
# level: the chart modules register their charts by importing this one, and checking a spec's
# chart names must not pay for a plotting library it does not use.

WIDTH_IN = 8.0


@dataclass(frozen=True)
class Size:
    """A platform image size in pixels."""

    key: str
    width: int
    height: int
    platform: str  # 'x' or 'linkedin'

    @property
    def dpi(self) -> float:
        return self.width / WIDTH_IN

    @property
    def portrait(self) -> bool:
        return self.height > self.width


SIZES: dict[str, Size] = {
    "x": Size("x", 1600, 900, "x"),  # 16:9, X's in-stream size
    "linkedin": Size("linkedin", 1200, 627, "linkedin"),  # 1.91:1 landscape
    "linkedin_portrait": Size("linkedin_portrait", 1080, 1350, "linkedin"),  # 4:5
}

# Okabe & Ito (2008), "Color Universal Design".
OKABE_ITO: dict[str, str] = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky_blue": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
}
GREY = "#BBBBBB"  # "nothing here": unused memory, idle slot-steps
LIGHT_GREY = "#E8E8E8"
INK = "#222222"  # text
MUTED = "#555555"  # secondary text (source line, axis labels)

# One colour per meaning, shared by every chart so a policy looks the same everywhere. A batching
# policy's colour and its place in every chart's order come from its registration
# (engine.batching.registry): a palette name from OKABE_ITO, or a hex colour.


def policy_colour(name: str) -> str:
    """A registered policy's colour; an unregistered name is an error (engine.errors.UserError)."""
    colour = registry.kind(name).colour
    return OKABE_ITO.get(colour, colour)


def policy_order() -> tuple[str, ...]:
    """Every registered policy, in the one order all charts use (registration order)."""
    return registry.names()


VIEW_COLOURS = [OKABE_ITO[k] for k in ("blue", "vermillion", "green", "purple", "orange", "sky_blue")]
VIEW_MARKERS = ["o", "s", "^", "D", "v", "P"]

# Font sizes in points on an 8-inch-wide figure: 14 pt ≈ 39 px on a 1600 px image.
FONT = {"base": 14, "small": 12, "title": 19, "callout": 22, "source": 11.5}
MIN_FONT_PT = 11  # nothing smaller: it would not be legible on a phone

THEME: dict[Any, Any] = {
    "font.family": "DejaVu Sans",  # ships with matplotlib: same glyphs on every machine
    "font.size": FONT["base"],
    # Glyphs as the font draws them, not snapped to the pixel grid: at 135 px an inch and more
    # hinting adds nothing a reader sees, its metrics are not the PDF's (a carousel's lines are
    # wrapped by measuring with Agg and set in the PDF unhinted: hinted, a 34 pt line measured
    # 8 points wider than the PDF sets it), and every glyph loaded hinted runs the font's
    # TrueType program (a third of the cost of measuring and drawing text).
    "text.hinting": "no_hinting",
    "axes.titlesize": FONT["title"],
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "axes.labelsize": FONT["base"],
    "axes.labelcolor": MUTED,
    "axes.edgecolor": MUTED,
    "axes.linewidth": 1.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": cycler(color=VIEW_COLOURS),
    "xtick.labelsize": FONT["small"],
    "ytick.labelsize": FONT["small"],
    "xtick.color": MUTED,
    "ytick.color": MUTED,
    "legend.fontsize": FONT["small"],
    "legend.frameon": False,
    "text.color": INK,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "lines.linewidth": 3.0,
    "lines.markersize": 9,
    "svg.hashsalt": "sixty-days",  # irrelevant for PNG, but keeps any SVG export stable too
    # Text is drawn as written: "$2 per hour vs $3 per hour" in a label is not mathtext (which
    # would draw "2perhourvs3"), and a "$\\foo$" is not a parse error that stops the build.
    "text.parse_math": False,
}


@contextlib.contextmanager
def theme() -> Iterator[None]:
    """The chart theme, for building a figure *and* saving it.

    Ticks are created lazily at draw time from rcParams, so the save must happen inside the
    same context as the build or tick labels come out in the default size.
    """
    matplotlib = _agg()
    with matplotlib.rc_context(THEME):
        yield


def _agg() -> Any:
    """matplotlib, on the Agg backend (no display, no pyplot state): every drawing comes here."""
    import matplotlib

    matplotlib.use("Agg")  # a no-op once chosen (get_backend() would import pyplot to resolve it)
    return matplotlib


def new_figure(size: Size | str = "x") -> Figure:
    """A figure at exactly size.width × size.height pixels, on its own Agg canvas (no pyplot:
    no global state, and text can be measured before saving)."""
    _agg()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    size = SIZES[size] if isinstance(size, str) else size
    fig = Figure(figsize=(WIDTH_IN, size.height / size.dpi), dpi=size.dpi)
    FigureCanvasAgg(fig)
    return fig


def size_of(fig: Figure) -> Size:
    """The platform size a figure was made at; a figure at any other size is a bug."""
    width, height = (round(v) for v in fig.get_size_inches() * fig.dpi)
    for size in SIZES.values():
        if (size.width, size.height) == (width, height):
            return size
    raise ValueError(f"figure is {width}x{height} px, not a platform size {list(SIZES)}")


def png_bytes(fig: Figure) -> bytes:
    """The chart as PNG bytes at its platform size (see rgb_pixels)."""
    size = size_of(fig)
    return png.encode(rgb_pixels(fig, size.dpi, (size.width, size.height)), size.dpi)


def write_png(fig: Figure, path: Path, dpi: float, pixels: tuple[int, int]) -> None:
    """Write ``fig`` at ``dpi`` (``pixels`` wide and high) as a PNG (engine.charts.png)."""
    atomic.write_bytes(path, png.encode(rgb_pixels(fig, dpi, pixels), dpi), what="chart", durable=False)


def rgb_pixels(fig: Figure, dpi: float, pixels: tuple[int, int]) -> np.ndarray:
    """``fig`` drawn at ``dpi`` (``pixels`` wide and high) as RGB bytes, height × width × 3, as
    savefig draws it: encoded by engine.charts.png, with no Software tag and no timestamp, the
    same numbers give the same bytes.

    RGB, not the RGBA matplotlib draws: every figure here has an opaque background, so its alpha
    channel would say 255 on every pixel. Dropped, the file is about a tenth smaller and quicker
    to compress, and the pixels a viewer shows are the same."""
    raw = io.BytesIO()
    fig.savefig(raw, format="rgba", dpi=dpi)  # savefig's own colours and dpi, as bytes
    width, height = pixels
    if raw.tell() != width * height * 4:
        raise ValueError(f"figure drew {raw.tell() // 4} pixels at {dpi} dpi, not {width}x{height}")
    return np.frombuffer(raw.getbuffer(), np.uint8).reshape(height, width, 4)[..., :3]


def fit_width(fig: Figure, text: Text, left: float = 0.012, right: float = 0.988) -> Text:
    """Shrink `text` (down to MIN_FONT_PT), then shorten it with '…', until it fits between
    left and right: titles and sources come from results and can be any length."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    agg = fig.canvas
    assert isinstance(agg, FigureCanvasAgg)  # new_figure draws on Agg
    renderer = agg.get_renderer()
    room = (right - left) * fig.bbox.width
    while text.get_window_extent(renderer).width > room and float(text.get_fontsize()) > MIN_FONT_PT:
        text.set_fontsize(max(MIN_FONT_PT, float(text.get_fontsize()) - 0.5))
    while text.get_window_extent(renderer).width > room and len(text.get_text()) > 2:
        text.set_text(text.get_text()[:-2].rstrip() + "…")
    return text


def heading(fig: Figure, text: str) -> Text:
    """The chart's title, top-left, bold, fitted to the width."""
    return fit_width(fig, fig.text(0.012, 0.975, text, fontsize=FONT["title"], fontweight="bold", va="top"))


def source_note(fig: Figure, text: str, y: float = 0.015) -> Text:
    """Where the numbers came from, bottom-left of every chart, fitted to the width."""
    return fit_width(
        fig, fig.text(0.012, y, text, fontsize=FONT["source"], color=MUTED, ha="left", va="bottom")
    )


def thousands_ticks(axis: Any) -> None:
    """Tick labels with thousands separators (5,000 not 5000), like every number in the posts."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda value, _pos: numbers.fixed(value, 0)))


def fit_alt(sentences: list[str], limit: int = 250) -> str:
    """Join sentences while they fit: the first one always, then as many as stay under limit.

    250 is LinkedIn's default alt-text budget (X allows 1,000), so one text serves both.
    """
    text = sentences[0][:limit]
    for sentence in sentences[1:]:
        candidate = f"{text} {sentence}"
        if len(candidate) > limit:
            break
        text = candidate
    return text


def fit_alt_list(intro: str, items: list[str], limit: int = 250) -> str:
    """The intro and as many of the items as fit, then how many were left out ("and 5 more
    in the image."): a reader must not take the alt text for all the picture holds."""
    for kept in range(len(items), 0, -1):
        left = len(items) - kept
        text = " ".join([intro, *items[:kept], *([f"and {left} more in the image."] if left else [])])
        if len(text) <= limit:
            return text
    rows = f"{len(items)} row{'' if len(items) == 1 else 's'}"
    return fit_alt([intro, f"{rows} in the image."] if items else [intro], limit)


def context_label(tokens: int) -> str:
    """2048 → '2k', 32768 → '32k', 512 → '512': the way people say context lengths."""
    return f"{tokens // 1024}k" if tokens >= 1024 and tokens % 1024 == 0 else f"{tokens:,}"
