"""The command line's compact distribution syntax (`uniform:8:40`, `0.9*A+0.1*B`)."""

from __future__ import annotations

import math
from typing import Any

from pydantic import ValidationError

from engine.errors import UserError
from engine.workload.distributions import (
    Component,
    Constant,
    Exponential,
    Lognormal,
    Mixture,
    Normal,
    Uniform,
    Zipf,
    _Model,
)

# name → the fields its positional numbers fill, in order; the rest take their defaults.
_SYNTAX: dict[str, tuple[str, ...]] = {
    "constant": ("value",),
    "uniform": ("low", "high"),
    "normal": ("mean", "std", "low", "high"),
    "lognormal": ("median", "sigma", "low", "high"),
    "exponential": ("mean", "cap"),
    "zipf": ("a", "cap"),
}
_MODELS: dict[str, type[_Model]] = {
    "constant": Constant,
    "uniform": Uniform,
    "normal": Normal,
    "lognormal": Lognormal,
    "exponential": Exponential,
    "zipf": Zipf,
}
DISTRIBUTION_SYNTAX = (
    "N | constant:N | uniform:LOW:HIGH | normal:MEAN:STD[:LOW[:HIGH]] | "
    "lognormal:MEDIAN:SIGMA[:LOW[:HIGH]] | exponential:MEAN[:CAP] | zipf:A:CAP, "
    "or a mixture W*DIST+W*DIST (e.g. 0.9*uniform:8:40+0.1*uniform:400:700)"
)


def parse_distribution(text: str) -> Constant | Uniform | Normal | Lognormal | Exponential | Zipf | Mixture:
    """Parse the CLI's compact form. Raises UserError (no file; the caller names the flag)."""
    terms = [t.strip() for t in text.split("+")]
    if len(terms) == 1 and "*" not in terms[0]:
        return _parse_one(terms[0], text)
    components = []
    for term in terms:
        weight_text, star, dist_text = term.partition("*")
        if not star:
            raise UserError(f"mixture term {term!r} needs a weight, as W*DIST; {DISTRIBUTION_SYNTAX}")
        try:
            weight = float(weight_text)
        except ValueError:
            raise UserError(f"weight {weight_text!r} is not a number") from None
        if not (weight > 0 and math.isfinite(weight)):
            raise UserError(f"weight {weight_text!r} must be positive")
        components.append(Component(weight=weight, dist=_parse_one(dist_text.strip(), text)))
    try:
        return Mixture(components=components)
    except ValidationError as exc:
        raise UserError(str(exc.errors()[0]["msg"]).removeprefix("Value error, ")) from None


def _parse_one(term: str, whole: str) -> Any:
    name, _, rest = term.partition(":")
    if not rest and _is_number(name):
        name, rest = "constant", name
    if name not in _SYNTAX:
        raise UserError(f"unknown distribution {name!r} in {whole!r}; {DISTRIBUTION_SYNTAX}")
    values = rest.split(":") if rest else []
    fields = _SYNTAX[name]
    if len(values) > len(fields):
        raise UserError(f"{name} takes at most {len(fields)} numbers ({':'.join(fields)}), got {term!r}")
    try:
        return _MODELS[name].model_validate(dict(zip(fields, values)))
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        message = err["msg"].removeprefix("Value error, ")
        raise UserError(f"{term!r}: {where + ': ' if where else ''}{message}") from None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
