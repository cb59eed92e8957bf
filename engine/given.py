"""Values the person set: a probe interval, a client count, a budget. Posted as "set", never as
"measured" or "calculated".

They come from two places, merged into one namespace that templates see as ``given``: the spec's
own ``given:`` block (any day, lab or not) and a lab's ``labkit.given`` calls (kept with its
measurement). A name set in both is refused: the post would quote one of two values silently.
Each prints through the same filters as a figure (``{{ given.clients | figure }}`` → "20").
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, model_validator

from engine import numbers, units
from engine.errors import UserError
from engine.sections import sections
from engine.validation import Label, Name, OneLine, Strict

GivenName = Name
MAX_GIVEN = 40
# Set values are inputs a person typed: a budget of 10^15 of anything is a typo.
MAX_MAGNITUDE = 1e15


class GivenValue(Strict):
    """One value the person chose, with its unit and, optionally, what it is."""

    value: Annotated[float, Field(ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE, allow_inf_nan=False)]
    unit: units.UnitName
    about: OneLine | None = None
    label: Label | None = None

    @model_validator(mode="after")
    def _plausible(self) -> GivenValue:
        units.check_plausible(self.value, self.unit)  # a set duration, size or rate is not negative
        return self


GivenBlock = Annotated[dict[GivenName, GivenValue], Field(max_length=MAX_GIVEN)]


def entry(name: str, value: float, unit: str, about: str | None, label: str | None) -> dict[str, Any]:
    """A set value as results.json keeps it and templates read it; its label, unless given, is
    its name in words ("probe_interval" → "Probe interval"): a description is a sentence."""
    fig = {
        "value": value,
        "unit": unit,
        "about": about or "",
        "label": label or name.replace("_", " ").capitalize(),
        "source": "set",
    }
    return {**fig, "text": numbers.figure_text(fig)}


def collect(spec_given: dict[str, GivenValue], results: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The day's set values: the spec's, then every section result's own ``given`` (a lab's)."""
    merged = {name: entry(name, g.value, g.unit, g.about, g.label) for name, g in spec_given.items()}
    for key in [s.key for s in sections()]:
        result = results.get(key)
        if not isinstance(result, dict) or not isinstance(result.get("given"), dict):
            continue
        for name, g in result["given"].items():
            if name in merged:
                raise UserError(
                    f"{name!r} is set both here and by the {key} section's run: keep one",
                    field=f"given.{name}",
                )
            merged[name] = g
    return merged
