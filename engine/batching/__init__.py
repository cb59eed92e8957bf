"""The batching simulator: static, continuous, paged (vLLM V1) and prefill-first (vLLM V0).

``simulate(workload, policy, slots=…, step_time=…)`` runs one policy over one workload and
returns a PolicyResult: the pure entry point for programs (a capacity-planning grid calls it
once per cell; `registry.build(name, PolicySettings(…))` makes the policy from plain settings,
`replicas.simulate_replicas` runs a cluster). The policies, registered by name in
engine.batching.registry, decide *who holds which slot when*, in steps (engine.batching.static /
continuous / paged / prefill_first); a step-time model turns steps into seconds
(engine.batching.steptime, calibrated); metrics are computed the same way for all (metrics).

The semantics are the lab's: at the start of every step free slots are filled in arrival order,
every running request emits one token, finished requests leave. A prompt costs its request one
prefill step of its own, which emits its first token (vLLM's convention; see
schedule.prefill_steps); without prompts the lab's counts hold
exactly (its trace: static 5,797 steps, continuous 1,148). Arrival times are seconds, so a
workload with arrivals needs a step-time model to place them among the steps. Under a step-time
model a static step is priced as real static batching runs it: the whole group is in the batch
until its longest member ends, finished members as padding (engine.batching.static).

Event-driven throughout: static batching is a vectorised max-plus scan over groups, continuous
batching one heap operation per request (or, for many slots, a blocked fixed point over free
slots), paged batching a loop over events (admissions, completions, block boundaries). None of
them loops once per generated token, and nothing is built per step (the clock and the series
come from the stays), so a run of billions of steps costs what its requests cost. When a step's
length depends on the batch (roofline, measured) and requests arrive over time, static and
paged batching keep the clock as they go and continuous batching runs as paged batching with
unlimited blocks (which it equals). A step time so short that the last arrival lies beyond
MAX_STEPS (10^15) steps is refused.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

from engine.batching import registry
from engine.batching.blocks import blocks_per_step
from engine.batching.clock import Clock, GridClock, SegmentClock, clock_for
from engine.batching.continuous import ContinuousPolicy, schedule_continuous
from engine.batching.loaders import roofline_from_catalog
from engine.batching.metrics import PolicyResult, measure, throughput_multiple
from engine.batching.paged import PagedPolicy, schedule_paged
from engine.batching.registry import PolicyKind, PolicySettings
from engine.batching.schedule import Schedule, prefill_steps
from engine.batching.static import StaticPolicy, schedule_static, schedule_static_timed
from engine.batching.steptime import MeasuredStepTime, RooflineStepTime, StepTime, UnitStepTime
from engine.errors import UserError
from engine.workload import Workload


class Policy(Protocol):
    """What the simulator needs from a batching policy (see engine.batching.registry).

    name: its registered name; max_wait: static batching's wait for a partial group, seconds
    (None for the rest); kv_blocks: (block size, pool description) when it has a KV pool."""

    @property
    def name(self) -> str: ...

    @property
    def max_wait(self) -> float | None: ...

    @property
    def kv_blocks(self) -> tuple[int, dict[str, Any]] | None: ...

    def schedule(
        self,
        eligible: np.ndarray,
        prompt: np.ndarray,
        output: np.ndarray,
        slots: int,
        deadline: np.ndarray | None = None,
    ) -> Schedule: ...

    def schedule_timed(
        self, arrival: np.ndarray, prompt: np.ndarray, output: np.ndarray, slots: int, step_time: StepTime
    ) -> Schedule: ...


__all__ = [
    "Clock",
    "ContinuousPolicy",
    "GridClock",
    "SegmentClock",
    "MeasuredStepTime",
    "PagedPolicy",
    "Policy",
    "PolicyKind",
    "PolicyResult",
    "PolicySettings",
    "RooflineStepTime",
    "Schedule",
    "StaticPolicy",
    "StepTime",
    "UnitStepTime",
    "blocks_per_step",
    "clock_for",
    "prefill_steps",
    "registry",
    "roofline_from_catalog",
    "schedule",
    "schedule_continuous",
    "schedule_paged",
    "schedule_static",
    "schedule_static_timed",
    "simulate",
    "throughput_multiple",
]


def schedule(
    workload: Workload,
    policy: Policy,
    slots: int,
    eligible: np.ndarray,
    deadline: np.ndarray | None = None,
) -> Schedule:
    """The policy's decisions in steps, given the first step each request may join."""
    return policy.schedule(eligible, workload.prompt_tokens, workload.output_tokens, slots, deadline)


def simulate(
    workload: Workload, policy: Policy, *, slots: int, step_time: StepTime | None = None
) -> PolicyResult:
    """Run one policy over a workload on `slots` slots; seconds too when step_time is given.

    The pure entry point: a workload and a configured policy in, every metric out
    (PolicyResult.to_dict() for plain JSON). The policy must be registered under its name
    (engine.batching.registry), so a policy object nobody registered is refused, not guessed at.
    """
    registry.kind(policy.name)
    if slots < 1:
        raise UserError(f"must be at least 1, got {slots}", field="slots")
    arrival = workload.arrival_time
    if step_time is not None:
        _check_steps(arrival, step_time)
    if step_time is None and workload.has_arrivals:
        raise UserError(
            "the workload has arrival times in seconds; give a step-time model "
            "(e.g. unit, 0.02 s per step) to place them among the steps",
            field="step_time",
        )
    eligible: np.ndarray | None
    if step_time is None:
        eligible = np.zeros(workload.n, dtype=np.int64)
        sched = schedule(workload, policy, slots, eligible, _deadline(policy, None, arrival))
    elif step_time.constant is not None:
        # Steps on an exact grid: an arrival joins at the first step that begins after it.
        grid = GridClock(step_time.constant)
        eligible = grid.step_of(arrival)
        sched = schedule(workload, policy, slots, eligible, _deadline(policy, grid, arrival))
    elif not workload.has_arrivals:
        eligible = np.zeros(workload.n, dtype=np.int64)
        sched = schedule(workload, policy, slots, eligible)
    else:
        # Step lengths depend on the batch, so where an arrival falls among the steps depends on
        # the schedule itself: the policies keep the clock as they go, and pricing asks the
        # finished schedule's clock for the step each arrival joins at.
        sched = _timed_schedule(workload, policy, slots, step_time)
        eligible = None
    block_size = kv_info = None
    if policy.kv_blocks is not None:
        block_size, kv_info = policy.kv_blocks
    return measure(
        policy.name,
        sched,
        workload.output_tokens,
        arrival,
        eligible,
        step_time,
        block_size=block_size,
        kv_info=kv_info,
    )


MAX_STEPS = 10**15  # steps to the last arrival: keeps every step count exact in a float64


def _check_steps(arrival: np.ndarray, step_time: StepTime) -> None:
    """Refuse a step time so short that the arrivals lie beyond MAX_STEPS steps."""
    idle = step_time.idle_seconds
    if not idle > 0:
        raise UserError("a step must take some time: the model's idle step is 0 s", field="step_time")
    if float(arrival[-1]) / idle > MAX_STEPS:
        raise UserError(
            f"steps of {idle:g} s put the last arrival ({float(arrival[-1]):g} s) beyond "
            f"{MAX_STEPS:.0e} steps; use a longer step or an earlier last arrival",
            field="step_time",
        )


def _timed_schedule(workload: Workload, policy: Policy, slots: int, step_time: StepTime) -> Schedule:
    return policy.schedule_timed(
        workload.arrival_time, workload.prompt_tokens, workload.output_tokens, slots, step_time
    )


def _deadline(policy: Policy, clock: Clock | None, arrival: np.ndarray) -> np.ndarray | None:
    """Static batching's max_wait, as the step at which each request would have waited it."""
    if policy.max_wait is None:
        return None
    if clock is None:  # untimed runs have everyone waiting at step 0
        return np.zeros(len(arrival), dtype=np.int64)
    return clock.step_of(arrival + policy.max_wait)
