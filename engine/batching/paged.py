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
written for it: each rule once, in one loop whose counters are locals (see _Simulation.steps),
one int per queued completion, and no per-request objects. Prefill-first scheduling (vLLM V0) is
the same loop with steps 3 and 4 in V0's order (engine.batching.prefill_first).
"""

from __future__ import annotations

import heapq
import math
import mmap
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

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
    admits_first = False  # vLLM V0's order of the same rules: admission first (engine.batching.prefill_first)

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
        unused = np.zeros(0, dtype=np.int64)  # the clock places the arrivals
        return schedule_paged(unused, prompt, output, slots, self, clock=(step_time, arrival))

    def simulation(self) -> type[_Simulation]:
        """The loop that runs these rules (prefill-first scheduling too, in its own order)."""
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
        return "vLLM V0 prefill-first scheduler"
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


def given(values: np.ndarray, code: str) -> Any:
    """A run's input, per request, read in place: a memoryview of the caller's array indexes as
    fast as an array.array and gives plain ints (floats) all the same, without a copy (8 MB an
    input at a million requests). A run opened empty (engine.batching.cosim) takes its requests
    one by one (add_request), so it gets an array it can grow instead."""
    if len(values) == 0:
        return array(code)
    return memoryview(np.ascontiguousarray(values, dtype=code))  # type: ignore[arg-type]


def filled(n: int, value: int, code: Literal["q", "i"] = "q") -> array[int]:
    return array(code, [value]) * n


MAPPED_BYTES = 1 << 20  # scratch arrays this large get a mapping of their own (see scratch)


def scratch(n: int, value: int, code: Literal["q", "i"] = "q") -> Any:
    """n whole numbers of array type `code`, each `value`: per-request state the run writes as it
    goes and lets go of at its end (end_run).

    They live in an anonymous memory mapping of their own (a memoryview over it indexes as fast
    as an array.array), so letting go of them gives their pages back to the system. From the
    heap, a million requests' ten of them (70 MiB) stayed in the process after the run, freed
    but in holes beneath the stays' arrays, and every metric counted afterwards was built on top
    of them. Pages never written are never taken. Nothing the schedule keeps is scratch: a
    result that held mappings would let a process keeping tens of thousands of results run out
    of them. Below MAPPED_BYTES an array comes from the
    heap all the same: there a mapping saves nothing and costs two system calls (a small run is
    most of a sweep). A run opened empty (engine.batching.cosim) takes its requests one by one
    (add_request), so it gets an array it can grow instead."""
    size = n * array(code).itemsize
    if size < MAPPED_BYTES:
        return filled(n, value, code)
    pages = mmap.mmap(-1, size)
    if value:
        np.frombuffer(pages, dtype=np.dtype(code)).fill(value)  # the view is let go of at once
    return memoryview(pages).cast(code)


class _Simulation:
    """The scheduler's state. Per-request state lives in compact arrays (see scratch: indexed as
    fast as a list, a fifth of its memory at a million requests or less)."""

    def __init__(self, eligible, prompt, output, cap: int, policy: PagedPolicy, clock=None) -> None:
        self.n = n = len(output)
        # inputs, read in place (see given); a timed run places arrivals by its clock instead
        # of `eligible`, so it reads only their seconds
        self.eligible = given(eligible, "q") if clock is None else array("q")
        self.prompt = given(prompt, "q")
        self.output = given(output, "q")
        self.cap = cap
        self.bs = policy.block_size
        self.limited = policy.num_blocks is not None
        self.pool = policy.usable_blocks or 0
        # admission needs the whole prompt's blocks, not just its first chunk's (without
        # chunks the two are the same)
        self.gate = policy.reserve_full_prompt and self.limited and policy.chunked_prefill
        # async scheduling: a request that sampled its last token in step t − 1 keeps its seat
        # and its blocks (held explicitly) until step t is scheduled
        self.lingers = policy.async_scheduling
        self.lingering: dict[int, None] = {}
        self.late_preempted: array[int] = array("q")  # stays preempted while lingering
        self.admits_first = policy.admits_first  # vLLM V0's order (see steps)
        self.decoding_blocks = DecodeBlocks(self.bs)  # the decoding requests' blocks
        self.budget = policy.max_num_batched_tokens
        self.chunked = policy.chunked_prefill
        # per request
        # (counts of tokens and blocks fit 32 bits: a request has at most 2 × MAX_TOKENS; steps
        # need 64)
        self.first_start = filled(n, -1)  # (these two are the schedule's: no scratch)
        self.finish = filled(n, -1)
        self.generated = scratch(n, 0, "i")  # tokens emitted so far (survive preemption)
        self.stay = scratch(n, 0)  # index of its current stay
        self.context = scratch(n, 0, "i")  # tokens to have in cache when decoding starts
        self.prefilled = scratch(n, 0, "i")  # of those, prefilled so far (while prefilling)
        self.decode_from = scratch(n, 0)  # first decode step of the current stay
        self.held = scratch(n, 0, "i")  # blocks held while not decoding (only when blocks are limited)
        self.offset = scratch(n, 0)  # while decoding: it reads offset + s tokens at step s
        self.counted = array("b", bytes(n))  # in decoding_blocks
        self.due = scratch(n, -1)  # the step its queued completion is due (-1: none queued)
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
        self.now = 0.0
        self.timing: StepTime | None = None
        self.tolerance = 0.0
        if clock is not None:
            self.timing, arrival = clock
            self.arrival = given(arrival, "d")
            self.tolerance = 1e-9 * self.timing.idle_seconds
            self.advance = clock_functions(self.timing, cap).advance  # plain floats, made once
        self.whole_prompts = False  # chunks rebuilt from the stays (set by steps, see there)
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

        Each rule of the module docstring is written once, under its number, in the order
        vLLM's Scheduler.schedule() applies them: the running requests (3a, 3b) before the
        waiting (4). Prefill-first scheduling (vLLM V0, engine.batching.prefill_first) runs
        the same rules in its own order: admission first, and a step that admits pauses the
        decodes. What several rules do alike is one small function, defined below over the
        loop's own counters: a request leaving (`leave`, its blocks out of the decoding count
        by `hold`), being preempted (`preempt`, `make_room`), prefilling a chunk (`prefill`)
        and starting to decode (`start_decoding`); admission is one (`admit`) because the two
        orders call it at different points. The counters are locals, not attributes, because a
        visit is the simulator's cost (about two per request). Few builtin calls (max, min)
        are left where arithmetic does: on an interpreter built without optimisations each
        costs several arithmetic operations.
        """
        # per request (compact arrays; add_request appends to them while the run is open)
        prompt, output, generated, context = self.prompt, self.output, self.generated, self.context
        prefilled, decode_from, offset, held = self.prefilled, self.decode_from, self.offset, self.held
        counted, due, stay = self.counted, self.due, self.stay
        first_start, finish = self.first_start, self.finish
        # the run's output: its stays, and its prefill chunks
        s_request, s_slot, s_start, s_decode = self.s_request, self.s_slot, self.s_start, self.s_decode
        s_emit, s_end, s_context = self.s_emit, self.s_end, self.s_context
        c_stay, c_step, c_tokens, c_done = self.c_stay, self.c_step, self.c_tokens, self.c_done
        # the queues: waiting, running (admission order, the last key the newest), prefilling,
        # lingering (async: sampled their last token in step t − 1), queued completions, seats
        waiting, running, prefilling, lingering = self.waiting, self.running, self.prefilling, self.lingering
        events, free_slots, late_preempted = self.events, self.free_slots, self.late_preempted
        # the policy
        cap, bs, pool, budget, chunked = self.cap, self.bs, self.pool, self.budget, self.chunked
        limited, gate, lingers, admits_first = self.limited, self.gate, self.lingers, self.admits_first
        blocks = self.decoding_blocks
        hist = blocks.hist  # decoding requests by residue (engine.batching.blocks)
        heappop, heappush = heapq.heappop, heapq.heappush
        shift, mask = EVENT_SHIFT, EVENT_MASK
        timed = self.timing is not None
        arrival: Any = self.arrival if timed else self.eligible  # seconds, or steps
        tolerance = self.tolerance
        if timed:
            advance = self.advance
        # Whole prompts (no chunks, no pauses): every stay prefills its context in its first
        # step, in one chunk, so schedule() rebuilds the chunks from the stays.
        whole = self.whole_prompts = not chunked and not admits_first
        completed, checkpoint, n = self.completed, self.checkpoint, self.n
        t = 0  # the step being scheduled
        now = self.now  # seconds when step t begins
        free = 0  # blocks free, exact within a visited step once counted (see "the free blocks")
        explicit = 0  # blocks held outside the decoding count: prefilling and lingering requests
        counting = 0  # requests in the decoding count
        # the pool's slack against the most the count could hold in a period before the `m` term
        # (see blocks.first_over): pool − explicit − Σq − 2·counting, kept as requests come and go
        slack = pool
        held_step = 0  # the step after whose allocations the decoding count's blocks are counted
        safe = 0  # no step before this can run the pool short (bound kept by the previous visit)
        decoding = context_sum = 0  # timed: requests decoding in step t; KV read = context_sum + t·decoding
        join_count = join_sum = 0  # timed: prefills that finish in step t: how many, Σ their contexts
        prefill_now = 0  # prompt tokens processed in step t
        preempted = False  # in step t
        preemptions = 0
        head = events[0] >> shift if events else None  # the step of the next queued completion

        def hold(r: int, step: int) -> None:
            """r's blocks leave the decoding count, held as they stood after step `step`'s
            allocations (ceil(reads / block_size), its reads being offset + step)."""
            nonlocal counting, explicit, slack
            a = offset[r]
            q, u = divmod(a - 1, bs)
            kept = -(-(a + step) // bs)
            hist[u] -= 1
            counted[r] = False
            held[r] = kept
            counting -= 1
            explicit += kept
            slack += q + 2 - kept

        def leave(r: int) -> None:
            """r is out of the running: its seat and its blocks are free (rules 1 and 3)."""
            nonlocal free, explicit, slack
            del running[r]
            if limited:
                if counted[r]:
                    hold(r, held_step)
                kept = held[r]
                held[r] = 0
                free += kept
                explicit -= kept
                slack += kept
            heappush(free_slots, s_slot[stay[r]])

        def preempt(v: int) -> None:
            """Rule 3: v is preempted by recompute in step t. It keeps the tokens it emitted and
            goes back to the front of the queue. A lingering request (its last token is out)
            only gives its seat and blocks back early: vLLM counts it preempted, and it is done.

            A request decoding from t + 1 is never the victim: its prefill completed in this
            step's 3b, and every request that can still preempt after it is newer than it, so
            preempts itself first (admission and a V0 prefill step never preempt)."""
            nonlocal preemptions, decoding, context_sum
            w = stay[v]
            preemptions += 1
            if v in lingering:
                del lingering[v]
                leave(v)
                late_preempted.append(w)
                return
            if v in prefilling:
                del prefilling[v]
                s_decode[w] = s_emit[w] = t  # it never decoded in this stay
            else:
                # one token per step from its first emitting step up to t, whose token never comes
                assert decode_from[v] <= t, "a request preempted in the step its prefill completed"
                generated[v] += t - s_emit[w]
                if timed:
                    decoding -= 1
                    context_sum -= offset[v]
            leave(v)
            due[v] = -1  # its queued completion is stale
            s_end[w] = t
            waiting.appendleft(v)

        def make_room(r: int, need: int) -> bool:
            """Rule 3: while fewer than `need` blocks are free, the newest running request is
            preempted (r itself when it is the newest). Whether r still runs."""
            nonlocal preempted
            while free < need and r in running:
                preempted = True
                preempt(next(reversed(running)))
            return r in running

        def open_stay(r: int, slot: int, cached: int) -> None:
            """r begins a stay in step t, to have `cached` tokens in cache when it decodes."""
            stay[r] = len(s_request)
            s_request.append(r)
            s_slot.append(slot)
            s_start.append(t)
            s_decode.append(-1)
            s_emit.append(-1)
            s_end.append(-1)
            s_context.append(cached)
            context[r] = cached

        def prefill(r: int, tokens: int, done: int) -> None:
            """r prefills `tokens` of its context in step t, `done` of it then in cache (a
            chunk, unless whole)."""
            nonlocal prefill_now
            prefilled[r] = done
            prefill_now += tokens
            if not whole:
                c_stay.append(stay[r])
                c_step.append(t)
                c_tokens.append(tokens)
                c_done.append(done)

        def start_decoding(r: int, step: int, emit: int) -> None:
            """Rule 5: r decodes from `step` (t with nothing to prefill, t + 1 after a prefill
            that completes in step t or a pause) and emits one token per step from `emit`, so
            it is done output − generated steps after. Its blocks join the decoding count: its
            reads at step s are context − step + 1 + s, which also gives its prefill's blocks
            at step − 1."""
            nonlocal head, decoding, context_sum, join_count, join_sum, counting, explicit, slack
            w = stay[r]
            decode_from[r] = s_decode[w] = step
            s_emit[w] = emit
            cached = context[r]
            offset[r] = a = cached - step + 1
            if timed:
                if step == t:
                    decoding += 1
                    context_sum += a
                else:
                    join_count += 1
                    join_sum += cached
            end = emit + output[r] - generated[r]
            due[r] = end
            heappush(events, end << shift | r)
            if head is None or end < head:
                head = end
            if limited:
                kept = held[r]
                if kept:  # held while it prefilled, or while a V0 step ran without it
                    held[r] = 0
                    explicit -= kept
                    slack += kept
                q, u = divmod(a - 1, bs)
                hist[u] += 1
                counted[r] = True
                counting += 1
                slack -= q + 2

        def admit(budget_left: int | None) -> bool:
            """Rule 4: waiting requests are admitted in queue order while a seat, the budget and
            the blocks for their first step allow (with the full-prompt gate, the free blocks
            hold the whole prompt); the first that does not fit stops the queue. True if the
            budget stopped it."""
            nonlocal free, explicit, slack
            seats = cap - len(running)
            while waiting and seats:
                r = waiting[0]
                cached = prompt[r] + generated[r]
                if cached:
                    tokens = cached
                    if chunked and budget_left is not None and budget_left < cached:
                        tokens = budget_left  # its first chunk
                    taken = -(-tokens // bs)
                else:
                    tokens = taken = 1  # nothing cached: it decodes at once, in one block
                if budget_left is not None and (tokens > budget_left or tokens == 0):
                    return True
                if limited and (taken > free or (gate and -(-cached // bs) > free)):
                    return False
                waiting.popleft()
                if budget_left is not None:
                    budget_left -= tokens
                seats -= 1
                running[r] = None
                open_stay(r, heappop(free_slots), cached)
                if first_start[r] < 0:
                    first_start[r] = t
                if limited:
                    free -= taken
                if not cached:
                    start_decoding(r, t, t)
                    continue
                prefill(r, tokens, tokens)
                if tokens == cached:
                    start_decoding(r, t + 1, t)  # its blocks go straight to the decoding count
                    continue
                prefilling[r] = None
                if limited:  # it holds them while it prefills
                    held[r] = taken
                    explicit += taken
                    slack -= taken
            return False

        arrived = 0
        coming: Any = arrival[0] if n else math.inf  # the next arrival's time (step), inf: none yet
        while True:
            if checkpoint is not None and now + tolerance >= checkpoint:
                self.t, self.now, self.completed, self.preemptions = t, now, completed, preemptions
                yield t
                n, checkpoint = self.n, self.checkpoint  # the router may have added requests
                if arrived < n:
                    coming = arrival[arrived]
            held_step = t - 1  # the decoding requests hold their blocks as after step t − 1
            # 1. completions: requests that emitted their last token in step t − 1 leave
            while head == t:
                r = heappop(events) & mask
                head = events[0] >> shift if events else None
                if due[r] != t:
                    continue  # stale: preempted or paused since it was queued
                due[r] = -1
                if timed:
                    decoding -= 1
                    context_sum -= offset[r]
                s_end[stay[r]] = finish[r] = t  # (its `generated` is no longer read)
                completed += 1
                if lingers:
                    # async: step t is scheduled before its last token is back, so it keeps
                    # its seat and the blocks it had after step t − 1 until then (see below)
                    if limited:
                        hold(r, t - 1)
                    lingering[r] = None
                else:
                    leave(r)
            # 2. arrivals join the back of the queue: by step, or by the time step t begins
            horizon = now + tolerance if timed else t
            if coming <= horizon:
                while True:
                    waiting.append(arrived)
                    arrived += 1
                    coming = arrival[arrived] if arrived < n else math.inf
                    if coming > horizon:
                        break
            # The free blocks, counted only when a rule below reads them: a completion visit
            # whose block boundaries cannot run the pool short skips it.
            preempted = budget_blocked = free_counted = False
            taking = 0  # decoding requests whose next token starts a block
            if limited:
                taking = hist[-t % bs]
                if waiting or prefilling or (taking and t >= safe):
                    free_counted = True
                    m, v = divmod(held_step, bs)
                    free = slack - counting * (m - 1)  # pool − explicit − Σq − count·(m + 1)
                    if v:
                        free -= sum(hist[bs - v :])
            if admits_first and waiting:
                # 4, in V0's order: admission first, with the whole budget. If it admitted any
                # (it put prompt tokens in: V0 refuses empty prompts), the step runs those
                # prefills alone: no decode takes a block (3a), and every running request sits
                # it out where it left off (its stay ends; a new one, in its slot, decodes
                # from t + 1).
                budget_blocked = admit(budget)
                if prefill_now:
                    taking = 0
                    for r in [r for r in running if decode_from[r] <= t]:  # not the new ones
                        w = stay[r]
                        generated[r] += t - s_emit[w]
                        s_end[w] = t
                        if timed:
                            decoding -= 1
                            context_sum -= offset[r]
                        if limited:
                            hold(r, t - 1)
                        open_stay(r, s_slot[w], context[r] + t - decode_from[r])
                        prefill(r, 0, context[r])  # nothing to prefill: a chunk that keeps its blocks
                        start_decoding(r, t + 1, t + 1)
            # 3a. decoding requests at a block boundary take a block, oldest first
            if free_counted and taking:
                if taking <= free:
                    free -= taking
                else:
                    for r in list(running):
                        if r in running and counted[r] and not (offset[r] + t - 1) % bs and make_room(r, 1):
                            free -= 1
            held_step = t
            if not admits_first and (waiting or prefilling):
                # one token per decoding request: the running less the prefilling and lingering
                budget_left = (
                    None if budget is None else budget - (len(running) - len(prefilling) - len(lingering))
                )
                # 3b. prefilling requests take their next chunk, and the blocks it fills
                for r in list(prefilling) if prefilling else ():
                    assert budget_left is not None  # chunked prefill always has a budget
                    tokens = context[r] - prefilled[r]
                    if budget_left < tokens:
                        tokens = budget_left
                    if tokens <= 0 or r not in running:
                        continue  # no budget left: the chunk waits (or it was preempted)
                    if limited:
                        need = -(-(prefilled[r] + tokens) // bs) - held[r]
                        if not make_room(r, need):
                            continue
                        free -= need
                        held[r] += need
                        explicit += need
                        slack -= need
                    budget_left -= tokens
                    prefill(r, tokens, prefilled[r] + tokens)
                    if prefilled[r] == context[r]:
                        del prefilling[r]
                        start_decoding(r, t + 1, t)
                # 4. admission, unless something was preempted in this step
                if waiting and not preempted:
                    budget_blocked = admit(budget_left)
            # 1, async: step t is scheduled, so the requests that finished in t − 1 leave now
            released = False
            if lingering:
                released = True
                for r in lingering:
                    leave(r)
                lingering.clear()
            # the next step where something can change (completions all lie after t)
            event = head
            if prefilling or (waiting and (preempted or released or (budget_blocked and prefill_now))):
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
                # The clock: step t's seconds follow from what it ran; after it the batch is
                # fixed (its finished prefills join), so the steps up to the next event are one
                # closed-form run, and an arrival's step is solved only when it lands before
                # the event (steptime.clock_functions).
                batch, read, prefill_tokens = decoding, context_sum + t * decoding, prefill_now
                if join_count:  # they read context + 1 tokens at step t + 1
                    context_sum += join_sum - t * join_count
                    decoding += join_count
                    join_count = join_sum = 0
                prefill_now = 0
                if checkpoint is not None:
                    # side by side with other engines: the router may have changed what comes
                    # next, and says when it wants this engine to stop (wake)
                    coming = arrival[arrived] if arrived < n else math.inf
                target = None if waiting or arrived == n else coming
                if checkpoint is not None:
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
                    prefill_tokens,
                    decoding,
                    context_sum + (t + 1) * decoding,
                    steps,
                    None if target is None else target - tolerance,
                    now,
                )
                now += elapsed
                t += 1 + ahead
            else:
                prefill_now = 0
                if not waiting and arrived < n and (event is None or coming < event):
                    event = coming
                if event is None:
                    break
                t = event if event > t else t + 1
        if self.open:
            raise AssertionError("an open run needs a checkpoint to wait for")
        self.t, self.now, self.completed, self.preemptions = t, now, completed, preemptions
        assert not running and not waiting and arrived == n, "the run stalled"

    def wake(self) -> float | None:
        """When a router wants this engine to stop skipping steps: the first step that begins at
        or after this moment is visited (None: no such moment). Asked only while a checkpoint is
        set, once per visited step after its admissions; the checkpoint itself by default.
        (engine.batching.shared pauses at every visited step and answers from the queue's state.)"""
        return self.checkpoint

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
        # The first token comes from the first stay that emitted at all (a stay preempted while
        # it prefilled emitted nothing).
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
