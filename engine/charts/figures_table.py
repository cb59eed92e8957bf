"""The figures table: a lab's chosen figures as a clean table image, the machine in the footer.

One row per figure: what it is, the measured value in its best unit, and, where the spec pairs
it with a published figure, that figure beside it with its source named under the table, so a
reader can see at a glance how far this machine sits from the folklore. Each value is written by
engine.numbers from its value and unit, as the posts write it, so the image, its alt text and the
drafts can never disagree (a count is "4", never "4.0").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine import numbers
from engine.charts import labels, style
from engine.charts.registry import register_chart
from engine.charts.style import FONT, OKABE_ITO, Size

if TYPE_CHECKING:
    from matplotlib.figure import Figure

ROW_SHADE = "#F4F6F8"
MEASURED = OKABE_ITO["blue"]


@register_chart("figures_table", needs=("lab",), size="x")
def figures_table(results: dict[str, Any], size: Size | None = None) -> tuple[Figure, str]:
    """Measured figures (and published ones beside them) as a table."""
    from matplotlib.patches import Rectangle

    lab = labels.section(results, "lab", "figures_table")
    fig = style.new_figure(size or "x")
    portrait = style.size_of(fig).portrait
    height_pt = fig.get_size_inches()[1] * 72
    names = lab["table"]
    compare = (lab.get("reference") or {}).get("compare", {})
    ref_source = (lab.get("reference") or {}).get("source", {})
    k = 1.35 if portrait else 1.0
    day = results.get("day")
    style.heading(fig, f"Day {day}: {results.get('title', '')}" if day else results.get("title", ""))
    notes = [
        f"Measured on {lab['machine']['name']} ({lab['machine']['os']} {lab['machine']['kernel'].split('-')[0]}), "
        f"{lab['when']}" + (" (the lab changed since)" if lab["stale"] else "") + "."
    ]
    if compare:
        url = str(ref_source.get("url", "")).removeprefix("https://")
        notes.append(f"Published: {ref_source.get('short', '')}, {url}.")
    line = FONT["source"] * 1.45 / height_pt
    for i, note in enumerate(reversed(notes)):
        style.source_note(fig, note, y=0.015 + i * line)
    top = 1 - (FONT["title"] * 1.5 + 18) / height_pt
    bottom = 0.015 + len(notes) * line + 0.03
    header_h = FONT["small"] * k * 2.0 / height_pt
    row_h = min(
        (top - bottom - header_h) / max(len(names), 1),
        FONT["base"] * k * (4.6 if portrait else 3.4) / height_pt,
    )
    # A short table sits in the middle of the room left, not at the top of an empty page.
    spare = top - bottom - header_h - row_h * len(names)
    top -= spare / 3
    columns = _columns(bool(compare), portrait)
    y = top
    for key, (x, ha) in columns.items():
        shown = _published_heading(ref_source) if key == "published" else key
        fig.text(
            x,
            y - header_h / 2,
            shown,
            fontsize=FONT["small"] * k,
            color=style.MUTED,
            ha=ha,
            va="center",
            fontweight="bold",
        )
    y -= header_h
    fig.add_artist(
        Rectangle(
            (0.03, y), 0.94, 1.2 / height_pt, transform=fig.transFigure, facecolor=style.MUTED, linewidth=0
        )
    )
    for i, name in enumerate(names):
        f = lab["figures"][name]
        if i % 2 == 0:
            fig.add_artist(
                Rectangle(
                    (0.03, y - row_h),
                    0.94,
                    row_h,
                    transform=fig.transFigure,
                    facecolor=ROW_SHADE,
                    linewidth=0,
                )
            )
        mid = y - row_h / 2
        x, _ = columns["what"]
        about = fig.text(x, mid, _sentence(f["label"]), fontsize=FONT["base"] * k, va="center", ha="left")
        style.fit_width(fig, about, left=x, right=columns["measured"][0] - 0.17)
        mx, mha = columns["measured"]
        fig.text(
            mx,
            mid,
            numbers.figure_text(f),
            fontsize=(FONT["base"] + 5) * k,
            fontweight="bold",
            color=MEASURED,
            va="center",
            ha=mha,
        )
        if compare:
            px, pha = columns["published"]
            fig.text(
                px,
                mid,
                numbers.figure_text(compare[name]) if name in compare else "—",
                fontsize=(FONT["base"] + 1) * k,
                color=style.MUTED if name in compare else style.GREY,
                va="center",
                ha=pha,
            )
        y -= row_h
    return fig, _alt(lab, names, compare, ref_source)


def _published_heading(source: dict[str, Any]) -> str:
    return f"the table, ~{source['year']}" if source.get("year") else "published"


def _columns(with_published: bool, portrait: bool) -> dict[str, tuple[float, str]]:
    """Column name → (x, alignment): values right-aligned so their units line up."""
    if not with_published:
        return {"what": (0.045, "left"), "measured": (0.955, "right")}
    return {
        "what": (0.045, "left"),
        "measured": (0.72 if not portrait else 0.66, "right"),
        "published": (0.955, "right"),
    }


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _alt(lab: dict[str, Any], names: list[str], compare: dict[str, Any], source: dict[str, Any]) -> str:
    intro = f"Table of figures {lab['source']}:"
    rows = []
    for name in names:
        f = lab["figures"][name]
        tail = f" (published: {numbers.figure_text(compare[name])})" if name in compare else ""
        rows.append(f"{f['label']}, {numbers.figure_text(f)}{tail};")
    text = style.fit_alt_list(intro, rows)
    return text[:-1] + "." if text.endswith(";") else text
