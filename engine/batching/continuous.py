"""Continuous (iteration-level) batching, as in Orca: a freed slot is refilled the next step.

At the start of every step, free slots are filled from the waiting queue in arrival order; every
running request emits one token; finished requests leave, and their slots are free at the next
step. That is a first-come-first-served queue in front of `slots` servers, so the schedule has a
closed description that needs no step-by-step loop:

Call a slot becoming free a *free event* (the `slots` slots at step 0, then one at every
request's end). Request i takes the i-th free event in time order and starts at
max(its arrival step, that event). A request's end comes after its own start, so the i-th event
never depends on requests after i; it is the i-th smallest of all events.

Two ways to find the i-th event, both exact and one step of work per request, never per token:

- a heap of the `slots` pending events, popped once per request (used for few slots);
- blocks of requests solved at once (used from 128 slots): the events a block takes are the
  smallest of (the pool of pending events ∪ the block's own ends), a fixed point reached by
  iterating from the pool alone. Each pass fixes at least one more request; a handful settle a
  block of hundreds, so the work is a few numpy sorts per block.

Events carry their slot (key = step × slots + slot): ties go to the lowest slot, and a request
takes the slot that has been free longest, for the timeline.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from engine.batching.paged import UNGATED_SYNC_RULES, PagedPolicy
from engine.batching.registry import PolicyExample, PolicyKind, register
from engine.batching.schedule import Schedule, prefill_steps, single_stays
from engine.batching.steptime import StepTime
from engine.errors import UserError


@dataclass(frozen=True)
class ContinuousPolicy:
    name = "continuous"
    max_wait = None
    kv_blocks = None  # no KV pool: a slot is all a request needs

    def schedule(
        self,
        eligible: np.ndarray,
        prompt: np.ndarray,
        output: np.ndarray,
        slots: int,
        deadline: np.ndarray | None = None,
    ) -> Schedule:
        return schedule_continuous(eligible, prompt, output, slots)

    def schedule_timed(
        self, arrival: np.ndarray, prompt: np.ndarray, output: np.ndarray, slots: int, step_time: StepTime
    ) -> Schedule:
        """With batch-dependent steps and arrivals the clock is kept as the schedule goes:
        continuous batching is paged batching with unlimited blocks and no token budget."""
        refuse_changed_rule(self, "timed steps")
        # (synchronous: a finished request's slot is free at the next step, as in Orca)
        return PagedPolicy(**UNGATED_SYNC_RULES).schedule_timed(arrival, prompt, output, slots, step_time)


def refuse_changed_rule(policy: ContinuousPolicy, where: str) -> None:
    """A subclass that changes continuous batching's step rule (``schedule``) is refused where
    only the plain rule can run (the timed clock, replicas): running plain continuous batching
    under its name would post another policy's numbers as its own."""
    if type(policy).schedule is not ContinuousPolicy.schedule:
        raise UserError(
            f"policy {policy.name!r} changes continuous batching's step rule but has no rule of its "
            f"own for {where} (a schedule_timed): give it one, or run it with unit steps",
            field="policy",
        )


def schedule_continuous(eligible: np.ndarray, prompt: np.ndarray, output: np.ndarray, slots: int) -> Schedule:
    """Start step and slot of every request; see the module docstring for why this is exact."""
    prefill = prefill_steps(prompt)
    start, slot = fcfs_servers(eligible, output, slots)  # the prefill step emits the first token
    return single_stays(slots, slot, start, prefill, prompt, output)


FIXED_POINT_FROM = 128  # slots; below it blocks need many passes and the heap is faster


def fcfs_servers(
    eligible: np.ndarray, service: np.ndarray, slots: int, method: str | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """First-come-first-served on `slots` servers in discrete steps: (start, slot) per request.

    eligible: first step each request may start (non-decreasing); service: steps it holds a slot.
    method: 'heap' or 'blocks' (default: by the number of slots; both give the same answer).
    """
    eligible = np.asarray(eligible, dtype=np.int64)
    service = np.asarray(service, dtype=np.int64)
    # More servers than requests change nothing: each request takes a fresh one at its arrival.
    slots = max(1, min(slots, len(eligible)))
    method = method or ("blocks" if slots >= FIXED_POINT_FROM else "heap")
    if method == "blocks" and (_horizon(eligible, service) + 1) * slots >= 2**62:
        method = "heap"  # the blocks' int64 keys step × slots + slot could overflow
    if method == "heap":
        return _by_heap(eligible, service, slots)
    return _by_blocks(eligible, service, slots)


def _by_heap(eligible: np.ndarray, service: np.ndarray, slots: int) -> tuple[np.ndarray, np.ndarray]:
    pending = list(range(slots))  # event keys: step * slots + slot; already a valid heap
    start: list[int] = []
    slot: list[int] = []
    for arrive, length in zip(eligible.tolist(), service.tolist()):
        free_at, s = divmod(pending[0], slots)
        begin = arrive if arrive > free_at else free_at
        heapq.heapreplace(pending, (begin + length) * slots + s)
        start.append(begin)
        slot.append(s)
    return np.asarray(start, dtype=np.int64), np.asarray(slot, dtype=np.int64)


def _horizon(eligible: np.ndarray, service: np.ndarray) -> int:
    """A step past every possible end."""
    return int(eligible[-1]) + int(service.sum()) + 1


def _by_blocks(eligible: np.ndarray, service: np.ndarray, slots: int) -> tuple[np.ndarray, np.ndarray]:
    n = len(eligible)
    block = max(slots, 256)
    # A time past every possible end: pads a block bigger than the pool (never chosen once the
    # block's own ends are known, and small enough that keys cannot overflow).
    horizon = _horizon(eligible, service)
    pool = np.arange(slots, dtype=np.int64)  # keys of free events: step * slots + slot
    start = np.empty(n, dtype=np.int64)
    slot = np.empty(n, dtype=np.int64)
    for lo in range(0, n, block):
        hi = min(lo + block, n)
        e, s = eligible[lo:hi], service[lo:hi]
        b = hi - lo
        taken = (
            pool[:b]
            if b <= slots
            else np.concatenate((pool, horizon * slots + np.arange(b - slots, dtype=np.int64)))
        )
        while True:
            begin = np.maximum(e, taken // slots)
            ends = (begin + s) * slots + taken % slots
            merged = np.sort(np.concatenate((pool, ends)))
            if np.array_equal(merged[:b], taken):
                break
            taken = merged[:b]
        start[lo:hi] = begin
        slot[lo:hi] = taken % slots
        pool = merged[b:]
    return start, slot


register(
    PolicyKind(
        "continuous",
        lambda s: ContinuousPolicy(),
        "continuous batching",
        "Orca's iteration-level batching: a slot freed by a finished request is refilled at the "
        "next step, first come first served.",
        colour="blue",
        # The 1-token request frees its slot after step 0; the 2-token one runs in steps 1-2,
        # beside the 3-token one's steps 0-2
        example=PolicyExample((3, 1, 2), (1, 1, 1), slots=2, steps=3),
        order=20,
    )
)
