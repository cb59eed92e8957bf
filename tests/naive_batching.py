"""The naive reference: one Python iteration per step, one per slot, as the lab wrote it.

Slow on purpose and written without looking at the fast code's tricks: it walks every step,
touches every slot, and counts tokens one by one. The fast simulator must agree with it exactly
(tests/test_batching*.py) and beat it by a wide margin (tests/bench/bench_simulator.py).

Inputs are in steps: `eligible[i]` is the first step request i may join. A request with a prompt
spends one step on its prefill (paged: as many steps as its chunks need), and the step that
completes the prefill emits its first token, as vLLM does; it decodes the rest one per step.

Seconds: every loop records what each step runs (requests decoding, KV tokens they read, prompt
tokens prefilled), and `naive_clock` prices the steps one by one with a step-time model. In a
static group a finished member stays in the batch as padding until the group ends, its reads
growing by one token per step, as the torch benchmark runs it. `naive_static` can also take
arrivals in seconds and a model, and then keeps that clock itself, step by step.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass
class NaiveRun:
    steps: int = 0
    tokens: int = 0
    start: list[int] = field(default_factory=list)  # step each request first got a slot
    first_token: list[int] = field(default_factory=list)  # step that emitted its first token
    finish: list[int] = field(default_factory=list)  # step after its last token
    slot_of: list[int] = field(default_factory=list)  # slot of its last stay
    preemptions: int = 0
    blocks: list[int] = field(default_factory=list)  # blocks held after each step's allocations
    busy: list[int] = field(default_factory=list)  # slots that emitted a token, per step
    # per step: (requests in the decode batch, KV tokens they read, prompt tokens prefilled)
    load: list[tuple[int, int, int]] = field(default_factory=list)
    clock: list[float] = field(default_factory=list)  # seconds at each step's start (timed runs)

    @property
    def utilisation_numerator(self) -> int:
        return self.tokens


def _step_limit(eligible, prompt, output) -> int:
    """A bound no correct run reaches (recompute after preemption included): a runaway loop
    fails loudly instead of hanging the test suite."""
    return (max(eligible) if len(eligible) else 0) + 50 * (sum(prompt) + sum(output) + len(output)) + 100


def _empty(n: int) -> NaiveRun:
    return NaiveRun(start=[-1] * n, first_token=[-1] * n, finish=[-1] * n, slot_of=[-1] * n)


def step_cost(model, batch: int, context: int, prefill: int) -> float:
    """One step's seconds under a step-time model; a step that runs nothing is an idle step."""
    if batch == 0 and prefill == 0:
        return model.idle_seconds
    return float(model.seconds([batch], [context], [prefill])[0])


def naive_clock(run: NaiveRun, model) -> list[float]:
    """Seconds at the start of every step and, last, at the end of the run: step by step.

    Each step is priced on its own, as step_cost prices it, in one model call for every step
    that runs something (the model works element by element: the same floats as a call per
    step); the seconds are then added up one step at a time."""
    busy = [k for k, (batch, _, prefill) in enumerate(run.load) if batch or prefill]
    priced = model.seconds(*([run.load[k][i] for k in busy] for i in range(3))).tolist()
    cost = [model.idle_seconds] * len(run.load)
    for k, seconds in zip(busy, priced):
        cost[k] = seconds
    times = [0.0]
    for seconds in cost:
        times.append(times[-1] + seconds)
    return times


def naive_static(
    eligible, prompt, output, slots, deadline=None, *, arrival=None, model=None, max_wait=None
) -> NaiveRun:
    """Groups of `slots` in arrival order; a group holds all its slots until its longest ends.

    A group launches, when the engine is free, once `slots` requests have arrived or every
    remaining request has, or (with deadlines) once the head's deadline step has come.

    With `arrival` (seconds) and a `model`, the loop keeps the clock itself: a request has
    arrived at step t when its arrival time is at or before the moment step t begins, and the
    head's deadline is its arrival + `max_wait` seconds (`eligible` and `deadline` are unused).
    """
    n = len(output)
    run = _empty(n)
    nxt = 0  # next request not yet in a group
    group: list[int] = []  # requests of the running group
    left_prefill = [0] * n
    left_tokens = [0] * n
    cache = [0] * n  # KV tokens in each member's cache
    timed = model is not None
    now = 0.0
    tol = 1e-9 * model.idle_seconds if timed else 0.0
    if timed:
        limit = int(max(arrival) / model.idle_seconds) + _step_limit([0], prompt, output)
    else:
        limit = _step_limit(eligible, prompt, output)

    def has_arrived(i: int, t: int) -> bool:
        return arrival[i] <= now + tol if timed else eligible[i] <= t

    def is_late(t: int) -> bool:
        if timed:
            return max_wait is not None and now + tol >= arrival[nxt] + max_wait
        return deadline is not None and t >= deadline[nxt]

    t = 0
    while nxt < n or group:
        assert t < limit, "naive static loop ran away"
        if not group:
            arrived = sum(1 for i in range(nxt, n) if has_arrived(i, t))
            remaining = n - nxt
            head_ready = arrived >= 1
            full = arrived >= min(slots, remaining)
            late = head_ready and is_late(t)
            if head_ready and (full or late):
                group = list(range(nxt, nxt + min(arrived, slots)))
                for s, i in enumerate(group):
                    run.start[i] = t
                    run.slot_of[i] = s
                    left_prefill[i] = 1 if prompt[i] > 0 else 0
                    left_tokens[i] = output[i]
                    cache[i] = 0
                nxt += len(group)
        busy = batch = context = prefill = 0
        for i in group:
            if left_prefill[i]:
                left_prefill[i] -= 1
                prefill += prompt[i]
                cache[i] = prompt[i]
                # the prefill step emits the first token (not a decode: no read of its own)
                run.first_token[i] = t
                left_tokens[i] -= 1
                run.tokens += 1
                busy += 1
                if left_tokens[i] == 0:
                    run.finish[i] = t + 1
                continue
            # in the batch, decoding or (finished) padding: reads its cache and the new token
            batch += 1
            context += cache[i] + 1
            cache[i] += 1
            if left_tokens[i]:
                if left_tokens[i] == output[i]:
                    run.first_token[i] = t
                left_tokens[i] -= 1
                run.tokens += 1
                busy += 1
                if left_tokens[i] == 0:
                    run.finish[i] = t + 1
        run.busy.append(busy)
        run.load.append((batch, context, prefill))
        if timed:
            run.clock.append(now)
            now += step_cost(model, batch, context, prefill)
        t += 1
        if group and all(left_tokens[i] == 0 for i in group):
            group = []
    run.steps = t
    if timed:
        run.clock.append(now)
    return run


def naive_continuous(eligible, prompt, output, slots) -> NaiveRun:
    """At each step: fill free slots from the queue (FIFO), every running request works one
    step (prefill or one token), finished requests leave."""
    n = len(output)
    run = _empty(n)
    queue: deque[int] = deque()
    nxt = 0
    holder = [-1] * slots
    left_prefill = [0] * n
    left_tokens = [0] * n
    done = 0
    t = 0
    limit = _step_limit(eligible, prompt, output)
    while done < n:
        assert t < limit, "naive continuous loop ran away"
        while nxt < n and eligible[nxt] <= t:
            queue.append(nxt)
            nxt += 1
        for s in range(slots):
            if holder[s] == -1 and queue:
                i = queue.popleft()
                holder[s] = i
                run.start[i] = t
                run.slot_of[i] = s
                left_prefill[i] = 1 if prompt[i] > 0 else 0
                left_tokens[i] = output[i]
        busy = batch = context = prefill = 0
        for s in range(slots):
            i = holder[s]
            if i == -1:
                continue
            if left_prefill[i]:
                left_prefill[i] -= 1
                prefill += prompt[i]  # and the first token, below, without a decode read
            else:
                batch += 1
                # its cache (prompt and the tokens before this one, the first of which came out
                # of the prefill step) and the new token
                context += prompt[i] + (output[i] - left_tokens[i]) + (0 if prompt[i] else 1)
            if left_tokens[i] == output[i]:
                run.first_token[i] = t
            left_tokens[i] -= 1
            run.tokens += 1
            busy += 1
            if left_tokens[i] == 0:
                run.finish[i] = t + 1
                holder[s] = -1
                done += 1
        run.busy.append(busy)
        run.load.append((batch, context, prefill))
        t += 1
    run.steps = t
    return run


def _blocks(tokens: int, block_size: int) -> int:
    return (tokens + block_size - 1) // block_size


def naive_paged(
    eligible,
    prompt,
    output,
    slots,
    num_blocks=None,
    block_size=16,
    max_num_seqs=None,
    max_num_batched_tokens=None,
    chunked_prefill=False,
    prefill_first=False,
    *,
    reserve_full_prompt=False,
    async_scheduling=False,
    null_block=False,
) -> NaiveRun:
    """vLLM-style paging walked step by step; the rules are listed in engine/batching/paged.py.

    Blocks are recounted from each request's cached tokens every step, and the free count is
    checked never to go negative.

    prefill_first: vLLM V0's rule (engine/batching/prefill_first.py): admission is tried first,
    with the whole budget for prompts; a step that admitted anyone runs only those prefills and
    every running request sits it out; otherwise the step decodes, as above, and admits no one.

    vLLM 0.33.0's rules, each off unless asked (the paged policy has them on by default):
    reserve_full_prompt: a waiting request is admitted only if the free blocks hold its whole
    context. async_scheduling: a request whose last token came in step t − 1 sits in step t
    without working, keeping its slot and blocks, and may be preempted there (counted, not
    queued again); it gives them back once step t is scheduled. null_block: one of num_blocks
    is never handed out. `blocks` then counts the blocks of the requests that work in each step.
    """
    n = len(output)
    queue: deque[int] = deque()
    engine = NaivePagedEngine(
        prompt,
        output,
        slots,
        num_blocks,
        block_size,
        max_num_seqs,
        max_num_batched_tokens,
        chunked_prefill,
        prefill_first,
        reserve_full_prompt=reserve_full_prompt,
        async_scheduling=async_scheduling,
        null_block=null_block,
    )
    nxt = 0
    t = 0
    limit = _step_limit(eligible, prompt, output)
    while True:
        assert t < limit, "naive paged loop ran away"
        engine.leave(t)
        if engine.done == n:
            break
        # 2. arrivals
        while nxt < n and eligible[nxt] <= t:
            queue.append(nxt)
            nxt += 1
        engine.work(t, queue)
        t += 1
    engine.run.steps = t
    engine.run.slot_of = engine.slot_of
    return engine.run


class NaivePagedEngine:
    """One paged engine's state, stepped by the caller: `leave(t)` (rule 1), then the caller
    queues arrivals (rule 2), then `work(t, queue)` (rules 3 to 5). The queue is anything with a
    deque's append-left, head, pop-left and length: a deque for one engine, or a view of a queue
    several engines share (naive_shared_queue). Per-request state is indexed by request id."""

    def __init__(
        self,
        prompt,
        output,
        slots,
        num_blocks,
        block_size,
        max_num_seqs,
        max_num_batched_tokens,
        chunked_prefill,
        prefill_first,
        reserve_full_prompt=False,
        async_scheduling=False,
        null_block=False,
    ) -> None:
        n = len(output)
        self.prompt, self.output = prompt, output
        self.run = _empty(n)
        self.cap = max_num_seqs or slots
        self.limited = num_blocks is not None
        self.free = (num_blocks - (1 if null_block else 0)) if self.limited else 10**18
        self.gate, self.late = reserve_full_prompt, async_scheduling
        self.budget = max_num_batched_tokens
        self.block_size = block_size
        self.chunked_prefill, self.prefill_first = chunked_prefill, prefill_first
        self.running: list[int] = []  # admission order, oldest first
        self.phase: dict[int, str] = {}  # request -> 'prefill' | 'decode' | 'ready' (prefill done this step)
        self.target = [0] * n  # tokens to cache before decoding (prompt + emitted, on each admission)
        self.cached = [0] * n
        self.held = [0] * n
        self.generated = [0] * n
        self.slot_free = [True] * self.cap
        self.slot_of = [-1] * n
        self.done = 0
        self.served: list[int] = []  # requests admitted at least once, in order

    def preempt(self, v: int, queue) -> None:
        lingering = self.phase[v] == "done"
        self.running.remove(v)
        del self.phase[v]
        self.free += self.held[v]
        self.held[v] = 0
        self.cached[v] = 0
        self.slot_free[self.slot_of[v]] = True
        if not lingering:  # a lingering request is finished: nothing to recompute
            queue.appendleft(v)
        self.run.preemptions += 1

    def _drop(self, r: int) -> None:
        self.running.remove(r)
        del self.phase[r]
        self.free += self.held[r]
        self.held[r] = 0
        self.slot_free[self.slot_of[r]] = True

    def leave(self, t: int) -> None:
        """1. finished requests leave (their last token was emitted in step t - 1); with async
        scheduling they sit this step out first, holding their slot and blocks"""
        for r in list(self.running):
            if self.generated[r] == self.output[r] and self.phase[r] != "done":
                if self.late:
                    self.phase[r] = "done"
                else:
                    self._drop(r)
                self.run.finish[r] = t
                self.done += 1

    def _take(self, r: int, t: int, context: int, queue) -> None:
        """Admit the head of the queue, r, into the lowest free slot."""
        queue.popleft()
        s = self.slot_free.index(True)
        self.slot_free[s] = False
        self.slot_of[r] = s
        self.running.append(r)
        if self.run.start[r] == -1:
            self.run.start[r] = t
            self.served.append(r)
        self.target[r] = context

    def work(self, t: int, queue) -> None:
        run, running, phase = self.run, self.running, self.phase
        prompt, generated = self.prompt, self.generated
        target, cached, held = self.target, self.cached, self.held
        budget, block_size, limited, cap = self.budget, self.block_size, self.limited, self.cap
        for r in running:
            if phase[r] == "ready":
                phase[r] = "decode"
        prefill_step = False
        if self.prefill_first:
            budget_left = budget
            while queue and len(running) < cap:
                r = queue[0]
                context = prompt[r] + generated[r]
                need = _blocks(context, block_size)
                if budget is not None and context > budget_left:
                    break
                if limited and need > self.free:
                    break
                self._take(r, t, context, queue)
                cached[r] = context
                if limited:
                    self.free -= need
                    held[r] = need
                if budget_left is not None:
                    budget_left -= context
                phase[r] = "ready"
                prefill_step = True
            if prefill_step:
                run.blocks.append(sum(held[r] for r in running))
                busy = 0
                for r in running:  # only the new prefills work, and emit their first token
                    if phase[r] == "ready":
                        if generated[r] == 0:
                            run.first_token[r] = t
                        generated[r] += 1
                        run.tokens += 1
                        busy += 1
                run.busy.append(busy)
                run.load.append((0, 0, sum(target[r] for r in running if phase[r] == "ready")))
                return
        # 3a. decoding requests reserve a block when their cache is at a block boundary
        preempted = False
        for r in list(running):
            if r not in running or phase[r] != "decode":
                continue
            need = _blocks(cached[r] + 1, block_size) - held[r]
            while self.free < need and r in running:
                preempted = True
                self.preempt(running[-1], queue)
            if r in running:
                self.free -= need
                held[r] += need
        decoding = [r for r in running if phase[r] == "decode"]
        budget_left = None if budget is None else budget - len(decoding)
        prefilled_now = 0
        # 3b. chunks of prefills already under way
        for r in list(running):
            if r not in running or phase[r] != "prefill":
                continue
            chunk = min(target[r] - cached[r], budget_left)
            if chunk <= 0:
                continue
            need = _blocks(cached[r] + chunk, block_size) - held[r] if limited else 0
            while self.free < need and r in running:
                preempted = True
                self.preempt(running[-1], queue)
            if r not in running:
                continue
            self.free -= need
            held[r] += need
            cached[r] += chunk
            prefilled_now += chunk
            budget_left -= chunk
            if cached[r] == target[r]:
                phase[r] = "ready"
        # 4. admission, unless this step preempted (prefill-first tried it already)
        if not preempted and not self.prefill_first:
            while queue and len(running) < cap:
                r = queue[0]
                context = prompt[r] + generated[r]
                if context == 0:
                    tokens, need = 1, 1
                else:
                    tokens = context if not self.chunked_prefill else min(context, budget_left)
                    need = _blocks(tokens, block_size)
                if budget is not None and (tokens > budget_left or tokens == 0):
                    break
                if limited and self.gate and _blocks(context, block_size) > self.free:
                    break  # the whole context's blocks must be free, not just the first chunk's
                if limited and need > self.free:
                    break
                self._take(r, t, context, queue)
                if limited:
                    self.free -= need
                    held[r] = need
                if budget_left is not None:
                    budget_left -= tokens
                if context == 0:
                    phase[r] = "decode"
                else:
                    cached[r] = tokens
                    prefilled_now += tokens
                    phase[r] = "ready" if tokens == context else "prefill"
        assert self.free >= 0, "more blocks held than the cache has"
        if limited:
            for r in running:
                expected = _blocks(cached[r] + (1 if phase[r] == "decode" else 0), block_size)
                assert held[r] == expected, (t, r, held[r], expected)
        run.blocks.append(sum(held[r] for r in running if phase[r] != "done"))
        for r in [r for r in running if phase[r] == "done"]:
            self._drop(r)  # async: step t is scheduled, their slot and blocks are free
        # 5. every decoding request emits one token, and so does every prefill completed in this
        # step (sampled from its last position: no decode read, nothing added to the cache yet)
        busy = batch = context = 0
        for r in running:
            if phase[r] not in ("decode", "ready"):
                continue
            if generated[r] == 0:
                run.first_token[r] = t
            if phase[r] == "decode":
                batch += 1
                context += cached[r] + 1  # its cache and the new token
                cached[r] += 1
            generated[r] += 1
            run.tokens += 1
            busy += 1
        run.busy.append(busy)
        run.load.append((batch, context, prefilled_now))


@dataclass
class NaiveCluster:
    replica_of: list[int]
    runs: list[NaiveRun]  # per replica, indexed by request id (-1 where another replica served it)
    clocks: list[list[float]]  # per replica: seconds at the start of each of its steps, and after


def naive_shared_queue(
    arrival,
    prompt,
    output,
    replicas,
    model,
    slots,
    num_blocks=None,
    block_size=16,
    max_num_seqs=None,
    max_num_batched_tokens=None,
    chunked_prefill=False,
    prefill_first=False,
    **rules,
) -> NaiveCluster:
    """Paged engines behind one first-come-first-served queue, every step of every replica.

    Each replica keeps its own clock in seconds, step by step. The next step to run is the
    earliest one to begin (steps within 1e-9 of an idle step of it: lowest replica first); a
    request has arrived for that step if its arrival is at or before the moment the step begins.
    The replica takes requests from the queue's head exactly as one engine admits from its own
    queue (NaivePagedEngine); a request it preempts goes to the front of its own queue.
    rules: vLLM's (reserve_full_prompt, async_scheduling, null_block), as naive_paged takes them."""
    n = len(output)
    engines = [
        NaivePagedEngine(
            prompt,
            output,
            slots,
            num_blocks,
            block_size,
            max_num_seqs,
            max_num_batched_tokens,
            chunked_prefill,
            prefill_first,
            **rules,
        )
        for _ in range(replicas)
    ]
    clocks: list[list[float]] = [[0.0] for _ in range(replicas)]
    tol = 1e-9 * model.idle_seconds
    replica_of = [-1] * n
    head = 0

    class View:
        """Replica j's queue: its preempted requests, then the shared head once it has arrived."""

        def __init__(self, j: int) -> None:
            self.j = j
            self.local: deque[int] = deque()

        def visible(self) -> bool:
            return head < n and arrival[head] <= clocks[self.j][-1] + tol

        def __len__(self) -> int:
            return len(self.local) + (1 if self.visible() else 0)

        def __getitem__(self, index: int) -> int:
            assert index == 0
            return self.local[0] if self.local else head

        def appendleft(self, r: int) -> None:
            self.local.appendleft(r)

        def popleft(self) -> int:
            nonlocal head
            if self.local:
                return self.local.popleft()
            replica_of[head] = self.j
            head += 1
            return head - 1

    views = [View(j) for j in range(replicas)]
    step = [0] * replicas
    limit = int(max(arrival, default=0) / model.idle_seconds) + _step_limit([0], prompt, output)
    while sum(e.done for e in engines) < n:
        earliest = min(c[-1] for c in clocks)
        j = min(k for k in range(replicas) if clocks[k][-1] <= earliest + tol)
        assert step[j] < limit, "naive shared-queue loop ran away"
        engines[j].leave(step[j])
        engines[j].work(step[j], views[j])
        clocks[j].append(clocks[j][-1] + step_cost(model, *engines[j].run.load[-1]))
        step[j] += 1
    return NaiveCluster(replica_of, [e.run for e in engines], clocks)


def limits_of(policy) -> tuple:
    """The pool and limits of ``policy`` (a PagedPolicy or PrefillFirstPolicy), in the order
    naive_paged and naive_shared_queue take them after their workload and slots: num_blocks,
    block_size, max_num_seqs, max_num_batched_tokens, chunked_prefill."""
    return (
        policy.num_blocks,
        policy.block_size,
        policy.max_num_seqs,
        policy.max_num_batched_tokens,
        policy.chunked_prefill,
    )


def naive_paged_for(eligible, prompt, output, slots, policy, **rules) -> NaiveRun:
    """naive_paged with the limits of ``policy`` read off it (limits_of); the vLLM rules stay
    naive_paged's own arguments, off unless given, so a test says which it compares."""
    return naive_paged(eligible, prompt, output, slots, *limits_of(policy), **rules)
