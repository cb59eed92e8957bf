"""From steps to seconds: when each step starts, and the first step an arrival can join.

With a constant step time the steps sit on an exact grid (step k starts at k·dt) and an
arrival at t seconds joins at step ceil(t / dt), idle steps included, as the lab counts them.
With a step time that depends on the batch, each step's length follows from what the schedule
put in it (batch, KV tokens read, prompt tokens), and an idle step costs the model's idle time.

The clock never holds one entry per step: a run can last billions of steps (a thousand requests
of ten million tokens on one slot). Between two scheduling events the batch is fixed and its KV
reads grow by one token per request per step, so the schedule is cut into *segments* at its
events and each segment is summed in closed form (StepTime.segment_seconds). A segment holding
prompt tokens is one step long (a prefill step is an event of its own). Memory and work grow
with the stays, not with the steps.

What a static step runs: a static group keeps its finished members in the batch as padding
until its longest member ends (see engine.batching.static), so for pricing a static stay decodes
until its group's end, its KV reads still growing by one token per step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.batching.distinct import distinct
from engine.batching.schedule import Schedule
from engine.batching.steptime import StepTime
from engine.batching.windows import count as window_count
from engine.batching.windows import spans as window_spans

_EPS = 1e-9  # an arrival computed as 2.9999999999 steps still joins at step 3


@dataclass(frozen=True, eq=False)
class GridClock:
    """Steps on an exact grid: step k begins at k·dt seconds (a constant step time)."""

    dt: float

    @property
    def idle(self) -> float:
        return self.dt

    def at(self, steps: np.ndarray) -> np.ndarray:
        """Seconds when step `steps` begins (equivalently, when step steps−1 ends), as floats
        whatever type dt was given in."""
        return np.asarray(steps, dtype=np.float64) * float(self.dt)

    def step_of(self, seconds: np.ndarray) -> np.ndarray:
        """The first step that begins at or after each time: when an arrival can join."""
        seconds = np.asarray(seconds, dtype=np.float64)
        return np.maximum(np.ceil(seconds / self.dt - _EPS), 0).astype(np.int64)


@dataclass(frozen=True, eq=False)
class SegmentClock:
    """Seconds at step boundaries when a step's length depends on what it runs.

    Segment j covers steps [edges[j], edges[j+1]) and begins at times[j] seconds; edges[-1] is
    the end of the schedule (times[-1] when it ends). In it `batch` requests decode; the first
    step reads `context` KV tokens and lasts `first` seconds. A `flat` segment costs `first` per
    step (idle steps, or a single step with a prefill); the others are summed by the model.
    Past the schedule's end the engine idles at `idle` seconds per step.
    """

    idle: float
    model: StepTime
    edges: np.ndarray
    times: np.ndarray
    batch: np.ndarray
    context: np.ndarray
    first: np.ndarray
    flat: np.ndarray

    def _within(self, segment: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Seconds of the first `steps` steps of each `segment` (aligned arrays)."""
        flat = self.flat[segment]
        summed = self.model.segment_seconds(self.batch[segment], self.context[segment], steps)
        return np.where(flat, steps * self.first[segment], summed)

    def at(self, steps: np.ndarray) -> np.ndarray:
        """Seconds when step `steps` begins (equivalently, when step steps−1 ends)."""
        return blockwise(self._at, np.asarray(steps).astype(np.int64), dtype=np.float64)

    def _at(self, steps: np.ndarray) -> np.ndarray:
        last = int(self.edges[-1])
        inside = np.minimum(steps, last)
        segment = np.clip(np.searchsorted(self.edges, inside, side="right") - 1, 0, len(self.edges) - 2)
        seconds = self.times[segment] + self._within(segment, inside - self.edges[segment])
        return seconds + np.maximum(steps - last, 0) * self.idle

    def step_of(self, seconds: np.ndarray) -> np.ndarray:
        """The first step that begins at or after each time: when an arrival can join."""
        return blockwise(self._step_of, np.asarray(seconds, dtype=np.float64), dtype=np.int64)

    def _step_of(self, seconds: np.ndarray) -> np.ndarray:
        shape = seconds.shape
        seconds = seconds.ravel()
        target = seconds - _EPS * self.idle
        last = int(self.edges[-1])
        # segment j with times[j] < target ≤ times[j + 1]: the step is inside it (or at its end)
        segment = np.searchsorted(self.times, target, side="left") - 1
        out = np.zeros(len(seconds), dtype=np.int64)
        beyond = segment >= len(self.edges) - 1
        out[beyond] = last + np.ceil((seconds[beyond] - self.times[-1]) / self.idle - _EPS).astype(np.int64)
        inside = np.flatnonzero((segment >= 0) & ~beyond)
        j = segment[inside]
        lo = np.zeros(len(j), dtype=np.int64)  # its seconds < target
        hi = (self.edges[j + 1] - self.edges[j]).astype(np.int64)  # its seconds ≥ target
        begins, want = self.times[j], target[inside]
        # The bisection below needs brackets: first probe where a straight line between the
        # segment's ends puts the arrival, then its neighbour, which closes most brackets
        # (seconds rise nearly linearly within a segment; they never fall, so the probes only
        # narrow the bracket around the same answer).
        open_ = np.flatnonzero(hi - lo > 1)
        if len(open_):
            with np.errstate(divide="ignore", invalid="ignore"):
                share = (want[open_] - begins[open_]) / (self.times[j[open_] + 1] - begins[open_])
            share = np.where(np.isfinite(share), np.clip(share, 0.0, 1.0), 0.5)
            probe = np.clip(np.ceil(share * hi[open_]).astype(np.int64), 1, hi[open_] - 1)
            for _ in range(2):
                reached = begins[open_] + self._within(j[open_], probe) >= want[open_]
                hi[open_] = np.where(reached, probe, hi[open_])
                lo[open_] = np.where(reached, lo[open_], probe)
                probe = np.where(reached, probe - 1, probe + 1)  # then its neighbour
                keep = (probe > lo[open_]) & (probe < hi[open_])
                open_, probe = open_[keep], probe[keep]
        while True:
            open_ = np.flatnonzero(hi - lo > 1)
            if len(open_) == 0:
                break
            mid = (lo[open_] + hi[open_]) // 2
            reached = begins[open_] + self._within(j[open_], mid) >= want[open_]
            hi[open_] = np.where(reached, mid, hi[open_])
            lo[open_] = np.where(reached, lo[open_], mid)
        out[inside] = self.edges[j] + hi
        return out.reshape(shape)


Clock = GridClock | SegmentClock  # a constant step time, or one that depends on the batch

BLOCK = 1 << 16  # elements worked at once by an element-wise evaluation over many points


def blockwise(fn: Callable[..., np.ndarray], *arrays: np.ndarray, dtype: Any = None) -> np.ndarray:
    """fn over aligned arrays, BLOCK elements at a time: the same values as one call when fn works
    element by element, with its temporaries (a dozen arrays each as long as its input, in a
    step-time model's sums) a few MiB at any length instead of hundreds at a million requests."""
    first = arrays[0]
    if first.size <= BLOCK:
        return fn(*arrays)
    flat = [np.ravel(a) for a in arrays]
    out = np.empty(first.size, dtype=dtype)
    for lo in range(0, first.size, BLOCK):
        out[lo : lo + BLOCK] = fn(*(a[lo : lo + BLOCK] for a in flat))
    return out.reshape(first.shape)


def priced_end(schedule: Schedule) -> np.ndarray:
    """The step after each stay's last step in the batch: its end, or its static group's end
    (a finished member of a static group stays in the batch as padding until the group ends)."""
    if schedule.groups is None:
        return schedule.end
    g = schedule.groups
    return g.end[g.member_group]


@dataclass(frozen=True, eq=False)
class SegmentLoad:
    """What every segment of a schedule runs; see Clock."""

    edges: np.ndarray  # int64, segment j = steps [edges[j], edges[j+1]); edges[-1] = makespan
    batch: np.ndarray  # int64 requests decoding in each step of the segment
    context: np.ndarray  # int64 KV tokens read in its first step (+ batch per later step)
    prefill: np.ndarray  # int64 prompt tokens prefilled (only in one-step segments)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.edges)


@dataclass(frozen=True, eq=False)
class _Stays:
    """A schedule's stays as the clock reads them, with their priced ends, and its prefills.
    Only the stays that decode count (`live`; None when all do): a stay that never decodes adds
    nothing to any step and no event."""

    ds: np.ndarray
    end: np.ndarray
    cached: np.ndarray
    live: np.ndarray | None
    chunk_step: np.ndarray
    chunk_tokens: np.ndarray
    horizon: int

    @classmethod
    def of(cls, schedule: Schedule) -> _Stays:
        ds, end = schedule.decode_start, priced_end(schedule)
        live = end > ds
        return cls(
            ds,
            end,
            schedule.context,
            None if live.all() else live,
            schedule.chunk_step,
            schedule.chunk_tokens,
            schedule.makespan,
        )


@dataclass(frozen=True)
class _Entry:
    """What a window of steps inherits from the steps before it: the requests decoding in the
    last step before it, the KV tokens they read in its first step, and when it begins."""

    batch: int = 0
    reads: int = 0
    seconds: float = 0.0


def _inside(values: np.ndarray, a: int, b: int) -> np.ndarray:
    return (values >= a) & (values < b)


def _window_load(stays: _Stays, a: int, b: int, entry: _Entry, last: bool = True) -> SegmentLoad:
    """The segments of steps [a, b), cut at the events inside it; a and b are events of the
    whole schedule, so these are the whole schedule's segments that lie in the window. A stay
    that ends at b leaves in the next window's first step, or, in the `last` window, after
    every step priced.

    A request decoding at step k with c tokens cached reads c + 1 (its new token included). From
    one segment to the next the reads follow a recurrence in whole numbers: every request still
    decoding reads one more, those that leave stop, those that join add their first read.
    """
    hi = b + 1 if last else b
    starts, ends, chunks = _inside(stays.ds, a, b), _inside(stays.end, a, hi), _inside(stays.chunk_step, a, b)
    if stays.live is not None:
        starts &= stays.live
        ends &= stays.live
    whole = bool(starts.all() and ends.all() and chunks.all())  # one window: no copies
    ds = stays.ds if whole else stays.ds[starts]
    end = stays.end if whole else stays.end[ends]
    chunk_step = stays.chunk_step if whole else stays.chunk_step[chunks]
    # At a million requests every array here is several MiB: each is built in place, and let go
    # of as soon as the next one is made, so the run's peak memory is not these temporaries.
    events = np.concatenate(([a, b], ds, end, chunk_step, chunk_step + 1)).astype(np.int64, copy=False)
    edges = distinct(events, in_place=True)
    del events
    edges = edges[: np.searchsorted(edges, b, side="right")]
    n_edges = len(edges)
    at_start = np.searchsorted(edges, ds)
    change = np.bincount(at_start, minlength=n_edges).astype(np.int64, copy=False)
    at_end = np.searchsorted(edges, end)
    change -= np.bincount(at_end, minlength=n_edges)
    change[0] += entry.batch
    batch = np.cumsum(change[:-1])
    del change
    # each request reads one more per step of the segment before; joins add their first read
    # (cached + 1), leaves take back their last (cached + 1 + steps decoded)
    cached = stays.cached if whole else stays.cached[starts]
    flow = _whole_bincount(at_start, cached + 1, n_edges)
    del at_start, cached
    if whole:
        last_read = stays.cached + 1 + (stays.end - stays.ds)
    else:
        last_read = stays.cached[ends] + 1 + (end - stays.ds[ends])
    flow -= _whole_bincount(at_end, last_read, n_edges)
    del at_end, last_read
    flow[0] += entry.reads
    flow[1:] += batch * np.diff(edges)
    context = np.cumsum(flow[:-1], out=flow[:-1])
    tokens = stays.chunk_tokens if whole else stays.chunk_tokens[chunks]
    prefill = _whole_bincount(np.searchsorted(edges, chunk_step), tokens, n_edges)[:-1]
    return SegmentLoad(edges, batch, context, prefill)


def segment_load(schedule: Schedule) -> SegmentLoad:
    """The schedule cut at its events: stays' decode starts and (priced) ends, prefill steps."""
    return _window_load(_Stays.of(schedule), 0, schedule.makespan, _Entry())


def _whole_bincount(index: np.ndarray, weights: np.ndarray, length: int) -> np.ndarray:
    """Sums of whole-number weights by index, in int64. np.bincount goes through floats: exact
    only while every partial sum stays below 2**53, so it is used only then (a linear pass,
    where a sort costs seconds at a million requests)."""
    out = np.zeros(length, dtype=np.int64)
    if len(index):
        weights = np.asarray(weights, dtype=np.int64)
        if int(np.abs(weights).max()) * len(weights) < 2**53:
            return np.bincount(index, weights=weights, minlength=length).astype(np.int64)
        order = np.argsort(index, kind="stable")
        index, weights = index[order], np.asarray(weights, dtype=np.int64)[order]
        first = np.flatnonzero(np.r_[True, index[1:] != index[:-1]])
        out[index[first]] = np.add.reduceat(weights, first)
    return out


def _priced(load: SegmentLoad, step_time: StepTime, begins: float) -> SegmentClock:
    """The clock of the segments `load` holds, the first beginning at `begins` seconds."""
    idle = step_time.idle_seconds
    nothing = (load.batch == 0) & (load.prefill == 0)
    first = np.where(nothing, idle, blockwise(step_time.seconds, load.batch, load.context, load.prefill))
    flat = nothing | (load.prefill > 0)
    del nothing
    lengths = load.lengths
    summed = blockwise(step_time.segment_seconds, load.batch, load.context, lengths, dtype=np.float64)
    seconds = np.where(flat, lengths * first, summed)
    del lengths, summed
    # times[j + 1] = times[j] + seconds[j], added one after another (np.cumsum is sequential),
    # so a window that starts from the seconds before it gets the whole schedule's floats
    times = np.empty(len(seconds) + 1, dtype=np.float64)
    times[0] = begins
    times[1:] = seconds
    np.cumsum(times, out=times)
    del seconds
    return SegmentClock(
        idle=idle,
        model=step_time,
        edges=load.edges,
        times=times,
        batch=load.batch,
        context=load.context,
        first=first,
        flat=flat,
    )


def clock_for(schedule: Schedule, step_time: StepTime) -> Clock:
    """The clock of a finished schedule under a step-time model."""
    if step_time.constant is not None:
        return GridClock(step_time.constant)
    return _priced(segment_load(schedule), step_time, 0.0)


def _window_spans(stays: _Stays, windows: int) -> list[tuple[int, int]]:
    """Windows whose bounds split the ends of decoding stays about evenly. Each bound is an
    event, so an edge of the whole schedule's segments: a window never cuts a segment in two,
    whose closed-form sum would round differently. (A stay that never decodes makes no event:
    its end is no bound.)"""
    ends = stays.end if stays.live is None else stays.end[stays.live]
    return window_spans(ends, stays.horizon, windows)


def asked(
    schedule: Schedule,
    step_time: StepTime,
    at: Sequence[np.ndarray] = (),
    step_of: Sequence[np.ndarray] = (),
    windows: int | None = None,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The clock's answers to every question a run's pricing asks, in one pass: `clock.at` of
    each array in `at`, `clock.step_of` of each in `step_of`, the same floats and steps.

    At a million requests the whole clock is millions of segments (a hundred MiB), so it is
    built a window of steps at a time (`windows`, by default engine.batching.windows.count): each
    window answers the questions that fall in it and is let go of before the next is built.
    """
    if step_time.constant is not None:
        grid = GridClock(step_time.constant)
        return [grid.at(q) for q in at], [grid.step_of(q) for q in step_of]
    stays = _Stays.of(schedule)
    if windows is None:
        windows = window_count(len(stays.end))
    spans = _window_spans(stays, windows)
    steps = [np.asarray(q, dtype=np.int64) for q in at]
    seconds = [np.asarray(q, dtype=np.float64) for q in step_of]
    out_at = [np.empty(q.shape, dtype=np.float64) for q in steps]
    out_of = [np.empty(q.shape, dtype=np.int64) for q in seconds]
    idle = step_time.idle_seconds
    entry = _Entry()
    for w, (a, b) in enumerate(spans):
        first, last = w == 0, w == len(spans) - 1
        clock = _priced(_window_load(stays, a, b, entry, last), step_time, entry.seconds)
        for q, out in zip(steps, out_at):
            mine = ((q >= a) | first) & ((q < b) | last)
            out[mine] = clock.at(q[mine])
        # an arrival belongs to the segment whose times bracket it, less the clock's tolerance
        for when, joins in zip(seconds, out_of):
            target = when - _EPS * idle
            mine = ((target > clock.times[0]) | first) & ((target <= clock.times[-1]) | last)
            del target
            joins[mine] = clock.step_of(when[mine])
        if not last:
            batch = int(clock.batch[-1])
            reads = int(clock.context[-1]) + batch * int(clock.edges[-1] - clock.edges[-2])
            entry = _Entry(batch, reads, float(clock.times[-1]))
        del clock
    return out_at, out_of
