"""One shared queue in front of N replicas: a request is bound to a replica only when one admits it.

Day 4's lesson (one shared line beats separate lines) at cluster scale: a router that picks a
replica when a request *arrives* (round robin, random, even least outstanding) can leave it
waiting behind a long request on one replica while another replica has room. Here every arrival
joins one first-come-first-served queue; each replica, at the start of each of its steps, takes
requests from the head of that queue exactly as its own scheduler admits from its own waiting
queue (engine.batching.paged rule 4, or prefill-first's admission): while a sequence slot, the
token budget and the KV blocks for the head's first step allow, and no overtaking. So a request
waits in the shared line until some replica can start it, and one replica behind this router is
exactly one engine.

The order of the replicas' steps is the order of the moments they begin; steps that begin at
the same moment (within the simulator's tolerance, 1e-9 of an idle step) go in replica order,
lowest index first. A request preempted by recompute stays with its replica (front of that
replica's own queue, ahead of the shared one): the router never sees an engine's preemptions,
as in a real deployment.

How it runs: the replicas are the event-driven paged loops, paused before every step they visit
(a checkpoint of −∞) and resumed one at a time, earliest first. Each replica's waiting queue is a
view (`_View`): its own preempted requests, then the shared queue's head if that has arrived by
the moment the replica's step begins. A replica that skips steps (nothing happens in them) must
still look at the shared queue when it could change, which it tells its loop through `wake`
(engine.batching.paged): at the next arrival, if it had a free slot and saw the queue empty; at
the next step any other replica visits, if it had a free slot but the head did not fit (another
replica may take the head and uncover one that fits). A replica with every slot taken waits for
its own completions. Exact (the naive reference in the tests walks every step of every
replica), and about as fast as the engines while the queue is short; while heads fit nowhere,
the replicas blocked on them visit each other's steps (10,000 conversational requests on four
KV-starved replicas: about 1.2 CPU-seconds on the 2-core build machine, 0.3 s for one engine).
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from collections import deque
from typing import Any

import numpy as np

from engine.batching.cosim import measure_replicas, side_by_side
from engine.workload import Workload

_CLASSES: dict[type, type] = {}


class _Shared:
    """The shared queue: requests in arrival order, bound one by one from the head."""

    def __init__(self, workload: Workload, replicas: int) -> None:
        self.prompt = workload.prompt_tokens.tolist()
        self.output = workload.output_tokens.tolist()
        self.arrival = workload.arrival_time.astype(np.float64).tolist()
        self.n = workload.n
        self.head = 0
        self.replica_of = np.full(self.n, -1, dtype=np.int64)
        self.mine: list[list[int]] = [[] for _ in range(replicas)]  # local id -> request
        # (when its next step begins, replica) of every paused replica, as a heap: the one
        # running is out of it until it pauses again, and one that has finished stays out
        self.paused: list[tuple[float, int]] = []

    def others_next(self) -> float | None:
        """The earliest moment another replica looks at the queue (None: none is left)."""
        return self.paused[0][0] if self.paused else None


class _View:
    """Replica j's waiting queue, as its scheduler sees it (engine.batching.queues' protocol).

    A request the shared queue offers is added to the engine (its local id) when the engine
    first looks at it; if the engine does not take it, that entry (the *ghost*, always the
    engine's last request) is reused for the next head it looks at, and dropped at the end."""

    def __init__(self, shared: _Shared, sim: Any, j: int) -> None:
        self.shared, self.sim, self.j = shared, sim, j
        self.local: deque[int] = deque()  # this replica's preempted requests
        self.ghost = -1  # local id of a request looked at and not taken
        self.ghost_of = -1  # the shared request it stands for

    def visible(self) -> bool:
        q = self.shared
        return q.head < q.n and q.arrival[q.head] <= self.sim.now + self.sim.tolerance

    def append(self, request: int) -> None:
        """The engine announces its requests as they 'arrive'; they are already taken."""

    def appendleft(self, request: int) -> None:
        self.local.appendleft(request)

    def __len__(self) -> int:
        return len(self.local) + (1 if self.visible() else 0)

    def __getitem__(self, index: int) -> int:
        if index != 0:
            raise IndexError("a waiting queue shows only its head")
        return self.local[0] if self.local else self._offer()

    def popleft(self) -> int:
        if self.local:
            return self.local.popleft()
        r = self._offer()
        q = self.shared
        q.replica_of[q.head] = self.j
        q.mine[self.j].append(q.head)
        q.head += 1
        self.ghost = -1
        return r

    def _offer(self) -> int:
        q, sim = self.shared, self.sim
        g = q.head
        if self.ghost < 0:
            sim.add_request(q.prompt[g], q.output[g], q.arrival[g])
            self.ghost, self.ghost_of = sim.n - 1, g
        elif self.ghost_of != g:
            r = self.ghost
            sim.prompt[r], sim.output[r], sim.arrival[r] = q.prompt[g], q.output[g], q.arrival[g]
            self.ghost_of = g
        return self.ghost


class _Replica:
    """Mixed into a paged loop's class: told to pause before every step it visits (checkpoint
    −∞), it answers the loop's `wake` with when the shared queue must be looked at again (see
    the module docstring)."""

    shared: _Shared
    # the loop's own state, read here
    open: bool
    checkpoint: float | None
    waiting: Any
    running: dict[int, None]
    cap: int

    def wake(self) -> float | None:
        q = self.shared
        if q.head >= q.n:  # every request is bound: the replicas no longer interact
            self.open, self.checkpoint = False, None
            return None
        view: _View = self.waiting
        if view.local or len(self.running) >= self.cap:
            return None  # only its own events can let it take from the shared queue
        if view.visible():
            return q.others_next()  # blocked on the head: when it may change
        return q.arrival[q.head]


def _replica_class(engine: type) -> type:
    cls = _CLASSES.get(engine)
    if cls is None:
        cls = _CLASSES[engine] = type(f"Shared{engine.__name__}", (_Replica, engine), {})
    return cls


def shared_queue(
    workload: Workload, policy: Any, slots: int, step_time: Any, replicas: int
) -> tuple[np.ndarray, list[Any]]:
    """(replica of every request, each replica's PolicyResult or None)."""
    sims = side_by_side(
        workload,
        policy,
        slots,
        step_time,
        replicas,
        "shared_queue",
        "compares arrival times with the replicas' steps",
        _replica_class,
    )
    shared = _Shared(workload, replicas)
    for j, sim in enumerate(sims):
        sim.shared = shared
        sim.waiting = _View(shared, sim, j)
        sim.checkpoint = -math.inf
    loops = [sim.steps() for sim in sims]
    tolerance = sims[0].tolerance
    paused = shared.paused  # the heap others_next reads: a replica is out of it while it runs
    for j, loop in enumerate(loops):
        next(loop)  # pauses before step 0
        heapq.heappush(paused, (sims[j].now, j))
    while paused:
        # the earliest step; steps within the tolerance of it go lowest replica first
        first = heapq.heappop(paused)
        tied = [first]
        while paused and paused[0][0] <= first[0] + tolerance:
            tied.append(heapq.heappop(paused))
        tied.sort(key=lambda entry: entry[1])
        _, j = tied[0]
        for entry in tied[1:]:
            heapq.heappush(paused, entry)
        try:
            next(loops[j])
        except StopIteration:
            continue
        heapq.heappush(paused, (sims[j].now, j))
    assert shared.head == shared.n, "the shared queue was not emptied"
    schedules = []
    for j, sim in enumerate(sims):
        schedule = sim.schedule()
        bound = len(shared.mine[j])
        if sim.n > bound:  # the ghost: looked at, never taken
            schedule = dataclasses.replace(
                schedule,
                first_start=schedule.first_start[:bound],
                first_token=schedule.first_token[:bound],
                finish=schedule.finish[:bound],
            )
        schedules.append(schedule)
    return shared.replica_of, measure_replicas(workload, policy, step_time, schedules, shared.mine)
