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

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import combinations
from typing import Any, NamedTuple, Protocol

import numpy as np


class StepTime(Protocol):
    """What the simulator needs from a step-time model.

    The first five are the model. The rest are its fast paths: the same figures in plain
    floats, which the simulator's loop asks once per event (a numpy call per scalar would cost
    more than the rest of the loop). Each has a default here, from the array methods, so a
    model subclassing this protocol need give only the five; the models in this module give
    their own, with the same operations in the same order (the same floats)."""

    @property
    def constant(self) -> float | None: ...

    @property
    def idle_seconds(self) -> float: ...

    def seconds(self, batch: np.ndarray, context: np.ndarray, prefill: np.ndarray) -> np.ndarray: ...

    def segment_seconds(self, batch: Any, first_context: Any, steps: Any) -> Any: ...

    def describe(self) -> dict: ...

    def step(self, batch: int, context: float, prefill: int) -> float:
        """seconds() of one step that runs something."""
        return float(self.seconds(np.array([batch]), np.array([context]), np.array([prefill]))[0])

    def run(self, batch: int, first_context: float, steps: int) -> float:
        """segment_seconds() of one run of `steps` ≥ 1 decode steps of a batch ≥ 1."""
        return float(self.segment_seconds(batch, first_context, steps))

    def runner(self, batch: int, first_context: float) -> Callable[[int], float]:
        """run() of this batch as a function of the steps alone (0.0 at 0 steps), for a caller
        that asks one run's seconds at several lengths: a model works its terms out once."""
        return lambda steps: self.run(batch, first_context, steps) if steps > 0 else 0.0

    def guess(self, batch: int, first_context: float, seconds: float) -> int:
        """A first guess at the fewest steps of such a run that last `seconds` (reach settles
        it exactly, so any guess ≥ 1 gives the same answer; a good one saves the search)."""
        return 1

    def clock_functions(self, batch_limit: int = 0) -> ClockFunctions:
        """The simulator's per-event clock (steptime.clock_functions): by default the generic
        one, from step, the runner and reach."""
        return generic_clock_functions(self)


def step_seconds(model: StepTime, batch: int, context: float, prefill: int) -> float:
    """One step's seconds; a step where nothing runs is an idle step."""
    if batch == 0 and prefill == 0:
        return model.idle_seconds
    return float(model.step(batch, context, prefill))


def run_seconds(model: StepTime, batch: int, first_context: float, steps: int) -> float:
    """Seconds of `steps` decode steps of a fixed batch (idle steps when the batch is empty)."""
    if steps <= 0:
        return 0.0
    if batch == 0:
        return steps * model.idle_seconds
    return float(model.run(batch, first_context, steps))


def runner(model: StepTime, batch: int, first_context: float) -> Callable[[int], float]:
    """run_seconds for this batch as a function of the steps alone: the simulator's clock asks
    a run's seconds at several lengths, and the model's terms are worked out once."""
    if batch == 0:
        idle = model.idle_seconds
        return lambda steps: steps * idle if steps > 0 else 0.0
    return model.runner(batch, first_context)  # the models' own sums are 0.0 at 0 steps


def steps_to_reach(model: StepTime, batch: int, first_context: float, seconds: float) -> int:
    """The fewest steps of such a run that last at least `seconds` (0 if seconds ≤ 0)."""
    return reach(model, batch, first_context, seconds)[0]


def reach(
    model: StepTime,
    batch: int,
    first_context: float,
    seconds: float,
    run: Callable[[int], float] | None = None,
) -> tuple[int, float]:
    """(k, run_seconds(k)) for the fewest steps k of such a run that last at least `seconds`.

    The model's closed-form `guess` (its sum is a quadratic in the steps) lands within a step
    or two; the answer is then settled exactly against run_seconds, so it is the same integer
    a bisection over run_seconds finds (the default guess, 1: doubling and bisection). Every step
    lasts at least the idle time, so the answer is bounded. `run`: runner(model, batch,
    first_context), when the caller has it already.
    """
    if seconds <= 0:
        return 0, 0.0
    if run is None:
        run = runner(model, batch, first_context)
    if batch == 0:
        start = math.ceil(seconds / model.idle_seconds)
    else:
        start = model.guess(batch, first_context, seconds)
    return _fewest(run, seconds, max(1, start))


StepFunction = Callable[[int, float, int], float]
StopFunction = Callable[[int, float, "int | None", "float | None"], tuple[int, float]]
AdvanceFunction = Callable[
    [int, float, int, int, float, "int | None", "float | None", float], tuple[int, float]
]


class ClockFunctions(NamedTuple):
    """The simulator's per-event clock, as plain functions of a model, made once per run.

    - stop(batch, first_context, steps, need): where the clock stops next, (k, run_seconds(k))
      for a fixed batch's run of decode steps: k = `steps` (the steps before the next known
      event; None: there is none), or fewer if the run lasts `need` seconds sooner (the next
      arrival): the fewest steps that do (0 if need ≤ 0 or steps = 0);
    - advance(batch, context, prefill, next_batch, first_context, steps, deadline, now): both in
      one call, as the simulator uses them at every event: step t's seconds (`this`: the idle
      time if it ran nothing), then stop(next_batch, first_context, steps, need) with need =
      deadline − (now + this) (None without a deadline); returns (k, this + run_seconds(k)).
    """

    stop: StopFunction
    advance: AdvanceFunction


def clock_functions(model: StepTime, batch_limit: int = 0) -> ClockFunctions:
    """The model's per-event clock (StepTime.clock_functions). A model may give closures over
    its constants, in plain floats (a million events make attribute look-ups and scalar numpy
    calls the simulator's cost); they answer with the same integers and floats as `step`, the
    runner and reach(), which the generic ones call. batch_limit: the largest batch the run
    will have, if known (terms per batch size may be worked out ahead up to it)."""
    return model.clock_functions(batch_limit)


def generic_clock_functions(model: StepTime) -> ClockFunctions:
    """The clock from the model's step, runner and guess, through reach()."""

    def stop(batch: int, first_context: float, steps: int | None, need: float | None) -> tuple[int, float]:
        return _stop(model, batch, first_context, steps, need)

    return ClockFunctions(stop, _advance_from(model.step, stop, model.idle_seconds))


def _advance_from(step: StepFunction, stop: StopFunction, idle: float) -> AdvanceFunction:
    def advance(
        batch: int,
        context: float,
        prefill: int,
        next_batch: int,
        first_context: float,
        steps: int | None,
        deadline: float | None,
        now: float,
    ) -> tuple[int, float]:
        this = idle if batch == 0 and prefill == 0 else step(batch, context, prefill)
        need = None if deadline is None else deadline - (now + this)
        ahead, span = stop(next_batch, first_context, steps, need)
        return ahead, this + span

    return advance


def stop(
    model: StepTime, batch: int, first_context: float, steps: int | None, need: float | None
) -> tuple[int, float]:
    """clock_functions(model).stop, for one call."""
    return clock_functions(model).stop(batch, first_context, steps, need)


def _stop(
    model: StepTime, batch: int, first_context: float, steps: int | None, need: float | None
) -> tuple[int, float]:
    if need is not None and need <= 0:
        return 0, 0.0
    run = runner(model, batch, first_context)
    span = 0.0 if not steps else run(steps)
    if need is not None and (steps is None or span >= need):
        return reach(model, batch, first_context, need, run)
    assert steps is not None, "a run with nothing ahead has no end"
    return steps, span


def _fewest(run: Callable[[int], float], seconds: float, start: int) -> tuple[int, float]:
    """The least k ≥ 1 with run(k) ≥ seconds, and run(k) (run nondecreasing, run(0) = 0 <
    seconds), found by galloping from `start` and bisecting: two calls when `start` is right."""
    at_start = run(start)
    if at_start >= seconds:
        hi, at_hi, width = start, at_start, 1
        while hi - width >= 1:
            value = run(hi - width)
            if value < seconds:
                break
            hi, at_hi = hi - width, value
            width *= 2
        lo = max(0, hi - width)  # run(lo) < seconds, or lo == 0
    else:
        lo, width = start, 1
        while True:
            at_hi = run(lo + width)
            if at_hi >= seconds:
                break
            lo += width
            width *= 2
        hi = lo + width
    while hi - lo > 1:
        mid = (lo + hi) // 2
        value = run(mid)
        if value < seconds:
            lo = mid
        else:
            hi, at_hi = mid, value
    return hi, at_hi


def _quadratic_steps(first: float, slope: float, seconds: float) -> int:
    """About the least k with k·first + slope·k(k−1)/2 ≥ seconds (an arithmetic series of step
    costs): the positive root, rounded up. Only a starting point: the caller settles it."""
    if slope <= 0:
        return math.ceil(seconds / first) if first > 0 else 1
    b = first - slope / 2
    root = (-b + math.sqrt(b * b + 2 * slope * seconds)) / slope
    return max(1, math.ceil(root)) if math.isfinite(root) else 1


def run_sum(steps: Any, flat: Any, gamma: Any, base: Any, slope: Any, comm: Any) -> Any:
    """Seconds of a roofline decode run of `steps` steps: its first `flat` steps compute-bound at
    γ each, the rest memory-bound, base + slope·j at its j-th step (an arithmetic series), and
    every step waiting `comm` for its all-reduces. Plain floats or aligned arrays, the same
    operations either way, so the simulator's per-event clock and a finished schedule's clock
    give the same floats; flat = 0 or comm = 0 add only exact zeros."""
    rest = steps - flat
    return gamma * flat + rest * base + slope * (rest * (flat + steps - 1) / 2) + steps * comm


def _roofline_guess(
    gamma: float, base: float, slope: float, crossing: float, comm: float, seconds: float
) -> int:
    """About the fewest steps of a roofline run (its _terms, and comm per step) that last
    `seconds`: the compute-bound stretch by division, the memory-bound one by the quadratic's
    root. Only a start: reach() settles it."""
    if comm:  # a rough start is enough
        return _quadratic_steps(max(gamma, base) + comm, slope, seconds)
    if gamma > 0 and seconds <= gamma * crossing:
        return math.ceil(seconds / gamma)
    flat = 0.0 if crossing == math.inf else crossing  # (crossing is inf only if γ·∞ ≥ seconds)
    left = seconds - gamma * flat
    return int(flat) + _quadratic_steps(base + slope * flat, slope, left)


@dataclass(frozen=True)
class UnitStepTime(StepTime):
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

    # plain-float twins of seconds / segment_seconds, for the simulator's per-event clock
    def step(self, batch: int, context: float, prefill: int) -> float:
        return self.seconds_per_step

    def run(self, batch: int, first_context: float, steps: int) -> float:
        return steps * self.seconds_per_step

    def guess(self, batch: int, first_context: float, seconds: float) -> int:
        return math.ceil(seconds / self.seconds_per_step)

    def describe(self) -> dict:
        return {"kind": "unit", "seconds_per_step": self.seconds_per_step}


@dataclass(frozen=True)
class RooflineStepTime(StepTime):
    """A step is bound by memory or by compute, whichever is slower.

    bytes = weights (read once per step) + the batch's KV reads + the prompt KV written;
    FLOPs = flops_per_token × tokens processed (decoded + prefilled), about 2 × active parameters.
    step = max(bytes / HBM bandwidth, FLOPs / peak FLOP/s). Decode is memory-bound, so the batch
    is nearly free until its KV reads rival the weights: the reason batching pays.
    Attention FLOPs and kernel overheads are left out: a lower bound, not a prediction.

    Under tensor parallelism the figures are one GPU's share, and every token also waits for
    its all-reduces (two per layer, not overlapped with compute): comm_seconds_per_token, added
    to the step (0 on one GPU).
    """

    weights_bytes: float
    kv_bytes_per_token: float
    flops_per_token: float
    hbm_bytes_per_s: float
    peak_flops: float
    comm_seconds_per_token: float = 0.0

    def __post_init__(self) -> None:
        if min(self.hbm_bytes_per_s, self.peak_flops) <= 0:
            raise ValueError("bandwidth and peak FLOP/s must be positive")
        if min(self.weights_bytes, self.kv_bytes_per_token, self.flops_per_token) < 0:
            raise ValueError("bytes and FLOPs must be non-negative")

    @property
    def constant(self) -> None:
        return None

    @cached_property
    def idle_seconds(self) -> float:
        # worked out once: the simulator asks at every idle stretch, and numpy on one element
        # costs more than the run's arithmetic (the instance is frozen, so it cannot go stale)
        return float(self.seconds(np.array([1]), np.array([1]), np.array([0]))[0])

    def seconds(self, batch: np.ndarray, context: np.ndarray, prefill: np.ndarray) -> np.ndarray:
        batch, context, prefill = (np.asarray(a, dtype=np.float64) for a in (batch, context, prefill))
        moved = self.weights_bytes + self.kv_bytes_per_token * (context + prefill)
        flops = self.flops_per_token * (batch + prefill)
        bound = np.maximum(moved / self.hbm_bytes_per_s, flops / self.peak_flops)
        if self.comm_seconds_per_token:
            return bound + self.comm_seconds_per_token * (batch + prefill)
        return bound

    def segment_seconds(self, batch: Any, first_context: Any, steps: Any) -> Any:
        """Σ_j max(α + β·(C0 + B·j), γ): compute-bound while the KV reads are small, then
        memory-bound with a linearly growing cost; the crossing step splits the sum in two."""
        batch, first_context, steps = (np.asarray(a, dtype=np.float64) for a in (batch, first_context, steps))
        alpha = self.weights_bytes / self.hbm_bytes_per_s
        beta = self.kv_bytes_per_token / self.hbm_bytes_per_s
        gamma = self.flops_per_token * batch / self.peak_flops
        base = alpha + beta * first_context  # memory term of the first step
        slope = beta * batch  # its growth per step
        with np.errstate(divide="ignore", invalid="ignore"):
            crossing = np.ceil((gamma - base) / slope)
        flat = np.where(base >= gamma, 0.0, np.where(slope == 0, steps, np.minimum(steps, crossing)))
        return run_sum(steps, flat, gamma, base, slope, self.comm_seconds_per_token * batch)

    # plain-float twins of seconds / segment_seconds (the same operations in the same order, so
    # the same floats), for the simulator's per-event clock
    def step(self, batch: int, context: float, prefill: int) -> float:
        moved = self.weights_bytes + self.kv_bytes_per_token * (float(context) + float(prefill))
        flops = self.flops_per_token * (float(batch) + float(prefill))
        bound = max(moved / self.hbm_bytes_per_s, flops / self.peak_flops)
        if self.comm_seconds_per_token:
            return bound + self.comm_seconds_per_token * (float(batch) + float(prefill))
        return bound

    def _terms(self, batch: float, first_context: float) -> tuple[float, float, float, float]:
        """(γ, base, slope, crossing): the compute-bound step, the first memory-bound step, its
        growth per step, and the steps before memory wins (inf: never)."""
        alpha = self.weights_bytes / self.hbm_bytes_per_s
        beta = self.kv_bytes_per_token / self.hbm_bytes_per_s
        gamma = self.flops_per_token * batch / self.peak_flops
        base = alpha + beta * first_context
        slope = beta * batch
        if base >= gamma:
            return gamma, base, slope, 0.0
        if slope == 0:
            return gamma, base, slope, math.inf
        return gamma, base, slope, float(math.ceil((gamma - base) / slope))

    def run(self, batch: int, first_context: float, steps: int) -> float:
        return self.runner(batch, first_context)(steps)

    def runner(self, batch: int, first_context: float) -> Callable[[int], float]:
        gamma, base, slope, crossing = self._terms(float(batch), float(first_context))
        comm = self.comm_seconds_per_token * float(batch)

        def summed(steps: int) -> float:
            k = float(steps)
            return run_sum(k, min(k, crossing), gamma, base, slope, comm)

        return summed

    def guess(self, batch: int, first_context: float, seconds: float) -> int:
        gamma, base, slope, crossing = self._terms(float(batch), float(first_context))
        return _roofline_guess(gamma, base, slope, crossing, self.comm_seconds_per_token * batch, seconds)

    def clock_functions(self, batch_limit: int = 0) -> ClockFunctions:
        """steptime.clock_functions: `step` (as advance() prices step t), and the runner's sum with
        guess() and reach(), over constants worked out once, through the same run_sum (so the
        same floats; a memory-bound run is run_sum with no compute-bound steps, its 0.0 terms
        exact). A guess is settled by two sums when it is right (the usual case), else by
        _fewest. No builtin calls (max, min, float) on the common path: each costs several
        arithmetic operations on an interpreter built without optimisations, and an int meets
        a float exactly as float() converts it."""
        weights, kv, flops_per_token = self.weights_bytes, self.kv_bytes_per_token, self.flops_per_token
        hbm, peak, per_token = self.hbm_bytes_per_s, self.peak_flops, self.comm_seconds_per_token
        alpha, beta = weights / hbm, kv / hbm
        idle, runner = self.idle_seconds, self.runner
        inf, ceil, sqrt = math.inf, math.ceil, math.sqrt

        def settle(
            batch: int,
            first_context: float,
            gamma: float,
            base: float,
            slope: float,
            crossing: float,
            comm: float,
            need: float,
            start: int,
        ) -> tuple[int, float]:
            """The fewest steps lasting ≥ need (> 0), from a guess `start` ≥ 1 (any start gives
            the same answer); the terms are _terms's."""
            k = start + 0.0
            at = run_sum(k, crossing if crossing < k else k, gamma, base, slope, comm)
            if at >= need:
                if start == 1:
                    return 1, at
                k -= 1.0
                if run_sum(k, crossing if crossing < k else k, gamma, base, slope, comm) < need:
                    return start, at
            return _fewest(runner(batch, first_context), need, start)

        def stop(
            batch: int, first_context: float, steps: int | None, need: float | None
        ) -> tuple[int, float]:
            if steps == 0 or (need is not None and need <= 0):
                return 0, 0.0
            if not batch:
                return _stop(self, batch, first_context, steps, need)
            gamma = flops_per_token * batch / peak  # as _terms
            base = alpha + beta * first_context
            slope = beta * batch
            comm = per_token * batch
            if base >= gamma:
                crossing = 0.0
            elif slope == 0:
                crossing = inf
            else:
                crossing = ceil((gamma - base) / slope) + 0.0
            if steps is not None:
                k = steps + 0.0
                span = run_sum(k, crossing if crossing < k else k, gamma, base, slope, comm)
                if need is None or span < need:
                    return steps, span
            assert need is not None, "a run with nothing ahead has no end"
            start = _roofline_guess(gamma, base, slope, crossing, comm, need)
            return settle(batch, first_context, gamma, base, slope, crossing, comm, need, start)

        # γ, the growth per step and the all-reduce time of a batch, for the run's sizes
        table = min(batch_limit, 4096) + 1
        sizes = range(table)
        gammas = [flops_per_token * b / peak for b in sizes]  # as _terms
        slopes = [beta * b for b in sizes]
        comms = [per_token * b for b in sizes]

        def advance(
            batch: int,
            context: float,
            prefill: int,
            next_batch: int,
            first_context: float,
            steps: int | None,
            deadline: float | None,
            now: float,
        ) -> tuple[int, float]:
            # step t's seconds, as step()
            if prefill:
                tokens = (batch + 0.0) + prefill  # float(batch) + float(prefill)
                memory = (weights + kv * ((context + 0.0) + prefill)) / hbm
                compute = flops_per_token * tokens / peak
                this = compute if compute > memory else memory
                if per_token:
                    this = this + per_token * tokens
            elif batch:
                memory = (weights + kv * context) / hbm
                compute = gammas[batch] if batch < table else flops_per_token * batch / peak
                this = compute if compute > memory else memory
                if per_token:
                    this = this + per_token * batch
            else:
                this = idle
            if deadline is None:
                need = None
            else:
                need = deadline - (now + this)
                if need <= 0:
                    return 0, this + 0.0
            if steps == 0:
                return 0, this + 0.0
            # then stop(), its memory-bound case (no crossing) written out here
            if not next_batch or next_batch >= table:
                ahead, span = stop(next_batch, first_context, steps, need)
                return ahead, this + span
            gamma = gammas[next_batch]
            base = alpha + beta * first_context
            if base < gamma:
                ahead, span = stop(next_batch, first_context, steps, need)
                return ahead, this + span
            # Here the run is memory-bound from its first step: run_sum with flat = 0, its exact
            # zero terms dropped, written out (the same floats): a call costs more than the sum,
            # and nearly every event of a timed run comes this way
            slope, comm = slopes[next_batch], comms[next_batch]
            if steps is not None:
                k = steps + 0.0
                span = k * base + slope * (k * (k - 1) / 2)
                if comm:
                    span = span + k * comm
                if need is None or span < need:
                    return steps, this + span
            assert need is not None, "a run with nothing ahead has no end"
            # the fewest steps lasting ≥ need: the root of the sum's quadratic, settled by two
            # sums when it is right (else settle() searches)
            per_step = base + comm
            if slope > 0:
                half = per_step - slope / 2
                root = (sqrt(half * half + 2 * slope * need) - half) / slope
            else:
                root = need / per_step
            start = ceil(root) if 1 < root < 1e15 else 1
            k = start + 0.0
            at = k * base + slope * (k * (k - 1) / 2)
            if comm:
                at = at + k * comm
            if at >= need:
                if start == 1:
                    return 1, this + at
                k -= 1.0
                below = k * base + slope * (k * (k - 1) / 2)
                if comm:
                    below = below + k * comm
                if below < need:
                    return start, this + at
            ahead, span = settle(next_batch, first_context, gamma, base, slope, 0.0, comm, need, start)
            return ahead, this + span

        return ClockFunctions(stop, advance)

    def describe(self) -> dict:
        return {
            "kind": "roofline",
            "weights_bytes": self.weights_bytes,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "flops_per_token": self.flops_per_token,
            "hbm_bytes_per_s": self.hbm_bytes_per_s,
            "peak_flops": self.peak_flops,
            **(
                {"comm_seconds_per_token": self.comm_seconds_per_token} if self.comm_seconds_per_token else {}
            ),
        }


@dataclass(frozen=True)
class MeasuredStepTime(StepTime):
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

    @cached_property
    def idle_seconds(self) -> float:
        # worked out once: the simulator asks at every idle stretch, and numpy on one element
        # costs more than the run's arithmetic (the instance is frozen, so it cannot go stale)
        return float(self.seconds(np.array([1]), np.array([1]), np.array([0]))[0])

    def seconds(self, batch: np.ndarray, context: np.ndarray, prefill: np.ndarray) -> np.ndarray:
        batch, context, prefill = (np.asarray(a, dtype=np.float64) for a in (batch, context, prefill))
        return (
            self.intercept + self.per_token * (batch + prefill) + self.per_context_token * (context + prefill)
        )

    def segment_seconds(self, batch: Any, first_context: Any, steps: Any) -> Any:
        batch, first_context, steps = (np.asarray(a, dtype=np.float64) for a in (batch, first_context, steps))
        first = self.intercept + self.per_token * batch + self.per_context_token * first_context
        return steps * first + self.per_context_token * batch * steps * (steps - 1) / 2

    # plain-float twins of seconds / segment_seconds, for the simulator's per-event clock
    def step(self, batch: int, context: float, prefill: int) -> float:
        b, c, p = float(batch), float(context), float(prefill)
        return self.intercept + self.per_token * (b + p) + self.per_context_token * (c + p)

    def run(self, batch: int, first_context: float, steps: int) -> float:
        return self.runner(batch, first_context)(steps)

    def runner(self, batch: int, first_context: float) -> Callable[[int], float]:
        b, c = float(batch), float(first_context)
        first = self.intercept + self.per_token * b + self.per_context_token * c
        growth = self.per_context_token * b

        def summed(steps: int) -> float:
            k = float(steps)
            return k * first + growth * k * (k - 1) / 2

        return summed

    def guess(self, batch: int, first_context: float, seconds: float) -> int:
        b, c = float(batch), float(first_context)
        first = self.intercept + self.per_token * b + self.per_context_token * c
        return _quadratic_steps(first, self.per_context_token * b, seconds)

    def describe(self) -> dict:
        return {
            "kind": "measured",
            "intercept_s": self.intercept,
            "per_token_s": self.per_token,
            "per_context_token_s": self.per_context_token,
            "points": self.points,
            "rmse_s": self.rmse,
        }
