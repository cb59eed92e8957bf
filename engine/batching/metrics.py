"""What a run is worth: throughput, utilisation, latency, memory, and a timeline to draw.

Definitions, kept from the lab so its figures reproduce:
- utilisation = tokens generated / (slots × steps): the share of slot-steps that produced a
  token ("GPU busy"). Steps run from the clock's start to the last token, idle steps included,
  and the denominator counts every slot even while a last, partial static group runs.
- occupancy = slot-steps held / (slots × steps): held includes prefill steps and, for static
  batching, the steps a finished request keeps its slot until its group ends.
- busy steps: steps in which at least one request decoded or prefilled.
- Latencies per request, from arrival: queueing (until it first gets a slot), TTFT (until its
  first token is out, i.e. the end of that step), end-to-end (until its last token), TPOT (the
  mean gap between later tokens). In steps they count from the first step it could have joined;
  in seconds from its arrival time.

Nothing here is built per step: a run can last billions of steps. The series are binned to at
most SERIES_POINTS points and each bin's figures come from the stays directly (∫ busy over a
bin is a sum of interval overlaps; KV blocks are evaluated only where they can peak), so the
work and memory grow with the requests. `per_step` still gives the step-by-step counts, for
checks on small runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.batching import windows
from engine.batching.blocks import kv_usage
from engine.batching.clock import asked, blockwise
from engine.batching.distinct import distinct
from engine.batching.schedule import Schedule
from engine.batching.steptime import StepTime

PERCENTILES = (50, 90, 99)
SERIES_POINTS = 500  # per-step series are binned to at most this many points for charts
CDF_QUANTILES = np.linspace(0.0, 1.0, 101)
LATENCIES = ("queueing", "ttft", "tpot", "e2e")


def _plain(value: Any) -> Any:
    """numpy → plain JSON types, recursively."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def percentiles(values: np.ndarray) -> dict[str, float] | None:
    values = values[np.isfinite(values)]
    if len(values) == 0:
        return None
    out = {f"p{p}": float(v) for p, v in zip(PERCENTILES, np.percentile(values, PERCENTILES))}
    out["mean"] = float(values.mean())
    out["max"] = float(values.max())
    return out


@dataclass(frozen=True, eq=False)
class Latencies:
    """Per-request latencies, arrays aligned with the workload: in steps from the first step
    each request could join (`eligible`), and in seconds from its arrival (None untimed).

    The steps are worked out when asked, from the schedule: at a million requests they are four
    arrays of 8 MB that a summary reads once."""

    schedule: Schedule
    output: np.ndarray
    eligible: np.ndarray
    seconds: dict[str, np.ndarray] | None

    @property
    def steps(self) -> dict[str, np.ndarray]:
        s, eligible = self.schedule, self.eligible
        first_out = s.first_token + 1  # the first token is out when its step ends
        return {
            "queueing": (s.first_start - eligible).astype(np.float64),
            "ttft": (first_out - eligible).astype(np.float64),
            "tpot": (s.finish - first_out) / _later(self.output),
            "e2e": (s.finish - eligible).astype(np.float64),
        }


def _later(output: np.ndarray) -> np.ndarray:
    """Tokens after each request's first: TPOT's divisor (NaN when there are none)."""
    return np.where(output > 1, output - 1, np.nan)


def latencies_seconds(
    output: np.ndarray, arrival: np.ndarray, start_s: np.ndarray, first_s: np.ndarray, finish_s: np.ndarray
) -> dict[str, np.ndarray]:
    """Latencies in seconds from each request's arrival, given when it first got a slot, when
    its first token was out and when its last was. The three arrays are taken over: each is
    reused for the latency it gives (at a million requests every array here is 8 MB), and TPOT,
    the one new array, is worked a block at a time."""
    tpot = blockwise(
        lambda finish, first, out: (finish - first) / _later(out), finish_s, first_s, output, dtype=np.float64
    )
    return {
        "queueing": np.subtract(start_s, arrival, out=start_s),
        "ttft": np.subtract(first_s, arrival, out=first_s),
        "tpot": tpot,
        "e2e": np.subtract(finish_s, arrival, out=finish_s),
    }


def per_step(schedule: Schedule) -> tuple[np.ndarray, np.ndarray]:
    """(slots emitting a token, slots held) at every step: O(steps), for checks on small runs."""
    horizon = schedule.makespan
    busy = np.cumsum(
        np.bincount(schedule.emit_start, minlength=horizon + 1)
        - np.bincount(schedule.end, minlength=horizon + 1)
    )[:horizon]
    if schedule.groups is not None:
        g = schedule.groups
        held_from, held_to, weight = g.start, g.end, g.size
    else:
        held_from, held_to, weight = schedule.start, schedule.end, np.ones(len(schedule.start))
    held = np.cumsum(
        np.bincount(held_from, weights=weight, minlength=horizon + 1)
        - np.bincount(held_to, weights=weight, minlength=horizon + 1)
    )[:horizon]
    return busy, np.rint(held).astype(np.int64)


def binned(horizon: int, points: int = SERIES_POINTS) -> np.ndarray:
    """Left edges of at most `points` equal bins over [0, horizon)."""
    if 1 <= horizon <= points:  # one bin per step: the linspace below gives exactly these
        return np.arange(horizon, dtype=np.int64)
    count = max(1, min(points, horizon))
    return distinct(np.linspace(0, horizon, count + 1).astype(np.int64)[:-1])


def covered(start: np.ndarray, end: np.ndarray, weight: np.ndarray | None, at: np.ndarray) -> np.ndarray:
    """Σ_i weight_i · |[start_i, end_i) ∩ [0, x)| for each x in `at`: the integral up to x of a
    count that is weight_i on each interval. Exact in whole numbers (Python ints where int64
    could overflow); one sort and a binary search per point."""
    return ramp(start, weight, at) - ramp(end, weight, at)


def ramp(points: np.ndarray, weight: np.ndarray | None, at: np.ndarray) -> np.ndarray:
    """Σ_{points_i ≤ x} weight_i · (x − points_i) for each x in `at`."""
    points = np.asarray(points, dtype=np.int64)
    at = np.asarray(at, dtype=np.int64)
    total = len(points) if weight is None else int(np.abs(weight).sum())
    top = int(max(points.max(initial=0), at.max(initial=0))) + 1
    dtype = object if (total + 1) * top >= 2**62 else np.int64
    if weight is None and dtype is np.int64:  # the common case, without copies: count[k] is k
        p = np.sort(points)
        moment = np.zeros(len(p) + 1, dtype=np.int64)
        np.cumsum(p, out=moment[1:])
        k = np.searchsorted(p, at, side="right")
        return k * at - moment[k]
    if weight is None:
        p = np.sort(points)
        count = np.arange(len(p) + 1).astype(dtype)
        w_p = p.astype(dtype)
    else:
        order = np.argsort(points, kind="stable")
        p = points[order]
        w = np.asarray(weight, dtype=np.int64)[order].astype(dtype)
        count = np.concatenate(([0], np.cumsum(w))).astype(dtype)
        w_p = w * p.astype(dtype)
    moment = np.concatenate(([0], np.cumsum(w_p))).astype(dtype)
    k = np.searchsorted(p, at, side="right")
    return count[k] * at.astype(dtype) - moment[k]


def union_length(start: np.ndarray, end: np.ndarray) -> int:
    """Steps covered by at least one of the intervals [start_i, end_i)."""
    keep = end > start
    if not keep.all():
        start, end = start[keep], end[keep]
    del keep
    if len(start) == 0:
        return 0
    order = np.argsort(start, kind="stable")
    start, end = start[order], end[order]
    del order
    # each interval counts from where the ones before it reach (or its start, if later)
    reach = np.maximum.accumulate(end)
    np.maximum(start[1:], reach[:-1], out=reach[:-1])
    begin = np.concatenate((start[:1], reach[:-1]))
    del reach
    return int(np.maximum(0, end - begin).sum())


def busy_steps(schedule: Schedule) -> int:
    """Steps in which anything runs: the union of the stays' decoding steps [decode_start, end)
    and the prefill chunks' steps. Counted a window of steps at a time (engine.batching.windows),
    each interval clipped to the window: the windows partition the steps, so their unions add
    up; the last reaches past everything, so nothing is clipped off."""
    ds, end, chunk = schedule.decode_start, schedule.end, schedule.chunk_step
    top = max(int(end.max(initial=0)), int(chunk.max(initial=-1)) + 1)
    total = 0
    for a, b in windows.spans(end, top):
        held = (ds < b) & (end > a)
        here = chunk[(chunk >= a) & (chunk < b)]
        total += union_length(
            np.concatenate((np.maximum(ds[held], a), here)),
            np.concatenate((np.minimum(end[held], b), here + 1)),
        )
    return total


def held_intervals(schedule: Schedule) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(from, to, slots) of every holding: stays, or for static batching whole groups."""
    if schedule.groups is not None:
        g = schedule.groups
        return g.start, g.end, g.size
    return schedule.start, schedule.end, np.ones(len(schedule.start), dtype=np.int64)


@dataclass(frozen=True, eq=False)
class PolicyResult:
    """One policy's run: the headline numbers as fields, the rest ready for results.json."""

    policy: str
    slots: int
    requests: int
    tokens: int
    # The makespan, said once: in steps (idle steps included), and in seconds when a step-time
    # model priced the steps. results.json spells it from these two fields only (makespan_record).
    steps: int
    busy_steps: int  # steps in which at least one request decoded or prefilled
    makespan_seconds: float | None
    utilisation: float
    occupancy: float
    throughput_tokens_per_step: float
    throughput_tokens_per_second: float | None
    requests_per_second: float | None
    preemptions: int
    latency: Latencies
    schedule: Schedule
    series: dict[str, np.ndarray]
    group_maxima: np.ndarray | None = None
    kv_blocks: dict[str, Any] | None = None
    step_time: dict[str, Any] | None = None

    def to_dict(self, timeline: bool = True) -> dict[str, Any]:
        """Plain JSON types only. `timeline=False` drops the per-request arrays (big runs)."""
        lat = self.latency
        out: dict[str, Any] = {
            "policy": self.policy,
            "slots": self.slots,
            "requests": self.requests,
            "tokens": self.tokens,
            **makespan_record(self.steps, self.makespan_seconds),
            "busy_steps": self.busy_steps,
            "utilisation": self.utilisation,
            "occupancy": self.occupancy,
            "throughput_tokens_per_step": self.throughput_tokens_per_step,
            "throughput_tokens_per_second": self.throughput_tokens_per_second,
            "requests_per_second": self.requests_per_second,
            "preemptions": self.preemptions,
            "latency": {
                "steps": {k: percentiles(v) for k, v in lat.steps.items()},
                "seconds": None
                if lat.seconds is None
                else {k: percentiles(v) for k, v in lat.seconds.items()},
            },
            "latency_cdf": self._cdf(),
            "series": self.series,
            "step_time": self.step_time,
        }
        if self.group_maxima is not None:
            g = self.schedule.groups
            assert g is not None  # group maxima come from groups
            out["group_maxima"] = self.group_maxima
            out["groups"] = {"start_step": g.start, "end_step": g.end, "size": g.size}
        if self.kv_blocks is not None:
            out["kv_blocks"] = self.kv_blocks
        if timeline:
            s = self.schedule
            out["timeline"] = {
                "request": s.request,
                "slot": s.slot,
                "start_step": s.start,
                "decode_step": s.decode_start,
                "end_step": s.end,
            }
        return _plain(out)

    def _cdf(self) -> dict[str, Any]:
        cdf: dict[str, Any] = {"quantiles": CDF_QUANTILES}
        for unit, table in (("steps", self.latency.steps), ("seconds", self.latency.seconds)):
            if table is None:
                continue
            for name in ("ttft", "e2e"):
                values = table[name][np.isfinite(table[name])]
                cdf[f"{name}_{unit}"] = np.quantile(values, CDF_QUANTILES)
        return cdf


def makespan_record(steps: int, seconds: float | None) -> dict[str, Any]:
    """A run's makespan as results.json records it: every key from the one pair of numbers.

    The keys are the ones the built days' results already carry (``steps``, ``makespan_steps``,
    ``makespan_seconds`` and ``makespan: {steps, seconds}``; readers and charts of each exist),
    so their bytes stay; written here alone, the spellings cannot disagree.
    """
    return {
        "steps": steps,
        "makespan_steps": steps,
        "makespan_seconds": seconds,
        "makespan": {"steps": steps, "seconds": seconds},
    }


@dataclass(frozen=True, eq=False)
class Priced:
    """What a run's clock says of it: the latencies, and when each bin of the series begins
    (the makespan last; None untimed). Priced apart from the other metrics, and the clock asked
    everything at once (engine.batching.clock.asked), so that at a million requests no whole
    clock (a hundred MiB) is alive while they are counted."""

    latency: Latencies
    at_bounds: np.ndarray | None


def bin_bounds(schedule: Schedule) -> np.ndarray:
    """The series' bins' left edges, then the makespan."""
    return np.append(binned(schedule.makespan), schedule.makespan)


def price(
    schedule: Schedule,
    output: np.ndarray,
    eligible: np.ndarray | None,
    arrival: np.ndarray,
    step_time: StepTime | None,
    bounds: np.ndarray,
) -> Priced:
    """The clock's part of a run's metrics, the series' bins' `bounds` (bin_bounds) priced too.
    `eligible` is the first step each request could join; None when the step time depends on
    the batch and requests arrive over time, where it follows from the schedule's own clock
    (asked here with the rest)."""
    if step_time is None:
        assert eligible is not None, "an untimed run says when its requests may join"
        return Priced(Latencies(schedule, output, eligible, None), None)
    at, of = asked(
        schedule,
        step_time,
        at=(schedule.first_start, schedule.first_token + 1, schedule.finish, bounds),
        step_of=(arrival,) if eligible is None else (),
    )
    start_s, first_s, finish_s, at_bounds = at
    del at
    seconds = latencies_seconds(output, arrival, start_s, first_s, finish_s)
    joins = of[0] if eligible is None else eligible
    return Priced(Latencies(schedule, output, joins, seconds), at_bounds)


def measure(
    policy: str,
    schedule: Schedule,
    output: np.ndarray,
    arrival: np.ndarray,
    eligible: np.ndarray | None,
    step_time: StepTime | None,
    *,
    block_size: int | None = None,
    kv_info: dict[str, Any] | None = None,
) -> PolicyResult:
    """Every metric of a finished schedule; KV blocks too when `block_size` is given (paged).
    `eligible` and `step_time` are as price takes them.

    What the schedule alone gives is counted first and the clock's part (price) last: at a
    million requests each needs tens of MiB of temporaries for a moment, and the latencies that
    pricing gives (five arrays of 8 MB) stay with the result, so they are not alive while the
    counts are made."""
    steps = schedule.makespan
    slots = schedule.slots
    tokens = int(output.sum())
    bounds = bin_bounds(schedule)
    edges = bounds[:-1]
    width = np.diff(bounds)
    ended = ramp(schedule.end, None, bounds)
    busy = np.diff(ramp(schedule.emit_start, None, bounds) - ended)  # slots emitting a token
    if schedule.groups is None:  # a stay holds its slot from its start to its end
        held = np.diff(ramp(schedule.start, None, bounds) - ended)
    else:
        held = np.diff(covered(*held_intervals(schedule), bounds))
    series: dict[str, np.ndarray] = {
        "step": edges,
        "busy": np.asarray(busy, dtype=np.float64) / width,
        "held": np.asarray(held, dtype=np.float64) / width,
    }
    used = kv_usage(schedule, block_size, bounds) if block_size is not None else None
    busy_step_count = busy_steps(schedule)
    priced = price(schedule, output, eligible, arrival, step_time, bounds)
    at_bounds = priced.at_bounds
    seconds = float(at_bounds[-1]) if at_bounds is not None else None
    if at_bounds is not None:
        series["seconds"] = at_bounds[:-1]
    kv_blocks = None
    if used is not None:
        series["kv_blocks_used"] = used.bin_max
        kv_blocks = dict(kv_info or {})
        kv_blocks["peak"] = used.peak
        kv_blocks["mean"] = used.mean
    group_maxima = schedule.groups.longest if schedule.groups is not None else None
    return PolicyResult(
        policy=policy,
        slots=slots,
        requests=len(output),
        tokens=tokens,
        steps=steps,
        busy_steps=busy_step_count,
        makespan_seconds=seconds,
        utilisation=tokens / (slots * steps),
        occupancy=float(sum(held.tolist())) / (slots * steps),
        throughput_tokens_per_step=tokens / steps,
        throughput_tokens_per_second=tokens / seconds if seconds else None,
        requests_per_second=len(output) / seconds if seconds else None,
        preemptions=schedule.preemptions,
        latency=priced.latency,
        schedule=schedule,
        series=series,
        group_maxima=group_maxima,
        kv_blocks=kv_blocks,
        step_time=step_time.describe() if step_time is not None else None,
    )


def throughput_multiple(slow: PolicyResult, fast: PolicyResult) -> float:
    """How many times the throughput `fast` gets over `slow` on the same requests.

    Both serve the same tokens, so throughput ∝ 1 / duration: makespan in seconds when a step-time
    model priced the steps (steps then differ in length), the step count otherwise. The one
    definition for the posts, the charts and the simulate command.
    """
    if slow.makespan_seconds and fast.makespan_seconds:
        return slow.makespan_seconds / fast.makespan_seconds
    return slow.steps / fast.steps
