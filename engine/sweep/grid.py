"""A sweep's grid of serving configurations, its points and their keys (the section that holds
the grid, with its workload and latency targets, is engine.experiments.sweep).

Why a product of axes rather than a list of points: capacity questions are "which GPU, how many,
which ``max_num_seqs``", each axis a handful of values, and the product is what a person means.
Points come out in a fixed order (the axes in AXES order, each axis's values as written), so the
table's rows, the results file and a Ray run all agree on it.

A point's key is a hash of everything its metrics depend on: the point, the workload, the
fixed options, and the simulator's version tag (``adapter.SIMULATOR``). Change any of them and
the stored result no longer matches, so a resumed sweep never reuses a stale number.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import asdict, dataclass
from typing import Annotated, Any, Literal, get_args

from pydantic import Field, field_validator, model_validator

from engine.kvcache import KvDtype
from engine.validation import PositiveInt, Strict

MAX_POINTS = 1_000_000  # a typo in an axis should not queue a year of simulation
MAX_AXIS_VALUES = 1000
Router = Literal["random", "round_robin", "least_outstanding", "shared_queue"]
ROUTERS = get_args(Router)
LATENCY_METRICS = ("ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99", "e2e_p50", "e2e_p99")
# The order of a point's fields, of the CSV's first columns, and of the product's nesting.
AXES = (
    "gpu",
    "model",
    "tp",
    "replicas",
    "router",
    "max_num_seqs",
    "max_num_batched_tokens",
    "kv_dtype",
    "step_time",
    "arrival_rate",
)

Count = Annotated[PositiveInt, Field(le=1_000_000)]  # a grid value: GPUs, sequences, tokens
Rate = Annotated[float, Field(gt=0, le=1e7, allow_inf_nan=False)]
AxisLength = Field(min_length=1, max_length=MAX_AXIS_VALUES)
Names = Annotated[list[str], AxisLength]
Ints = Annotated[list[Count], AxisLength]
Routers = Annotated[list[Router], AxisLength]
KvDtypes = Annotated[list[KvDtype], AxisLength]
Rates = Annotated[list[Rate], AxisLength]


class Grid(Strict):
    """Each axis is a list of values; a missing axis has the one default value shown."""

    gpu: Names
    model: Names
    tp: Ints = [1]
    replicas: Ints = [1]
    router: Routers = ["round_robin"]
    max_num_seqs: Ints = [256]
    max_num_batched_tokens: Ints = [8192]
    kv_dtype: KvDtypes = ["auto"]
    # roofline | unit[:SECONDS] | measured:FILE | calibrated:FILE (files relative to the spec)
    step_time: Names = ["roofline"]
    arrival_rate: Rates | None = None  # requests/s; None: the workload's own arrivals

    @field_validator("step_time")
    @classmethod
    def _step_times(cls, values: list[str]) -> list[str]:
        for value in values:
            parse_step_time(value)
        return values

    @model_validator(mode="after")
    def _distinct(self) -> Grid:
        for axis in AXES:
            values = getattr(self, axis)
            if values is not None and len(set(values)) != len(values):
                raise ValueError(f"{axis} lists a value twice: {values}")
        return self


# ---- points ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    """One configuration: a value on every axis."""

    gpu: str
    model: str
    tp: int
    replicas: int
    router: str
    max_num_seqs: int
    max_num_batched_tokens: int
    kv_dtype: str
    step_time: str
    arrival_rate: float | None

    @property
    def gpus(self) -> int:
        return self.tp * self.replicas

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def count_points(grid: Grid) -> int:
    total = 1
    for axis in AXES:
        values = getattr(grid, axis)
        total *= 1 if values is None else len(values)
    return total


def expand(grid: Grid) -> list[Point]:
    """Every point of the grid, the first axis varying slowest."""
    axes = [getattr(grid, axis) or [None] for axis in AXES]
    return [Point(*values) for values in itertools.product(*axes)]


def parse_step_time(text: str) -> tuple[str, str]:
    """'roofline' → ('roofline', ''); 'unit:0.05' → ('unit', '0.05'); 'measured:f.json' → …"""
    kind, _, rest = text.partition(":")
    if kind == "roofline" and not rest:
        return kind, rest
    if kind == "unit":
        try:
            seconds = float(rest) if rest else 0.02
        except ValueError:
            raise ValueError(f"step_time {text!r}: seconds per step {rest!r} is not a number") from None
        if not 0 < seconds <= 1e3:
            raise ValueError(f"step_time {text!r}: seconds per step must be in (0, 1000]")
        return kind, rest
    if kind in ("measured", "calibrated") and rest:
        return kind, rest
    raise ValueError(f"step_time {text!r}: use roofline, unit[:SECONDS], measured:FILE or calibrated:FILE")


def point_key(point: Point, context: dict[str, Any]) -> str:
    """A stable hash of the point and everything else its metrics depend on."""
    doc = {"point": point.to_dict(), "context": context}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]
