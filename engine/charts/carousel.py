"""The LinkedIn carousel: one PDF of 4:5 portrait slides, plus a PNG of each page for review.

Why a PDF: LinkedIn shows a document post as slides the reader swipes through, and a PDF is the
format it takes that every tool can check. Pages are 1080 × 1350 points, so the PNG previews at
72 dpi are 1080 × 1350 pixels, LinkedIn's portrait size.

Same bytes every build: fonts embedded as TrueType (``pdf.fonttype`` 42, which also keeps the
text selectable and searchable), no creation date in the metadata, charts drawn from the same
numbers. The slide words come from engine.render.slides (a template under the drafts' rules); a
slide's chart is the image its post carries (the registered chart at its own size, the same
PNG's pixels), embedded as it is.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from engine import charts
from engine.charts import drawcache, pdffonts, pdfimages, png, reads, style
from engine.charts.style import GREY, INK, LIGHT_GREY, MUTED, OKABE_ITO
from engine.outdir import atomic

if TYPE_CHECKING:  # matplotlib is imported where pages are drawn: registering charts stays light
    from matplotlib.figure import Figure

    from engine.render.slides import CarouselSpec, Slide, SlideText

PAGE_W, PAGE_H = 1080, 1350  # points; at 72 dpi, pixels
DPI = 72
MARGIN = 84  # points: the same on every side of every slide
ACCENT = OKABE_ITO["blue"]
FILE = "carousel.pdf"
PREVIEWS = "carousel"  # folder of page PNGs: derived views, not images to post (so no alt text)

# Type sizes in points on a 1080-point page: read on a phone at ~375 px wide, 30 pt ≈ 10 px.
TYPE = {"kicker": 26, "day": 120, "title": 64, "headline": 50, "body": 34, "footer": 24}
RC = {
    "pdf.fonttype": 42,
    "font.family": "DejaVu Sans",
    "text.color": INK,
    "text.parse_math": False,
    "text.hinting": style.THEME["text.hinting"],  # wrapped by the widths the PDF sets
}


@dataclass(frozen=True)
class Page:
    """One rendered slide, as results['carousel']['pages'] records it."""

    number: int
    kind: str
    chart: str | None
    headline: str
    body: str
    preview: str  # path of the PNG, relative to the day's folder

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


def build(
    carousel: CarouselSpec, texts: list[SlideText], results: dict[str, Any], folder: Path
) -> dict[str, Any]:
    """Write folder/carousel.pdf and folder/carousel/page-NN.png; return the results record.

    Each page's preview is kept in the drawing cache by what that page shows (page_key), and the
    PDF by all of its pages' keys (deck_key): a build with the same pages copies every file and
    imports no matplotlib; one whose number shows on one page draws that page's chart and
    preview again, and lays the other pages into the new PDF from their charts' kept PNGs."""
    folder = Path(folder)
    (folder / PREVIEWS).mkdir(parents=True, exist_ok=True)
    total = len(carousel.slides)
    meta = _meta(results)
    previews = [f"{PREVIEWS}/page-{number:02d}.png" for number in range(1, total + 1)]
    slides = list(zip(carousel.slides, texts))
    kept = [
        drawcache.recall(page_key(slide, text, results, number, total), folder, [previews[number - 1]])
        is not None
        for number, (slide, text) in enumerate(slides, start=1)
    ]
    if not all(kept) or drawcache.recall(deck_key(carousel, texts, results), folder, [FILE]) is None:
        _draw(slides, results, folder, meta, previews, kept)
        drawcache.keep(deck_key(carousel, texts, results), folder, [FILE])  # what the charts read
    pages = [
        Page(number, slide.kind, slide.chart, text.headline, text.body, previews[number - 1])
        for number, (slide, text) in enumerate(slides, start=1)
    ]
    return {
        "file": FILE,
        "title": meta["Title"],
        "width_pt": PAGE_W,
        "height_pt": PAGE_H,
        "pages": [p.to_dict() for p in pages],
    }


def _meta(results: dict[str, Any]) -> dict[str, Any]:
    return {
        "Title": f"Day {results['day']}: {results['title']}",
        "Subject": results["series"]["name"],
        "Creator": "sixty-days-engine",
        "CreationDate": None,  # no timestamp: same bytes every build
    }


# The spec's fields every page's frame draws (besides the slides' own words).
FRAME_FIELDS = ("series.name", "repository")


class Undrawable(ValueError):
    """A slide's words hold characters the slides' font has no glyph for: they would print as
    empty boxes (and matplotlib warns of each on the terminal)."""

    def __init__(self, section: str, characters: str) -> None:
        super().__init__(section, characters)
        self.section, self.characters = section, characters


def _check_glyphs(slides: list[tuple[Slide, SlideText]], results: dict[str, Any]) -> None:
    """Undrawable for the first text a page draws with a character neither weight of the
    slides' font has: the spec's series name and repository (every page's frame), then each
    slide's words (named by section)."""
    from matplotlib.font_manager import FontProperties, findfont, get_font

    drawn: set[int] = set()
    for weight in ("normal", "bold"):
        font = findfont(FontProperties(family=RC["font.family"], weight=weight), fallback_to_default=False)
        drawn |= set(get_font(font).get_charmap())
    said = [
        (FRAME_FIELDS[0], str(results["series"]["name"]).upper()),  # drawn upper-case
        (FRAME_FIELDS[1], str(results["repository"])),
        *((slide.section, text.headline + text.body) for slide, text in slides),
    ]
    for where, words in said:
        missing = sorted({c for c in words if ord(c) not in drawn and not c.isspace()})
        if missing:
            raise Undrawable(where, "".join(missing[:5]))


def _draw(
    slides: list[tuple[Slide, SlideText]],
    results: dict[str, Any],
    folder: Path,
    meta: dict[str, Any],
    previews: list[str],
    kept: list[bool],
) -> None:
    """Every page into the PDF; the previews of the pages not ``kept`` drawn and cached."""
    import matplotlib
    from matplotlib.backends.backend_pdf import PdfPages

    _check_glyphs(slides, results)
    total = len(slides)
    document = io.BytesIO()  # written into place whole, through the one writer, once it is closed
    with (
        matplotlib.rc_context(cast(Any, RC)),
        pdffonts.without_layout_tables(),  # the fonts are embedded as the PDF closes
        pdfimages.unfiltered_images(),  # and the charts' images
        PdfPages(document, metadata=meta) as pdf,
    ):
        for number, (slide, text) in enumerate(slides, start=1):
            fig = _page(slide, text, results, number, total)
            pdf.savefig(fig)
            if kept[number - 1]:
                continue
            # shrunk for the preview, embedded as it is in the PDF (a slide's one image is its
            # chart's axes': walking every artist of the page to find it cost more than shrinking)
            for ax in fig.axes:
                for image in ax.images:
                    extent = image.get_extent()  # the post image's, which the shrunk one keeps
                    # shrunk to the axes' pixels, each is placed as it is: matplotlib's own
                    # filter at a ratio of almost one would blur it and leave faint seams
                    image.set_interpolation("nearest")
                    image.set_data(shrunk(np.asarray(image.get_array()), *_pixels(ax)))
                    image.set_extent(extent)
            style.write_png(fig, folder / previews[number - 1], DPI, (PAGE_W, PAGE_H))
            key = page_key(slide, text, results, number, total)  # its chart's reads are known now
            drawcache.keep(key, folder, [previews[number - 1]])
    atomic.write_bytes(folder / FILE, document.getvalue(), what="carousel", durable=False)


def shrunk(pixels: np.ndarray, height: int, width: int) -> np.ndarray:
    """``pixels`` (RGB bytes) reduced to ``height`` × ``width`` by Pillow's bilinear filter,
    which on a reduction widens with the factor, so each new pixel weighs the whole area of the
    old ones it covers (no aliasing of thin lines and small text).

    Why: a slide's preview shows a chart of 1,200 or 1,600 pixels in 912. Left to matplotlib,
    the whole image is resampled in floats, fresh memory a tenth of a second a slide; reduced
    first, in Pillow's C, matplotlib maps the result about one to one."""
    from PIL import Image

    return np.asarray(Image.fromarray(pixels).resize((width, height), Image.Resampling.BILINEAR))


def _pixels(ax: Any) -> tuple[int, int]:
    """The height and width, in whole pixels, an axes covers on the page at DPI."""
    return round(ax.bbox.height), round(ax.bbox.width)


def page_key(slide: Slide, text: SlideText, results: dict[str, Any], number: int, total: int) -> str | None:
    """The drawing cache's key of one page: its slide and words, its place in the deck, the
    frame's fields, what its chart read (drawn_from) and the policies' colours (the cover signs
    with them, a chart draws with them). Asked again after drawing: a chart's reads are known
    only then. None for a chart the cache cannot name (one swapped in at run time)."""
    shown = drawn_from_chart(slide.chart, results) if slide.chart else None
    if slide.chart and shown is None:
        return None
    frame = {k: results.get(k) for k in ("day", "title", "series", "repository")}
    return drawcache.key(
        "carousel-page", slide.model_dump(), vars(text), [number, total], frame, shown, charts.policies()
    )


def deck_key(carousel: CarouselSpec, texts: list[SlideText], results: dict[str, Any]) -> str | None:
    """The PDF's key: its metadata and every page's key (None if a page has none)."""
    total = len(carousel.slides)
    keys = [
        page_key(slide, text, results, number, total)
        for number, (slide, text) in enumerate(zip(carousel.slides, texts), start=1)
    ]
    if None in keys:
        return None
    return drawcache.key("carousel-pdf", _meta(results), keys)


def drawn_from_chart(name: str, results: dict[str, Any]) -> Any:
    """What chart ``name`` read when it last drew (reads.part: all of results for one not drawn
    yet), under its drawing's name; None for an unknown chart or one the cache cannot name."""
    try:
        function = charts.drawing_id(name, charts.resolve(name, results).size, results)
    except KeyError:
        return None
    return None if function is None else [function, reads.part(function, results)]


def drawn_from(carousel: CarouselSpec, results: dict[str, Any]) -> dict[str, Any]:
    """The parts of results the pages show: the frame's fields and what each slide's chart read
    when it was last drawn, so a build that differs elsewhere (the inputs' paths, a measurement
    no slide shows) still finds the pages it drew before, and one whose slide shows a changed
    figure draws them again."""
    shown = [drawn_from_chart(slide.chart, results) for slide in carousel.slides if slide.chart]
    frame = {k: results.get(k) for k in ("day", "title", "series", "repository")}
    return {"frame": frame, "charts": shown}


def signature() -> list[str]:
    """The cover's quiet signature: every registered policy's colour, in the charts' order. The
    registry is not part of results, so every page's key holds these too (charts.policies): a
    policy registered later in the process (a toy day's) changes the cover."""
    return [style.policy_colour(name) for name in style.policy_order()]


# ---- one page -----------------------------------------------------------------------------------


def _page(slide: Slide, text: SlideText, results: dict[str, Any], number: int, total: int) -> Figure:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(PAGE_W / DPI, PAGE_H / DPI), dpi=DPI)
    FigureCanvasAgg(fig)
    fig.patch.set_facecolor("white")
    _frame(fig, results, number, total)
    if slide.kind == "cover":
        _cover(fig, text, results)
    elif slide.kind == "closing":
        _closing(fig, text, results)
    else:
        _chart_slide(fig, slide, text, results)
    return fig


def _y(points_from_top: float) -> float:
    return 1 - points_from_top / PAGE_H


def _x(points_from_left: float) -> float:
    return points_from_left / PAGE_W


def _frame(fig: Figure, results: dict[str, Any], number: int, total: int) -> None:
    """What every slide shares: the series line and page number on top, a progress bar below."""
    from matplotlib.patches import Rectangle

    series = results["series"]
    fig.text(
        _x(MARGIN),
        _y(MARGIN),
        f"{series['name'].upper()}  ·  DAY {results['day']}",
        fontsize=TYPE["kicker"],
        color=MUTED,
        fontweight="bold",
        va="top",
        ha="left",
    )
    fig.text(
        _x(PAGE_W - MARGIN),
        _y(MARGIN),
        f"{number} / {total}",
        fontsize=TYPE["kicker"],
        color=MUTED,
        va="top",
        ha="right",
    )
    fig.add_artist(
        Rectangle((_x(MARGIN), _y(MARGIN + 52)), _x(96), 6 / PAGE_H, color=ACCENT, transform=fig.transFigure)
    )
    width = (PAGE_W - 2 * MARGIN - (total - 1) * 8) / total
    for k in range(total):
        left = MARGIN + k * (width + 8)
        fig.add_artist(
            Rectangle(
                (_x(left), _y(PAGE_H - 56)),
                _x(width),
                8 / PAGE_H,
                transform=fig.transFigure,
                color=ACCENT if k < number else LIGHT_GREY,
            )
        )
    if number < total:  # the closing slide shows the repository large instead
        fig.text(
            _x(MARGIN),
            _y(PAGE_H - 84),
            results["repository"],
            fontsize=TYPE["footer"],
            color=MUTED,
            va="center",
            ha="left",
        )
        fig.text(
            _x(PAGE_W - MARGIN),
            _y(PAGE_H - 84),
            "swipe →",
            fontsize=TYPE["footer"],
            color=ACCENT,
            fontweight="bold",
            va="center",
            ha="right",
        )


def _cover(fig: Figure, text: SlideText, results: dict[str, Any]) -> None:
    from matplotlib.patches import Rectangle

    fig.text(
        _x(MARGIN),
        _y(250),
        f"Day {results['day']}",
        fontsize=TYPE["day"],
        color=ACCENT,
        fontweight="bold",
        va="top",
    )
    bottom = _block(fig, text.headline, 430, TYPE["title"], weight="bold", max_lines=6)
    if text.body:
        _block(fig, text.body, bottom + 48, TYPE["body"], color=MUTED, max_lines=7)
    for k, colour in enumerate(signature()):
        fig.add_artist(
            Rectangle(
                (_x(MARGIN + k * 72), _y(PAGE_H - 170)),
                _x(56),
                56 / PAGE_H,
                color=colour,
                transform=fig.transFigure,
            )
        )


def _closing(fig: Figure, text: SlideText, results: dict[str, Any]) -> None:
    from matplotlib.patches import Rectangle

    bottom = _block(fig, text.headline, 300, TYPE["title"], weight="bold", max_lines=6)
    if text.body:
        bottom = _block(fig, text.body, bottom + 48, TYPE["body"], color=MUTED, max_lines=8)
    fig.add_artist(
        Rectangle(
            (_x(MARGIN), _y(bottom + 80)),
            _x(PAGE_W - 2 * MARGIN),
            2 / PAGE_H,
            color=GREY,
            transform=fig.transFigure,
        )
    )
    fig.text(_x(MARGIN), _y(bottom + 120), "Code", fontsize=TYPE["body"], color=MUTED, va="top")
    link = fig.text(
        _x(MARGIN),
        _y(bottom + 170),
        results["repository"],
        fontsize=TYPE["headline"] - 8,
        color=ACCENT,
        fontweight="bold",
        va="top",
    )
    _shrink_to_width(fig, link)


def _chart_slide(fig: Figure, slide: Slide, text: SlideText, results: dict[str, Any]) -> None:
    from matplotlib.patches import Rectangle

    bottom = _block(fig, text.headline, 190, TYPE["headline"], weight="bold", max_lines=4)
    if text.body:
        bottom = _block(fig, text.body, bottom + 28, TYPE["body"], color=MUTED, max_lines=5)
    image = chart_pixels(slide.chart or "", results)
    room_w = PAGE_W - 2 * MARGIN
    room_h = (PAGE_H - 140) - (bottom + 48)
    height_px, width_px = image.shape[:2]
    w = room_w
    h = w * height_px / width_px
    if h > room_h:  # a tall chart: fit the height instead, centred
        h = room_h
        w = h * width_px / height_px
    left = (PAGE_W - w) / 2
    top = bottom + 48 + (room_h - h) / 2
    ax = fig.add_axes((_x(left), _y(top + h), _x(w), h / PAGE_H))
    ax.imshow(image, interpolation="none")
    ax.set_axis_off()
    fig.add_artist(
        Rectangle(
            (_x(left), _y(top + h)),
            _x(w),
            h / PAGE_H,
            transform=fig.transFigure,
            fill=False,
            edgecolor=LIGHT_GREY,
            linewidth=2,
        )
    )


def chart_pixels(name: str, results: dict[str, Any]) -> np.ndarray:
    """A registered chart as its post shows it, at its own platform size: the pixels of the PNG
    charts.draw writes of it (charts.still: the same bytes, from the drawing cache where the
    build drew them already), RGB.

    Why the post's image, not a drawing of its own: the slide then shows what the post shows,
    and a build draws each chart once. At 1,600 pixels across the 912 points between the
    margins, an X-sized chart has 1.75 pixels a point, sharp when a reader zooms in."""
    try:
        chart = charts.resolve(name, results)
    except KeyError:
        raise ValueError(
            f"chart '{name}' cannot go on a slide; slides take: {', '.join(sorted(charts.CHARTS))}"
        ) from None
    return png.decode(charts.still(name, chart.size, results).png)


# ---- text ---------------------------------------------------------------------------------------


def _block(
    fig: Figure,
    text: str,
    top: float,
    size: float,
    *,
    weight: str = "normal",
    color: str = INK,
    max_lines: int = 6,
) -> float:
    """Wrap `text` to the page's width at `size` (smaller until it fits in max_lines); return the
    block's bottom, in points from the top, so the next block starts below it."""
    room = PAGE_W - 2 * MARGIN
    while True:
        lines = wrap(fig, text, size, weight, room)
        if len(lines) <= max_lines or size <= 20:
            break
        size -= 2
    spacing = 1.25
    fig.text(
        _x(MARGIN),
        _y(top),
        "\n".join(lines),
        fontsize=size,
        fontweight=weight,
        color=color,
        va="top",
        ha="left",
        linespacing=spacing,
    )
    return top + size * (1 + spacing * (len(lines) - 1)) * 1.05


def wrap(fig: Figure, text: str, size: float, weight: str, room: float) -> list[str]:
    """Greedy word wrap by measured width (points), with the font that will draw the text.

    A line is measured whole only when its estimate (its words' widths, measured once each,
    and a space's between them) comes within NEAR of the room: kerning and ink edges move a
    line's width by a point or two, far less than that, so every break falls where measuring
    every candidate line would put it, for a fraction of the measuring."""
    renderer = cast(Any, fig.canvas).get_renderer()
    probe = fig.text(0, 0, "", fontsize=size, fontweight=weight)
    scale = 72 / fig.dpi

    def width(line: str) -> float:
        probe.set_text(line)
        return float(probe.get_window_extent(renderer).width) * scale

    widths = {word: width(word) for word in set(text.split())}

    def pieces(word: str) -> list[str]:
        """A word wider than a line (a long link) cut where it must be, each piece the longest
        that fits: it would otherwise run off the page."""
        if widths[word] <= room:
            return [word]
        cut, rest = [], word
        while rest:
            fits, over = 1, len(rest)
            while fits < over:  # the longest head of rest that fits, one character at least
                middle = (fits + over + 1) // 2
                fits, over = (middle, over) if width(rest[:middle]) <= room else (fits, middle - 1)
            cut.append(rest[:fits])
            rest = rest[fits:]
        return cut

    words = [piece for word in text.split() for piece in pieces(word)]
    widths.update((word, width(word)) for word in set(words) - set(widths))
    space = width("x x") - 2 * width("x")
    lines: list[str] = []
    current, estimate = "", 0.0
    for word in words:
        candidate = f"{current} {word}".strip()
        guess = estimate + (space if current else 0.0) + widths[word]
        if current and (guess > room + NEAR or (guess > room - NEAR and width(candidate) > room)):
            lines.append(current)
            current, estimate = word, widths[word]
        else:
            current, estimate = candidate, guess
    if current:
        lines.append(current)
    probe.remove()
    return lines


NEAR = 24.0  # points: a line's estimate this close to the room is measured whole


def _shrink_to_width(fig: Figure, text: Any) -> None:
    renderer = cast(Any, fig.canvas).get_renderer()
    room = (PAGE_W - 2 * MARGIN) * fig.dpi / 72
    while text.get_window_extent(renderer).width > room and text.get_fontsize() > 20:
        text.set_fontsize(text.get_fontsize() - 2)
