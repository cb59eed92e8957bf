"""The scoreboard: the one picture the author posts.

Left, how sharing the batch decides throughput (each policy's GPU busy share, the throughput
multiple called out); right, how memory caps the batch (context → requests that fit, the
post's highlighted rows emphasised). Portrait sizes stack the two halves instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine import numbers
from engine.charts import labels, style
from engine.charts.kv import halves_per_doubling
from engine.charts.policy_comparison import ordered_policies, policy_colour
from engine.charts.registry import register_chart
from engine.charts.style import FONT, OKABE_ITO, Size
from engine.numbers import multiple as fmt_multiple  # the posts' own format: one figure, one spelling

if TYPE_CHECKING:
    from matplotlib.figure import Figure

HIGHLIGHT = OKABE_ITO["yellow"]
Box = tuple[float, float, float, float]  # left, bottom, width, height in figure fractions
# Portrait (LinkedIn 4:5) stacks the halves, so each gets the full width and twice the height
# of a side-by-side half: its text is set this much larger to fill that room and read on a phone.
PORTRAIT_SCALE = 1.25


@register_chart("scoreboard", needs=("kv_cache", "batching"), size="x")
def scoreboard(results: dict[str, Any], size: Size | None = None) -> tuple[Figure, str]:
    """Utilisation bars with the multiple, beside the requests-that-fit table."""
    batching, kv = results.get("batching"), results.get("kv_cache")
    if not batching and not kv:
        raise ValueError("chart 'scoreboard' needs a 'batching' or a 'kv_cache' section in results")
    fig = style.new_figure(size or "x")
    portrait = style.size_of(fig).portrait
    notes = []
    if batching:
        notes.append(f"Batching: {labels.batching_source(batching)}.")
    if kv:
        notes.append(f"KV cache: {labels.kv_source(kv)}.")
    bottom = _lines(fig, len(notes), FONT["source"]) + 0.02
    top = 1 - _lines(fig, 1, FONT["title"]) - 0.04
    boxes = _layout(bool(batching), bool(kv), portrait, bottom, top)
    k = PORTRAIT_SCALE if portrait else 1.0
    if batching:
        _bars(fig, boxes["bars"], batching, k)
    if kv:
        _table(fig, boxes["table"], kv, k)
    day = results.get("day")
    heading = f"Day {day}: {results.get('title', '')}".rstrip(": ") if day else results.get("title", "")
    style.heading(fig, heading)
    for i, note in enumerate(reversed(notes)):
        style.source_note(fig, note, y=0.012 + _lines(fig, i, FONT["source"]))
    return fig, _alt(batching, kv)


def _lines(fig: Figure, count: int, points: float) -> float:
    """Height of `count` lines of text at `points`, as a fraction of the figure's height."""
    return count * points * 1.4 / (fig.get_size_inches()[1] * 72)


def _layout(has_bars: bool, has_table: bool, portrait: bool, bottom: float, top: float) -> dict[str, Box]:
    """Section boxes (left, bottom, width, height): side by side, or stacked when portrait."""
    height = top - bottom
    if has_bars and has_table:
        if portrait:
            half = height * 0.45
            return {"bars": (0.05, top - half, 0.9, half), "table": (0.05, bottom, 0.9, height - half - 0.03)}
        return {"bars": (0.04, bottom, 0.44, height), "table": (0.54, bottom, 0.43, height)}
    return {"bars": (0.05, bottom, 0.9, height), "table": (0.05, bottom, 0.9, height)}


def _headings(fig: Figure, box: Box, title: str, subtitle: str, k: float = 1.0) -> float:
    """A section's title and one muted line under it; returns the fraction of height they use."""
    left, bottom, _, height = box
    top = bottom + height
    big, small = (FONT["title"] - 2) * k, FONT["small"] * k
    fig.text(left, top, title, fontsize=big, fontweight="bold", va="top")
    fig.text(left, top - _lines(fig, 1, big), subtitle, fontsize=small, color=style.MUTED, va="top")
    return _lines(fig, 1, big) + _lines(fig, 1, small) + 0.02


def _bars(fig: Figure, box: Box, batching: dict[str, Any], k: float = 1.0) -> None:
    from matplotlib.text import Annotation

    left, bottom, width, height = box
    used = _headings(fig, box, "Sharing the batch", "GPU busy: share of slot-steps doing work", k)
    multiple = batching.get("multiple")
    callout = _lines(fig, 1, 32 * k) if multiple else 0.0
    pols = ordered_policies(batching)
    ax = fig.add_axes((left, bottom + callout + 0.02, width, height - used - callout - 0.02))
    ys = list(range(len(pols)))[::-1]
    for y, (name, pol) in zip(ys, pols):
        value = pol["utilisation"] * 100
        ax.barh(y, 100, color=style.LIGHT_GREY, height=0.5)
        ax.barh(y, value, color=policy_colour(name), height=0.5)
        ax.text(
            0,
            y + 0.3,
            name,
            fontsize=(FONT["base"] + 2) * k,
            va="bottom",
            fontweight="bold",
            color=policy_colour(name),
        )
        inside = value > 35
        ax.text(
            value - 2 if inside else value + 2,
            y,
            numbers.fixed(value) + "%",
            va="center",
            ha="right" if inside else "left",
            fontsize=FONT["callout"] * k,
            fontweight="bold",
            color="white" if inside else style.INK,
        )
    ax.set_xlim(0, 100)
    ax.set_ylim(-0.4, len(pols) - 0.1)
    ax.set_axis_off()
    if multiple:
        big = fig.text(
            left,
            bottom,
            fmt_multiple(multiple),
            fontsize=32 * k,
            fontweight="bold",
            color=policy_colour("continuous"),
            va="bottom",
        )
        fig.add_artist(
            Annotation(
                "the throughput\nof static batching",
                xy=(1, 0),
                xycoords=big,
                xytext=(14, 6 * k),
                textcoords="offset points",
                fontsize=FONT["base"] * k,
                va="bottom",
            )
        )


def _table(fig: Figure, box: Box, kv: dict[str, Any], k: float = 1.0) -> None:
    left, bottom, width, height = box
    used = _headings(fig, box, "Memory caps the batch", "requests that fit in the KV cache, by context", k)
    rows = kv["main"]["plan"]["contexts"]
    highlight = set(kv.get("highlight", []))
    ax = fig.add_axes((left, bottom, width, height - used))
    ax.set_axis_off()
    n = len(rows)
    halves = halves_per_doubling(kv)
    ax.set_xlim(0, 1)
    ax.set_ylim(n - 0.5 + (0.9 if halves else 0.1), -1.1)  # row 0 at the top, header above it
    ax.text(0.0, -0.75, "context (tokens)", fontsize=FONT["small"] * k, color=style.MUTED, va="center")
    ax.text(0.42, -0.75, "requests", fontsize=FONT["small"] * k, color=style.MUTED, va="center")
    most = max(r["max_requests"] for r in rows) or 1
    for i, row in enumerate(rows):
        bold = row["context"] in highlight
        if bold:
            ax.axhspan(i - 0.47, i + 0.47, color=HIGHLIGHT, alpha=0.45, linewidth=0)
        weight = "bold" if bold else "normal"
        font = (FONT["base"] + (4 if bold else 0)) * k
        ax.text(0.02, i, f"{row['context']:,}", fontsize=font, fontweight=weight, va="center")
        ax.text(0.44, i, f"{row['max_requests']:,}", fontsize=font, fontweight=weight, va="center")
        ax.barh(
            i,
            0.4 * row["max_requests"] / most,
            left=0.6,
            height=0.42,
            color=OKABE_ITO["blue"] if bold else OKABE_ITO["sky_blue"],
        )
    if halves:
        ax.text(
            0.02,
            n + 0.05,
            "halves each time the context doubles",
            ha="left",
            va="center",
            fontsize=(FONT["small"] + 1) * k,
            color=style.INK,
            style="italic",
        )


def _alt(batching: dict[str, Any] | None, kv: dict[str, Any] | None) -> str:
    sentences = ["Scoreboard."]
    if batching:
        pols = ordered_policies(batching)
        busy = ", ".join(f"{n} {style.pct(p['utilisation'])}" for n, p in pols)
        multiple = batching.get("multiple")
        tail = f"; continuous gives {fmt_multiple(multiple)} the throughput" if multiple else ""
        sentences.append(f"GPU busy, {labels.batching_source(batching)}: {busy}{tail}.")
    if kv:
        fit = {r["context"]: r["max_requests"] for r in kv["main"]["plan"]["contexts"]}
        shown = [c for c in kv.get("highlight", []) if c in fit] or list(fit)[:2]
        listing = ", ".join(f"{c:,} tokens: {fit[c]:,}" for c in shown)
        sentences.append(f"Requests that fit, {kv.get('source', 'calculated')}: {listing}.")
    return style.fit_alt(sentences)
