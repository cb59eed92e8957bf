"""Day 4 queueing charts: the hockey stick of waiting against utilisation, and one shared line
against separate lines.

Rows come from engine.queueing's summaries (times in ms under keys ending in _ms). The M/M/1
rows may name time in system either 'mean_time_in_system_ms' or 'mean_sojourn_ms' (sojourn is
the queueing word for it), and the closed form either flat or under 'expected'; both are read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from engine import numbers
from engine.charts import labels, style
from engine.charts.registry import register_chart
from engine.charts.style import FONT, OKABE_ITO, Size

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def _first(row: dict[str, Any], *keys: str) -> float | None:
    for key in keys:
        node: Any = row
        for part in key.split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            return float(node)
    return None


def _mean(row: dict[str, Any]) -> float:
    value = _first(row, "mean_time_in_system_ms", "mean_sojourn_ms")
    if value is None:
        raise ValueError("queueing.mm1 rows need mean_time_in_system_ms (or mean_sojourn_ms)")
    return value


def _closed(row: dict[str, Any]) -> float | None:
    return _first(row, "closed_form_mean_ms", "expected.mean_sojourn_ms")


@register_chart("queue_hockey_stick", needs=("queueing",), size="linkedin")
def queue_hockey_stick(results: dict[str, Any], size: Size | None = None) -> tuple[Figure, str]:
    """Mean time in system vs utilisation: simulated points on the curve S / (1 − ρ)."""
    queueing = labels.section(results, "queueing", "queue_hockey_stick")
    rows = sorted(queueing.get("mm1") or [], key=lambda r: r["utilisation"])
    if not rows:
        raise ValueError("chart 'queue_hockey_stick' needs queueing.mm1 rows")
    rho = np.array([r["utilisation"] for r in rows])
    mean = np.array([_mean(r) for r in rows])
    service = _first(queueing, "service_ms") or _first(rows[0], "service_mean_ms")
    closed0 = _closed(rows[0])
    if service is None and closed0 is not None:
        service = closed0 * (1 - rows[0]["utilisation"])
    fig = style.new_figure(size or "linkedin")
    ax = fig.add_axes((0.12, 0.22, 0.84, 0.62))
    if service is not None:
        grid = np.linspace(0, rho.max(), 400)
        ax.plot(
            grid,
            service / (1 - grid),
            color=OKABE_ITO["sky_blue"],
            linewidth=3,
            label="closed form  S / (1 − ρ)",
        )
    ax.plot(
        rho,
        mean,
        linestyle="none",
        marker="o",
        markersize=12,
        color=OKABE_ITO["vermillion"],
        label="simulated",
    )
    for r, m in zip(rho, mean):
        if r >= 0.85:
            ax.annotate(
                numbers.fixed(m, 0) + " ms",
                (r, m),
                xytext=(-10, 4),
                textcoords="offset points",
                ha="right",
                fontsize=FONT["base"],
                fontweight="bold",
            )
    ax.set_xlim(0, 1)
    ax.set_ylim(0, mean.max() * 1.12)
    style.thousands_ticks(ax.yaxis)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 0.9, 1.0], ["0", "25%", "50%", "75%", "90%", "100%"])
    ax.set_xlabel("utilisation (how busy the server is)")
    ax.set_ylabel("mean time in system (ms)")
    ax.grid(True, color=style.LIGHT_GREY)
    ax.set_axisbelow(True)
    ax.legend(loc="upper left")
    style.heading(fig, "Waiting explodes as the server nears 100% busy")
    requests = queueing.get("requests") or rows[0].get("requests")
    detail = "M/M/1" + (f", {requests:,} requests per point" if requests else "")
    if service is not None:
        detail += f", service {numbers.setting(service)} ms"
    style.source_note(fig, labels.queueing_source(queueing, detail))
    listing = "; ".join(f"{numbers.pct(r, 0)} busy: {numbers.fixed(m)} ms" for r, m in zip(rho, mean))
    sentences = [
        f"Mean time in system against utilisation, {labels.queueing_source(queueing, 'M/M/1')}, "
        "on the closed-form curve S/(1-rho).",
        f"{listing}.",
    ]
    return fig, style.fit_alt(sentences)


ARRANGEMENTS = (
    ("shared", "one shared line", OKABE_ITO["blue"]),
    ("separate_random", "separate lines, random", OKABE_ITO["vermillion"]),
    ("separate_round_robin", "separate lines, round robin", OKABE_ITO["orange"]),
)
METRICS = (("mean_wait_ms", "mean wait"), ("p99_wait_ms", "p99 wait"))


@register_chart("shared_vs_separate", needs=("queueing",), size="linkedin")
def shared_vs_separate(results: dict[str, Any], size: Size | None = None) -> tuple[Figure, str]:
    """Mean and p99 wait: one shared line feeding every server against a line per server."""
    queueing = labels.section(results, "queueing", "shared_vs_separate")
    lines = queueing.get("lines")
    if not lines or "shared" not in lines:
        raise ValueError("chart 'shared_vs_separate' needs queueing.lines with a 'shared' row")
    present = [(k, name, colour) for k, name, colour in ARRANGEMENTS if lines.get(k)]
    fig = style.new_figure(size or "linkedin")
    ax = fig.add_axes((0.03, 0.17, 0.94, 0.56))
    width = 0.8 / len(present)
    top = max(lines[k][m] for k, _, _ in present for m, _ in METRICS)
    for j, (key, name, colour) in enumerate(present):
        xs = np.arange(len(METRICS)) + (j - (len(present) - 1) / 2) * width
        values = [lines[key][m] for m, _ in METRICS]
        ax.bar(xs, values, width=width * 0.92, color=colour, label=name)
        for x, v in zip(xs, values):
            ax.text(
                x,
                v + top * 0.02,
                numbers.fixed(v, 0) + " ms",
                ha="center",
                va="bottom",
                fontsize=FONT["base"],
                fontweight="bold",
            )
    ax.set_xticks(np.arange(len(METRICS)), [label for _, label in METRICS], fontsize=FONT["base"])
    ax.set_yticks([])
    ax.spines["left"].set_visible(False)
    ax.set_ylim(0, top * 1.15)
    fig.legend(
        loc="upper left", bbox_to_anchor=(0.02, 0.86), ncol=len(present), handlelength=1.2, columnspacing=1.0
    )
    servers, load = lines.get("servers"), lines.get("load")
    setting = f"{servers} servers at {numbers.pct(load, 0)} load" if servers and load else "same load"
    headline = "One shared line beats separate lines"
    style.heading(fig, headline)
    style.source_note(fig, labels.queueing_source(queueing, setting))
    sentences = [f"Bar chart of waiting time, {labels.queueing_source(queueing, setting)}."]
    for metric, label in METRICS:
        listing = ", ".join(f"{name} {numbers.fixed(lines[k][metric])} ms" for k, name, _ in present)
        sentences.append(f"{label.capitalize()}: {listing}.")
    if lines.get("wait_ratio"):  # the engine's figure (experiments.queueing), not a second division
        sentences.insert(1, f"Separate lines wait {numbers.multiple(lines['wait_ratio'])} longer on average.")
    return fig, style.fit_alt(sentences)
