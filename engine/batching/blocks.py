"""KV blocks held by decoding requests, counted all at once instead of one event per block.

A decoding request reads c + 1 tokens in a step where its cache holds c (its cache and the new
token), one more every step, and holds ceil(reads / block_size) blocks after that step's
allocations. Write its reads at step s as a + s (a = cached at decode start − decode start + 1);
with a − 1 = q·bs + u (0 ≤ u < bs) and s = m·bs + v, its blocks are q + m + 1 + [u ≥ bs − v].
So the blocks of all decoding requests at step s need only Σq, their count and how many have
each residue u: the simulator asks "how many blocks at step s" and "the first step they exceed
the pool" in O(block_size), and visits a step for blocks only when the pool would run dry, not
at every block boundary of every request (a hundred thousand visits per ten thousand requests).

Also here: the blocks a *finished* schedule holds at any step, rebuilt from its stays alone
(blocks_at, kv_usage), independent of the simulator's own bookkeeping; the metrics and the
tests read them.

The same formula holds one step earlier for a request whose prefill finished in step s − 1: it
holds ceil(context / bs) then, exactly its prefill's blocks; that is why a request can join this
count at the end of its prefill step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.batching import windows
from engine.batching.clock import blockwise
from engine.batching.distinct import distinct
from engine.batching.schedule import Schedule


def ceil_div(a: Any, b: Any) -> Any:
    """ceil(a / b) for whole numbers or integer arrays, b > 0: exact at any size, unlike float
    division. The one ceiling division of the simulator's block counts."""
    return -(-a // b)


class DecodeBlocks:
    """The decoding requests' blocks, as Σq, a count and a histogram of residues."""

    __slots__ = ("bs", "count", "hist", "q_sum")

    def __init__(self, block_size: int) -> None:
        self.bs = block_size
        self.count = 0
        self.q_sum = 0
        self.hist = [0] * block_size

    def add(self, offset: int) -> None:
        """A request that reads offset + s tokens at step s."""
        q, u = divmod(offset - 1, self.bs)
        self.count += 1
        self.q_sum += q
        self.hist[u] += 1

    def remove(self, offset: int) -> None:
        q, u = divmod(offset - 1, self.bs)
        self.count -= 1
        self.q_sum -= q
        self.hist[u] -= 1

    def held(self, step: int) -> int:
        """Blocks held after step `step`'s allocations."""
        m, v = divmod(step, self.bs)
        return self.q_sum + self.count * (m + 1) + sum(self.hist[self.bs - v :])

    def taking(self, step: int) -> int:
        """How many take a new block in `step`: those whose reads pass a multiple of bs."""
        return self.hist[(-step) % self.bs]

    def first_over(self, after: int, limit: int, before: int | None = None) -> int | None:
        """The first step ≥ after at which they hold more than `limit` blocks (None: never, or
        not before `before`, which the caller needs no better: an O(1) answer most of the time)."""
        n = self.count
        if n == 0:
            return None if self.q_sum <= limit else after
        bs, hist = self.bs, self.hist
        m, v = divmod(after, bs)
        # the most a period m can hold is Σq + n(m + 1) + #{u ≥ 1}: skip periods below the limit
        top = self.q_sum + n + (n - hist[0])
        m_least = (limit - top) // n + 1
        if m_least > m:
            m, v = m_least, 0
        if before is not None and m * bs + v >= before:
            return None
        for _ in range(2):  # found within this period or at the start of the next
            base = self.q_sum + n * (m + 1)
            above = sum(hist[bs - v :]) if v else 0  # #{u ≥ bs − v}
            for w in range(v, bs):
                if w > v:
                    above += hist[bs - w]
                if base + above > limit:
                    return m * bs + w
            m, v = m + 1, 0
        raise AssertionError("unreachable: the count grows by n every block_size steps")


# ---- blocks over a finished schedule ----------------------------------------------------------


def blocks_per_step(schedule: Schedule, block_size: int, method: str | None = None) -> np.ndarray:
    """KV blocks held after each step's allocations, at every step: O(steps), for small runs and
    checks (the tests compare it with the naive loop's own count)."""
    return blocks_at(schedule, block_size, np.arange(schedule.makespan, dtype=np.int64), method)


def blocks_at(
    schedule: Schedule, block_size: int, steps: np.ndarray, method: str | None = None
) -> np.ndarray:
    """KV blocks held after the allocations of each step in `steps`, rebuilt from the stays alone.

    Independent of the loop's own bookkeeping: a prefilling stay holds ceil(prefilled / bs)
    blocks from each chunk to the next, or to its first decode step; a decoding stay that reads
    r tokens in a step (its cache and the new token) holds ceil(r / bs), one more each time r
    passes a multiple of bs.

    Never one entry per step of the run. The decoding stays' part is counted one of two exact
    ways, whichever is less work: 'crossings' lists every step where a stay takes a new block
    (cheap when blocks are large against the lengths); 'residues' writes a stay's blocks at step
    k as p + m + [u + s ≥ 1] + [u + s > bs], with its read at step 0's offset a = p·bs + u
    (0 ≤ u < bs) and k = m·bs + s, and counts stays by u (cheap when bs is small).
    """
    bs = block_size
    steps = np.asarray(steps, dtype=np.int64)
    total = _prefill_blocks_at(schedule, bs, steps)
    ds, end, cached = schedule.decode_start, schedule.end, schedule.context
    live = end > ds
    ds, end, cached = ds[live], end[live], cached[live]
    if len(ds) == 0:
        return total
    first = ((-cached - 1) % bs) + 1  # first j ≥ 1 with (cached + j) % bs == 0: a new block
    count = np.maximum(0, (end - ds - 1 - first) // bs + 1)  # new blocks while it decodes
    if method is None:
        residues = len(distinct((cached + 1 - ds) % bs))
        method = "crossings" if int(count.sum()) <= residues * (len(steps) + len(ds)) else "residues"
    if method == "crossings":
        return total + _decode_blocks_by_crossings(ds, end, cached, first, count, bs, steps)
    return total + _decode_blocks_by_residues(ds, end, cached, bs, steps)


def _count_at_or_before(points: np.ndarray, weights: np.ndarray | None, steps: np.ndarray) -> np.ndarray:
    """Σ weight_i over points_i ≤ each step (int64)."""
    order = np.argsort(points, kind="stable")
    w = np.ones(len(points), dtype=np.int64) if weights is None else np.asarray(weights)[order]
    prefix = np.concatenate(([0], np.cumsum(w)))
    return prefix[np.searchsorted(points[order], steps, side="right")]


def _prefill_blocks_at(schedule: Schedule, bs: int, steps: np.ndarray) -> np.ndarray:
    if len(schedule.chunk_stay) == 0:
        return np.zeros(len(steps), dtype=np.int64)
    step, until, held = _chunk_holdings(schedule, bs)
    return _count_at_or_before(step, held, steps) - _count_at_or_before(until, held, steps)


def _chunk_holdings(schedule: Schedule, bs: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(from, to, blocks) of every prefill chunk: a prefilling stay holds ceil(done / bs) blocks
    from each chunk's step to its next chunk's, or to its first decode step. The chunks are read
    in (stay, step) order, in place when they are in it already (one chunk per stay, stays in
    order: every run without chunked prefill), so no sorted copies are made."""
    stay, step, done = schedule.chunk_stay, schedule.chunk_step, schedule.chunk_done
    if len(stay) > 1 and not _in_order(stay, step):
        order = np.lexsort((step, stay))
        stay, step, done = stay[order], step[order], done[order]
        del order
    held = ceil_div(done, bs)
    until = schedule.decode_start[stay]
    same = np.flatnonzero(stay[1:] == stay[:-1])
    until[same] = step[same + 1]
    return step, until, held


def _in_order(stay: np.ndarray, step: np.ndarray) -> bool:
    """Whether the chunks are sorted by stay, then step."""
    later = stay[1:] - stay[:-1]
    if (later > 0).all():
        return True
    return bool(((later > 0) | ((later == 0) & (step[1:] > step[:-1]))).all())


CROSSINGS_PER_CHUNK = 1 << 18  # new-block steps listed at once: half a dozen arrays of 2 MiB (a larger
# chunk costs memory and saves no time: each is one sort and one search of the steps asked)


def _decode_blocks_by_crossings(ds, end, cached, first, count, bs, steps) -> np.ndarray:
    at_start = ceil_div(cached + 1, bs)
    at_end = ceil_div(cached + end - ds, bs)
    out = _count_at_or_before(ds, at_start, steps) - _count_at_or_before(end, at_end, steps)
    # every new block is +1 from its step on (its stay's end takes all of them back, above)
    cuts = np.arange(0, int(count.sum()), CROSSINGS_PER_CHUNK)
    bounds = np.searchsorted(np.cumsum(count), cuts, side="right")
    for lo, hi in zip(bounds, np.append(bounds[1:], len(count))):
        c = count[lo:hi]
        total = int(c.sum())
        if total == 0:
            continue
        base = np.repeat(ds[lo:hi] + first[lo:hi], c)
        within = np.arange(total) - np.repeat(np.cumsum(c) - c, c)
        out = out + np.searchsorted(np.sort(base + bs * within), steps, side="right")
    return out


def _decode_blocks_by_residues(ds, end, cached, bs, steps) -> np.ndarray:
    offset = cached + 1 - ds  # a stay reads offset + k tokens at step k
    p, u = np.divmod(offset, bs)
    m, s = np.divmod(steps, bs)
    # Σp over live stays: Python ints if int64 could overflow (offsets reach −steps)
    wide = (int(np.abs(p).max()) + 1) * len(p) >= 2**62
    p_sum = (
        (_count_at_or_before(ds, p.astype(object), steps) - _count_at_or_before(end, p.astype(object), steps))
        if wide
        else (_count_at_or_before(ds, p, steps) - _count_at_or_before(end, p, steps))
    )
    live = _count_at_or_before(ds, None, steps) - _count_at_or_before(end, None, steps)
    zero = u == 0
    live_zero = _count_at_or_before(ds[zero], None, steps) - _count_at_or_before(end[zero], None, steps)
    out = p_sum + live * (m + 1) - live_zero * (s == 0)
    # + #{live stays with u ≥ bs + 1 − s}, counted residue by residue
    threshold = bs + 1 - s
    for v in distinct(u[u >= 2]):
        mine = u == v
        hit = threshold <= v
        if not hit.any():
            continue
        at = steps[hit]
        n_v = _count_at_or_before(ds[mine], None, at) - _count_at_or_before(end[mine], None, at)
        out[hit] = out[hit] + n_v
    return np.asarray(out, dtype=np.int64)


@dataclass(frozen=True)
class KvUsage:
    bin_max: np.ndarray  # most blocks held in each bin
    peak: int
    mean: float  # over the run's steps


def kv_usage(schedule: Schedule, block_size: int, bounds: np.ndarray) -> KvUsage:
    """Peak, mean and per-bin maximum of the blocks held, bins [bounds[i], bounds[i+1]).

    The count only falls when a stay ends (a prefill's blocks pass to its decoding, a chunk's to
    the next, never fewer), so within a bin it peaks at the bin's last step or just before some
    stay's end: only those steps are evaluated. The mean is summed in closed form per stay.

    The steps are evaluated a window at a time (engine.batching.windows), each over the stays
    that hold a slot in it: at a million requests, the sorted copies of every stay for the whole
    run at once were a hundred MiB.
    """
    bs = block_size
    horizon = int(bounds[-1])
    end, last_steps = schedule.end, bounds[1:] - 1
    bin_max = np.zeros(len(bounds) - 1, dtype=np.int64)
    peak = 0
    for a, b in windows.spans(end, horizon):
        # the steps just before the ends, and the bins' last steps, that lie in [a, b)
        ends = end[(end > a) & (end <= b)] - 1
        points = distinct(np.concatenate((ends, last_steps[(last_steps >= a) & (last_steps < b)])))
        del ends
        if len(points) == 0:
            continue
        used = blocks_at(schedule.within(a, b), bs, points)
        which = np.searchsorted(bounds, points, side="right") - 1
        starts = np.flatnonzero(np.concatenate(([True], which[1:] != which[:-1])))
        bins = which[starts]  # a bin split between windows keeps its larger maximum
        bin_max[bins] = np.maximum(bin_max[bins], np.maximum.reduceat(used, starts))
        peak = max(peak, int(used.max()))
    return KvUsage(bin_max, peak, _block_steps(schedule, bs) / horizon)


def _block_steps(schedule: Schedule, bs: int) -> float:
    """Σ over steps of the blocks held, in closed form per stay and per chunk."""
    total = 0.0
    if len(schedule.chunk_stay):
        step, until, held = _chunk_holdings(schedule, bs)
        total += float(np.sum(held.astype(np.float64) * (until - step)))
        del step, until, held
    ds, end, cached = schedule.decode_start, schedule.end, schedule.context
    live = end > ds

    def ceil_sum(x: np.ndarray) -> np.ndarray:  # Σ_{y=1}^{x} ceil(y / bs)
        q, r = np.divmod(x, bs)
        q, r = q.astype(np.float64), r.astype(np.float64)
        return bs * q * (q + 1) / 2 + r * (q + 1)

    def held_while_decoding(c: np.ndarray, d: np.ndarray, e: np.ndarray) -> np.ndarray:
        return np.where(e > d, ceil_sum(c + (e - d)) - ceil_sum(c), 0.0)

    # element by element, a block at a time (a dozen temporaries each as long as the stays), then
    # one sum over the stays that decode: the same floats as summing one whole expression
    per_stay = blockwise(held_while_decoding, cached, ds, end, dtype=np.float64)
    total += float(np.sum(per_stay[live]))
    return total
