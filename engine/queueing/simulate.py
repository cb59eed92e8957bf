"""First-come-first-served queues: given arrivals and service times, when does each request start?

Three disciplines, all FIFO, all returning start times in the order of the input:

- one server: the Lindley recurrence start = max(arrival, server_free_at), vectorised. Unrolled,
  request n departs at D_n = C_n + max_{k≤n}(a_k − C_{k−1}), with C the running sum of work,
  so one cumulative sum and one cumulative max replace the Python loop.
- one shared line, c servers (M/M/c): the next request in line takes the server that frees
  first. A heap of free-at times; one O(log c) step per request. (No cumulative trick is known
  for c > 1: which server frees first depends on every earlier service time.)
- c separate lines: each request is assigned a line on arrival and never switches; each line
  is then an independent single-server queue.
"""

from __future__ import annotations

import heapq

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
    free_at = [-np.inf] * servers  # a min-heap of the times the servers become free
    starts: list[float] = []
    push = starts.append
    replace = heapq.heapreplace
    for arrival, work in zip(arrivals.tolist(), services.tolist()):
        first_free = free_at[0]
        start = arrival if arrival >= first_free else first_free
        replace(free_at, start + work)
        push(start)
    return np.asarray(starts, dtype=float)


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
