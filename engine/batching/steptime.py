"""How long a step takes, in seconds: from a constant, from a roofline, or from a measurement.

A step-time model turns what a step does into seconds. What a step does is three numbers, all
arrays over steps so a whole run is timed in one vectorised call:

- ``batch``: requests in the step's decode batch: those emitting a token and, in static
  batching, a group's finished members that pad on until the group ends;
- ``context``: KV tokens those requests attend over, summed across the batch;
- ``prefill``: prompt tokens processed in the step.

`constant` is the step time when it does not depend on the batch (the unit model); the
simulator then places arrivals on an exact grid. `idle_seconds` is what a step costs when
nothing runs: an idle engine polls at the cadence of its cheapest step.

Between two scheduling events the batch is fixed and only its context grows, by one token per
request per step; `segment_seconds` sums such a run of decode steps in closed form, so an
event-driven simulation can keep a clock without visiting every step. It takes scalars or
aligned arrays (one run per element), so a whole schedule's runs are summed in one call.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Protocol

import numpy as np


class StepTime(Protocol):
    """What the simulator needs from a step-time model."""

    @property
    def constant(self) -> float | None: ...

    @property
    def idle_seconds(self) -> float: ...

    def seconds(self, batch: np.ndarray, context: np.ndarray, prefill: np.ndarray) -> np.ndarray: ...

    def segment_seconds(self, batch: Any, first_context: Any, steps: Any) -> Any: ...

    def describe(self) -> dict: ...


def step_seconds(model: StepTime, batch: int, context: float, prefill: int) -> float:
    """One step's seconds; a step where nothing runs is an idle step."""
    if batch == 0 and prefill == 0:
        return model.idle_seconds
    return float(model.seconds(np.array([batch]), np.array([context]), np.array([prefill]))[0])


def run_seconds(model: StepTime, batch: int, first_context: float, steps: int) -> float:
    """Seconds of `steps` decode steps of a fixed batch (idle steps when the batch is empty)."""
    if steps <= 0:
        return 0.0
    if batch == 0:
        return steps * model.idle_seconds
    return float(model.segment_seconds(batch, first_context, steps))


def steps_to_reach(model: StepTime, batch: int, first_context: float, seconds: float) -> int:
    """The fewest steps of such a run that last at least `seconds` (0 if seconds ≤ 0).

    Every step lasts at least the idle time, so the answer is bounded; found by doubling and
    bisection on the closed-form sum.
    """
    if seconds <= 0:
        return 0
    hi = 1
    while run_seconds(model, batch, first_context, hi) < seconds:
        hi *= 2
    lo = hi // 2  # run_seconds(lo) < seconds (or lo == 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if run_seconds(model, batch, first_context, mid) < seconds:
            lo = mid
        else:
            hi = mid
    return hi


@dataclass(frozen=True)
class UnitStepTime:
    """Every step takes the same time: the lab's 20 ms."""

    seconds_per_step: float

    def __post_init__(self) -> None:
        if not self.seconds_per_step > 0:
            raise ValueError("seconds_per_step must be positive")

    @property
    def constant(self) -> float:
        return self.seconds_per_step

    @property
    def idle_seconds(self) -> float:
        return self.seconds_per_step

    def seconds(self, batch: np.ndarray, context: np.ndarray, prefill: np.ndarray) -> np.ndarray:
        return np.full(np.shape(batch), self.seconds_per_step, dtype=np.float64)

    def segment_seconds(self, batch: Any, first_context: Any, steps: Any) -> Any:
        return np.asarray(steps, dtype=np.float64) * self.seconds_per_step

    def describe(self) -> dict:
        return {"kind": "unit", "seconds_per_step": self.seconds_per_step}


@dataclass(frozen=True)
class RooflineStepTime:
    """A step is bound by memory or by compute, whichever is slower.

    bytes = weights (read once per step) + the batch's KV reads + the prompt KV written;
    FLOPs = flops_per_token × tokens processed (decoded + prefilled), about 2 × active parameters.
    step = max(bytes / HBM bandwidth, FLOPs / peak FLOP/s). Decode is memory-bound, so the batch
    is nearly free until its KV reads rival the weights: the reason batching pays.
    Attention FLOPs and kernel overheads are left out: a lower bound, not a prediction.
    """

    weights_bytes: float
    kv_bytes_per_token: float
    flops_per_token: float
    hbm_bytes_per_s: float
    peak_flops: float

    def __post_init__(self) -> None:
        if min(self.hbm_bytes_per_s, self.peak_flops) <= 0:
            raise ValueError("bandwidth and peak FLOP/s must be positive")
        if min(self.weights_bytes, self.kv_bytes_per_token, self.flops_per_token) < 0:
            raise ValueError("bytes and FLOPs must be non-negative")

    @property
    def constant(self) -> None:
        return None

    @property
    def idle_seconds(self) -> float:
        return float(self.seconds(np.array([1]), np.array([1]), np.array([0]))[0])

    def seconds(self, batch: np.ndarray, context: np.ndarray, prefill: np.ndarray) -> np.ndarray:
        batch, context, prefill = (np.asarray(a, dtype=np.float64) for a in (batch, context, prefill))
        moved = self.weights_bytes + self.kv_bytes_per_token * (context + prefill)
        flops = self.flops_per_token * (batch + prefill)
        return np.maximum(moved / self.hbm_bytes_per_s, flops / self.peak_flops)

    def segment_seconds(self, batch: Any, first_context: Any, steps: Any) -> Any:
        """Σ_j max(α + β·(C0 + B·j), γ): compute-bound while the KV reads are small, then
        memory-bound with a linearly growing cost; the crossing step splits the sum in two."""
        batch, first_context, steps = (
            np.asarray(a, dtype=np.float64) for a in (batch, first_context, steps)
        )
        alpha = self.weights_bytes / self.hbm_bytes_per_s
        beta = self.kv_bytes_per_token / self.hbm_bytes_per_s
        gamma = self.flops_per_token * batch / self.peak_flops
        base = alpha + beta * first_context  # memory term of the first step
        slope = beta * batch  # its growth per step
        with np.errstate(divide="ignore", invalid="ignore"):
            crossing = np.ceil((gamma - base) / slope)
        flat = np.where(base >= gamma, 0.0, np.where(slope == 0, steps, np.minimum(steps, crossing)))
        rest = steps - flat
        return gamma * flat + rest * base + slope * (rest * (flat + steps - 1) / 2)

    def describe(self) -> dict:
        return {
            "kind": "roofline",
            "weights_bytes": self.weights_bytes,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "flops_per_token": self.flops_per_token,
            "hbm_bytes_per_s": self.hbm_bytes_per_s,
            "peak_flops": self.peak_flops,
        }


@dataclass(frozen=True)
class MeasuredStepTime:
    """A fit of measured decode steps: seconds = a + b·tokens + c·(KV tokens read).

    From a benchmark point (batch B, per-request context C, seconds) the fit sees tokens = B and
    KV tokens = B·C, so c is the cost of attending over one cached token and b the per-token
    cost of the rest of the forward pass. A prefilled prompt token is charged like a decoded one
    (b) plus its KV write (c): first order, and said so wherever the figure is shown.
    Coefficients are non-negative (a step cannot get cheaper with more work).
    """

    intercept: float
    per_token: float
    per_context_token: float
    points: int = 0
    rmse: float = 0.0

    @classmethod
    def fit(cls, points: Iterable[Sequence[float]]) -> MeasuredStepTime:
        """Least squares over (batch, context, seconds) points, coefficients kept ≥ 0.

        Three unknowns, so the constrained optimum is found exactly by trying every subset of
        coefficients left free (the rest pinned at 0) and keeping the best non-negative fit.
        """
        data = np.asarray([tuple(p) for p in points], dtype=np.float64)
        if data.ndim != 2 or data.shape[1] != 3 or len(data) == 0:
            raise ValueError("need (batch, context, seconds) points")
        batch, context, seconds = data.T
        design = np.column_stack([np.ones_like(batch), batch, batch * context])
        best: tuple[float, np.ndarray] | None = None
        for size in range(1, 4):
            for free in combinations(range(3), size):
                coef = np.zeros(3)
                sol, *_ = np.linalg.lstsq(design[:, free], seconds, rcond=None)
                if np.any(sol < 0):
                    continue
                coef[list(free)] = sol
                err = float(np.sum((design @ coef - seconds) ** 2))
                if best is None or err < best[0] - 1e-30:
                    best = (err, coef)
        assert best is not None  # the intercept alone is always a non-negative fit
        err, coef = best
        return cls(float(coef[0]), float(coef[1]), float(coef[2]), len(data), (err / len(data)) ** 0.5)

    @property
    def constant(self) -> float | None:
        return self.intercept if self.per_token == 0 and self.per_context_token == 0 else None

    @property
    def idle_seconds(self) -> float:
        return float(self.seconds(np.array([1]), np.array([1]), np.array([0]))[0])

    def seconds(self, batch: np.ndarray, context: np.ndarray, prefill: np.ndarray) -> np.ndarray:
        batch, context, prefill = (np.asarray(a, dtype=np.float64) for a in (batch, context, prefill))
        return (
            self.intercept
            + self.per_token * (batch + prefill)
            + self.per_context_token * (context + prefill)
        )

    def segment_seconds(self, batch: Any, first_context: Any, steps: Any) -> Any:
        batch, first_context, steps = (
            np.asarray(a, dtype=np.float64) for a in (batch, first_context, steps)
        )
        first = self.intercept + self.per_token * batch + self.per_context_token * first_context
        return steps * first + self.per_context_token * batch * steps * (steps - 1) / 2

    def describe(self) -> dict:
        return {
            "kind": "measured",
            "intercept_s": self.intercept,
            "per_token_s": self.per_token,
            "per_context_token_s": self.per_context_token,
            "points": self.points,
            "rmse_s": self.rmse,
        }
