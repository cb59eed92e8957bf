"""The measured decode step: how long one step takes against the batch, a line per context.

Why a post wants it: a decode step reads every weight once whatever the batch, so on a real card
a step for the day's whole batch costs barely more than a step for one request, which is where
batching's throughput comes from. The figures are the bench's (results['measured'], read from
days/dayNN.measured/), never simulated: without a measurement the chart is not drawn (the
pipeline says so), rather than drawn from anything else.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from engine import numbers
from engine.charts import style
from engine.charts.registry import register_chart
from engine.charts.style import FONT, OKABE_ITO, Size

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def needs_a_measurement(results: dict[str, Any]) -> str | None:
    """Why the chart cannot be drawn from these results, or None when it can."""
    if not results.get("measured"):
        return "no measurement to draw (the spec's measured: found no file; run the day's bench)"
    return None


def _curves(points: list[dict[str, Any]]) -> dict[int, list[tuple[int, float]]]:
    """(batch, milliseconds) per context, batches ascending."""
    curves: dict[int, list[tuple[int, float]]] = {}
    for p in points:
        curves.setdefault(int(p["context"]), []).append((int(p["batch"]), float(p["seconds"]) * 1e3))
    return {context: sorted(rows) for context, rows in sorted(curves.items())}


def _spread(ends: list[tuple[int, float, str]], gap: float) -> list[tuple[int, float, str]]:
    """Line-end labels moved apart where lines end close together: each label at least ``gap``
    above the one below it that ends at the same batch (their order kept)."""
    placed: list[tuple[int, float, str]] = []
    for batch, y, label in sorted(ends, key=lambda e: (e[0], e[1])):
        below = [p for p in placed if p[0] == batch]
        if below and y - below[-1][1] < gap:
            y = below[-1][1] + gap
        placed.append((batch, y, label))
    return placed


def _shades(n: int) -> list[str]:
    """The shortest context, which the title is about, in the palette's blue; the longer ones in
    greys from light to dark, so the eye reads 'longer context, slower step' and the palette
    stays the colour-blind-safe one (engine.charts.style)."""
    greys = [f"#{v:02x}{v:02x}{v:02x}" for v in np.linspace(0xB0, 0x40, max(n - 1, 1)).astype(int)]
    return [OKABE_ITO["blue"], *greys[: n - 1]]


@register_chart("step_time", needs=(), size="linkedin", drawn_when=needs_a_measurement)
def step_time(results: dict[str, Any], size: Size | None = None) -> tuple[Figure, str]:
    measured = results["measured"]
    curves = _curves(measured["step_time"]["points"])
    shortest = min(curves)
    (b1, t1), (bn, tn) = curves[shortest][0], curves[shortest][-1]
    fig = style.new_figure(size or "linkedin")
    ax = fig.add_axes((0.09, 0.2, 0.76, 0.6))
    top = max(ms for rows in curves.values() for _, ms in rows) * 1.12
    ends = []
    for (context, rows), colour in zip(curves.items(), _shades(len(curves))):
        batches, ms = zip(*rows)
        on_top = 3 if context == shortest else 2  # the line the title is about, over the rest
        ax.plot(batches, ms, color=colour, linewidth=3, marker="o", markersize=7, zorder=on_top)
        ends.append((batches[-1], ms[-1], style.context_label(context)))
    for batch, y, label in _spread(ends, gap=top * 0.06):
        ax.annotate(
            label,
            (batch, y),
            xytext=(8, 0),
            textcoords="offset points",
            va="center",
            fontsize=FONT["small"],
            color=style.MUTED,
            annotation_clip=False,
        )
    ax.annotate(
        f"{numbers.fixed(tn)} ms for {bn}",
        (bn, tn),
        xytext=(-12, -28),
        textcoords="offset points",
        ha="right",
        fontsize=FONT["base"],
        fontweight="bold",
    )
    ax.annotate(
        f"{numbers.fixed(t1)} ms for {b1}",
        (b1, t1),
        xytext=(4, -28),
        textcoords="offset points",
        fontsize=FONT["base"],
        fontweight="bold",
    )
    batches_all = sorted({b for rows in curves.values() for b, _ in rows})
    ax.set_xscale("log", base=2)
    ax.set_xticks(batches_all, [str(b) for b in batches_all])
    ax.minorticks_off()
    ax.set_ylim(0, top)
    ax.set_xlabel("requests decoded together (batch)")
    ax.set_ylabel("one decode step (ms)")
    ax.grid(True, color=style.LIGHT_GREY)
    ax.set_axisbelow(True)
    ax.text(
        1.07,
        1.02,
        "context",
        transform=ax.transAxes,
        ha="center",
        fontsize=FONT["small"],
        color=style.MUTED,
    )
    ratio = tn / t1
    style.heading(
        fig, f"{bn} requests per step cost {numbers.multiple(ratio, 2)} one: the weights are read once"
    )
    settings = measured["settings"]
    source = (
        f"{measured['source']}: {settings['model']['name']} shape, {settings['dtype']}, random "
        f"weights; median of {settings['repeats']} steps"
    )
    style.source_note(fig, source)
    sentences = [
        f"Line chart of one decode step's time against batch size, one line per context, {source}.",
        f"At {style.context_label(shortest)} tokens: {numbers.fixed(t1)} ms for {b1} request, {numbers.fixed(tn)} ms for {bn}.",
    ]
    longest = max(curves)
    (lb, lt) = curves[longest][-1]
    sentences.append(f"At {style.context_label(longest)}: {numbers.fixed(lt)} ms for {lb}.")
    return fig, style.fit_alt(sentences)
