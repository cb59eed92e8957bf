"""KV blocks held by decoding requests, counted all at once instead of one event per block.

A decoding request reads c + 1 tokens in a step where its cache holds c (its cache and the new
token), one more every step, and holds ceil(reads / block_size) blocks after that step's
allocations. Write its reads at step s as a + s (a = cached at decode start − decode start + 1);
with a − 1 = q·bs + u (0 ≤ u < bs) and s = m·bs + v, its blocks are q + m + 1 + [u ≥ bs − v].
So the blocks of all decoding requests at step s need only Σq, their count and how many have
each residue u: the simulator asks "how many blocks at step s" and "the first step they exceed
the pool" in O(block_size), and visits a step for blocks only when the pool would run dry, not
at every block boundary of every request (a hundred thousand visits per ten thousand requests).

The same formula holds one step earlier for a request whose prefill finished in step s − 1: it
holds ceil(context / bs) then, exactly its prefill's blocks; that is why a request can join this
count at the end of its prefill step.
"""
from __future__ import annotations

from typing import Any


def ceil_div(a: Any, b: Any) -> Any:
    """ceil(a / b) for whole numbers or integer arrays, b > 0: exact at any size, unlike float
    division. The one ceiling division of the simulator's block counts."""
    return -(-a // b)


class DecodeBlocks:
    """The decoding requests' blocks, as Σq, a count and a histogram of residues."""

    __slots__ = ("bs", "count", "q_sum", "hist")

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
        return self.q_sum + self.count * (m + 1) + sum(self.hist[self.bs - v:])

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
            above = sum(hist[bs - v:]) if v else 0  # #{u ≥ bs − v}
            for w in range(v, bs):
                if w > v:
                    above += hist[bs - w]
                if base + above > limit:
                    return m * bs + w
            m, v = m + 1, 0
        raise AssertionError("unreachable: the count grows by n every block_size steps")
