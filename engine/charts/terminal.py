"""The terminal screenshot: a lab's transcript drawn as a terminal window.

Why draw it instead of screenshotting: a real screenshot carries the author's fonts, theme and
window size, changes on every run, and cannot be rebuilt from the stored measurement. This one
is drawn from the transcript kept with the figures, at each platform's size, in a monospace
font that ships with matplotlib, so the same measurement gives the same bytes on any machine.

What it shows is what a terminal would have shown (engine.ansi: progress lines
collapsed, colours kept, escapes never drawn), the line ranges the spec picks, with a line
saying how many were left out between two ranges. Long output is elided in the middle,
visibly ("⋯ 9 lines not shown ⋯"), never silently. A line up to 100 columns is never wrapped:
the font shrinks to fit it, below the charts' phone minimum if it must, down to
MIN_TERMINAL_FONT_PT, because a table whose rows break is no longer a table; only a wider line
wraps onto the next row, as in a terminal.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from engine import ansi, numbers, units
from engine.ansi import Run
from engine.charts import labels, style
from engine.charts.registry import register_chart
from engine.charts.style import FONT, MIN_FONT_PT, Size
from engine.errors import UserError
from engine.platforms import registry

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MONO = "DejaVu Sans Mono"  # ships with matplotlib: the same glyphs everywhere
CANVAS = "#F3F4F6"
WINDOW = "#1E1F22"
TITLE_BAR = "#34363B"
TEXT = "#E3E3E3"
DIM = "#9AA0A6"
PROMPT = "#7EE787"  # the prompt's green
ELIDED = "#F0C674"
DOTS = ("#FF5F57", "#FEBC2E", "#28C840")
MAX_FONT_PT = 17
LINE_SPACING = 1.32
CHAR_WIDTH_EM = 0.602  # DejaVu Sans Mono's advance width per point of size
WRAP_COLUMNS = 100  # a line up to this wide is drawn whole, the font shrinking to fit it
# 100 columns fit the 8-inch window's 515 pt body at 8 pt at every size (482 pt by the font's
# advance; drawn, at most 480 pt): a wider line wraps instead. Below MIN_FONT_PT a phone reader
# has to zoom, which a 100-column table asks of them anyway.
MIN_TERMINAL_FONT_PT = 8.0
_ELISION_MARK = "⋯ "


@dataclass(frozen=True)
class Row:
    """One row of the window: its coloured runs, what it is ('prompt', 'output', 'elided'), the
    transcript line it shows (0-based; -1 for the prompt) and, for an elision row, how many
    transcript lines it stands for."""

    runs: tuple[Run, ...]
    kind: str
    source: int = -1
    hidden: int = 0

    @property
    def text(self) -> str:
        return "".join(text for text, _ in self.runs)


@dataclass(frozen=True)
class Window:
    """Where the window sits on a figure, in points from the bottom-left corner."""

    left: float
    right: float
    bottom: float
    top: float
    bar: float = 30.0  # the title bar
    pad: float = 13.0  # between the window's edge and its text

    @property
    def body_width(self) -> float:
        return self.right - self.left - 2 * self.pad

    @property
    def body_height(self) -> float:
        return self.top - self.bar - self.bottom - 2 * self.pad


def window(width_pt: float, height_pt: float) -> Window:
    """The window on a figure of this size: 3% margins, room for the source line under it."""
    margin = 0.03
    footer_pt = FONT["source"] * 1.4 * 1.5
    return Window(margin * width_pt, (1 - margin) * width_pt, footer_pt + 8, height_pt - margin * width_pt)


@register_chart("terminal", needs=("lab",), size="x")
def terminal(results: dict[str, Any], size: Size | None = None) -> tuple[Figure, str]:
    """The transcript (or the lines the spec selects) in a terminal window, with its prompt."""
    lab = labels.section(results, "lab", "terminal")
    fig = style.new_figure(size or "x")
    width_pt, height_pt = (v * 72 for v in fig.get_size_inches())
    rows = [Row(((f"$ {ansi.plain(lab['command'])}", None),), "prompt"), *selected_rows(lab)]
    win = window(width_pt, height_pt)
    font, cols, room = fit(
        win.body_width, win.body_height, [len(row.text) for row in rows], drawn_width(fig), win.pad / 2
    )
    shown = elide_rows(wrap_rows(rows, cols), room)
    win_left, win_bottom, win_top, pad = win.left, win.bottom, win.top, win.pad
    # A short transcript gets a window its own height, centred in the room, not a tall empty one.
    spare = win.body_height - len(shown) * font * LINE_SPACING
    if spare > 0:
        win_top -= spare / 2
        win_bottom += spare / 2
    title = ansi.plain(f"{lab['lab_folder']} · {lab['source']}")
    _window(fig, width_pt, height_pt, win_left, win.right, win_bottom, win_top, win.bar, title)
    line_h = font * LINE_SPACING
    y = win_top - win.bar - pad
    for i, row in enumerate(shown):
        if i == 0:
            fig.text(_x(win_left + pad, width_pt), _y(y, height_pt), "$", **_mono(font, PROMPT, "bold"))
            fig.text(
                _x(win_left + pad + 2 * font * CHAR_WIDTH_EM, width_pt),
                _y(y, height_pt),
                clip(row.text[2:], cols - 2),
                **_mono(font, "#FFFFFF", "bold"),
            )
        elif row.kind == "elided":
            fig.text(
                _x(win_left + pad, width_pt),
                _y(y, height_pt),
                clip(row.text, cols),
                **_mono(font, ELIDED, "normal"),
                style="italic",
            )
        else:
            # Each colour's run is drawn from the row's start, after spaces standing for the
            # runs before it: its glyphs land where they would in the whole row, as drawn.
            column = 0
            for text, colour in clip_runs(row.runs, cols):
                if text.strip():
                    fig.text(
                        _x(win_left + pad, width_pt),
                        _y(y, height_pt),
                        " " * column + text,
                        **_mono(font, colour or TEXT, "normal"),
                    )
                column += len(text)
        y -= line_h
    when = lab.get("when", "")
    style.source_note(fig, f"Transcript of the lab run, {ansi.plain(lab['source'])}, {when}.", y=0.012)
    return fig, alt_text(lab, shown)


# ---- which lines: the spec's ranges of the transcript as a terminal shows it -----------------


def line_ranges(selection: dict[str, Any], count: int, file: str = "") -> list[tuple[int, int]]:
    """The spec's selection as 1-based inclusive ranges of a transcript of ``count`` lines:
    ``lines`` as given, or one range first_line..last_line (to the end when last_line is None).
    The spec checked their order; only the measurement knows whether they exist."""
    where = f"the stored transcript{f' ({file})' if file else ''} has {count} lines"
    if selection.get("lines"):
        ranges = [(int(first), int(last)) for first, last in selection["lines"]]
        for first, last in ranges:
            if last > count:
                raise UserError(
                    f"range [{first}, {last}] reaches past the end: {where}", field="lab.terminal.lines"
                )
        return ranges
    start = int(selection.get("first_line") or 1)
    end = selection.get("last_line")
    if start > max(count, 1):
        raise UserError(f"first_line {start} is past the end: {where}", field="lab.terminal.first_line")
    if end is not None and int(end) > count:
        raise UserError(f"last_line {end} is past the end: {where}", field="lab.terminal.last_line")
    return [(start, count if end is None else int(end))]


def selected_rows(lab: dict[str, Any]) -> list[Row]:
    """The transcript's rows as a terminal would show them (engine.ansi), the spec's
    ranges of them with an elision row between two ranges, trailing blank rows dropped."""
    screen = ansi.render(lab["transcript"]["text"])
    ranges = line_ranges(lab.get("terminal") or {}, len(screen), str(lab.get("file") or ""))
    rows: list[Row] = []
    for k, (first, last) in enumerate(ranges):
        if k:
            rows.append(_elision(first - ranges[k - 1][1] - 1))
        rows += [Row(tuple(screen[i]), "output", i) for i in range(first - 1, last)]
    while rows and rows[-1].kind == "output" and not rows[-1].text:
        rows.pop()
    return rows


def transcript_lines(lab: dict[str, Any]) -> list[str]:
    """The selected rows' text, elision rows included, colours left out."""
    return [row.text for row in selected_rows(lab)]


def _elision(hidden: int) -> Row:
    lines = "line" if hidden == 1 else "lines"
    return Row(((f"{_ELISION_MARK}{hidden} {lines} not shown ⋯", None),), "elided", hidden=hidden)


# ---- fitting the window: font size, wrapping, elision -----------------------------------------


def fit(
    body_w: float,
    body_h: float,
    widths: list[int],
    drawn_width: Callable[[float, int], float] | None = None,
    slack: float = 0.0,
) -> tuple[float, int, int]:
    """The font, and the columns and rows of the window at it, for rows of these widths.

    The largest font (MIN_FONT_PT..MAX_FONT_PT) at which the widest row and every row fit
    unwrapped; if the widest still does not fit at MIN_FONT_PT, smaller, until it does (down to
    MIN_TERMINAL_FONT_PT, where 100 columns fit): a table's columns stay columns, while rows
    that do not fit are elided rather than shrunk past legibility.

    A row fits when the font's own advance (CHAR_WIDTH_EM) puts it inside the body and, given
    ``drawn_width(font, columns)`` (points, as the figure's rasteriser draws them: it rounds
    each glyph's advance to whole pixels, a few percent either way), the drawn row ends within
    ``slack`` of it: inside the window's padding, never across its edge."""

    def fits(font: float, columns: int) -> bool:
        drawn_ok = drawn_width is None or drawn_width(font, columns) <= body_w + slack
        return _columns(body_w, font) >= columns and drawn_ok

    widest = min(max(widths, default=1), WRAP_COLUMNS)
    font = float(MAX_FONT_PT)
    while font > MIN_FONT_PT:
        if fits(font, widest) and _rows(body_h, font) >= len(widths):
            break
        font -= 0.5
    while font > MIN_TERMINAL_FONT_PT and not fits(font, widest):
        font -= 0.5
    cols = _columns(body_w, font)
    while cols > 1 and not fits(font, cols):
        cols -= 1
    return font, cols, _rows(body_h, font)


def drawn_width(fig: Figure) -> Callable[[float, int], float]:
    """How wide ``columns`` characters of the monospace font at ``font`` pt are, in points, as
    this figure's renderer draws them."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.font_manager import FontProperties

    canvas = fig.canvas
    assert isinstance(canvas, FigureCanvasAgg)  # new_figure draws on Agg
    renderer = canvas.get_renderer()
    scale = 72 / fig.dpi

    def width(font: float, columns: int) -> float:
        prop = FontProperties(family=MONO, size=font)
        return float(renderer.get_text_width_height_descent("0" * columns, prop, ismath=False)[0]) * scale

    return width


def _columns(body_w: float, font: float) -> int:
    return int(body_w / (font * CHAR_WIDTH_EM))


def _rows(body_h: float, font: float) -> int:
    return int(body_h / (font * LINE_SPACING))


def elide(lines: list[str], room: int) -> list[str]:
    """elide_rows for plain lines, one transcript line each."""
    rows = [Row(((line, None),), "output", i) for i, line in enumerate(lines)]
    return [row.text for row in elide_rows(rows, room)]


def elide_rows(rows: list[Row], room: int) -> list[Row]:
    """At most ``room`` rows: the head (with the prompt) and the tail, joined by a row that says
    how many transcript lines were left out. The tail gets the larger share: a lab's summary is
    at its end. The cut never splits a wrapped line, takes in an elision row beside it, and
    counts transcript lines, not rows: a wrapped line is one line, an elision row its count."""
    if len(rows) <= room:
        return rows
    keep = max(room - 1, 2)
    start = max(1, keep * 2 // 5)
    end = len(rows) - (keep - start)
    while start > 1 and rows[start].source >= 0 and rows[start - 1].source == rows[start].source:
        start -= 1
    while end < len(rows) and rows[end].source >= 0 and rows[end].source == rows[end - 1].source:
        end += 1
    # An elision row beside the cut joins it: one row says how many, not two in a row.
    while start > 1 and rows[start - 1].kind == "elided":
        start -= 1
    while end < len(rows) and rows[end].kind == "elided":
        end += 1
    cut = rows[start:end]
    hidden = len({r.source for r in cut if r.kind == "output"}) + sum(r.hidden for r in cut)
    return [*rows[:start], _elision(hidden), *rows[end:]]


def clip(line: str, cols: int) -> str:
    """A line cut to `cols` characters, ending in '…' when something was cut."""
    return line if len(line) <= cols else line[: max(cols - 1, 1)] + "…"


def clip_runs(runs: tuple[Run, ...], cols: int) -> list[Run]:
    """clip for coloured runs: the '…' takes the colour of the character it replaces."""
    cells = ansi.cells(list(runs))
    if len(cells) > cols:
        keep = max(cols - 1, 1)
        cells = [*cells[:keep], ("…", cells[keep][1])]
    return ansi.runs(cells)


def wrap_rows(rows: list[Row], cols: int) -> list[Row]:
    """Rows wider than the window continue on the next row, broken at a space where there is
    one and indented like the row they continue, so a wrapped line still reads as one; each
    piece keeps its characters' colours and the transcript line it came from."""
    out = []
    for row in rows:
        if len(row.text) <= cols:
            out.append(row)
            continue
        for piece in _wrap_cells(ansi.cells(list(row.runs)), cols):
            out.append(Row(tuple(ansi.runs(piece)), row.kind, row.source))
    return out


def _wrap_cells(cells: list[tuple[str, ansi.Colour]], cols: int) -> list[list[tuple[str, ansi.Colour]]]:
    text = "".join(ch for ch, _ in cells)
    indent = min(len(text) - len(text.lstrip(" ")), cols // 2)
    pieces = []
    start, width = 0, cols
    while len(cells) - start > width:
        space = text.rfind(" ", start + (indent if start == 0 else 0) + 1, start + width + 1)
        end = space if space > start else start + width  # no space to break at: cut the word
        pieces.append(cells[start:end])
        start = end
        while start < len(cells) and text[start] == " ":
            start += 1
        width = cols - indent
    if start < len(cells):
        pieces.append(cells[start:])
    out = [pieces[0]] + [[(" ", None)] * indent + piece for piece in pieces[1:]]
    return [_rstrip(piece) for piece in out]


def _rstrip(cells: list[tuple[str, ansi.Colour]]) -> list[tuple[str, ansi.Colour]]:
    while cells and cells[-1][0] == " ":
        cells = cells[:-1]
    return cells


def _x(points: float, width_pt: float) -> float:
    return points / width_pt


def _y(points: float, height_pt: float) -> float:
    return points / height_pt


def _mono(font: float, colour: str, weight: str) -> dict[str, Any]:
    return {
        "fontsize": font,
        "family": MONO,
        "color": colour,
        "fontweight": weight,
        "va": "top",
        "ha": "left",
        "parse_math": False,  # a transcript's "$5 and $6" is text, not mathtext
    }


def _window(
    fig: Figure,
    width_pt: float,
    height_pt: float,
    left: float,
    right: float,
    bottom: float,
    top: float,
    bar: float,
    title: str,
) -> None:
    from matplotlib.patches import Ellipse, FancyBboxPatch, Rectangle

    fig.patch.set_facecolor(CANVAS)

    def box(x0: float, y0: float, x1: float, y1: float) -> tuple[float, float, float, float]:
        return x0 / width_pt, y0 / height_pt, (x1 - x0) / width_pt, (y1 - y0) / height_pt

    x, y, w, h = box(left, bottom, right, top)
    fig.add_artist(
        FancyBboxPatch(
            (x, y),
            w,
            h,
            boxstyle="round,pad=0,rounding_size=0.012",
            transform=fig.transFigure,
            facecolor=WINDOW,
            edgecolor="#0B0C0E",
            linewidth=1.2,
            mutation_aspect=width_pt / height_pt,
        )
    )
    bx, by, bw, bh = box(left, top - bar, right, top)
    fig.add_artist(
        FancyBboxPatch(
            (bx, by),
            bw,
            bh,
            boxstyle="round,pad=0,rounding_size=0.012",
            transform=fig.transFigure,
            facecolor=TITLE_BAR,
            linewidth=0,
            mutation_aspect=width_pt / height_pt,
        )
    )
    fig.add_artist(
        Rectangle((bx, by), bw, bh / 2, transform=fig.transFigure, facecolor=TITLE_BAR, linewidth=0)
    )  # square lower corners: the bar meets the body
    radius = 6.0
    for i, colour in enumerate(DOTS):
        cx = (left + 18 + i * 20) / width_pt
        cy = (top - bar / 2) / height_pt
        fig.add_artist(
            Ellipse(
                (cx, cy),
                2 * radius / width_pt,
                2 * radius / height_pt,
                transform=fig.transFigure,
                facecolor=colour,
                linewidth=0,
            )
        )
    label = fig.text(
        (left + right) / 2 / width_pt,
        (top - bar / 2) / height_pt,
        title,
        fontsize=FONT["source"],
        color=DIM,
        ha="center",
        va="center",
        family=MONO,
    )
    style.fit_width(fig, label, left=(left + 90) / width_pt, right=(right - 20) / width_pt)


# ---- alt text: what the window shows, and the figures on it ------------------------------------


def alt_text(lab: dict[str, Any], shown: list[Row], limit: int | None = None) -> str:
    """'Terminal output of "python lab.py" in day01.lab, measured on ….' then, one sentence
    each, the lab's figures whose printed values are on the shown rows, with their labels, as
    the window prints them (a post may round 15.6x to 16x; a screen reader says what the picture
    shows), as many whole sentences as fit. A window with
    no figure on it is described by its last output lines instead: a lab's summary is at its end.
    """
    limit = registry.strictest_alt_limit() if limit is None else limit
    output = [row.text for row in shown if row.kind == "output"]
    found = shown_figures(dict(lab.get("figures") or {}), output)
    if found:
        sentences = [f"{_label(s.name, s.figure)}: {s.printed}." for s in found]
        return style.fit_alt([_intro(lab, ".", limit), *sentences], limit)
    intro = _intro(lab, ":", limit)
    body = [" ".join(line.split()) for line in output if line.strip() and not _RULER.fullmatch(line)]

    def said(lines: list[str]) -> str:
        return " ".join([intro, *[f"{b};" for b in lines[:-1]], lines[-1]])

    def last_that_fit(lead: list[str], lines: list[str]) -> list[str]:
        picked: list[str] = []
        for line in reversed(lines):
            if len(said([*lead, line, *picked])) > limit:
                break
            picked.insert(0, line)
        return picked

    picked = last_that_fit([], body)
    # A table's rows mean nothing without its header: kept first when the rows run past it.
    headers = {" ".join(str(t.get("line", "")).split()) for t in (lab.get("tables") or {}).values()}
    head = next((line for line in body if line in headers), None)
    if head is not None and picked and head not in picked:
        rows = last_that_fit([head, "…"], body[body.index(head) + 1 :])
        picked = [head, "…", *rows] if rows else picked
    return said(picked) if picked else intro


# A line that only rules the output off (----, ====, +---+---+): no words to read out.
_RULER = re.compile(r"[\s\-=_+|:*#~.]*")


def _intro(lab: dict[str, Any], end: str, limit: int) -> str:
    """The sentence naming the command, the lab and the machine; a long command is shortened
    with '…' inside its quotes, so the sentence stays whole under the limit."""
    command = ansi.plain(str(lab["command"]))
    where = ansi.plain(f"{lab['lab_folder']}, {lab['source']}")
    fixed = len(f'Terminal output of "" in {where}{end}')
    if fixed + len(command) > limit:
        command = clip(command, limit - fixed)
    text = f'Terminal output of "{command}" in {where}{end}'
    return text if len(text) <= limit and limit - fixed >= 8 else f"Terminal output of a lab run{end}"


def _label(name: str, fig: dict[str, Any]) -> str:
    return ansi.plain(str(fig.get("label") or fig.get("about") or name))


# A printed number: 237.6, 1,216.6, -3, 0.97; not part of a word (v1) or of a longer dotted
# number (6.18.44); then, after at most one space, the word after it, a unit if it is one.
_NUMBER = re.compile(
    r"(?<![\w.,])(-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)(?![\d]|[.,]\d)"
    r"(?: ?([^\W\d_]+(?:/[^\W\d_]+)?|%))?"
)


class Shown(NamedTuple):
    """A lab figure the window prints: its name, the figure, and the number as printed, in the
    unit printed after it (or the figure's own), written as a post writes that unit."""

    name: str
    figure: dict[str, Any]
    printed: str


def shown_figures(figures: dict[str, Any], lines: list[str]) -> list[Shown]:
    """The figures whose values the lines print, in the order they first appear.

    A lab prints its own figures its own way ('237.6 ns' for a 237.618 ns figure, '109.3 µs' for
    one the spec keeps in us, '460 RAM reads' for a ratio), so a printed number is taken as a
    figure when it is that figure's value rounded to the decimals printed: in the unit printed
    after it, if that is a unit of the figure's dimension, else in the figure's own unit. A
    number with one significant digit ('1 loopback round trip', '4 KiB') says too little to be
    told from a coincidence and is never taken."""
    found: dict[str, tuple[int, int, str]] = {}
    for row, line in enumerate(lines):
        for match in _NUMBER.finditer(line):
            digits, word = match.group(1).replace(",", ""), match.group(2)
            if len(digits.lstrip("-").replace(".", "").lstrip("0")) < 2:
                continue
            decimals = len(digits.partition(".")[2])
            for name, fig in figures.items():
                if name not in found and _prints(fig, float(digits), decimals, word):
                    unit = word if word is not None and word in units.UNITS else str(fig["unit"])
                    found[name] = (row, match.start(), numbers.printed_text(match.group(1), unit))
    ordered = sorted(found, key=lambda n: found[n][:2])
    return [Shown(name, figures[name], found[name][2]) for name in ordered]


def _prints(fig: dict[str, Any], printed: float, decimals: int, word: str | None) -> bool:
    """Whether ``printed`` (with ``decimals`` decimals, before ``word``) is this figure."""
    try:
        value = float(fig["value"])
        unit = str(fig["unit"])
        if word is not None and word in units.UNITS:
            value = units.convert(value, unit, word)  # a unit of another dimension: ValueError
    except (KeyError, TypeError, ValueError):
        return False
    return abs(value - printed) <= 0.5 * 10.0**-decimals * (1 + 1e-9)
