"""Links back to earlier days, with the figure each earlier day's spec computes.

Day 37 says head-of-line blocking is Day 4's lesson; with the earlier spec at hand, the post can
cite Day 4's own number (how much longer separate lines wait) instead of a sentence about it.
The figure is recomputed from that spec (seeded, so the same as Day 4's post), not read from
out/, so a build never depends on the order days were built in.
"""
from __future__ import annotations

from typing import Any

from engine.errors import UserError
from engine.experiments import Context, blame
from engine.spec import DaySpec, load_spec


def run(spec: DaySpec, ctx: Context) -> list[dict[str, Any]]:
    links = []
    for i, link in enumerate(spec.links_back):
        entry: dict[str, Any] = {"day": link.day, "claim": link.claim, "figure": None}
        if link.spec is not None:
            with blame(ctx, f"links_back.{i}.spec"):
                earlier = load_spec(ctx.spec_dir / link.spec)
            if earlier.day != link.day:  # else Day 4's figure would be credited to "Day 5"
                raise UserError(f"day {link.day}, but {link.spec} is the spec of day {earlier.day}",
                                file=ctx.spec_path, field=f"links_back.{i}.day")
            entry["figure"] = figure_of(earlier, Context(spec_path=ctx.spec_dir / link.spec))
        links.append(entry)
    return links


def figure_of(earlier: DaySpec, ctx: Context) -> dict[str, Any] | None:
    """The headline figure of an earlier day, when its spec has one to give."""
    if earlier.queueing is not None:
        from engine.experiments.queueing import compare_lines

        section = earlier.queueing
        lines = compare_lines(section, section.service_ms / 1000.0)
        return {
            "source": "simulated",
            "servers": lines["servers"],
            "load": lines["load"],
            "wait_ratio": lines["wait_ratio"],
        }
    return None
