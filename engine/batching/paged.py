"""Paged scheduling, as in vLLM: continuous batching whose admission is bounded by KV blocks.

The KV cache is cut into `num_blocks` blocks of `block_size` tokens (vLLM's num_gpu_blocks: with
the null block, one of them is never handed out). A request holds
ceil(tokens in cache / block_size) blocks and takes a new one each time its cache crosses a
block boundary, so memory follows the real length instead of a worst-case reservation. When a
block is needed and none is free, the newest running request is *preempted by recompute*: its
blocks are freed and it goes back to the front of the queue; when re-admitted it prefills its
prompt plus the tokens it had already emitted (those stay emitted).

The rules of one step t, in order (vLLM's V1 scheduler, running requests first; replayed step for
step against vLLM 0.33.0's own scheduler by tests/test_vllm_oracle.py):

1. Requests that emitted their last token in step t−1 leave; their blocks and slots are free.
   (With async scheduling, vLLM's default, step t is scheduled before step t−1's tokens are
   back: such a request sits step t out, its seat and blocks still taken, and may be preempted
   as the newest; they are free from step t+1.)
2. Requests whose arrival step is ≤ t join the waiting queue (its back, first come first served;
   the queue is an object, engine.batching.queues, so another order is another class).
3. Running requests reserve this step's work, oldest admission first:
   a. a decoding request whose cache holds a multiple of block_size tokens needs one block;
   b. (chunked prefill) a prefilling request takes its next chunk, min(prompt left, token
      budget left), and the blocks that chunk fills; the budget left is max_num_batched_tokens
      minus one token per decoding request (counted after 3a).
   Whenever blocks are short, the newest running request is preempted, repeatedly; a request
   that is itself the newest is preempted instead.
4. Unless something was preempted in this step, waiting requests are admitted in queue order
   while a slot (max_num_seqs), the budget and the blocks for their first step allow (and,
   with reserve_full_prompt, vLLM's default, the free blocks hold the whole prompt); the
   first that does not fit stops the queue (no overtaking). A request with nothing cached
   decodes at once (one block); otherwise its first step is prefill: the whole context in one
   step (blocks for all of it), or with chunked prefill its first chunk.
5. Every decoding request emits one token, and so does every prefill that completes in step t
   (vLLM samples it from the prompt's last position); that request decodes from t + 1.

Event-driven: the loop visits only steps where something happens (a completion, an arrival that
can be admitted, a prefill chunk, or a step where the decoding requests' next blocks would not
fit the pool), so the work grows with requests, not with generated tokens or blocks. The
decoding requests' blocks are counted in aggregate (engine.batching.blocks): a step where
blocks run short is found in closed form, and only then are requests walked one by one. With
unlimited blocks, no budget and synchronous scheduling it is exactly continuous batching (the
tests check it).

Arrivals are given either as steps (a constant step time puts them on a grid) or, with a
batch-dependent step time, as seconds: the loop then keeps the clock itself, one call per event
(steptime.clock_functions: the step's seconds and the closed-form run to the next event, in
plain floats), and a request joins at the first step that begins at or after its arrival,
solved in closed form and settled exactly (the same integer as steptime.reach). The loop can
also pause at a given time and take more requests, so several engines run side by side behind
a router (engine.batching.cosim).

What a visit costs is the simulator's speed (about two visits per request), so the loop is
written for it: counters in locals, the common cases inline (see _Simulation.steps), one int per
queued completion, and no per-request objects.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypedDict

import numpy as np

from engine.batching.blocks import DecodeBlocks, ceil_div
from engine.batching.queues import FcfsQueue, WaitingQueue

# the blocks a finished schedule holds, counted from its stays alone, once lived here
from engine.batching.registry import PolicyExample, PolicyKind, PolicySettings, register
from engine.batching.schedule import Schedule
from engine.batching.steptime import StepTime, clock_functions
from engine.errors import UserError

# A queued completion is one int, step << EVENT_SHIFT | request: the request emits its last token
# in step − 1 and leaves at `step`. Ints order by step and compare faster than tuples; which of
# one step's completions goes first changes nothing (they only free slots and blocks). A queued
# completion is stale once `due[request]` no longer names its step (preempted, paused, done).
EVENT_SHIFT = 32  # requests < 2**32 (the workload limit is 10**7)
EVENT_MASK = (1 << EVENT_SHIFT) - 1


VLLM_VERSION = "0.33.0"  # the vLLM whose scheduler the default rules reproduce (tests/vllm_oracle)


# The rules before vLLM counted its null block, gated admission on the whole prompt and scheduled
# a step ahead: synchronous V1 as it was before the full-prompt gate (vLLM PR #37307), with every
# block usable and empty prompts allowed. Continuous batching is these rules with no pool.
class Rules(TypedDict):
    """vLLM's scheduling rules a paged policy takes (PagedPolicy says what each does)."""

    reserve_full_prompt: bool
    async_scheduling: bool
    null_block: bool
    allow_empty_prompt: bool


UNGATED_SYNC_RULES: Rules = {
    "reserve_full_prompt": False,
    "async_scheduling": False,
    "null_block": False,
    "allow_empty_prompt": True,
}


@dataclass(frozen=True)
class PagedPolicy:
    """num_blocks: KV blocks on the device, vLLM's num_gpu_blocks (None: unlimited);
    max_num_seqs: running requests at most (None: the simulation's slots);
    max_num_batched_tokens: tokens per step (None: no cap).

    The rest are vLLM's own rules, each on by default as vLLM 0.33.0 ships them:
    reserve_full_prompt (vLLM's scheduler_reserve_full_isl): a waiting request is admitted only
    if the free blocks hold its whole prompt, not just its first chunk. async_scheduling: step
    t + 1 is scheduled before step t's tokens are back, so a request that sampled its last
    token in step t keeps its seat and its blocks through step t + 1's scheduling (never
    scheduled in it, and the newest may be preempted there). null_block: one of the num_blocks
    is vLLM's null block, never handed out. allow_empty_prompt off: vLLM needs a prompt token."""

    num_blocks: int | None = None
    block_size: int = 16
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    chunked_prefill: bool = False
    queue: Callable[[np.ndarray, np.ndarray], WaitingQueue] = FcfsQueue  # built per run
    reserve_full_prompt: bool = True
    async_scheduling: bool = True
    null_block: bool = True
    allow_empty_prompt: bool = False
    name = "paged"
    max_wait = None

    @property
    def usable_blocks(self) -> int | None:
        """The blocks requests can hold: num_blocks less the null block where it is kept."""
        if self.num_blocks is None:
            return None
        return self.num_blocks - 1 if self.null_block else self.num_blocks

    @property
    def kv_blocks(self) -> tuple[int, dict[str, Any]]:
        """(block size, what results.json says about the pool and the rules that share it out:
        which vLLM scheduler they reproduce, and each rule's setting)."""
        return self.block_size, {
            "num_blocks": self.num_blocks,
            "usable_blocks": self.usable_blocks,
            "block_size": self.block_size,
            "scheduler": {
                "reproduces": self.reproduces,
                "reserve_full_prompt": self.reserve_full_prompt,
                "async_scheduling": self.async_scheduling,
                "null_block": self.null_block,
                "allow_empty_prompt": self.allow_empty_prompt,
            },
        }

    @property
    def reproduces(self) -> str:
        """Which vLLM scheduler these rules are, in one line (results.json, the simulate help)."""
        return reproduces(self)

    def schedule(
        self,
        eligible: np.ndarray,
        prompt: np.ndarray,
        output: np.ndarray,
        slots: int,
        deadline: np.ndarray | None = None,
    ) -> Schedule:
        return schedule_paged(eligible, prompt, output, slots, self)

    def schedule_timed(
        self, arrival: np.ndarray, prompt: np.ndarray, output: np.ndarray, slots: int, step_time: StepTime
    ) -> Schedule:
        unused = np.zeros(len(output), dtype=np.int64)
        return schedule_paged(unused, prompt, output, slots, self, clock=(step_time, arrival))

    def simulation(self) -> type[_Simulation]:
        """The loop that runs these rules (prefill-first scheduling brings its own)."""
        return _Simulation

    def check(self, prompt: np.ndarray, output: np.ndarray, cap: int) -> None:
        """Refuse, before any step, a workload these rules could never finish (check_fits),
        alone or shared by replicas; a policy with rules of its own adds its checks."""
        check_fits(self, prompt, output, cap)
        if not self.allow_empty_prompt and len(prompt) and int(np.min(prompt)) < 1:
            worst = int(np.argmin(prompt))
            raise UserError(
                f"request {worst} has no prompt; vLLM needs at least one prompt token "
                "(allow_empty_prompt, --allow-empty-prompt, runs it anyway)",
                field="prompt_tokens",
            )

    def __post_init__(self) -> None:
        for name in ("num_blocks", "max_num_seqs", "max_num_batched_tokens"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UserError(f"must be at least 1, got {value}", field=name)
        if self.block_size < 1:
            raise UserError(f"must be at least 1, got {self.block_size}", field="block_size")
        if self.chunked_prefill and self.max_num_batched_tokens is None:
            raise UserError("chunked prefill needs a token budget", field="max_num_batched_tokens")
        if self.usable_blocks == 0:
            raise UserError(
                "one block is vLLM's null block, so a pool of 1 holds nothing; "
                "give at least 2 (or null_block: false, --no-null-block)",
                field="num_blocks",
            )


def reproduces(policy: PagedPolicy) -> str:
    """The vLLM scheduler a paged policy's rules are, as a sentence."""
    if policy.name != "paged":
        return "vLLM V0's prefill-first scheduler"
    rules = (policy.reserve_full_prompt, policy.async_scheduling, policy.null_block)
    if rules == (True, True, True):
        return f"vLLM {VLLM_VERSION} V1 scheduler as shipped (async scheduling, full-prompt admission gate)"
    if rules == (False, False, False):
        return "vLLM V1's synchronous scheduler before the full-prompt admission gate (PR #37307), every block usable"
    said = [
        "async scheduling" if policy.async_scheduling else "synchronous scheduling",
        "full-prompt admission gate" + ("" if policy.reserve_full_prompt else " off"),
        "null block kept back" if policy.null_block else "every block usable",
    ]
    return f"vLLM {VLLM_VERSION} V1 scheduler with " + ", ".join(said)


def check_fits(policy: PagedPolicy, prompt: np.ndarray, output: np.ndarray, cap: int) -> None:
    """Refuse configurations that could never finish, as vLLM refuses them at start-up."""
    bs = policy.block_size
    usable = policy.usable_blocks
    if usable is not None and len(output):
        peak = ceil_div(prompt + output, bs)
        worst = int(np.argmax(peak))
        if peak[worst] > usable:
            held = (
                f"{usable} usable (one of {policy.num_blocks} is the null block)"
                if policy.null_block
                else usable
            )
            raise UserError(
                f"request {worst} needs {int(peak[worst])} blocks of {bs} tokens "
                f"({int(prompt[worst] + output[worst])} tokens) but the cache has {held}",
                field="num_blocks",
            )
    budget = policy.max_num_batched_tokens
    if budget is not None:
        if budget < cap:
            raise UserError(
                f"{budget} tokens per step cannot decode {cap} running requests; "
                f"raise it to at least max_num_seqs",
                field="max_num_batched_tokens",
            )
        if not policy.chunked_prefill:
            # A re-admitted request prefills its prompt plus what it had emitted.
            longest = int((prompt + np.where(policy.num_blocks is None, 0, output - 1)).max())
            if longest > budget:
                raise UserError(
                    f"a prefill of {longest} tokens does not fit {budget} tokens per step; "
                    f"raise it or enable chunked_prefill",
                    field="max_num_batched_tokens",
                )


def schedule_paged(
    eligible: np.ndarray,
    prompt: np.ndarray,
    output: np.ndarray,
    slots: int,
    policy: PagedPolicy,
    clock: tuple[StepTime, np.ndarray] | None = None,
) -> Schedule:
    """Run the rules in the module docstring; the result is in steps.

    clock: (step-time model, arrival seconds) to place arrivals by time instead of `eligible`.
    """
    cap = policy.max_num_seqs or slots
    policy.check(prompt, output, cap)
    sim = policy.simulation()(eligible, prompt, output, cap, policy, clock)
    sim.run()
    sim.end_run()
    return sim.schedule()


def int_array(values: np.ndarray) -> array[int]:
    """Whole numbers as a compact array of C longs: 8 bytes each, where a list holds a pointer
    and an int object (36 bytes for most values); indexing gives plain ints all the same."""
    return array("q", np.ascontiguousarray(values, dtype=np.int64).tobytes())


def filled(n: int, value: int) -> array[int]:
    return array("q", [value]) * n


class _Simulation:
    """The scheduler's state. Per-request state lives in compact arrays (array.array: indexed as
    fast as a list, a fifth of its memory at a million requests)."""

    def __init__(self, eligible, prompt, output, cap: int, policy: PagedPolicy, clock=None) -> None:
        self.n = n = len(output)
        self.eligible = int_array(eligible)
        self.prompt = int_array(prompt)
        self.output = int_array(output)
        self.cap = cap
        self.bs = policy.block_size
        self.limited = policy.num_blocks is not None
        self.pool = policy.usable_blocks or 0
        self.gate = policy.reserve_full_prompt and self.limited  # admission needs the whole prompt's blocks
        # async scheduling: requests that sampled their last token in step t − 1, holding their
        # seat and blocks (explicitly, in `held`) until step t is scheduled
        self.lingers = policy.async_scheduling
        self.lingering: dict[int, None] = {}
        self.late_preempted: array[int] = array("q")  # stays preempted while lingering
        self.free = 0  # blocks free, kept exact within a visited step (set at its start)
        self.explicit = 0  # blocks held by running requests that are not decoding (prefills)
        self.decoding_blocks = DecodeBlocks(self.bs)  # the decoding requests' blocks
        self.held_step = 0  # the step whose allocations the decoding requests have taken
        self.budget = policy.max_num_batched_tokens
        self.chunked = policy.chunked_prefill
        # per request
        self.generated = filled(n, 0)  # tokens emitted so far (survive preemption)
        self.first_start = filled(n, -1)
        self.finish = filled(n, -1)
        self.stay = filled(n, 0)  # index of its current stay
        self.context = filled(n, 0)  # tokens to have in cache when decoding starts
        self.prefilled = filled(n, 0)  # of those, prefilled so far (while prefilling)
        self.decode_from = filled(n, 0)  # first decode step of the current stay
        self.held = filled(n, 0)  # blocks held while not decoding (only when blocks are limited)
        self.offset = filled(n, 0)  # while decoding: it reads offset + s tokens at step s
        self.counted = array("b", bytes(n))  # in decoding_blocks
        self.due = filled(n, -1)  # the step its queued completion is due (-1: none queued)
        # queues
        self.running: dict[int, None] = {}  # admission order; the last key is the newest
        self.prefilling: dict[int, None] = {}
        self.waiting: WaitingQueue = policy.queue(prompt, output)
        self.free_slots = list(range(min(cap, n)))  # never more than n run at once
        # queued completions (ints, see EVENT_SHIFT)
        self.events: list[int] = []
        self.preemptions = 0
        # outputs: stays and prefill chunks
        self.s_request: array[int] = array("q")
        self.s_slot: array[int] = array("q")
        self.s_start: array[int] = array("q")
        self.s_decode: array[int] = array("q")
        self.s_emit: array[int] = array("q")
        self.s_end: array[int] = array("q")
        self.s_context: array[int] = array("q")
        self.c_stay: array[int] = array("q")
        self.c_step: array[int] = array("q")
        self.c_tokens: array[int] = array("q")
        self.c_done: array[int] = array("q")
        # the clock, when arrivals are in seconds: what the current step runs, and when it began
        self.t = 0
        self.timing: StepTime | None = None
        if clock is not None:
            self.timing, arrival = clock
            self.arrival = array("d", np.ascontiguousarray(arrival, dtype=np.float64).tobytes())
            self.tolerance = 1e-9 * self.timing.idle_seconds
            self.advance = clock_functions(self.timing, cap).advance  # plain floats, made once
        self.now = 0.0  # seconds when step t begins
        self.decoding = 0  # requests decoding in step t
        self.context_sum = 0  # Σ (cached at decode start − decode start + 1): KV read = this + t·decoding
        # prefills that finish in step t (they decode from t + 1): how many, Σ their contexts
        self.join_count = self.join_sum = 0
        self.whole_prompts = False  # chunks rebuilt from the stays (set by steps, see there)
        self.prefill_now = 0  # prompt tokens processed in step t
        # Side by side with other engines (engine.batching.cosim): more requests may come
        # (`open`), and the loop pauses before the first step that begins at or after
        # `checkpoint` seconds, so a router can look at every engine at one moment.
        self.open = False
        self.checkpoint: float | None = None
        self.completed = 0

    # ---- the loop ---------------------------------------------------------------------------

    def run(self) -> None:
        for _ in self.steps():
            raise AssertionError("a run with no checkpoint never pauses")

    def add_request(self, prompt: int, output: int, arrival: float) -> None:
        """One more request for an open run, arriving no earlier than the run's clock."""
        self.n += 1
        self.prompt.append(prompt)
        self.output.append(output)
        self.arrival.append(arrival)
        self.eligible.append(0)
        for values in (
            self.generated,
            self.stay,
            self.context,
            self.prefilled,
            self.decode_from,
            self.held,
            self.offset,
        ):
            values.append(0)
        self.due.append(-1)
        self.first_start.append(-1)
        self.finish.append(-1)
        self.counted.append(False)

    def steps(self) -> Iterator[int]:
        """The loop. Yields step t, before doing anything in it, only when a checkpoint is set
        and step t begins at or after it; without one it runs to the end without yielding.

        The hot loop, so everything it reads per visit is a local and the common cases are
        written out here: completions (as _complete), admitting whole prompts (as _admit,
        _open_stay, _chunk and _start_decoding do) and the clock (as _advance). Those methods
        stay the rules' reference and run the rare paths (chunked prefill, a pool running short)
        and prefill-first scheduling; the counters they share with the loop are handed to them
        (_store) and taken back (_load) around each such call. A change to the rules changes
        both. Few builtin calls (max, min, float) are left where arithmetic does: on an
        interpreter built without optimisations each costs several arithmetic operations.
        """
        events, eligible = self.events, self.eligible
        waiting, running, prefilling = self.waiting, self.running, self.prefilling
        blocks, limited, budget, chunked = self.decoding_blocks, self.limited, self.budget, self.chunked
        hist, bs, pool, cap = blocks.hist, self.bs, self.pool, self.cap
        prompt, output, generated, context = self.prompt, self.output, self.generated, self.context
        decode_from, offset, counted, due = self.decode_from, self.offset, self.counted, self.due
        stay, first_start, finish = self.stay, self.first_start, self.finish
        s_request, s_slot, s_start, s_decode = self.s_request, self.s_slot, self.s_start, self.s_decode
        s_emit, s_end, s_context, free_slots = self.s_emit, self.s_end, self.s_context, self.free_slots
        heappop, heappush = heapq.heappop, heapq.heappush
        shift, mask = EVENT_SHIFT, EVENT_MASK
        timed = self.timing is not None
        arrival: Any = self.arrival if timed else eligible  # seconds, or steps
        tolerance = 0.0
        if timed:
            tolerance = self.tolerance
            advance = self.advance
        # Whole prompts (no chunking): every stay emits from its first step and prefills its
        # context there in one chunk, so schedule() rebuilds those from the stays.
        self.whole_prompts = not chunked
        held_step, now = self.held_step, self.now
        # With the decoding count (hist is shared with it): how many, and the pool's slack
        # against the most they could hold in a period before the `m` term (see
        # blocks.first_over): slack = pool − explicit − Σq − 2·count, kept as they come and go.
        (
            free,
            explicit,
            decoding,
            context_sum,
            prefill_now,
            join_count,
            join_sum,
            counting,
            slack,
        ) = self._load()
        safe = 0  # no step before this can run the pool short (bound kept by the previous visit)
        completed, checkpoint, n = self.completed, self.checkpoint, self.n
        lingers, lingering = self.lingers, self.lingering
        head = events[0] >> shift if events else None  # the step of the next queued completion
        t, arrived = 0, 0
        coming: Any = arrival[0] if n else math.inf  # the next arrival's time (step), inf: none yet
        while True:
            if checkpoint is not None and now + tolerance >= checkpoint:
                self.t, self.now, self.completed = t, now, completed
                yield t
                n, checkpoint = self.n, self.checkpoint  # the router may have added requests
                if arrived < n:
                    coming = arrival[arrived]
            # 1. completions (the blocks they free are counted with the rest in 3a)
            while head == t:
                r = heappop(events) & mask
                head = events[0] >> shift if events else None
                if due[r] == t:  # else stale: preempted or paused since it was queued
                    due[r] = -1
                    a = offset[r]  # its reads at step s are a + s
                    if timed:
                        decoding -= 1
                        context_sum -= a
                    if lingers:
                        # async: out of the batch, but its seat and the blocks it had after
                        # step t − 1 stay taken until this step is scheduled (released below)
                        if counted[r]:
                            q, u = divmod(a - 1, bs)
                            counting -= 1
                            hist[u] -= 1
                            counted[r] = False
                            kept = -(-(a + t - 1) // bs)
                            self.held[r] = kept
                            explicit += kept
                            slack += q + 2 - kept
                        lingering[r] = None
                        s_end[stay[r]] = t
                        finish[r] = t
                        completed += 1
                        continue
                    del running[r]
                    if limited:
                        if counted[r]:
                            q, u = divmod(a - 1, bs)
                            counting -= 1
                            slack += q + 2
                            hist[u] -= 1
                            counted[r] = False
                        else:
                            explicit -= self.held[r]
                            slack += self.held[r]
                            self.held[r] = 0
                    where = stay[r]
                    heappush(free_slots, s_slot[where])
                    s_end[where] = t
                    finish[r] = t  # (its `generated` is no longer read)
                    completed += 1
            # 2. arrivals: by step, or by the time step t begins
            horizon = now + tolerance if timed else t
            if coming <= horizon:
                while True:
                    waiting.append(arrived)
                    arrived += 1
                    coming = arrival[arrived] if arrived < n else math.inf
                    if coming > horizon:
                        break
            # 3a. block boundaries of decoding requests, oldest first
            preempted = False
            if limited:
                taking = hist[-t % bs]
                # The free blocks are counted only when something here needs them: a
                # completion visit whose block boundaries cannot run the pool short skips it.
                if waiting or prefilling or (taking and t >= safe):
                    held_step = t - 1
                    m, v = divmod(held_step, bs)
                    free = slack - counting * (m - 1)  # pool − explicit − Σq − count·(m + 1)
                    if v:
                        free -= sum(hist[bs - v :])
                    if taking <= free:
                        free -= taking
                    else:
                        self._store(
                            t,
                            held_step,
                            free,
                            explicit,
                            decoding,
                            context_sum,
                            prefill_now,
                            join_count,
                            join_sum,
                            counting,
                            slack,
                        )
                        preempted = self._reserve_blocks(t)
                        (
                            free,
                            explicit,
                            decoding,
                            context_sum,
                            prefill_now,
                            join_count,
                            join_sum,
                            counting,
                            slack,
                        ) = self._load()
                        head = events[0] >> shift if events else None
                held_step = t
            chunked_now = budget_blocked = False
            if waiting or prefilling:
                # one token per decoding request: the running less the prefilling and lingering
                budget_left = (
                    None if budget is None else budget - (len(running) - len(prefilling) - len(lingering))
                )
                # 3b. prefill chunks of requests admitted earlier
                if prefilling:
                    self._store(
                        t,
                        held_step,
                        free,
                        explicit,
                        decoding,
                        context_sum,
                        prefill_now,
                        join_count,
                        join_sum,
                        counting,
                        slack,
                    )
                    budget_left, more = self._continue_prefills(t, budget_left)
                    (
                        free,
                        explicit,
                        decoding,
                        context_sum,
                        prefill_now,
                        join_count,
                        join_sum,
                        counting,
                        slack,
                    ) = self._load()
                    head = events[0] >> shift if events else None
                    preempted = preempted or more
                    chunked_now = True
                # 4. admission
                if waiting and not preempted:
                    if chunked:
                        self._store(
                            t,
                            held_step,
                            free,
                            explicit,
                            decoding,
                            context_sum,
                            prefill_now,
                            join_count,
                            join_sum,
                            counting,
                            slack,
                        )
                        budget_left, budget_blocked, admitted_prefill = self._admit(t, budget_left)
                        (
                            free,
                            explicit,
                            decoding,
                            context_sum,
                            prefill_now,
                            join_count,
                            join_sum,
                            counting,
                            slack,
                        ) = self._load()
                        head = events[0] >> shift if events else None
                        chunked_now = chunked_now or admitted_prefill
                    else:
                        # whole prompts: each admitted request prefills in t and decodes from
                        # t + 1, or, with nothing to prefill, decodes from t
                        seats = cap - len(running)
                        while waiting and seats:
                            r = waiting[0]
                            cached = prompt[r] + generated[r]
                            if cached:
                                tokens, taken = cached, -(-cached // bs)
                            else:
                                tokens = taken = 1
                            if budget_left is not None and tokens > budget_left:
                                budget_blocked = True
                                break
                            if limited and taken > free:
                                break
                            waiting.popleft()
                            if budget_left is not None:
                                budget_left -= tokens
                            seats -= 1
                            running[r] = None
                            stay[r] = len(s_request)
                            s_request.append(r)
                            s_slot.append(heappop(free_slots))
                            s_start.append(t)
                            s_emit.append(t)
                            s_end.append(-1)
                            s_context.append(cached)
                            context[r] = cached
                            if first_start[r] < 0:
                                first_start[r] = t
                            if cached:
                                chunked_now = True
                                prefill_now += cached
                                start = t + 1
                                if timed:
                                    join_count += 1
                                    join_sum += cached
                            else:
                                start = t
                                if timed:
                                    decoding += 1
                                    context_sum += 1 - t
                            s_decode.append(start)
                            decode_from[r] = start
                            end = t + output[r] - generated[r]
                            due[r] = end
                            heappush(events, end << shift | r)
                            if head is None or end < head:
                                head = end
                            offset[r] = a = cached - start + 1
                            if limited:
                                # its prefill's blocks pass straight to the decoding count
                                free -= taken
                                q, u = divmod(a - 1, bs)
                                counting += 1
                                slack -= q + 2
                                hist[u] += 1
                                counted[r] = True
            # async: step t is scheduled, so the requests that finished in t − 1 leave now
            released = False
            if lingering:
                released = True
                for r in lingering:
                    del running[r]
                    kept = self.held[r]
                    explicit -= kept
                    slack += kept
                    self.held[r] = 0
                    heappush(free_slots, s_slot[stay[r]])
                lingering.clear()
            # the next step where something can change (completions all lie after t)
            event = head
            if prefilling or (waiting and (preempted or released or (budget_blocked and chunked_now))):
                event = t + 1
            if limited and counting:
                # No step before `safe` can hold more blocks than the pool has (the bound
                # blocks.first_over starts from); only a shortage possible before the event
                # is searched for.
                safe = ((slack + hist[0]) // counting + 1) * bs
                if event is None or (safe < event and t + 1 < event):
                    room = pool - explicit
                    blocks.count, blocks.q_sum = counting, room - 2 * counting - slack
                    short = blocks.first_over(t + 1, room, event)
                    if short is not None and (event is None or short < event):
                        event = short
            if timed:
                # the clock (as _advance): step t's seconds, then the run to the next stop
                batch, read, prefill = decoding, context_sum + t * decoding, prefill_now
                if join_count:  # they read context + 1 tokens at step t + 1
                    context_sum += join_sum - t * join_count
                    decoding += join_count
                    join_count = join_sum = 0
                prefill_now = 0
                if checkpoint is None:
                    target = None if waiting or arrived == n else coming
                else:
                    # side by side with other engines: the router may have changed what comes
                    # next, and says when it wants this engine to stop (wake); it reads the
                    # engine's state, so the counters are handed over first
                    coming = arrival[arrived] if arrived < n else math.inf
                    target = None if waiting or arrived == n else coming
                    self._store(
                        t,
                        held_step,
                        free,
                        explicit,
                        decoding,
                        context_sum,
                        prefill_now,
                        join_count,
                        join_sum,
                        counting,
                        slack,
                    )
                    self.completed = completed
                    wake = self.wake()
                    checkpoint = self.checkpoint  # (a router may also let the engine go)
                    if wake is not None and (target is None or wake < target):
                        target = wake
                if event is None:
                    if target is None:
                        break
                    steps = None
                else:
                    steps = event - t - 1 if event > t else 0
                ahead, elapsed = advance(
                    batch,
                    read,
                    prefill,
                    decoding,
                    context_sum + (t + 1) * decoding,
                    steps,
                    None if target is None else target - tolerance,
                    now,
                )
                now += elapsed
                t += 1 + ahead
            else:
                if not waiting and arrived < n and (event is None or coming < event):
                    event = coming
                if event is None:
                    break
                t = event if event > t else t + 1
        if self.open:
            raise AssertionError("an open run needs a checkpoint to wait for")
        self._store(
            t,
            held_step,
            free,
            explicit,
            decoding,
            context_sum,
            prefill_now,
            join_count,
            join_sum,
            counting,
            slack,
        )
        self.now, self.completed = now, completed
        assert not self.running and not self.waiting and arrived == n, "paged run stalled"

    def _store(
        self,
        t: int,
        held_step: int,
        free: int,
        explicit: int,
        decoding: int,
        context_sum: int,
        prefill_now: int,
        join_count: int,
        join_sum: int,
        counting: int,
        slack: int,
    ) -> None:
        """Hand the loop's counters to the methods (see steps). The loop keeps the pool's slack
        (pool − explicit − Σq − 2·count); the decoding count keeps Σq itself."""
        self.t, self.held_step, self.free, self.explicit = t, held_step, free, explicit
        self.decoding, self.context_sum, self.prefill_now = decoding, context_sum, prefill_now
        self.join_count, self.join_sum = join_count, join_sum
        self.decoding_blocks.count = counting
        self.decoding_blocks.q_sum = self.pool - explicit - 2 * counting - slack

    def _load(self) -> tuple[int, int, int, int, int, int, int, int, int]:
        """Take them back after a method ran, the slack derived again from Σq as _store keeps it."""
        blocks = self.decoding_blocks
        return (
            self.free,
            self.explicit,
            self.decoding,
            self.context_sum,
            self.prefill_now,
            self.join_count,
            self.join_sum,
            blocks.count,
            self.pool - self.explicit - blocks.q_sum - 2 * blocks.count,
        )

    def wake(self) -> float | None:
        """When a router wants this engine to stop skipping steps: the first step that begins at
        or after this moment is visited (None: no such moment). Asked only while a checkpoint is
        set, once per visited step after its admissions; the checkpoint itself by default.
        (engine.batching.shared pauses at every visited step and answers from the queue's state.)"""
        return self.checkpoint

    # ---- pieces -------------------------------------------------------------------------------

    def _complete(self, r: int, t: int) -> None:
        if self.timing is not None:
            self.decoding -= 1
            self.context_sum -= self.context[r] - self.decode_from[r] + 1
        del self.running[r]
        if self.limited:
            self._release(r)
        heapq.heappush(self.free_slots, self.s_slot[self.stay[r]])
        self.s_end[self.stay[r]] = t
        self.generated[r] = self.output[r]
        self.finish[r] = t
        self.due[r] = -1
        self.completed += 1

    def _preempt(self, v: int, t: int) -> None:
        """Evict v by recompute: free its blocks, keep its emitted tokens, queue it first.

        A lingering victim (async scheduling: its last token is out, its seat still taken) only
        gives its blocks and seat back a little early: vLLM counts it preempted, and it is done."""
        del self.running[v]
        stay = self.stay[v]
        if v in self.lingering:
            del self.lingering[v]
            self._release(v)
            heapq.heappush(self.free_slots, self.s_slot[stay])
            self.late_preempted.append(stay)
            self.preemptions += 1
            return
        if v in self.prefilling:
            del self.prefilling[v]
            self.s_decode[stay] = t  # never decoded in this stay
            self.s_emit[stay] = t
        else:
            # it emitted one token per step from the step that finished its prefill (or from its
            # first decode step), up to this one: preempted now, this step's token never comes
            self.generated[v] += t - self.s_emit[stay]
            self.s_decode[stay] = min(self.s_decode[stay], t)
            if self.timing is not None:
                if self.decode_from[v] <= t:
                    self.decoding -= 1
                    self.context_sum -= self.context[v] - self.decode_from[v] + 1
                else:
                    self.join_count -= 1
                    self.join_sum -= self.context[v]
        if self.limited:
            self._release(v)
        self.due[v] = -1  # its queued completion is stale
        heapq.heappush(self.free_slots, self.s_slot[stay])
        self.s_end[stay] = t
        self.waiting.appendleft(v)
        self.preemptions += 1

    def _release(self, r: int) -> None:
        """Free r's blocks: a decoding request's count follows from the step (see blocks)."""
        if self.counted[r]:
            self.free += ceil_div(self.offset[r] + self.held_step, self.bs)
            self.decoding_blocks.remove(self.offset[r])
            self.counted[r] = False
        else:
            self.free += self.held[r]
            self.explicit -= self.held[r]
            self.held[r] = 0

    def _reserve_blocks(self, t: int) -> bool:
        """Step 3a when the pool is short: every decoding request at a block boundary takes a
        block, oldest first, preempting the newest while none is free. True if it preempted."""
        preempted = False
        bs = self.bs
        for r in list(self.running):
            if r not in self.running or not self.counted[r] or (self.offset[r] + t - 1) % bs:
                continue
            while self.free < 1 and r in self.running:
                preempted = True
                self._preempt(next(reversed(self.running)), t)
            if r in self.running:
                self.free -= 1
        return preempted

    def _continue_prefills(self, t: int, budget_left: int | None) -> tuple[int | None, bool]:
        assert budget_left is not None  # chunked prefill always has a budget
        preempted = False
        for r in list(self.prefilling):
            if r not in self.running:
                continue
            chunk = min(self.context[r] - self.prefilled[r], budget_left)
            if chunk <= 0:
                continue  # no budget left this step: the chunk waits
            if self.limited:
                need = ceil_div(self.prefilled[r] + chunk, self.bs) - self.held[r]
                while self.free < need and r in self.running:
                    preempted = True
                    self._preempt(next(reversed(self.running)), t)
                if r not in self.running:
                    continue
                self.free -= need
                self.held[r] += need
                self.explicit += need
            budget_left -= chunk
            self.prefilled[r] += chunk
            self._chunk(r, t, chunk)
            if self.prefilled[r] == self.context[r]:
                del self.prefilling[r]
                self._start_decoding(r, t + 1)
        return budget_left, preempted

    def _admit(self, t: int, budget_left: int | None) -> tuple[int | None, bool, bool]:
        """Admit from the head of the queue while everything fits; report why it stopped."""
        prefilled_any = False
        while self.waiting and len(self.running) < self.cap:
            r = self.waiting[0]
            context = self.prompt[r] + self.generated[r]
            if context == 0:
                tokens, blocks = 1, 1
            else:
                tokens = context if not self.chunked else min(context, budget_left or 0)
                blocks = ceil_div(tokens, self.bs)
            if budget_left is not None and (tokens > budget_left or tokens == 0):
                return budget_left, True, prefilled_any
            if self.gate and ceil_div(context, self.bs) > self.free:
                return budget_left, False, prefilled_any  # the whole prompt's blocks are not free
            if self.limited and blocks > self.free:
                return budget_left, False, prefilled_any
            self.waiting.popleft()
            if budget_left is not None:
                budget_left -= tokens
            self._open_stay(r, t, context)
            if self.limited:
                self.free -= blocks
                self.held[r] = blocks
                self.explicit += blocks
            if context == 0:
                self._start_decoding(r, t)
            else:
                prefilled_any = True
                self.prefilled[r] = tokens
                self._chunk(r, t, tokens)
                if tokens == context:
                    self._start_decoding(r, t + 1)
                else:
                    self.prefilling[r] = None
        return budget_left, False, prefilled_any

    def _open_stay(self, r: int, t: int, context: int) -> None:
        self.running[r] = None
        self.stay[r] = len(self.s_request)
        self.s_request.append(r)
        self.s_slot.append(heapq.heappop(self.free_slots))
        self.s_start.append(t)
        self.s_decode.append(-1)
        self.s_emit.append(-1)
        self.s_end.append(-1)
        self.s_context.append(context)
        self.context[r] = context
        if self.first_start[r] < 0:
            self.first_start[r] = t

    def _chunk(self, r: int, t: int, tokens: int) -> None:
        self.prefill_now += tokens
        self.c_stay.append(self.stay[r])
        self.c_step.append(t)
        self.c_tokens.append(tokens)
        self.c_done.append(self.prefilled[r])

    def _start_decoding(self, r: int, step: int, emit_from: int | None = None) -> None:
        """r decodes from `step`: queue its completion and, if blocks are limited, hand its
        blocks to the decoding count (its reads at step s are context − step + 1 + s; the
        formula also gives its prefill's blocks at step − 1, when this is called).

        Called in the step that emits its next token: the step that finished its prefill (then
        step = t + 1), or its first decode step (step = t, nothing to prefill). It emits one
        token per step from t, so it is done output − generated steps after t. (emit_from: a
        request resuming after a pause emits from its first decode step, `step`.)"""
        emit = self.t if emit_from is None else emit_from
        self.decode_from[r] = step
        self.s_decode[self.stay[r]] = step
        self.s_emit[self.stay[r]] = emit
        if self.timing is not None:
            if step == self.t:
                self.decoding += 1
                self.context_sum += self.context[r] - step + 1
            else:
                self.join_count += 1
                self.join_sum += self.context[r]
        end = emit + self.output[r] - self.generated[r]
        self.due[r] = end
        heapq.heappush(self.events, end << EVENT_SHIFT | r)
        self.offset[r] = offset = self.context[r] - step + 1
        if self.limited:
            self.explicit -= self.held[r]
            self.held[r] = 0
            self.decoding_blocks.add(offset)
            self.counted[r] = True

    # ---- the clock (arrivals in seconds) ------------------------------------------------------

    def _advance(self, t: int, event: int | None, waiting_for: int | None) -> int | None:
        """Move the clock from the start of step t to the next step where something happens:
        `event` (the next known one) or the first step that begins at or after the next
        arrival's time, whichever is first, if nothing changes before. Returns that step (None:
        nothing left to happen).

        Step t's own seconds follow from what it ran; after it the batch is fixed (its prefills
        that finished join), so the steps up to the next event are one closed-form run. The
        arrival's step is solved only when it lands before `event`: usually one run is summed
        per event, not a search per step.
        """
        decoding, prefill_now = self.decoding, self.prefill_now
        read = self.context_sum + t * decoding
        if self.join_count:
            # they read context + 1 tokens at step t + 1
            self.context_sum += self.join_sum - t * self.join_count
            self.decoding += self.join_count
            self.join_count = self.join_sum = 0
        self.prefill_now = 0
        batch = self.decoding
        target = None if waiting_for is None else self.arrival[waiting_for]
        wake = None if self.checkpoint is None else self.wake()
        if wake is not None and (target is None or wake < target):
            target = wake  # a router looks at this engine then: stop there too
        steps = None if event is None else (event - t - 1 if event > t else 0)
        if steps is None and target is None:
            return None
        # an arrival joins at the first step that begins at or after it (within tolerance)
        deadline = None if target is None else target - self.tolerance
        first_context = self.context_sum + (t + 1) * batch
        more, elapsed = self.advance(
            decoding, read, prefill_now, batch, first_context, steps, deadline, self.now
        )
        self.now += elapsed
        return t + 1 + more

    # ---- result -------------------------------------------------------------------------------

    def end_run(self) -> None:
        """Let go of what only the loop reads (per request: its inputs, its place in the queue
        and the pool), keeping the stays and chunks that schedule() reads: at a million requests
        the loop's lists are most of the run's memory, and the stays' arrays are then built
        beside the stays alone. The run cannot go on after this."""
        for name in (
            "eligible",
            "prompt",
            "output",
            "arrival",
            "generated",
            "stay",
            "context",
            "prefilled",
            "decode_from",
            "held",
            "offset",
            "counted",
            "due",
            "events",
        ):
            if hasattr(self, name):
                setattr(self, name, [])

    def schedule(self) -> Schedule:
        ints = lambda values: np.asarray(values, dtype=np.int64)  # noqa: E731
        request, decode, end = ints(self.s_request), ints(self.s_decode), ints(self.s_end)
        emit, start, context = ints(self.s_emit), ints(self.s_start), ints(self.s_context)
        if self.whole_prompts:  # one chunk per stay with a context: all of it, at its start
            chunk_stay = np.flatnonzero(context > 0).astype(np.int64, copy=False)
            if len(chunk_stay) == len(context):  # every stay prefills: the stays' own arrays
                chunks = (chunk_stay, start, context, context)
            else:
                tokens = context[chunk_stay]
                chunks = (chunk_stay, start[chunk_stay], tokens, tokens)
        else:
            chunks = (ints(self.c_stay), ints(self.c_step), ints(self.c_tokens), ints(self.c_done))
        # The first token comes from the first stay that emitted at all (a stay can be preempted
        # in the very step its prefill finished, before that step's token is out).
        first_token = np.full(self.n, np.iinfo(np.int64).max, dtype=np.int64)
        emitted = end > emit
        np.minimum.at(first_token, request[emitted], emit[emitted])
        return Schedule(
            slots=self.cap,
            request=request,
            slot=ints(self.s_slot),
            start=start,
            decode_start=decode,
            end=end,
            context=context,
            emit_start=emit,
            first_start=ints(self.first_start),
            first_token=first_token,
            finish=ints(self.finish),
            chunk_stay=chunks[0],
            chunk_step=chunks[1],
            chunk_tokens=chunks[2],
            chunk_done=chunks[3],
            preemptions=self.preemptions,
            late_preempted=ints(self.late_preempted) if self.lingers else None,
        )


register(
    PolicyKind(
        "paged",
        lambda s: PagedPolicy(
            **s.block_settings(),
            reserve_full_prompt=s.reserve_full_prompt,
            async_scheduling=s.async_scheduling,
            null_block=s.null_block,
            allow_empty_prompt=s.allow_empty_prompt,
        ),
        "paged (vLLM-style)",
        "vLLM V1's scheduler: continuous batching bounded by KV blocks, running requests first, "
        "prefills mixed into decode steps (chunked if asked), newest preempted by recompute.",
        colour="green",
        # As continuous, but the engine schedules a step before it reads the last one's tokens
        # (async scheduling): the 1-token request keeps its seat in step 1, so the 2-token one
        # runs in steps 2-3
        example=PolicyExample((3, 1, 2), (1, 1, 1), slots=2, steps=4, settings=PolicySettings(num_blocks=64)),
        needs_blocks=True,
        order=30,
    )
)
