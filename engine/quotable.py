"""The numbers a day can name: its lab's figures and the values the person set.

Each is a figure dict (``value``, ``unit``, ``label``, ``about``, ``source``, ``text``), so
anything that picks numbers by name (the spec's ``headline:``, a declared bar chart, the
scaffolder's templates) reads them one way, whatever section produced them.
"""

from __future__ import annotations

from typing import Any

from engine.errors import UserError
from engine.sections import sections


def section_results(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each registered section's result in ``results``, in the registry's order."""
    return [results[s.key] for s in sections() if isinstance(results.get(s.key), dict)]


def named(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every named figure of the day: each section's ``figures`` (a lab's), then ``given``."""
    found: dict[str, dict[str, Any]] = {}
    for result in section_results(results):
        if isinstance(result.get("figures"), dict):
            found.update(result["figures"])
    found.update(results.get("given") or {})
    return found


def tables(results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every table of the day by name (a lab's, recorded or read from its output)."""
    found: dict[str, dict[str, Any]] = {}
    for result in section_results(results):
        if isinstance(result.get("tables"), dict):
            found.update(result["tables"])
    return found


def pick(results: dict[str, Any], names: list[str], field: str) -> list[dict[str, Any]]:
    """The figures called ``names``, in order; one error naming the first unknown one."""
    every = named(results)
    for i, name in enumerate(names):
        if name not in every:
            known = ", ".join(sorted(every)) or "none: the day has no lab figures or set values"
            raise UserError(f"no figure or set value {name!r} (known: {known})", field=f"{field}.{i}")
    return [every[name] for name in names]
