"""The paged scheduler's waiting queue, as a small object: which waiting request is admitted next.

The scheduler only ever asks a queue five things: add an arrival (`append`), put a preempted
request back so it is served before anyone else (`appendleft`, as vLLM does), look at the head
(`queue[0]`), take the head (`popleft`), and whether anyone waits (`len`). Admission stops at
the first request that does not fit (no overtaking), so the queue's order *is* the policy:
first-come-first-served today; shortest-job-first or a priority order is a new class here, not a
new loop.
"""

from __future__ import annotations

import heapq
from collections import deque
from typing import Protocol

import numpy as np


class WaitingQueue(Protocol):
    def append(self, request: int) -> None: ...

    def appendleft(self, request: int) -> None: ...

    def popleft(self) -> int: ...

    def __getitem__(self, index: int) -> int: ...  # only [0], the head

    def __len__(self) -> int: ...


class FcfsQueue(deque):
    """First come, first served (vLLM's default); a preempted request goes to the front."""

    def __init__(self, prompt: np.ndarray, output: np.ndarray) -> None:
        super().__init__()


class ShortestFirstQueue:
    """Shortest job first by output tokens (ties in arrival order); a preempted request goes
    to the front, ahead of every arrival, as in FCFS. A scheduler that knows output lengths
    ahead is an idealisation: a bound on what length prediction could buy."""

    def __init__(self, prompt: np.ndarray, output: np.ndarray) -> None:
        self.output = output.tolist()
        self.front: deque[int] = deque()
        self.heap: list[tuple[int, int]] = []

    def append(self, request: int) -> None:
        heapq.heappush(self.heap, (self.output[request], request))

    def appendleft(self, request: int) -> None:
        self.front.appendleft(request)

    def popleft(self) -> int:
        return self.front.popleft() if self.front else heapq.heappop(self.heap)[1]

    def __getitem__(self, index: int) -> int:
        if index != 0:
            raise IndexError("a waiting queue shows only its head")
        return self.front[0] if self.front else self.heap[0][1]

    def __len__(self) -> int:
        return len(self.front) + len(self.heap)
