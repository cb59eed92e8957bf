"""Charts that compare batching policies on one run: who holds which slot when, how busy the GPU
is, how long requests wait, and how full a block-keeping policy's KV cache runs.

All read results['batching']; its policies are drawn in one order (static, continuous, paged)
and one colour each, so the same policy looks the same on every chart.
"""

from __future__ import annotations

from statistics import median
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from engine import numbers
from engine.batching import registry
from engine.charts import labels, style
from engine.charts.registry import register_chart
from engine.charts.style import FONT, OKABE_ITO, Size
from engine.errors import UserError
from engine.limits import MAX_TIMELINE_REQUESTS
from engine.numbers import multiple as fmt_multiple  # the posts' own format: one figure, one spelling

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SHORT, LONG = OKABE_ITO["blue"], OKABE_ITO["orange"]


def title_of(name: str) -> str:
    """How a chart names a registered policy ("static batching", …)."""
    return registry.kind(name).title


def ordered_policies(batching: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(name, policy) in the one order every chart uses, the registry's; a policy nobody
    registered is an error, not a guess."""
    pols = batching.get("policies", {})
    order = style.policy_order()
    for name in pols:
        if name not in order:
            registry.kind(name)  # raises, naming the choices
    return [(n, pols[n]) for n in order if n in pols]


def policy_colour(name: str) -> str:
    """A policy's colour on every chart (its registration's)."""
    return style.policy_colour(name)


# ---- slot timeline --------------------------------------------------------------------------


SEPARATOR_PT = 0.6  # ~1.7 px at 1600 px wide: visible on a phone, yet under a short request's width


def back_to_back(timeline: dict[str, list[int]]) -> list[tuple[int, int]]:
    """(slot, step) wherever a request starts in a slot at the very step the previous one there
    ended: without a mark the two would draw as one bar longer than either."""
    ends: set[tuple[int, int]] = {(int(s), int(e)) for s, e in zip(timeline["slot"], timeline["end_step"])}
    return sorted(
        {
            (int(s), int(b))
            for s, b in zip(timeline["slot"], timeline["start_step"])
            if (int(s), int(b)) in ends
        }
    )


def timeline_fits(spec: Any) -> str | None:
    """The spec-time rule of the timeline charts: one bar per request, so a workload past the
    timeline limit is refused before the simulation runs rather than after it."""
    requests = getattr(spec.batching.workload, "requests", 0)
    if requests > MAX_TIMELINE_REQUESTS:
        return f"draws one bar per request, at most {MAX_TIMELINE_REQUESTS:,}; the workload has {requests:,}"
    return None


def _bars(ax: Any, rows: list[tuple[list[tuple[int, int]], int, str]]) -> None:
    """What one ``broken_barh(spans, (slot + 0.06, 0.88), facecolors=colour)`` per row draws,
    as one collection: the same rectangles in the same order, so the same pixels, but one
    artist, not one per slot (a spec may ask for a thousand slots)."""
    from matplotlib.collections import PolyCollection

    vertices, colours = [], []
    for spans, slot, colour in rows:
        y0 = slot + 0.06
        y1 = y0 + 0.88
        for x0, width in spans:
            x1 = x0 + width
            vertices.append([(x0, y0), (x0, y1), (x1, y1), (x1, y0)])
            colours.append(colour)
    if vertices:
        # an (N, 4, 2) array, as broken_barh passes it (the stubs say a sequence of arrays)
        ax.add_collection(PolyCollection(cast(Any, np.array(vertices)), facecolors=colours))


@register_chart("slot_timeline", needs=("batching",), size="x", check=timeline_fits)
def slot_timeline(results: dict[str, Any], size: Size | None = None) -> tuple[Figure, str]:
    """Slots × steps, one bar per request: the idle slot-steps of static batching in grey.

    Bars are grouped into one broken_barh per slot and colour, so 200 requests make a few
    dozen artists, not one patch per token. Where one request follows another in a slot with no
    idle step between, a white hairline (one vlines collection per panel) marks the hand-over.
    """
    from matplotlib.patches import Patch

    batching = labels.section(results, "batching", "slot_timeline")
    shown = [
        (n, p) for n, p in ordered_policies(batching) if n in ("static", "continuous") and p.get("timeline")
    ]
    if not shown:
        requests = batching.get("workload", {}).get("requests")
        raise UserError(
            f"chart 'slot_timeline' draws one bar per request, at most "
            f"{MAX_TIMELINE_REQUESTS:,}; this workload has {requests:,}: drop the chart "
            "or use fewer requests"
            if isinstance(requests, int)
            else "chart 'slot_timeline' needs the static or continuous policy",
            field="charts",
        )
    slots = int(batching["slots"])
    horizon = max(p["steps"] for _, p in shown)
    lengths_all = [
        e - s for _, p in shown for s, e in zip(p["timeline"]["start_step"], p["timeline"]["end_step"])
    ]
    long_from = 4 * median(lengths_all)  # 'long' = far past the typical request
    fig = style.new_figure(size or "x")
    top, gap = 0.82, 0.11
    height = (top - 0.2 - gap * (len(shown) - 1)) / len(shown)
    any_long = False
    for i, (name, pol) in enumerate(shown):
        ax = fig.add_axes((0.05, top - (i + 1) * height - i * gap, 0.93, height))
        tl = pol["timeline"]
        _bars(ax, [([(0, pol["steps"])], slot, style.LIGHT_GREY) for slot in range(slots)])
        bars: dict[tuple[int, str], list[tuple[int, int]]] = {}
        for slot, start, end in zip(tl["slot"], tl["start_step"], tl["end_step"]):
            is_long = end - start > long_from
            any_long |= is_long
            bars.setdefault((int(slot), LONG if is_long else SHORT), []).append((start, end - start))
        _bars(ax, [(spans, slot, colour) for (slot, colour), spans in sorted(bars.items())])
        joins = back_to_back(tl)
        if joins:  # one white hairline per hand-over, all in one artist, so no two read as one bar
            ax.vlines(
                [x for _, x in joins],
                [s + 0.06 for s, _ in joins],
                [s + 0.94 for s, _ in joins],
                colors="white",
                linewidth=SEPARATOR_PT,
                zorder=3,
            )
        if name == "static":
            ends = np.cumsum(pol.get("group_maxima", []))[:-1]
            for x in ends:
                ax.axvline(x, color=style.MUTED, linewidth=0.8, linestyle=":")
        ax.set_xlim(0, horizon * 1.005)
        ax.set_ylim(0, slots)
        ax.set_yticks([])
        ax.set_ylabel(f"{slots} slots")
        ax.set_title(
            f"{title_of(name)}: {pol['steps']:,} steps, {style.pct(pol['utilisation'])} busy",
            fontsize=FONT["base"] + 2,
            color=policy_colour(name),
            pad=6,
        )
        style.thousands_ticks(ax.xaxis)
        if i == len(shown) - 1:
            ax.set_xlabel("decode step")
        else:
            ax.tick_params(labelbottom=False)
    handles = [Patch(color=SHORT, label="short request")]
    if any_long:
        handles.append(Patch(color=LONG, label="long request"))
    handles.append(Patch(color=style.LIGHT_GREY, label="idle slot"))
    fig.legend(
        handles=handles,
        loc="lower right",
        bbox_to_anchor=(0.995, 0.0),
        ncol=len(handles),
        handlelength=1.2,
        columnspacing=1.0,
    )
    style.heading(fig, "Who holds which slot, step by step")
    style.source_note(fig, labels.batching_source(batching))
    return fig, _timeline_alt(batching, shown)


def _timeline_alt(batching: dict[str, Any], shown: list[tuple[str, dict[str, Any]]]) -> str:
    pols = dict(shown)
    sentences = [f"Slot timeline, {labels.batching_source(batching)}."]
    if "static" in pols:
        p = pols["static"]
        sentences.append(
            f"Static batching takes {p['steps']:,} steps at {style.pct(p['utilisation'])} busy: "
            "slots sit idle until the longest request in the group ends."
        )
    if "continuous" in pols:
        p = pols["continuous"]
        sentences.append(
            f"Continuous batching refills freed slots and takes {p['steps']:,} steps "
            f"at {style.pct(p['utilisation'])} busy."
        )
    return style.fit_alt(sentences)


# ---- utilisation and throughput ---------------------------------------------------------------


@register_chart("utilisation", needs=("batching",), size="linkedin")
def utilisation(results: dict[str, Any], size: Size | None = None) -> tuple[Figure, str]:
    """Per policy: share of slot-steps doing work, and tokens produced per step."""
    batching = labels.section(results, "batching", "utilisation")
    pols = ordered_policies(batching)
    fig = style.new_figure(size or "linkedin")
    names = [n for n, _ in pols]
    colours = [policy_colour(n) for n in names]
    x = np.arange(len(pols))
    panels = (
        ("GPU busy", [p["utilisation"] * 100 for _, p in pols], lambda v: numbers.fixed(v) + "%", 100.0),
        (
            "tokens per step",
            [p["throughput_tokens_per_step"] for _, p in pols],
            lambda v: numbers.fixed(v),
            float(batching.get("slots") or 0),
        ),
    )
    for i, (title, values, fmt, ceiling) in enumerate(panels):
        ax = fig.add_axes((0.06 + i * 0.49, 0.17, 0.42, 0.58))
        ax.bar(x, values, color=colours, width=0.62)
        top = max(max(values), ceiling) * 1.18
        for xi, v in zip(x, values):
            ax.text(
                float(xi),
                v + top * 0.02,
                fmt(v),
                ha="center",
                va="bottom",
                fontweight="bold",
                fontsize=FONT["callout"] if len(pols) < 3 else FONT["base"] + 2,
            )
        if ceiling:
            ax.axhline(ceiling, color=style.MUTED, linewidth=1, linestyle="--")
            ax.text(
                x[-1] + 0.45,
                ceiling,
                "max" if i == 0 else f"{numbers.fixed(ceiling, 0)} slots",
                ha="right",
                va="bottom",
                fontsize=FONT["small"],
                color=style.MUTED,
            )
        ax.set_ylim(0, top)
        ax.set_xticks(x, names)
        ax.set_yticks([])
        ax.spines["left"].set_visible(False)
        ax.set_title(title, fontsize=FONT["base"] + 2)
    multiple = batching.get("multiple")
    headline = (
        f"Continuous batching: {fmt_multiple(multiple)} the throughput"
        if multiple
        else "Same requests, same slots"
    )
    style.heading(fig, headline)
    style.source_note(fig, labels.batching_source(batching))
    parts = "; ".join(
        f"{n} {style.pct(p['utilisation'])} busy, {numbers.fixed(p['throughput_tokens_per_step'])} tokens per step"
        for n, p in pols
    )
    sentences = [f"Bar charts, {labels.batching_source(batching)}: {parts}."]
    if multiple:
        sentences.append(f"Continuous batching gives {fmt_multiple(multiple)} the throughput of static.")
    return fig, style.fit_alt(sentences)


# ---- latency CDF ------------------------------------------------------------------------------

PERCENTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))


def e2e_percentiles(pol: dict[str, Any]) -> dict[str, float]:
    """p50/p90/p99 end-to-end latency in steps: 'e2e', or the simulator's 'latency.steps.e2e'."""
    found = pol.get("e2e") or ((pol.get("latency") or {}).get("steps") or {}).get("e2e") or {}
    return {k: float(found[k]) for k, _ in PERCENTILES if found.get(k) is not None}


def e2e_curve(pol: dict[str, Any]) -> tuple[list[float], list[float]] | None:
    """(latencies, fraction done) for a full CDF: the simulator's 'latency_cdf' quantiles, or
    per-request values under e2e['values']; None when only percentiles exist."""
    cdf = pol.get("latency_cdf") or {}
    if cdf.get("e2e_steps") and cdf.get("quantiles"):
        return [float(v) for v in cdf["e2e_steps"]], [float(q) for q in cdf["quantiles"]]
    values = (pol.get("e2e") or {}).get("values")
    if values:
        ordered = sorted(float(v) for v in values)
        return ordered, [(i + 1) / len(ordered) for i in range(len(ordered))]
    return None


def _steps(value: float | None) -> str:
    """A latency in decode steps, or a dash where a policy has none (no request finished)."""
    return "—" if value is None else numbers.fixed(value, 0)


@register_chart("latency_cdf", needs=("batching",), size="linkedin")
def latency_cdf(results: dict[str, Any], size: Size | None = None) -> tuple[Figure, str]:
    """End-to-end latency CDF per policy, in decode steps: the full curve when the results carry
    one, otherwise a line through the p50/p90/p99 points (said so on the chart)."""
    batching = labels.section(results, "batching", "latency_cdf")
    pols = [(n, p) for n, p in ordered_policies(batching) if e2e_percentiles(p) or e2e_curve(p)]
    if not pols:
        raise ValueError("chart 'latency_cdf' needs end-to-end latencies for at least one policy")
    fig = style.new_figure(size or "linkedin")
    ax = fig.add_axes((0.11, 0.22, 0.85, 0.62))
    from_percentiles = False
    longest = 0.0
    for name, pol in pols:
        colour = policy_colour(name)
        curve, marks = e2e_curve(pol), e2e_percentiles(pol)
        dashes = "--" if name == "paged" else "-"  # paged often runs on top of continuous
        if curve:
            ax.step(curve[0], curve[1], where="post", color=colour, label=name, linestyle=dashes)
            longest = max(longest, max(curve[0]))
        else:
            from_percentiles = True
            pts = [(marks[k], q) for k, q in PERCENTILES if k in marks]
            ax.plot(
                [v for v, _ in pts],
                [q for _, q in pts],
                color=colour,
                marker="o",
                label=name,
                linestyle=dashes,
            )
        if "p99" in marks:
            ax.annotate(
                f"p99 {numbers.fixed(marks['p99'], 0)}",
                (marks["p99"], 0.99),
                xytext=(10, -4),
                textcoords="offset points",
                ha="left",
                va="top",
                color=colour,
                fontsize=FONT["small"],
                fontweight="bold",
            )
            longest = max(longest, marks["p99"])
    ax.set_ylim(0, 1.04)
    ax.set_xlim(0, longest * 1.2 or 1)
    style.thousands_ticks(ax.xaxis)
    ax.set_yticks([0, 0.5, 0.9, 1.0], ["0", "50%", "90%", "100%"])
    ax.set_xlabel("end-to-end latency (decode steps)")
    ax.set_ylabel("requests done")
    ax.grid(True, color=style.LIGHT_GREY, linewidth=1)
    ax.set_axisbelow(True)
    ax.legend(loc="lower right")
    style.heading(fig, "How long requests take, end to end")
    note = labels.batching_source(batching) + ("; curve through p50, p90, p99" if from_percentiles else "")
    style.source_note(fig, note)
    parts = "; ".join(
        f"{n} p50 {_steps(e2e_percentiles(p).get('p50'))}, p99 {_steps(e2e_percentiles(p).get('p99'))} steps"
        for n, p in pols
    )
    sentences = [f"Latency CDF, {labels.batching_source(batching)}: {parts}."]
    return fig, style.fit_alt(sentences)


# ---- KV blocks in use ------------------------------------------------------------------------


def kv_series(pol: dict[str, Any]) -> tuple[list[float], list[float], int | None] | None:
    """(steps, blocks in use, capacity) from 'kv_blocks_used' {step, blocks, num_blocks}, or the
    simulator's 'series' (step, kv_blocks_used) with 'kv_blocks' {usable_blocks or num_blocks:
    the capacity is what requests can hold, vLLM's null block not counted}; None if absent."""
    used = pol.get("kv_blocks_used")
    if isinstance(used, dict) and used.get("blocks"):
        return used["step"], used["blocks"], used.get("num_blocks")
    series = pol.get("series") or {}
    if series.get("kv_blocks_used"):
        pool = pol.get("kv_blocks") or {}
        return series["step"], series["kv_blocks_used"], pool.get("usable_blocks") or pool.get("num_blocks")
    return None


def needs_block_policy(spec: Any) -> str | None:
    """The spec-time rule of the kv_blocks chart: some policy of the day keeps KV blocks.

    The policy registry says which do (paged, prefill-first, any registered later), so a new
    block-keeping policy needs no edit here."""
    if any(registry.kind(name).needs_blocks for name in spec.batching.policies):
        return None
    keepers = ", ".join(repr(n) for n in registry.names() if registry.kind(n).needs_blocks)
    return f"needs a policy that keeps KV blocks ({keepers})"


@register_chart("kv_blocks", needs=("batching",), size="linkedin", check=needs_block_policy)
def kv_blocks(results: dict[str, Any], size: Size | None = None) -> tuple[Figure, str]:
    """Paged KV blocks in use per step against the cache's capacity."""
    batching = labels.section(results, "batching", "kv_blocks")
    found = [(n, s) for n, p in ordered_policies(batching) if (s := kv_series(p)) is not None]
    if not found:
        raise ValueError(
            "chart 'kv_blocks' needs a policy's KV block usage per step (kv_blocks_used, or "
            "series.kv_blocks_used from a block-keeping policy), which these results do not have"
        )
    name, (step_list, block_list, num_blocks) = found[0]
    steps = np.asarray(step_list, dtype=float)
    blocks = np.asarray(block_list, dtype=float)
    capacity = int(num_blocks) if num_blocks else int(blocks.max())
    fig = style.new_figure(size or "linkedin")
    ax = fig.add_axes((0.13, 0.22, 0.83, 0.62))
    colour = policy_colour(name)
    ax.fill_between(steps, blocks, step="post", color=colour, alpha=0.35, linewidth=0)
    ax.step(steps, blocks, where="post", color=colour, linewidth=2)
    if num_blocks:
        ax.axhline(capacity, color=OKABE_ITO["black"], linestyle="--", linewidth=1.5)
        ax.text(
            steps[-1],
            capacity,
            f"capacity {capacity:,} blocks",
            ha="right",
            va="bottom",
            fontsize=FONT["small"],
        )
    ax.set_ylim(0, capacity * 1.15)
    ax.set_xlim(0, steps[-1] or 1)
    style.thousands_ticks(ax.xaxis)
    style.thousands_ticks(ax.yaxis)
    ax.set_xlabel("decode step")
    ax.set_ylabel("KV blocks in use")
    ax.grid(True, axis="y", color=style.LIGHT_GREY)
    ax.set_axisbelow(True)
    style.heading(fig, "Paged KV cache: blocks in use")
    style.source_note(fig, labels.batching_source(batching))
    peak, mean = int(blocks.max()), float(blocks.mean())
    share = f" of {capacity:,} blocks ({style.pct(peak / capacity)})" if num_blocks else " blocks"
    sentences = [
        f"Line chart of paged KV blocks in use per step, {labels.batching_source(batching)}.",
        f"Peak {numbers.count(peak)}{share}, mean {numbers.fixed(mean, 0)}.",
    ]
    return fig, style.fit_alt(sentences)
