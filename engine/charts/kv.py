"""KV-cache charts: how many requests fit per context, and where the card's memory goes.

Both read results['kv_cache']: the main view (the post's table) and any compare views (vLLM's
own accounting, a GQA model, …), each with its plan.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine import numbers
from engine.charts import labels, style
from engine.charts.registry import register_chart
from engine.charts.style import FONT, OKABE_ITO, Size

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _views(kv: dict[str, Any]) -> list[dict[str, Any]]:
    return [kv["main"], *kv.get("compare", [])]


def _fit_rows(view: dict[str, Any]) -> list[tuple[int, int]]:
    return [(r["context"], r["max_requests"]) for r in view["plan"]["contexts"]]


def halves_per_doubling(kv: dict[str, Any]) -> bool:
    """The engine's own verdict on the main table (experiments.kv_cache checks it on the
    numbers); charts read it rather than judge the table a second way."""
    return bool(kv.get("halves_when_context_doubles"))


# Compare views: dashed, with hollow markers and a thinner line, drawn under the main view, so a
# compare line that runs right beside the main one (the same model under another budget) still
# reads as a second line.
COMPARE_DASHES = [(0, (5, 2.5)), (0, (1.5, 1.5)), (0, (6, 2, 1.5, 2))]


@register_chart("kv_fit", needs=("kv_cache",), size="linkedin")
def kv_fit(results: dict[str, Any], size: Size | None = None) -> tuple[Figure, str]:
    """Requests that fit vs context, log-log: the 'halves when the context doubles' slope.

    The main view (the post's table) is the solid line; its highlighted rows get the big
    numbers, in boxes of its colour pointing at its own ringed points and set below the lines,
    where no other view runs. Compare views are dashed with hollow markers.
    """
    from matplotlib.ticker import FixedLocator, NullLocator

    kv = labels.section(results, "kv_cache", "kv_fit")
    fig = style.new_figure(size or "linkedin")
    views = _views(kv)
    notes = _source_lines(kv)
    bottom = 0.21 + _line_height(fig, FONT["source"]) * (len(notes) - 1)
    ax = fig.add_axes((0.11, bottom, 0.86, 0.86 - bottom))
    highlight = set(kv.get("highlight", []))
    all_y: list[int] = []
    main_rows: list[tuple[int, int]] = []
    for i, view in enumerate(views):
        rows = [  # 0 cannot sit on a log axis; past its context limit a model serves nothing
            (r["context"], r["max_requests"])
            for r in view["plan"]["contexts"]
            if r["max_requests"] > 0 and r.get("within_max_model_len", True)
        ]
        if not rows:
            continue
        xs, ys = zip(*rows)
        all_y += ys
        colour = style.VIEW_COLOURS[i % len(style.VIEW_COLOURS)]
        marker = style.VIEW_MARKERS[i % len(style.VIEW_MARKERS)]
        if i == 0:
            main_rows = rows
            ax.plot(xs, ys, color=colour, marker=marker, label=labels.view_label(view), zorder=4)
        else:
            ax.plot(
                xs,
                ys,
                color=colour,
                marker=marker,
                label=labels.view_label(view),
                zorder=3,
                linewidth=2.2,
                linestyle=COMPARE_DASHES[(i - 1) % len(COMPARE_DASHES)],
                markerfacecolor="white",
                markeredgewidth=2,
                markersize=8,
            )
    main_colour = style.VIEW_COLOURS[0]
    for c, n in main_rows:
        if c in highlight:
            ax.plot(
                [c],
                [n],
                marker="o",
                markersize=20,
                markerfacecolor="none",
                zorder=5,
                markeredgecolor=OKABE_ITO["black"],
                markeredgewidth=2,
            )
            ax.annotate(
                f"{n:,}",
                (c, n),
                xytext=(22, -24),
                textcoords="offset points",
                ha="left",
                va="top",
                fontsize=FONT["callout"],
                fontweight="bold",
                color="white",
                zorder=6,
                bbox={"boxstyle": "round,pad=0.25", "facecolor": main_colour, "edgecolor": "none"},
                arrowprops={
                    "arrowstyle": "-",
                    "color": main_colour,
                    "linewidth": 2,
                    "shrinkA": 0,
                    "shrinkB": 10,
                },
            )
        elif not highlight:
            ax.annotate(
                f"{n:,}",
                (c, n),
                xytext=(6, -10),
                textcoords="offset points",
                ha="left",
                va="top",
                fontsize=FONT["small"],
                color=main_colour,
            )
    if all_y:
        _slope_triangle(ax, [(c, n) for c, n in _fit_rows(kv["main"]) if n > 0], min(all_y))
    ax.set_xscale("log", base=2)
    ax.set_yscale("log", base=2)
    contexts = sorted({c for view in views for c, _ in _fit_rows(view)})
    ax.xaxis.set_major_locator(FixedLocator(contexts))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([style.context_label(c) for c in contexts])
    if all_y:
        lo, hi = min(all_y), max(all_y)
        ticks = [2**k for k in range(lo.bit_length() - 1, hi.bit_length() + 1)]
        ax.yaxis.set_major_locator(FixedLocator(ticks))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.set_yticklabels([f"{t:,}" for t in ticks])
        # headroom above the data for the legend, one doubling per legend row, and below it
        # for the callouts that hang under the main line
        legend_rows = len(views) if len(views) > 1 else 0
        ax.set_ylim(ticks[0] / (4 if highlight else 1.3), ticks[-1] * 2.0 ** (1 + 1.1 * legend_rows))
    ax.set_xlim(contexts[0] / 1.4, contexts[-1] * 1.4)
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("requests that fit at once")
    ax.grid(True, color=style.LIGHT_GREY, linewidth=1)
    ax.set_axisbelow(True)
    style.heading(fig, "Requests that fit in the KV cache")
    if len(views) > 1:
        ax.legend(loc="upper right", handlelength=3)
    _write_sources(fig, notes)
    return fig, _kv_fit_alt(kv)


def _source_lines(kv: dict[str, Any]) -> list[str]:
    """The main view's source, then one line for every compare view: each line on the chart
    is accounted for, not just the first."""
    return [labels.kv_source(kv)] + ([labels.compare_source(kv)] if kv.get("compare") else [])


def _line_height(fig: Figure, points: float) -> float:
    """One line of text at `points`, as a fraction of the figure's height."""
    return points * 1.4 / (fig.get_size_inches()[1] * 72)


def _write_sources(fig: Figure, notes: list[str]) -> None:
    """Source lines stacked up from the bottom-left corner, the first on top."""
    for k, note in enumerate(reversed(notes)):
        style.source_note(fig, note, y=0.015 + k * _line_height(fig, FONT["source"]))


def _slope_triangle(ax: Any, rows: list[tuple[int, int]], floor: int) -> None:
    """A right triangle in the empty lower-left corner: context ×2 across, requests ÷2 down.

    Its hypotenuse has the slope of 'halves when the context doubles'; a line parallel to it
    is that rule holding.
    """
    contexts = [c for c, _ in rows]
    if len(contexts) < 2 or contexts[1] != 2 * contexts[0]:
        return
    a, b = contexts[0], contexts[1]
    top = 2 * floor  # low, under the callouts
    ax.plot([a, b, b, a], [top, top, top / 2, top], color=style.MUTED, linewidth=1.5)
    ax.text(
        (a * b) ** 0.5,
        top * 1.08,
        "context ×2",
        ha="center",
        va="bottom",
        fontsize=FONT["small"],
        color=style.MUTED,
    )
    ax.text(
        b * 1.08,
        top / 2**0.5,
        "requests ÷2",
        ha="left",
        va="center",
        fontsize=FONT["small"],
        color=style.MUTED,
    )


def _kv_fit_alt(kv: dict[str, Any]) -> str:
    main = kv["main"]
    rows = _fit_rows(main)
    fit = dict(rows)
    shown = [c for c in kv.get("highlight", []) if c in fit] or [rows[0][0], rows[-1][0]]
    listing = "; ".join(f"{c:,}-token context: {fit[c]:,} fit" for c in shown)
    sentences = [
        f"Log-log chart of requests that fit in the KV cache by context length, "
        f"{kv.get('source', 'calculated')} for {labels.view_label(main)}.",
        f"{listing}.",
    ]
    if halves_per_doubling(kv):
        sentences.append("The count halves each time the context doubles.")
    for view in kv.get("compare", []):
        other = dict(_fit_rows(view))
        c = shown[0]
        if c in other:
            sentences.append(f"{labels.view_label(view)}: {other[c]:,} at {c:,}.")
    return style.fit_alt(sentences)


# ---- memory breakdown -----------------------------------------------------------------------

SEGMENTS = (
    ("weights_bytes", "weights", OKABE_ITO["blue"]),
    ("activation_and_overhead_bytes", "activations + overhead", OKABE_ITO["orange"]),
    ("kv_cache_bytes", "KV cache", OKABE_ITO["green"]),
    ("unused_bytes", "unused", style.GREY),
)


@register_chart("memory_breakdown", needs=("kv_cache",), size="linkedin")
def memory_breakdown(results: dict[str, Any], size: Size | None = None) -> tuple[Figure, str]:
    """One stacked bar per view: weights, activations + overhead, KV cache, unused (GiB)."""
    kv = labels.section(results, "kv_cache", "memory_breakdown")
    views = _views(kv)
    fig = style.new_figure(size or "linkedin")
    notes = _source_lines(kv)
    bottom = 0.22 + _line_height(fig, FONT["source"]) * (len(notes) - 1)
    ax = fig.add_axes((0.03, bottom, 0.94, 0.79 - bottom))
    widest = max(v["plan"]["breakdown"]["total_bytes"] for v in views) / 2**30
    named: set[str] = set()
    for row, view in enumerate(views):
        y = len(views) - 1 - row
        left = 0.0
        parts = view["plan"]["breakdown"]
        for key, name, colour in SEGMENTS:
            value = parts.get(key, 0) / 2**30
            if value <= 0:
                continue
            ax.barh(
                y,
                value,
                left=left,
                height=0.5,
                color=colour,
                edgecolor="white",
                linewidth=1.5,
                label=None if name in named else name,
            )
            named.add(name)
            if value >= 0.09 * widest:  # label only segments wide enough to hold it
                ink = "white" if colour != style.GREY else style.INK
                ax.text(
                    left + value / 2,
                    y,
                    numbers.count(value),  # GiB: 8, 1.5, as style.gib writes a size
                    ha="center",
                    va="center",
                    color=ink,
                    fontsize=FONT["base"],
                    fontweight="bold",
                )
            left += value
        ax.text(
            0,
            y + 0.3,
            f"{labels.view_label(view)}  ({style.gib(parts['total_bytes'])})",
            ha="left",
            va="bottom",
            fontsize=FONT["base"],
            color=style.INK,
        )
    ax.set_ylim(-0.5, len(views) - 0.2)
    ax.set_xlim(0, widest * 1.01)
    ax.set_yticks([])
    ax.spines["left"].set_visible(False)
    ax.set_xlabel("GiB")
    order = {name: i for i, (_, name, _) in enumerate(SEGMENTS)}
    pairs = sorted(zip(*ax.get_legend_handles_labels()), key=lambda hn: order[hn[1]])
    fig.legend(
        [h for h, _ in pairs],
        [n for _, n in pairs],
        loc="upper left",
        bbox_to_anchor=(0.02, 0.9),
        ncol=4,
        handlelength=1.2,
        columnspacing=1.2,
    )
    style.heading(fig, "Where the GPU's memory goes")
    _write_sources(fig, notes)
    return fig, _breakdown_alt(kv, views)


def _breakdown_alt(kv: dict[str, Any], views: list[dict[str, Any]]) -> str:
    sentences = [f"Stacked bars of GPU memory, {kv.get('source', 'calculated')}."]
    for view in views:
        parts = view["plan"]["breakdown"]
        pieces = ", ".join(
            f"{style.gib(parts.get(key, 0))} {name}" for key, name, _ in SEGMENTS if parts.get(key, 0) > 0
        )
        sentences.append(f"{labels.view_label(view)}: {pieces}.")
    return style.fit_alt(sentences)
