"""Capacity-planning charts from a sweep: the throughput-versus-latency Pareto front, and the
cheapest setups that meet the targets as a table.

Both say so plainly when no configuration meets the targets, in the picture itself: an empty
chart would read as "nothing to see", a sentence reads as the finding it is.
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

from engine import numbers
from engine.charts import labels, style
from engine.charts.registry import register_chart
from engine.charts.style import FONT, OKABE_ITO, Size

if TYPE_CHECKING:
    from matplotlib.figure import Figure

MEETS = OKABE_ITO["green"]
FRONT = OKABE_ITO["blue"]
CHEAPEST = OKABE_ITO["vermillion"]
TABLE_ROWS = 5


@register_chart("pareto", needs=("sweep",), size="x")
def pareto(results: dict[str, Any], size: Size | None = None) -> tuple[Figure, str]:
    """Throughput per GPU against the chosen p99 latency; meeting the targets in green."""
    from matplotlib.ticker import FuncFormatter

    sw = labels.section(results, "sweep", "pareto")
    metric = sw["pareto_latency"]
    rows = sw.get("rows") or sw["pareto"]  # a big sweep keeps only its front in results.json
    ok = [
        r
        for r in rows
        if r.get("status") == "ok" and r.get(metric) is not None and r.get("throughput_tok_s_per_gpu")
    ]
    fig = style.new_figure(size or "x")
    ax = fig.add_axes((0.11, 0.2, 0.85, 0.62))
    missed = [r for r in ok if not r["meets_targets"]]
    met = [r for r in ok if r["meets_targets"]]
    ax.scatter(
        [r[metric] for r in missed],
        [r["throughput_tok_s_per_gpu"] for r in missed],
        s=30,
        color=style.GREY,
        label="misses the targets",
        zorder=2,
    )
    ax.scatter(
        [r[metric] for r in met],
        [r["throughput_tok_s_per_gpu"] for r in met],
        s=45,
        color=MEETS,
        label="meets the targets",
        zorder=3,
    )
    front = sw["pareto"]
    ax.plot(
        [r[metric] for r in front],
        [r["throughput_tok_s_per_gpu"] for r in front],
        color=FRONT,
        linewidth=2.5,
        marker="o",
        markersize=7,
        drawstyle="steps-post",
        label="Pareto front",
        zorder=4,
    )
    per_rate = len(sw["grid"].get("arrival_rate") or []) > 1
    stars = sw["cheapest_per_rate"] if per_rate else sw["cheapest"][:1]
    if stars:
        ax.scatter(
            [r[metric] for r in stars],
            [r["throughput_tok_s_per_gpu"] for r in stars],
            s=260,
            marker="*",
            color=CHEAPEST,
            zorder=5,
            label="cheapest meeting the targets" + (", per rate" if per_rate else ""),
        )
    target = sw["targets"].get(metric)
    if target is not None:
        ax.axvline(target, color=style.MUTED, linestyle="--", linewidth=1.5, zorder=1)
        ax.annotate(
            f"target {_ms(target)}",
            (target, 1),
            xycoords=("data", "axes fraction"),
            xytext=(6, -4),
            textcoords="offset points",
            va="top",
            fontsize=FONT["small"],
            color=style.MUTED,
        )
    if ok and max(r[metric] for r in ok) > 20 * min(r[metric] for r in ok):
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _pos: numbers.setting(value)))
    ax.set_xlabel(f"{_metric_words(metric)} (s)")
    ax.set_ylabel("output tokens/s per GPU")
    style.thousands_ticks(ax.yaxis)
    ax.grid(True, color=style.LIGHT_GREY)
    ax.set_axisbelow(True)
    if ok:
        ax.legend(loc="best", fontsize=FONT["source"])
    if sw["statement"]:
        ax.text(
            0.5,
            0.5,
            _wrap(sw["statement"], 60),
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize=FONT["base"],
            fontweight="bold",
            color=OKABE_ITO["vermillion"],
            bbox={"facecolor": "white", "edgecolor": OKABE_ITO["vermillion"], "pad": 10},
        )
    style.heading(fig, "Throughput against tail latency, every configuration")
    style.source_note(fig, source(sw))
    return fig, _pareto_alt(sw, metric, len(ok), len(met))


@register_chart("cheapest_table", needs=("sweep",), size="linkedin")
def cheapest_table(results: dict[str, Any], size: Size | None = None) -> tuple[Figure, str]:
    """The cheapest setups that meet the targets: configuration, cost, and the latencies."""
    sw = labels.section(results, "sweep", "cheapest_table")
    fig = style.new_figure(size or "linkedin")
    per_rate = len(sw["grid"].get("arrival_rate") or []) > 1
    style.heading(
        fig,
        "The cheapest setup that meets the target, at each rate"
        if per_rate
        else "The cheapest setups that meet the target",
    )
    targets = ", ".join(f"{_metric_words(k)} ≤ {_ms(v)}" for k, v in sw["targets"].items())
    fig.text(0.012, 0.86, f"targets: {targets}", fontsize=FONT["small"], color=style.MUTED, va="top")
    rows = (sw["cheapest_per_rate"] if per_rate else sw["cheapest"])[:TABLE_ROWS]
    if not rows:
        fig.text(
            0.5,
            0.5,
            _wrap(sw["statement"] or "No configuration has a list price.", 55),
            ha="center",
            va="center",
            fontsize=FONT["base"] + 2,
            fontweight="bold",
            color=OKABE_ITO["vermillion"],
        )
    else:
        columns = [
            ("setup", 0.012, "left"),
            ("$/hour", 0.58, "right"),
            ("$/M tokens", 0.74, "right"),
            ("TTFT p99", 0.87, "right"),
            ("e2e p99", 0.988, "right"),
        ]
        top, step = 0.76, min(0.13, 0.64 / (len(rows) + 0.5))
        for label, x, ha in columns:
            fig.text(x, top, label, fontsize=FONT["small"], color=style.MUTED, ha=ha, va="center")
        for i, r in enumerate(rows):
            y = top - step * (i + 0.9)
            weight = "bold" if i == 0 else "normal"
            colour = CHEAPEST if i == 0 else style.INK
            cells = [
                _setup_head(r),
                "$" + numbers.fixed(r["usd_per_hour"], 2),
                "$" + numbers.fixed(r["usd_per_million_tokens"], 3),
                _ms(r["ttft_p99"]),
                _ms(r["e2e_p99"]),
            ]
            for (_, x, ha), text in zip(columns, cells):
                fig.text(
                    x, y, text, fontsize=FONT["base"], fontweight=weight, color=colour, ha=ha, va="center"
                )
            fig.text(
                0.012,
                y - step * 0.36,
                _setup_detail(r),
                fontsize=FONT["source"],
                color=style.MUTED,
                va="center",
            )
    style.source_note(fig, source(sw))
    return fig, _table_alt(sw, rows)


def source(sw: dict[str, Any]) -> str:
    w = sw["workload"]
    return (
        f"Simulated: {sw['points']:,} configurations × {w['requests']:,} requests, roofline step times. "
        "Cost: on-demand list prices (source and date in prices.yaml)."
    )


def _setup_head(r: dict[str, Any]) -> str:
    rate = f", {numbers.setting(r['arrival_rate'])} req/s" if r.get("arrival_rate") is not None else ""
    return f"{r['gpus']}× {r['gpu']}{rate}"


def _setup_detail(r: dict[str, Any]) -> str:
    parts = [
        f"max_num_seqs {r['max_num_seqs']}",
        f"batched tokens {r['max_num_batched_tokens']:,}",
        f"KV {r['kv_dtype']}",
    ]
    return " · ".join(parts)


def _setup(r: dict[str, Any]) -> str:
    parts = [
        f"{r['gpus']}× {r['gpu']}",
        f"seqs {r['max_num_seqs']}",
        f"batch {r['max_num_batched_tokens']:,}",
    ]
    if r["kv_dtype"] != "auto":
        parts.append(f"KV {r['kv_dtype']}")
    if r.get("arrival_rate") is not None:
        parts.append(f"{numbers.setting(r['arrival_rate'])} req/s")
    return ", ".join(parts)


def _metric_words(metric: str) -> str:
    name, _, pct = metric.partition("_")
    return f"{'end-to-end' if name == 'e2e' else name.upper()} {pct}"


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return numbers.ms(seconds) if seconds < 1 else f"{numbers.fixed(seconds)} s"


def _wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(text, width))


def _pareto_alt(sw: dict[str, Any], metric: str, ok: int, met: int) -> str:
    first = (
        f"Scatter of {ok:,} simulated serving configurations: output tokens per second per GPU "
        f"against {_metric_words(metric)} latency."
    )
    sentences = [first]
    if sw["statement"]:
        sentences.append("None meets the latency targets.")
    else:
        best = sw["cheapest"][0] if sw["cheapest"] else None
        sentences.append(f"{met:,} meet the targets.")
        if best:
            sentences.append(f"Cheapest: {_setup(best)}, ${numbers.fixed(best['usd_per_hour'], 2)} an hour.")
    return style.fit_alt(sentences)


def _table_alt(sw: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    if not rows:
        return style.fit_alt(["Table of the cheapest setups meeting the latency targets: none meets them."])
    sentences = ["Table of the cheapest simulated setups that meet the latency targets."]
    for r in rows[:2]:
        sentences.append(
            f"{_setup(r)}: ${numbers.fixed(r['usd_per_hour'], 2)} an hour, TTFT p99 {_ms(r['ttft_p99'])}."
        )
    return style.fit_alt(sentences)
