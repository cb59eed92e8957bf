"""First-come-first-served queues: given arrivals and service times, when does each request start?

Three disciplines, all FIFO, all returning start times in the order of the input:

- one server: the Lindley recurrence start = max(arrival, server_free_at), vectorised. Unrolled,
  request n departs at D_n = C_n + max_{k≤n}(a_k − C_{k−1}), with C the running sum of work,
  so one cumulative sum and one cumulative max replace the Python loop.
- one shared line, c servers (M/M/c): the next request in line takes the server that frees
  first. A heap of free-at times; one O(log c) step per request. (No cumulative trick is known
  for c > 1: which server frees first depends on every earlier service time.) Long runs are cut
  into blocks that numpy steps through side by side, each guessed to start with every server
  free, and each guess is then put right by the same loop, run only until the true free times
  and the guessed ones agree (see _by_blocks): the same start times to the bit, several times
  faster below saturation.
- c separate lines: each request is assigned a line on arrival and never switches; each line
  is then an independent single-server queue.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from engine.errors import UserError
from engine.limits import MAX_SERVERS


def single_server_starts(arrivals: np.ndarray, services: np.ndarray) -> np.ndarray:
    """Start times of a one-server FIFO queue (arrivals sorted ascending, times in seconds)."""
    if arrivals.size == 0:
        return arrivals.astype(float)
    work_done = np.cumsum(services)  # C_n
    work_before = work_done - services  # C_{n-1}
    departures = work_done + np.maximum.accumulate(arrivals - work_before)
    free_at = np.concatenate(([-np.inf], departures[:-1]))
    # max() against the computed free time (not start = departure − service) keeps the start
    # exactly equal to the arrival when the server was idle, so "waited" means wait > 0.
    return np.maximum(arrivals, free_at)


def shared_line_starts(arrivals: np.ndarray, services: np.ndarray, servers: int) -> np.ndarray:
    """Start times when one FIFO line feeds `servers` identical servers."""
    if servers < 1:
        raise ValueError(f"servers must be at least 1, got {servers}")
    if servers > MAX_SERVERS:
        raise UserError(f"at most {MAX_SERVERS:,} servers, got {servers:,}", field="servers")
    if servers == 1:
        return single_server_starts(arrivals, services)
    if arrivals.size >= BLOCKS_FROM and servers <= BLOCKS_UP_TO_SERVERS:
        return _by_blocks(arrivals, services, servers, _block_size(arrivals.size))
    return np.asarray(_by_heap(arrivals.tolist(), services.tolist(), [-np.inf] * servers), dtype=float)


def _by_heap(arrivals: list[float], services: list[float], free_at: list[float]) -> list[float]:
    """The shared line one request at a time. free_at: a min-heap of the times the servers
    become free (-inf: free from the start), updated in place."""
    starts: list[float] = []
    push = starts.append
    replace = heapq.heapreplace
    for arrival, work in zip(arrivals, services):
        first_free = free_at[0]
        start = arrival if arrival >= first_free else first_free
        replace(free_at, start + work)
        push(start)
    return starts


# The blocked route pays a fixed cost per step of a block and a little per request it puts right:
# worth it from tens of thousands of requests, and for a few servers (each server is two numpy
# operations per step, and every block's free times are kept at every CHECK-th request: half a
# byte per request and server).
BLOCKS_FROM = 1 << 15
BLOCKS_UP_TO_SERVERS = 16
CHECK = 16  # how often (in requests) a block's true free times are compared with its guess
# Putting a request right costs about twice the plain loop's step: after this many blocks in a row
# that never met their guess (an overloaded queue never does), the rest is the plain loop.
GIVE_UP_AFTER = 2


def _block_size(requests: int) -> int:
    """About 2√n: the steps numpy takes grow with the block, the requests put right with the
    number of blocks (a few dozen each below saturation); a multiple of CHECK."""
    return min(max(2 * math.isqrt(requests), 256), 8192) // CHECK * CHECK


def _agree(free_at: list[float], guess: list[float], arrival: float) -> bool:
    """Whether two sets of free times start this request and every later one alike: a free
    time at or before the arrival is as good as the arrival itself, and the rest must match."""
    return all(
        (t if t > arrival else arrival) == (g if g > arrival else arrival)
        for t, g in zip(sorted(free_at), guess)
    )


def _by_blocks(arrivals: np.ndarray, services: np.ndarray, servers: int, block: int) -> np.ndarray:
    """shared_line_starts for long runs, to the bit.

    1. The requests are cut into blocks of `block`, and numpy runs every block at once, step j
       serving the j-th request of each, from every server free. A request's start, and its
       server's next free time, are the very comparison and addition the loop makes; the free
       times are kept sorted (the heap's contents, in order) by a min/max insertion.
    2. Block by block, the loop of _by_heap runs again from the true free times (those the
       previous block ended with) until, at one of every CHECK-th request, they agree with the
       guessed ones (_agree). From there on the guess is the true run: the same earliest free
       time starts each request, and the free times that differ lie before every later arrival.
       Below saturation a block forgets its start within a hundred requests or so; blocks that
       never do mean a queue that does not drain, and the rest of the run is the plain loop.
    """
    if block < CHECK or block % CHECK:
        raise ValueError(f"a block is a whole number of checks ({CHECK}), got {block}")
    n = arrivals.size
    blocks = -(-n // block)
    pad = blocks * block - n
    # Padding: requests arriving at +inf with no work, after everyone (and cut off at the end).
    a = np.concatenate((arrivals.astype(float), np.full(pad, np.inf))).reshape(blocks, block)
    w = np.concatenate((services.astype(float), np.zeros(pad))).reshape(blocks, block)
    a_by_step, w_by_step = a.T.copy(), w.T.copy()  # row j: the j-th request of every block
    starts = np.empty((block, blocks))
    free = [np.full(blocks, -np.inf) for _ in range(servers)]  # sorted: free[0] is the earliest
    seen = np.empty((block // CHECK + 1, servers, blocks))  # the guess at every CHECK-th request
    for j in range(block):
        if j % CHECK == 0:
            seen[j // CHECK] = free
        start = starts[j]
        np.copyto(start, free[0])
        np.copyto(start, a_by_step[j], where=a_by_step[j] >= free[0])
        carry = start + w_by_step[j]
        for i in range(1, servers):  # drop the earliest, insert the new free time in order
            free[i - 1] = np.minimum(free[i], carry)
            carry = np.maximum(free[i], carry)
        free[servers - 1] = carry
    seen[block // CHECK] = free
    out = starts.T.reshape(-1)  # request order (a copy: starts is laid out by step)
    # The first block started from the true state, every server free: its guess is the run.
    free_at = seen[-1, :, 0].tolist()
    missed = 0  # blocks in a row that never met their guess
    for b in range(1, blocks):
        heapq.heapify(free_at)
        for j in range(0, block, CHECK):
            if _agree(free_at, seen[j // CHECK, :, b].tolist(), float(a[b, j])):
                free_at = seen[-1, :, b].tolist()
                missed = 0
                break
            at = b * block + j
            out[at : at + CHECK] = _by_heap(
                a[b, j : j + CHECK].tolist(), w[b, j : j + CHECK].tolist(), free_at
            )
        else:
            missed += 1
            if missed == GIVE_UP_AFTER:  # a queue that does not drain: the rest one at a time
                rest = (b + 1) * block
                out[rest:] = _by_heap(a.reshape(-1)[rest:].tolist(), w.reshape(-1)[rest:].tolist(), free_at)
                break
    return out[:n].copy()


def separate_lines_starts(
    arrivals: np.ndarray, services: np.ndarray, line_of: np.ndarray, lines: int
) -> np.ndarray:
    """Start times when request i joins line line_of[i] (0 … lines−1), one server per line."""
    starts = np.empty_like(arrivals, dtype=float)
    for line in range(lines):
        mine = np.flatnonzero(line_of == line)
        starts[mine] = single_server_starts(arrivals[mine], services[mine])
    return starts


def round_robin_lines(requests: int, lines: int) -> np.ndarray:
    """Line of each request when arrivals are dealt to the lines in turn: 0, 1, …, c−1, 0, …"""
    return np.arange(requests) % lines
