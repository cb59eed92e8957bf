"""What templates see: the results and the spec's metadata, each section under its own key, and
where a day's templates and drafts live by name. Drafts, the carousel's words and the review page
read the same context, so a template moved between them reads the same names."""

from __future__ import annotations

from typing import Any

from engine.charts import declared
from engine.sections import sections


def day_folder_name(day: int) -> str:
    return f"day{day:02d}"


def template_context(results: dict[str, Any]) -> dict[str, Any]:
    """What templates see: results and spec metadata, each section under its own key."""
    context = {
        "day": results["day"],
        "title": results["title"],
        "series": results["series"],
        "repository": results["repository"],
        "hashtags": results["hashtags"],
        "links_back": results.get("links_back", []),
        "measured": results.get("measured"),
        "charts": chart_names(results),  # names the spec asked for, to attach images
        "given": results.get("given", {}),
    }
    for section in sections():
        context[section.key] = results.get(section.key)
    return context


def chart_names(results: dict[str, Any]) -> list[str]:
    """The charts the spec asked for, by name (a declared chart's name is its file name)."""
    return [declared.entry_name(c) for c in results["inputs"]["charts"]]
