"""Prefill-first scheduling, as vLLM's V0 scheduler runs it (no chunked prefill).

A step either prefills or decodes, never both. At every step the scheduler first tries to admit
waiting requests, in queue order, while a slot (max_num_seqs, counting the running), the token
budget (max_num_batched_tokens, all of it for prompts: decodes pause) and the KV blocks for the
whole prompt allow; the first that does not fit stops the queue. If it admitted anyone, the step
runs those prefills only: every running request pauses for the step (its cache neither read nor
grown), and each prefill emits its request's first token at the step's end. Otherwise the step
decodes every running request, taking a block at each block boundary and preempting the newest
by recompute when none is free, exactly as the mixed-batch scheduler does (engine.batching.paged).

Against vLLM V1's mixed batches (the `paged` policy) a new arrival waits less for its first
token, and everyone already decoding waits one step per prefill step: the trade the two
schedulers make, and why the issue's Vidur comparison differed.

In the schedule a pause is a stay boundary: a paused request's stay ends at the prefill step and
a new one, in the same slot, begins there, prefilling nothing (a chunk of 0 tokens that keeps its
blocks counted) and decoding from the next step, so every consumer of a Schedule (clock, blocks,
metrics, charts) reads it without knowing about pauses.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from engine.batching.blocks import ceil_div
from engine.batching.paged import EVENT_MASK, EVENT_SHIFT, PagedPolicy, _Simulation
from engine.batching.registry import PolicyExample, PolicyKind, PolicySettings, register
from engine.errors import UserError


@dataclass(frozen=True)
class PrefillFirstPolicy(PagedPolicy):
    """The paged scheduler's pool and limits, with vLLM V0's prefill-first rule. V0 had none
    of V1's later rules: no full-prompt gate (it never chunks), no step scheduled ahead, no null
    block; empty prompts it refuses on its own (check_prompts)."""

    reserve_full_prompt: bool = False
    async_scheduling: bool = False
    null_block: bool = False
    allow_empty_prompt: bool = True
    name = "prefill_first"

    def simulation(self) -> type[_Simulation]:
        return _PrefillFirst

    def check(self, prompt: np.ndarray, output: np.ndarray, cap: int) -> None:
        super().check(prompt, output, cap)
        check_prompts(prompt)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.chunked_prefill:
            raise UserError(
                "prefill-first scheduling does not chunk prompts; use the paged policy for chunked prefill",
                field="chunked_prefill",
            )
        if self.async_scheduling:
            raise UserError(
                "prefill-first scheduling is vLLM V0's, which never scheduled a step ahead; "
                "use the paged policy for async scheduling",
                field="async_scheduling",
            )


def check_prompts(prompt: np.ndarray) -> None:
    """Refuse a request without a prompt: this scheduler admits requests by their prefill."""
    if len(prompt) and int(np.min(prompt)) < 1:
        worst = int(np.argmin(prompt))
        raise UserError(
            f"request {worst} has no prompt; prefill-first scheduling admits requests by "
            "their prefill, so every request needs at least one prompt token",
            field="prompt_tokens",
        )


class _PrefillFirst(_Simulation):
    """The paged loop with step 3 and 4 swapped and made exclusive (see the module docstring)."""

    def steps(self) -> Iterator[int]:
        """The loop; pauses as the mixed-batch loop does (engine.batching.paged), so replicas
        behind a router run it side by side too."""
        events, eligible, n = self.events, self.eligible, self.n
        waiting, running, due = self.waiting, self.running, self.due
        blocks, limited = self.decoding_blocks, self.limited
        timed = self.timing is not None
        arrival = self.arrival if timed else eligible
        t, arrived = 0, 0
        while True:
            self.t = t
            if self.checkpoint is not None and self.now + self.tolerance >= self.checkpoint:
                yield t
                n = self.n  # the router may have added requests
            if limited:
                self.held_step = t - 1
                self.free = self.pool - self.explicit - blocks.held(t - 1)
            # 1. completions
            while events and events[0] >> EVENT_SHIFT == t:
                r = heapq.heappop(events) & EVENT_MASK
                if due[r] == t:
                    self._complete(r, t)
            # 2. arrivals
            if arrived < n:
                horizon = self.now + self.tolerance if timed else t
                while arrived < n and arrival[arrived] <= horizon:
                    waiting.append(arrived)
                    arrived += 1
            # 3. prefills first: admit what fits; if anyone was admitted, decodes pause
            preempted = False
            admitted, budget_blocked = self._admit_prefills(t) if waiting else (False, False)
            if admitted:
                for r in [r for r in running if self.decode_from[r] <= t]:  # not the new ones
                    self._pause(r, t)
            elif limited:
                # 4. otherwise a decode step: block boundaries, oldest first
                taking = blocks.taking(t)
                if taking <= self.free:
                    self.free -= taking
                else:
                    preempted = self._reserve_blocks(t)
            self.held_step = t
            # the next step where something can change (completions all lie after t)
            event = events[0] >> EVENT_SHIFT if events else None
            if waiting and (preempted or budget_blocked):  # the budget is per step: next step
                event = t + 1
            if limited and blocks.count:
                short = blocks.first_over(t + 1, self.pool - self.explicit, event)
                if short is not None and (event is None or short < event):
                    event = short
            waiting_for = arrived if not waiting and arrived < n else None
            if timed:
                following = self._advance(t, event, waiting_for)
            else:
                if waiting_for is not None:
                    event = eligible[waiting_for] if event is None else min(event, eligible[waiting_for])
                following = None if event is None else max(t + 1, event)
            if following is None:
                if self.open:
                    raise AssertionError("an open run needs a checkpoint to wait for")
                break
            t = following
        assert not self.running and not self.waiting and arrived == n, "prefill-first run stalled"

    def _admit_prefills(self, t: int) -> tuple[bool, bool]:
        """Admit from the head while a slot, the whole budget and the blocks allow: (anyone
        admitted, stopped by the budget)."""
        budget_left = self.budget
        admitted = False
        while self.waiting and len(self.running) < self.cap:
            r = self.waiting[0]
            context = self.prompt[r] + self.generated[r]
            if budget_left is not None and context > budget_left:
                return admitted, True
            need = ceil_div(context, self.bs)
            if self.limited and need > self.free:
                break
            self.waiting.popleft()
            if budget_left is not None:
                budget_left -= context
            self._open_stay(r, t, context)
            if self.limited:
                self.free -= need
                self.held[r] = need
                self.explicit += need
            self.prefilled[r] = context
            self._chunk(r, t, context)
            self._start_decoding(r, t + 1)  # its prefill emits its next token at the end of t
            admitted = True
        return admitted, False

    def _pause(self, r: int, t: int) -> None:
        """r sits out prefill step t: its stay ends, a new one in the same slot holds its blocks
        through t and decodes from t + 1, where it left off."""
        stay = self.stay[r]
        self.generated[r] += t - self.s_emit[stay]
        cached = self.context[r] + t - self.decode_from[r]
        self.s_end[stay] = t
        slot = self.s_slot[stay]
        if self.timing is not None:
            self.decoding -= 1
            self.context_sum -= self.context[r] - self.decode_from[r] + 1
        if self.limited:
            held = ceil_div(self.offset[r] + t - 1, self.bs)  # after step t − 1's allocations
            self.decoding_blocks.remove(self.offset[r])
            self.counted[r] = False
            self.held[r] = held
            self.explicit += held
        # its queued completion moves one step later (_start_decoding below re-queues it)
        # the new stay: no prefill tokens, its cache as it was
        self.stay[r] = len(self.s_request)
        self.s_request.append(r)
        self.s_slot.append(slot)
        self.s_start.append(t)
        self.s_decode.append(-1)
        self.s_emit.append(-1)
        self.s_end.append(-1)
        self.s_context.append(cached)
        self.context[r] = cached
        self.c_stay.append(self.stay[r])
        self.c_step.append(t)
        self.c_tokens.append(0)
        self.c_done.append(cached)
        self._start_decoding(r, t + 1, emit_from=t + 1)


register(
    PolicyKind(
        "prefill_first",
        lambda s: PrefillFirstPolicy(**s.block_settings()),
        "prefill-first (vLLM V0)",
        "vLLM V0's scheduler: the same KV pool and limits, but a step either prefills newly admitted "
        "requests or decodes the running ones, never both; decodes pause while prompts go in.",
        colour="orange",
        # Step 0 prefills the first two (each prefill emits a token; the 1-token request ends);
        # step 1 prefills the third alone, the decodes waiting; steps 2 and 3 decode
        example=PolicyExample((3, 1, 2), (1, 1, 1), slots=2, steps=4, settings=PolicySettings(num_blocks=64)),
        needs_blocks=True,
        order=40,
    )
)
