"""The batching simulator: static, continuous and paged (vLLM-style) scheduling.

``simulate(workload, policy, slots=…, step_time=…)`` runs one policy over one workload and
returns a PolicyResult. The policies decide *who holds which slot when*, in steps
(engine.batching.static / continuous / paged); a step-time model turns steps into seconds
(engine.batching.steptime); metrics are computed the same way for all three (metrics).

The semantics are the lab's: at the start of every step free slots are filled in arrival order,
every running request emits one token, finished requests leave. A prompt costs its request one
prefill step of its own (see schedule.prefill_steps); without prompts the lab's counts hold
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

import numpy as np

from engine.batching.clock import Clock, clock_for
from engine.batching.continuous import ContinuousPolicy, schedule_continuous
from engine.batching.metrics import PolicyResult, measure, throughput_multiple
from engine.batching.paged import PagedPolicy, blocks_per_step, schedule_paged
from engine.batching.schedule import Schedule, prefill_steps
from engine.batching.static import StaticPolicy, schedule_static, schedule_static_timed
from engine.batching.steptime import MeasuredStepTime, RooflineStepTime, StepTime, UnitStepTime
from engine.errors import UserError
from engine.workload import Workload

Policy = StaticPolicy | ContinuousPolicy | PagedPolicy

__all__ = [
    "Clock", "ContinuousPolicy", "MeasuredStepTime", "PagedPolicy", "Policy", "PolicyResult",
    "RooflineStepTime", "Schedule", "StaticPolicy", "StepTime", "UnitStepTime", "blocks_per_step",
    "clock_for", "prefill_steps", "roofline_from_catalog", "schedule", "simulate",
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
    prompt, output = workload.prompt_tokens, workload.output_tokens
    if isinstance(policy, StaticPolicy):
        return schedule_static(eligible, prompt, output, slots, deadline)
    if isinstance(policy, ContinuousPolicy):
        return schedule_continuous(eligible, prompt, output, slots)
    if isinstance(policy, PagedPolicy):
        return schedule_paged(eligible, prompt, output, slots, policy)
    raise TypeError(f"not a batching policy: {policy!r}")


def simulate(
    workload: Workload, policy: Policy, *, slots: int, step_time: StepTime | None = None
) -> PolicyResult:
    """Run one policy over a workload on `slots` slots; seconds too when step_time is given."""
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
    if step_time is None:
        clock = None
        eligible = np.zeros(workload.n, dtype=np.int64)
        sched = schedule(workload, policy, slots, eligible, _deadline(policy, None, arrival))
    elif step_time.constant is not None:
        # Steps on an exact grid: an arrival joins at the first step that begins after it.
        clock = Clock(dt=step_time.constant, idle=step_time.constant)
        eligible = clock.step_of(arrival)
        sched = schedule(workload, policy, slots, eligible, _deadline(policy, clock, arrival))
    elif not workload.has_arrivals:
        eligible = np.zeros(workload.n, dtype=np.int64)
        sched = schedule(workload, policy, slots, eligible)
        clock = clock_for(sched, step_time)
    else:
        # Step lengths depend on the batch, so where an arrival falls among the steps depends on
        # the schedule itself: the policies keep the clock as they go.
        sched = _timed_schedule(workload, policy, slots, step_time)
        clock = clock_for(sched, step_time)
        eligible = clock.step_of(arrival)
    block_size = kv_info = None
    if isinstance(policy, PagedPolicy):
        block_size = policy.block_size
        kv_info = {"num_blocks": policy.num_blocks, "block_size": policy.block_size}
    return measure(
        policy.name,
        sched,
        workload.output_tokens,
        eligible,
        arrival,
        clock,
        block_size=block_size,
        kv_info=kv_info,
        step_time=step_time.describe() if step_time is not None else None,
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
    prompt, output, arrival = workload.prompt_tokens, workload.output_tokens, workload.arrival_time
    if isinstance(policy, StaticPolicy):
        return schedule_static_timed(arrival, prompt, output, slots, policy.max_wait, step_time)
    # Continuous batching is paged batching with unlimited blocks and no token budget.
    paged = policy if isinstance(policy, PagedPolicy) else PagedPolicy()
    unused = np.zeros(workload.n, dtype=np.int64)
    return schedule_paged(unused, prompt, output, slots, paged, clock=(step_time, arrival))


def _deadline(policy: Policy, clock: Clock | None, arrival: np.ndarray) -> np.ndarray | None:
    """Static batching's max_wait, as the step at which each request would have waited it."""
    if not isinstance(policy, StaticPolicy) or policy.max_wait is None:
        return None
    if clock is None:  # untimed runs have everyone waiting at step 0
        return np.zeros(len(arrival), dtype=np.int64)
    return clock.step_of(arrival + policy.max_wait)


def roofline_from_catalog(model: str, gpu: str, kv_dtype: str = "auto", tp: int = 1) -> RooflineStepTime:
    """A roofline step time for a catalog model on a catalog GPU (see loaders)."""
    from engine.batching.loaders import roofline_from_catalog as load

    return load(model, gpu, kv_dtype=kv_dtype, tp=tp)
