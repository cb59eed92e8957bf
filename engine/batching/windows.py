"""A long run counted a window of steps at a time.

At a million requests every per-stay array is 8 MB, and what counts over the whole run at once
(sorted copies, searches, a clock's segments) makes a dozen of them. Cut into windows of about
WINDOW_STAYS stays each, the temporaries are those of one window: counts at steps in [a, b)
need only the stays that hold a slot at some step of it (Schedule.within), and a clock only the
segments inside it (engine.batching.clock.asked).
"""

from __future__ import annotations

import numpy as np

from engine.batching.distinct import distinct

WINDOW_STAYS = 1 << 16  # stays per window: about a MiB for each array of a window


def count(stays: int) -> int:
    """How many windows a run of `stays` stays is counted in."""
    return max(1, -(-stays // WINDOW_STAYS))


def bounds(points: np.ndarray, horizon: int, windows: int) -> list[int]:
    """0, then up to windows − 1 of `points` strictly inside (0, horizon), splitting them about
    evenly (read from a sorted sample, not a sort of them all), then `horizon`. A caller that
    needs its bounds to be events passes events."""
    inner: list[int] = []
    if windows > 1 and len(points):
        sample = np.sort(points[:: max(1, len(points) // (64 * windows))])
        picks = sample[(np.arange(1, windows) * len(sample)) // windows]
        inner = [int(p) for p in distinct(picks) if 0 < p < horizon]
    return [0, *inner, horizon]


def spans(points: np.ndarray, horizon: int, windows: int | None = None) -> list[tuple[int, int]]:
    """The windows [a, b) that `bounds` cuts, in order: `windows` of them at most, by default
    count(len(points))."""
    cuts = bounds(points, horizon, count(len(points)) if windows is None else windows)
    return list(zip(cuts[:-1], cuts[1:]))
