"""Links back to earlier days, with the figure each earlier day's spec computes.

Day 37 says head-of-line blocking is Day 4's lesson; with the earlier spec at hand, the post can
cite Day 4's own number (how much longer separate lines wait) instead of a sentence about it.
The figure is recomputed from that spec (seeded, so the same as Day 4's post), not read from
out/, so a build never depends on the order days were built in.
"""

from __future__ import annotations

from typing import Any

from engine.errors import UserError
from engine.sections import SpecLocation, blame, sections
from engine.spec import DaySpec, load_spec


def run(spec: DaySpec, location: SpecLocation) -> list[dict[str, Any]]:
    links = []
    for i, link in enumerate(spec.links_back):
        entry: dict[str, Any] = {"day": link.day, "claim": link.claim, "figure": None}
        if link.spec is not None:
            with blame(location, f"links_back.{i}.spec"):
                earlier = load_spec(location.spec_dir / link.spec)
            if earlier.day != link.day:  # else Day 4's figure would be credited to "Day 5"
                raise UserError(
                    f"day {link.day}, but {link.spec} is the spec of day {earlier.day}",
                    file=location.spec_path,
                    field=f"links_back.{i}.day",
                )
            entry["figure"] = figure_of(earlier, SpecLocation(spec_path=location.spec_dir / link.spec))
        links.append(entry)
    return links


def figure_of(earlier: DaySpec, location: SpecLocation) -> dict[str, Any] | None:
    """The headline figure of an earlier day: the first of its sections that has one to give."""
    for section in sections():
        model = earlier.section(section.key)
        if model is not None and section.link_figure is not None:
            figure = section.link_figure(model, location)
            if figure is not None:
                return figure
    return None
