"""The terminal screenshot: a lab's transcript drawn as a terminal window.

Why draw it instead of screenshotting: a real screenshot carries the author's fonts, theme and
window size, changes on every run, and cannot be rebuilt from the stored measurement. This one
is drawn from the transcript kept with the figures, at each platform's size, in a monospace
font that ships with matplotlib, so the same measurement gives the same bytes on any machine.
Long output is elided in the middle, visibly ("… 9 lines not shown …"), never silently; lines
too wide for the window wrap onto the next row, as in a terminal.
"""

from __future__ import annotations

import re
import textwrap
from typing import TYPE_CHECKING, Any

from engine.charts import labels, style
from engine.charts.registry import register_chart
from engine.charts.style import FONT, MIN_FONT_PT, Size

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
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@register_chart("terminal", needs=("lab",), size="x")
def terminal(results: dict[str, Any], size: Size | None = None) -> tuple[Figure, str]:
    """The transcript (or the lines the spec selects) in a terminal window, with its prompt."""
    lab = labels.section(results, "lab", "terminal")
    fig = style.new_figure(size or "x")
    width_pt, height_pt = (v * 72 for v in fig.get_size_inches())
    lines = transcript_lines(lab)
    prompt = f"$ {lab['command']}"
    # The window: 3% margins, a title bar, a footer line for the source under the window.
    margin = 0.03
    footer_pt = FONT["source"] * 1.4 * 1.5
    bar_pt = 30.0
    win_left, win_right = margin * width_pt, (1 - margin) * width_pt
    win_bottom, win_top = footer_pt + 8, height_pt - margin * width_pt
    pad = 13.0
    body_w = win_right - win_left - 2 * pad
    body_h = win_top - bar_pt - win_bottom - 2 * pad
    font, cols, rows = _fit(body_w, body_h, [prompt, *lines])
    shown = elide(wrap([prompt, *lines], cols), rows)
    # A short transcript gets a window its own height, centred in the room, not a tall empty one.
    spare = body_h - len(shown) * font * LINE_SPACING
    if spare > 0:
        win_top -= spare / 2
        win_bottom += spare / 2
    _window(
        fig,
        width_pt,
        height_pt,
        win_left,
        win_right,
        win_bottom,
        win_top,
        bar_pt,
        f"{lab['lab_folder']} · {lab['source']}",
    )
    line_h = font * LINE_SPACING
    y = win_top - bar_pt - pad
    for i, line in enumerate(shown):
        text = clip(line, cols)
        colour, weight = TEXT, "normal"
        if i == 0:
            fig.text(_x(win_left + pad, width_pt), _y(y, height_pt), "$", **_mono(font, PROMPT, "bold"))
            text, colour, weight = clip(line[2:], cols - 2), "#FFFFFF", "bold"
            fig.text(
                _x(win_left + pad + 2 * font * CHAR_WIDTH_EM, width_pt),
                _y(y, height_pt),
                text,
                **_mono(font, colour, weight),
            )
        elif line.startswith(_ELISION_MARK):
            fig.text(
                _x(win_left + pad, width_pt),
                _y(y, height_pt),
                text,
                **_mono(font, ELIDED, "normal"),
                style="italic",
            )
        else:
            fig.text(_x(win_left + pad, width_pt), _y(y, height_pt), text, **_mono(font, colour, weight))
        y -= line_h
    when = lab.get("when", "")
    style.source_note(fig, f"Transcript of the lab run, {lab['source']}, {when}.", y=0.012)
    return fig, alt_text(lab, shown)


_ELISION_MARK = "⋯ "


def transcript_lines(lab: dict[str, Any]) -> list[str]:
    """The transcript's lines as a terminal would show them: carriage-return progress collapsed
    to its last state, colour codes removed, tabs expanded, trailing blank lines dropped; then
    the spec's first_line..last_line selection."""
    out = []
    for raw in lab["transcript"]["text"].split("\n"):  # not splitlines: a lone \r is progress
        line = _ANSI.sub("", raw.rstrip("\r").rsplit("\r", 1)[-1]).expandtabs(8).rstrip()
        out.append(line)
    while out and not out[-1]:
        out.pop()
    sel = lab.get("terminal") or {}
    first = int(sel.get("first_line") or 1)
    last = sel.get("last_line")
    return out[first - 1 : last]


def elide(lines: list[str], room: int) -> list[str]:
    """At most `room` lines: the head (with the prompt) and the tail, joined by a line that says
    how many were left out. The tail gets the larger share: a lab's summary is at its end."""
    if len(lines) <= room:
        return lines
    keep = max(room - 1, 2)
    head = max(1, keep * 2 // 5)
    tail = keep - head
    hidden = len(lines) - head - tail
    return [*lines[:head], f"{_ELISION_MARK}{hidden} lines not shown ⋯", *lines[len(lines) - tail :]]


def clip(line: str, cols: int) -> str:
    """A line cut to `cols` characters, ending in '…' when something was cut."""
    return line if len(line) <= cols else line[: max(cols - 1, 1)] + "…"


def wrap(lines: list[str], cols: int) -> list[str]:
    """Lines wider than the window continue on the next row, broken at a space where there is
    one and indented like the line they continue, so a wrapped line still reads as one."""
    out = []
    for line in lines:
        if len(line) <= cols:
            out.append(line)
            continue
        indent = " " * min(len(line) - len(line.lstrip(" ")), cols // 2)
        out += textwrap.wrap(line, cols, subsequent_indent=indent, drop_whitespace=True) or [""]
    return out


def _fit(body_w: float, body_h: float, lines: list[str]) -> tuple[float, int, int]:
    """The largest font (MIN_FONT_PT..MAX_FONT_PT) at which the widest line and every line fit
    unwrapped (a table's columns stay columns); else the smallest legible one, where wrapping
    and elision do the rest."""
    widest = max((len(line) for line in lines), default=1)
    font = float(MAX_FONT_PT)
    while font > MIN_FONT_PT:
        cols = int(body_w / (font * CHAR_WIDTH_EM))
        rows = int(body_h / (font * LINE_SPACING))
        if cols >= widest and rows >= len(lines):
            break
        font -= 0.5
    return font, int(body_w / (font * CHAR_WIDTH_EM)), int(body_h / (font * LINE_SPACING))


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


def alt_text(lab: dict[str, Any], shown: list[str], limit: int = 250) -> str:
    """'Terminal output of "python lab.py" in day01.lab, measured on …:' then the last output
    lines that fit the limit, in order: a lab's summary is at its end."""
    intro = f'Terminal output of "{lab["command"]}" in {lab["lab_folder"]}, {lab["source"]}:'
    body = [
        " ".join(line.split()) for line in shown[1:] if line.strip() and not line.startswith(_ELISION_MARK)
    ]
    picked: list[str] = []
    for line in reversed(body):
        candidate = " ".join([intro, *[f"{b};" for b in [line, *picked][:-1]], [line, *picked][-1]])
        if len(candidate) > limit:
            break
        picked.insert(0, line)
    if not picked:
        return intro[:limit]
    return " ".join([intro, *[f"{b};" for b in picked[:-1]], picked[-1]])
