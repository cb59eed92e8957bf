"""Workloads: the requests a batching simulation serves.

A workload is three aligned arrays in arrival order: how many tokens each request generates,
how long its prompt is, and when it arrives (seconds). It comes either from a trace (a CSV the
user replays, such as the lab's 200 output lengths) or from a generator spec: distributions for
the lengths and an arrival process, drawn from a seeded numpy Generator so that the same spec
gives the same requests on every machine.

Why each length distribution is here: constant and uniform reproduce the lab; a clipped normal
or a lognormal is what output lengths of chat traffic look like; a capped exponential and a
capped zipf give the heavy tail that makes static batching hurt; a weighted mixture is the lab's
"90 % short, 10 % long" shape. Continuous draws are rounded to whole tokens (the exponential
upward, so its values start at 1) and then clipped to the bounds the spec gives.

Every distribution knows its bounds without drawing, so "output lengths must be at least 1" is
checked once, from the spec, instead of depending on the seed.

Caps, so that a typo cannot ask for petabytes (each is a UserError naming the file, row and
column of a trace, or the spec's field):

- tokens per request, output and prompt alike: at most MAX_TOKENS (10,000,000), more than any
  model's context. A distribution's numbers (value, low, high, cap, mean, median, std) are
  capped the same way, and draws of a distribution without an upper bound (a normal or
  lognormal without `high`, an exponential without `cap`) are clipped to MAX_TOKENS;
- arrival times: finite and at most MAX_ARRIVAL_SECONDS (1e9 s, about 32 years); a generated
  arrival process whose last arrival would come later is refused;
- generated requests: at most MAX_REQUESTS (10,000,000);
- every number of a length distribution finite; lognormal sigma at most MAX_SIGMA (10). An
  arrival rate may be infinite (everyone at t = 0); a gamma cv must be finite.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    model_validator,
)

from engine.errors import UserError

MAX_TOKENS = 10_000_000  # per request, output or prompt: more than any model's context
MAX_ARRIVAL_SECONDS = 1e9  # about 32 years
MAX_REQUESTS = 10_000_000  # generated requests
MAX_SIGMA = 10.0  # lognormal spread: e^10 ≈ 22,000× per standard deviation

NonNegativeInt = Annotated[int, Field(ge=0)]
PositiveInt = Annotated[int, Field(ge=1)]
PositiveFloat = Annotated[float, Field(gt=0)]
NonNegativeFloat = Annotated[float, Field(ge=0)]
Tokens = Annotated[int, Field(ge=0, le=MAX_TOKENS)]  # a length, or a bound on lengths
PositiveTokens = Annotated[int, Field(ge=1, le=MAX_TOKENS)]
TokensFloat = Annotated[float, Field(gt=0, le=MAX_TOKENS)]  # a typical length (mean, median)


# ---- the workload itself ----------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Workload:
    """N requests in arrival order. Arrays are int64 / float64 and never mutated."""

    output_tokens: np.ndarray  # int64, ≥ 1: tokens each request generates (decode steps)
    prompt_tokens: np.ndarray  # int64, ≥ 0: zeros when the trace has none
    arrival_time: np.ndarray  # float64 seconds, non-decreasing; zeros = all waiting at t = 0
    source: str  # where it came from, for labels: 'trace days/x.csv' or 'generated seed=7'

    def __post_init__(self) -> None:
        n = len(self.output_tokens)
        if n == 0:
            raise ValueError("a workload needs at least one request")
        if len(self.prompt_tokens) != n or len(self.arrival_time) != n:
            raise ValueError("output_tokens, prompt_tokens and arrival_time must align")
        if self.output_tokens.min() < 1 or self.prompt_tokens.min() < 0:
            raise ValueError("output lengths must be ≥ 1 and prompt lengths ≥ 0")
        if max(self.output_tokens.max(), self.prompt_tokens.max()) > MAX_TOKENS:
            raise ValueError(f"output and prompt lengths must be ≤ {MAX_TOKENS:,} tokens")
        if not (np.all(np.isfinite(self.arrival_time)) and self.arrival_time[-1] <= MAX_ARRIVAL_SECONDS):
            raise ValueError(f"arrival times must be finite and ≤ {MAX_ARRIVAL_SECONDS:g} s")
        if self.arrival_time[0] < 0 or np.any(np.diff(self.arrival_time) < 0):
            raise ValueError("arrival times must be ≥ 0 and non-decreasing")
        for array in (self.output_tokens, self.prompt_tokens, self.arrival_time):
            array.setflags(write=False)

    @classmethod
    def of(
        cls,
        output_tokens: Any,
        prompt_tokens: Any = None,
        arrival_time: Any = None,
        source: str = "given",
    ) -> Workload:
        """Build from anything array-like; missing prompts and arrivals are zeros."""
        out = np.asarray(output_tokens, dtype=np.int64).copy()
        prompt = (
            np.zeros_like(out) if prompt_tokens is None
            else np.asarray(prompt_tokens, dtype=np.int64).copy()
        )
        arrival = (
            np.zeros(len(out)) if arrival_time is None
            else np.asarray(arrival_time, dtype=np.float64).copy()
        )
        return cls(out, prompt, arrival, source)

    @property
    def n(self) -> int:
        return len(self.output_tokens)

    @property
    def has_prompts(self) -> bool:
        return bool(self.prompt_tokens.any())

    @property
    def has_arrivals(self) -> bool:
        return bool(self.arrival_time.any())

    def summary(self) -> dict[str, Any]:
        """What a post says about the workload, in plain JSON types."""
        out = self.output_tokens
        summary: dict[str, Any] = {
            "source": self.source,
            "requests": self.n,
            "total_output_tokens": int(out.sum()),
            "longest": int(out.max()),
            "shortest": int(out.min()),
            "mean": float(out.mean()),
            "median": float(np.median(out)),
            "p90": float(np.percentile(out, 90)),
            "p99": float(np.percentile(out, 99)),
            "total_prompt_tokens": int(self.prompt_tokens.sum()),
            "mean_prompt": float(self.prompt_tokens.mean()),
            "longest_prompt": int(self.prompt_tokens.max()),
            "all_at_zero": not self.has_arrivals,
            "last_arrival": float(self.arrival_time[-1]),
        }
        if self.has_arrivals and self.n > 1 and self.arrival_time[-1] > self.arrival_time[0]:
            span = float(self.arrival_time[-1] - self.arrival_time[0])
            summary["offered_rate"] = (self.n - 1) / span  # requests per second
        return summary


# ---- length distributions -----------------------------------------------------------------------


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

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self._clip(rng.normal(self.mean, self.std, size=n))


class Lognormal(_Clipped):
    """The usual shape of chat output lengths: a median and a spread (sigma of the log)."""

    kind: Literal["lognormal"] = "lognormal"
    median: TokensFloat
    sigma: Annotated[float, Field(ge=0, le=MAX_SIGMA)]

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


# ---- arrival processes --------------------------------------------------------------------------


class AllAtZero(_Model):
    """Everyone is already waiting when the clock starts: the lab's setting."""

    kind: Literal["all_at_zero"] = "all_at_zero"

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.zeros(n)


class Poisson(_Model):
    """Independent arrivals at `rate` per second: exponential gaps."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=True)  # rate inf: all at 0
    kind: Literal["poisson"] = "poisson"
    rate: PositiveFloat

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.cumsum(rng.exponential(1.0 / self.rate, size=n))


class Gamma(_Model):
    """Gaps with mean 1/rate and coefficient of variation `cv`: cv > 1 is bursty, < 1 smooth."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=True)  # rate inf: all at 0
    kind: Literal["gamma"] = "gamma"
    rate: PositiveFloat
    cv: PositiveFloat

    @model_validator(mode="after")
    def _finite_cv(self) -> Gamma:
        if not math.isfinite(self.cv):
            raise ValueError("cv must be a finite number")
        return self

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.cv**2 == 0:  # so smooth that the gaps are their mean (1 / cv² would overflow)
            return np.cumsum(np.full(n, 1.0 / self.rate))
        shape = 1.0 / self.cv**2
        return np.cumsum(rng.gamma(shape, 1.0 / (self.rate * shape), size=n))


Arrivals = Annotated[AllAtZero | Poisson | Gamma, Field(discriminator="kind")]


# ---- the spec ------------------------------------------------------------------------------------


class TraceWorkload(_Model):
    """Replay a CSV: `output_tokens` required; `prompt_tokens`, `arrival_time` optional."""

    trace: str  # path, relative to the spec's folder


class GeneratedWorkload(_Model):
    """Draw `requests` requests from distributions, deterministically per seed."""

    requests: Annotated[int, Field(ge=1, le=MAX_REQUESTS)]
    output_tokens: Distribution
    prompt_tokens: Distribution | None = None
    arrivals: Arrivals = AllAtZero()
    seed: NonNegativeInt = 0  # numpy's SeedSequence takes no negative seeds

    @model_validator(mode="after")
    def _outputs_at_least_one(self) -> GeneratedWorkload:
        low, _ = self.output_tokens.bounds()
        if low < 1:
            raise ValueError(
                f"output_tokens can draw {low}; every request must generate at least 1 token"
            )
        return self


def _workload_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "trace" if "trace" in value else "generated"
    return "trace" if isinstance(value, TraceWorkload) else "generated"


# The day spec embeds this under batching.workload. A callable discriminator (rather than
# pydantic's smart union) keeps errors to the one form the user meant.
WorkloadSpec = Annotated[
    Annotated[TraceWorkload, Tag("trace")] | Annotated[GeneratedWorkload, Tag("generated")],
    Discriminator(_workload_kind),
]


def generate(spec: GeneratedWorkload) -> Workload:
    """Draw the workload. Lengths and arrivals use separate streams spawned from the seed, so
    adding prompts or arrivals to a spec does not change the output lengths already drawn."""
    out_seq, prompt_seq, arrival_seq = np.random.SeedSequence(spec.seed).spawn(3)
    n = spec.requests
    output = spec.output_tokens.sample(np.random.default_rng(out_seq), n)
    prompt = (
        np.zeros(n, dtype=np.int64) if spec.prompt_tokens is None
        else spec.prompt_tokens.sample(np.random.default_rng(prompt_seq), n)
    )
    arrival = spec.arrivals.sample(np.random.default_rng(arrival_seq), n).astype(np.float64)
    if n and not arrival[-1] <= MAX_ARRIVAL_SECONDS:
        raise UserError(
            f"arrivals: the last of {n:,} arrivals would come at {arrival[-1]:.3g} s, past the cap "
            f"of {MAX_ARRIVAL_SECONDS:g} s (about 32 years); raise the rate",
            field="arrivals.rate",
        )
    return Workload(output, prompt, arrival, f"generated seed={spec.seed}")


def build_workload(spec: TraceWorkload | GeneratedWorkload, base_dir: Path) -> Workload:
    """The workload a spec asks for; a trace path is relative to the spec's folder."""
    if isinstance(spec, TraceWorkload):
        path = Path(spec.trace)
        return load_trace(path if path.is_absolute() else Path(base_dir) / path)
    return generate(spec)


# ---- trace files ---------------------------------------------------------------------------------

REQUIRED_COLUMN = "output_tokens"
OPTIONAL_COLUMNS = ("prompt_tokens", "arrival_time")


def load_trace(path: str | Path) -> Workload:
    """Read a CSV trace. Every mistake is a UserError naming the file, the row (the file's line
    number, header = row 1) and the column: a wrong length silently replayed is a wrong post."""
    path = Path(path)
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            return _parse_trace(csv.reader(handle), path)
    except FileNotFoundError:
        raise UserError("no such workload file", file=path) from None
    except UnicodeDecodeError:
        raise UserError("not a UTF-8 text file", file=path) from None
    except csv.Error as exc:
        raise UserError(f"malformed CSV: {exc}", file=path) from None
    except IsADirectoryError:
        raise UserError("is a folder, not a workload file", file=path) from None


def _parse_trace(reader: Any, path: Path) -> Workload:
    header = next(reader, None)
    while header is not None and not any(cell.strip() for cell in header):
        header = next(reader, None)  # tolerate leading blank lines
    if header is None:
        raise UserError(
            f"empty file: needs a header row naming the '{REQUIRED_COLUMN}' column",
            file=path, field="row 1",
        )
    names = [cell.strip().lstrip("\ufeff") for cell in header]
    header_row = reader.line_num
    if REQUIRED_COLUMN not in names:
        raise UserError(
            f"missing required column (found: {', '.join(n for n in names if n) or 'none'})",
            file=path, field=f"row {header_row}, column {REQUIRED_COLUMN}",
        )
    index = {name: names.index(name) for name in (REQUIRED_COLUMN, *OPTIONAL_COLUMNS) if name in names}
    columns: dict[str, list[Any]] = {name: [] for name in index}
    last_arrival = 0.0
    for row in reader:
        if not any(cell.strip() for cell in row):
            continue
        line = reader.line_num
        for name, col in index.items():
            where = f"row {line}, column {name}"
            cell = row[col].strip() if col < len(row) else ""
            if not cell:
                raise UserError("empty cell", file=path, field=where)
            if name == "arrival_time":
                value = _seconds(cell, path, where)
                if value < last_arrival:
                    raise UserError(
                        f"arrival times must not decrease ({value:g} after {last_arrival:g})",
                        file=path, field=where,
                    )
                last_arrival = value
            else:
                value = _whole(cell, path, where, least=1 if name == REQUIRED_COLUMN else 0)
            columns[name].append(value)
    if not columns[REQUIRED_COLUMN]:
        raise UserError(
            "no requests: the file has a header but no rows",
            file=path, field=f"row {header_row + 1}, column {REQUIRED_COLUMN}",
        )
    return Workload.of(
        columns[REQUIRED_COLUMN],
        columns.get("prompt_tokens"),
        columns.get("arrival_time"),
        source=f"trace {path}",
    )


def _whole(cell: str, path: Path, where: str, least: int) -> int:
    try:
        value = int(cell)
    except ValueError:
        try:
            number = float(cell)
        except ValueError:
            number = math.nan
        if not (math.isfinite(number) and number.is_integer()):
            raise UserError(f"must be a whole number, got {cell!r}", file=path, field=where) from None
        value = int(number)
    if value < least:
        raise UserError(f"must be at least {least}, got {cell!r}", file=path, field=where)
    if value > MAX_TOKENS:
        raise UserError(
            f"must be at most {MAX_TOKENS:,} tokens per request (more than any model's context), "
            f"got {cell!r}",
            file=path, field=where,
        )
    return value


def _seconds(cell: str, path: Path, where: str) -> float:
    try:
        value = float(cell)
    except ValueError:
        raise UserError(f"must be a number of seconds, got {cell!r}", file=path, field=where) from None
    if not math.isfinite(value) or value < 0:
        raise UserError(f"must be a finite number ≥ 0, got {cell!r}", file=path, field=where)
    if value > MAX_ARRIVAL_SECONDS:
        raise UserError(
            f"must be at most {MAX_ARRIVAL_SECONDS:g} s (about 32 years), got {cell!r}",
            file=path, field=where,
        )
    return value


# ---- the command line's mini-syntax ----------------------------------------------------------------

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
    "constant": Constant, "uniform": Uniform, "normal": Normal, "lognormal": Lognormal,
    "exponential": Exponential, "zipf": Zipf,
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
