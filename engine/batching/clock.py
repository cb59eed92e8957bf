"""From steps to seconds: when each step starts, and the first step an arrival can join.

With a constant step time the steps sit on an exact grid (step k starts at k·dt) and an
arrival at t seconds joins at step ceil(t / dt), idle steps included, as the lab counts them.
With a step time that depends on the batch, each step's length follows from what the schedule
put in it (batch, KV tokens read, prompt tokens), and an idle step costs the model's idle time.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.batching.schedule import Schedule
from engine.batching.steptime import StepTime

_EPS = 1e-9  # an arrival computed as 2.9999999999 steps still joins at step 3


@dataclass(frozen=True, eq=False)
class Clock:
    """Seconds at step boundaries: a grid (dt) or a table of step starts (starts, idle)."""

    dt: float | None = None
    starts: np.ndarray | None = None  # starts[k] = seconds when step k begins; last = run's end
    idle: float = 0.0

    def at(self, steps: np.ndarray) -> np.ndarray:
        """Seconds when step `steps` begins (equivalently, when step steps−1 ends)."""
        steps = np.asarray(steps)
        if self.dt is not None:
            return steps * self.dt
        assert self.starts is not None
        last = len(self.starts) - 1
        inside = self.starts[np.minimum(steps, last)]
        return inside + np.maximum(steps - last, 0) * self.idle

    def step_of(self, seconds: np.ndarray) -> np.ndarray:
        """The first step that begins at or after each time: when an arrival can join."""
        seconds = np.asarray(seconds, dtype=np.float64)
        if self.dt is not None:
            return np.maximum(np.ceil(seconds / self.dt - _EPS), 0).astype(np.int64)
        assert self.starts is not None
        last = len(self.starts) - 1
        inside = np.searchsorted(self.starts, seconds - _EPS * self.idle, side="left")
        beyond = last + np.ceil((seconds - self.starts[-1]) / self.idle - _EPS)
        return np.where(inside <= last, inside, beyond).astype(np.int64)


def step_load(schedule: Schedule) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What every step does: (decoding requests, KV tokens they read, prompt tokens prefilled).

    Built with difference arrays from the stays, so it costs O(stays + steps), not per token.
    A request decoding at step k with c tokens cached reads c + 1 (its new token included);
    summed over a stay that is linear in k, so two running sums give the total.
    """
    horizon = schedule.makespan
    ds, end = schedule.decode_start, schedule.end
    live = end > ds
    ds, end, cached = ds[live], end[live], schedule.context[live]
    count = np.bincount(ds, minlength=horizon + 1) - np.bincount(end, minlength=horizon + 1)
    offset = (cached - ds + 1).astype(np.float64)
    base = np.bincount(ds, weights=offset, minlength=horizon + 1) - np.bincount(
        end, weights=offset, minlength=horizon + 1
    )
    batch = np.cumsum(count)[:horizon]
    context = np.cumsum(base)[:horizon] + np.arange(horizon) * batch
    prefill = np.bincount(
        schedule.chunk_step, weights=schedule.chunk_tokens.astype(np.float64), minlength=horizon
    )[:horizon]
    return batch, context, prefill


def clock_for(schedule: Schedule, step_time: StepTime) -> Clock:
    """The clock of a finished schedule under a step-time model."""
    if step_time.constant is not None:
        return Clock(dt=step_time.constant, idle=step_time.constant)
    batch, context, prefill = step_load(schedule)
    seconds = step_time.seconds(batch, context, prefill)
    idle = step_time.idle_seconds
    seconds = np.where((batch == 0) & (prefill == 0), idle, seconds)
    return Clock(starts=np.concatenate(([0.0], np.cumsum(seconds))), idle=idle)
