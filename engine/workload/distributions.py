"""Length distributions: how many tokens each request generates or prompts with.

Why each is here: constant and uniform reproduce the lab; a clipped normal or a lognormal is
what output lengths of chat traffic look like; a capped exponential and a capped zipf give the
heavy tail that makes static batching hurt; a weighted mixture is the lab's "90 % short, 10 %
long" shape. Continuous draws are rounded to whole tokens (the exponential upward, so its values
start at 1) and then clipped to the bounds the spec gives. Every distribution knows its bounds
without drawing, so "output lengths must be at least 1" is checked from the spec, not the seed.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from engine.errors import UserError
from engine.limits import MAX_TOKENS
from engine.validation import PositiveFloat

MAX_SIGMA = 10.0  # lognormal spread: e^10 ≈ 22,000× per standard deviation

Tokens = Annotated[int, Field(ge=0, le=MAX_TOKENS)]  # a length, or a bound on lengths
PositiveTokens = Annotated[int, Field(ge=1, le=MAX_TOKENS)]
TokensFloat = Annotated[float, Field(gt=0, le=MAX_TOKENS)]  # a typical length (mean, median)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class Constant(_Model):
    """Every request the same length: the lab's control case (all 100 tokens)."""

    kind: Literal["constant"] = "constant"
    value: Tokens

    def bounds(self) -> tuple[int, int | None]:
        return self.value, self.value

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.full(n, self.value, dtype=np.int64)


class Uniform(_Model):
    """Uniform integers, both ends included: the lab's 8–40 and 400–700."""

    kind: Literal["uniform"] = "uniform"
    low: Tokens
    high: Tokens

    @model_validator(mode="after")
    def _ordered(self) -> Uniform:
        if self.high < self.low:
            raise ValueError(f"high ({self.high}) must be at least low ({self.low})")
        return self

    def bounds(self) -> tuple[int, int | None]:
        return self.low, self.high

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.integers(self.low, self.high, size=n, endpoint=True, dtype=np.int64)


class _Clipped(_Model):
    """Shared by the continuous distributions: round to a whole token, clip to [low, high]
    (without `high`, to MAX_TOKENS)."""

    low: Tokens = 1
    high: Tokens | None = None

    @model_validator(mode="after")
    def _ordered(self) -> _Clipped:
        if self.high is not None and self.high < self.low:
            raise ValueError(f"high ({self.high}) must be at least low ({self.low})")
        return self

    def bounds(self) -> tuple[int, int | None]:
        return self.low, self.high

    def _clip(self, values: np.ndarray) -> np.ndarray:
        upper = MAX_TOKENS if self.high is None else self.high
        return np.clip(np.rint(values), self.low, upper).astype(np.int64)


class Normal(_Clipped):
    """A bell around a typical length, clipped (a normal can go negative; lengths cannot)."""

    kind: Literal["normal"] = "normal"
    mean: Annotated[float, Field(ge=-MAX_TOKENS, le=MAX_TOKENS)]
    std: Annotated[float, Field(ge=0, le=MAX_TOKENS)]

    @model_validator(mode="after")
    def _mostly_inside(self) -> Normal:
        """A bell almost wholly outside [low, high] would clip every draw to one bound:
        `normal:-100:1` is 'every request 1 token', which is not what anyone meant."""
        if self.mean + 3 * self.std < self.low:
            raise ValueError(
                f"mean {self.mean:g} and std {self.std:g} put almost every draw below "
                f"low ({self.low}), where it would be clipped to {self.low}"
            )
        if self.high is not None and self.mean - 3 * self.std > self.high:
            raise ValueError(
                f"mean {self.mean:g} and std {self.std:g} put almost every draw above "
                f"high ({self.high}), where it would be clipped to {self.high}"
            )
        return self

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self._clip(rng.normal(self.mean, self.std, size=n))


class Lognormal(_Clipped):
    """The usual shape of chat output lengths: a median and a spread (sigma of the log)."""

    kind: Literal["lognormal"] = "lognormal"
    median: TokensFloat
    sigma: Annotated[float, Field(ge=0, le=MAX_SIGMA)]

    @model_validator(mode="after")
    def _mostly_inside(self) -> Lognormal:
        """As for the normal: a spread almost wholly outside [low, high] is a typo."""
        spread = math.exp(min(3 * self.sigma, 700))
        if self.median * spread < self.low:
            raise ValueError(
                f"median {self.median:g} and sigma {self.sigma:g} put almost every draw "
                f"below low ({self.low}), where it would be clipped to {self.low}"
            )
        if self.high is not None and self.median / spread > self.high:
            raise ValueError(
                f"median {self.median:g} and sigma {self.sigma:g} put almost every draw "
                f"above high ({self.high}), where it would be clipped to {self.high}"
            )
        return self

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self._clip(rng.lognormal(math.log(self.median), self.sigma, size=n))


class Exponential(_Model):
    """Memoryless lengths, rounded up (so ≥ 1) and capped (without `cap`, at MAX_TOKENS): many
    short, a few very long."""

    kind: Literal["exponential"] = "exponential"
    mean: TokensFloat
    cap: PositiveTokens | None = None

    def bounds(self) -> tuple[int, int | None]:
        return 1, self.cap

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        values = np.maximum(np.ceil(rng.exponential(self.mean, size=n)), 1)
        return np.minimum(values, MAX_TOKENS if self.cap is None else self.cap).astype(np.int64)


class Zipf(_Model):
    """A power-law tail (P(k) ∝ k^-a, a > 1), capped because the raw tail is unbounded."""

    kind: Literal["zipf"] = "zipf"
    a: Annotated[float, Field(gt=1)]
    cap: PositiveTokens

    def bounds(self) -> tuple[int, int | None]:
        return 1, self.cap

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.minimum(rng.zipf(self.a, size=n), self.cap).astype(np.int64)


class Component(_Model):
    weight: PositiveFloat
    dist: Distribution


class Mixture(_Model):
    """A weighted mix: each request picks a component by weight, then draws from it."""

    kind: Literal["mixture"] = "mixture"
    components: Annotated[list[Component], Field(min_length=1)]

    @model_validator(mode="after")
    def _shares_add_up(self) -> Mixture:
        """Weights are relative (9 and 1 mean 90 % and 10 %), but fractions below 1 that do not
        add up to 1 (0.9 and 0.2) are far more likely a typo than a ratio, so they are refused."""
        weights = [c.weight for c in self.components]
        if all(w < 1 for w in weights) and abs(sum(weights) - 1) > 1e-6:
            raise ValueError(
                f"mixture weights add up to {sum(weights):g}: give shares that add up to 1, "
                "or whole-number ratios"
            )
        return self

    def bounds(self) -> tuple[int, int | None]:
        lows, highs = zip(*(c.dist.bounds() for c in self.components))
        high = None if any(h is None for h in highs) else max(h for h in highs if h is not None)
        return min(lows), high

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        weights = np.array([c.weight for c in self.components])
        which = rng.choice(len(weights), size=n, p=weights / weights.sum())
        values = np.empty(n, dtype=np.int64)
        for k, component in enumerate(self.components):
            mask = which == k
            values[mask] = component.dist.sample(rng, int(mask.sum()))
        return values


# ---- the command line's compact syntax (`uniform:8:40`, `0.9*A+0.1*B`) --------------------
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


DISTRIBUTION_EXAMPLE = "a distribution like uniform:8:40 or {kind: uniform, low: 8, high: 40}"


def _distribution_input(value: Any) -> Any:
    """A spec may write a distribution as the CLI does (`uniform:8:40`, `100`, a `W*DIST+...`
    mixture) or as a mapping with a `kind`; anything else is refused here in plain words, before
    pydantic would say "a valid dictionary or object to extract fields from"."""
    if isinstance(value, (dict, BaseModel)):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)  # `output_tokens: 100` in YAML: every request 100 tokens
    if isinstance(value, str):
        try:
            return parse_distribution(value)
        except UserError as err:
            raise ValueError(f"expected {DISTRIBUTION_EXAMPLE}: {err.message}") from None
    shown = "nothing" if value is None else f"{type(value).__name__} {value!r}"
    raise ValueError(f"expected {DISTRIBUTION_EXAMPLE}, got {shown}")


Distribution = Annotated[
    Constant | Uniform | Normal | Lognormal | Exponential | Zipf | Mixture,
    Field(discriminator="kind"),
    BeforeValidator(_distribution_input),
]
Component.model_rebuild()
Mixture.model_rebuild()
