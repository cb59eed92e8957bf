"""What a run is worth: throughput, utilisation, latency, memory, and a timeline to draw.

Definitions, kept from the lab so its figures reproduce:
- utilisation = tokens generated / (slots × steps): the share of slot-steps that produced a
  token ("GPU busy"). Steps run from the clock's start to the last token, idle steps included,
  and the denominator counts every slot even while a last, partial static group runs.
- occupancy = slot-steps held / (slots × steps): held includes prefill steps and, for static
  batching, the steps a finished request keeps its slot until its group ends.
- Latencies per request, from arrival: queueing (until it first gets a slot), TTFT (until its
  first token is out, i.e. the end of that step), end-to-end (until its last token), TPOT (the
  mean gap between later tokens). In steps they count from the first step it could have joined;
  in seconds from its arrival time.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.batching.clock import Clock
from engine.batching.schedule import Schedule

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
    """Per-request latencies (arrays aligned with the workload); seconds are None untimed."""

    steps: dict[str, np.ndarray]
    seconds: dict[str, np.ndarray] | None


def latencies(
    schedule: Schedule, output: np.ndarray, eligible: np.ndarray, arrival: np.ndarray, clock: Clock | None
) -> Latencies:
    later = np.where(output > 1, output - 1, np.nan)
    first_out = schedule.first_token + 1  # the first token is out when its step ends
    steps = {
        "queueing": (schedule.first_start - eligible).astype(np.float64),
        "ttft": (first_out - eligible).astype(np.float64),
        "tpot": (schedule.finish - first_out) / later,
        "e2e": (schedule.finish - eligible).astype(np.float64),
    }
    if clock is None:
        return Latencies(steps, None)
    start_s, first_s, finish_s = (clock.at(x) for x in (schedule.first_start, first_out, schedule.finish))
    seconds = {
        "queueing": start_s - arrival,
        "ttft": first_s - arrival,
        "tpot": (finish_s - first_s) / later,
        "e2e": finish_s - arrival,
    }
    return Latencies(steps, seconds)


def per_step(schedule: Schedule) -> tuple[np.ndarray, np.ndarray]:
    """(slots emitting a token, slots held) at every step."""
    horizon = schedule.makespan
    busy = np.cumsum(
        np.bincount(schedule.decode_start, minlength=horizon + 1)
        - np.bincount(schedule.end, minlength=horizon + 1)
    )[:horizon]
    if schedule.groups is not None:
        g = schedule.groups
        held_from, held_to, weight = g["start"], g["end"], g["size"]
    else:
        held_from, held_to, weight = schedule.start, schedule.end, np.ones(len(schedule.start))
    held = np.cumsum(
        np.bincount(held_from, weights=weight, minlength=horizon + 1)
        - np.bincount(held_to, weights=weight, minlength=horizon + 1)
    )[:horizon]
    return busy, np.rint(held).astype(np.int64)


def binned(horizon: int, points: int = SERIES_POINTS) -> np.ndarray:
    """Left edges of at most `points` equal bins over [0, horizon)."""
    count = max(1, min(points, horizon))
    return np.unique(np.linspace(0, horizon, count + 1).astype(np.int64)[:-1])


@dataclass(frozen=True, eq=False)
class PolicyResult:
    """One policy's run: the headline numbers as fields, the rest ready for results.json."""

    policy: str
    slots: int
    requests: int
    tokens: int
    steps: int  # makespan in steps (idle steps included)
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

    @property
    def makespan_steps(self) -> int:
        return self.steps

    def to_dict(self, timeline: bool = True) -> dict[str, Any]:
        """Plain JSON types only. `timeline=False` drops the per-request arrays (big runs)."""
        lat = self.latency
        out: dict[str, Any] = {
            "policy": self.policy,
            "slots": self.slots,
            "requests": self.requests,
            "tokens": self.tokens,
            "steps": self.steps,
            "makespan_steps": self.steps,
            "busy_steps": self.busy_steps,
            "makespan_seconds": self.makespan_seconds,
            "makespan": {"steps": self.steps, "seconds": self.makespan_seconds},
            "utilisation": self.utilisation,
            "occupancy": self.occupancy,
            "throughput_tokens_per_step": self.throughput_tokens_per_step,
            "throughput_tokens_per_second": self.throughput_tokens_per_second,
            "requests_per_second": self.requests_per_second,
            "preemptions": self.preemptions,
            "latency": {
                "steps": {k: percentiles(v) for k, v in lat.steps.items()},
                "seconds": None if lat.seconds is None
                else {k: percentiles(v) for k, v in lat.seconds.items()},
            },
            "latency_cdf": self._cdf(),
            "series": self.series,
            "step_time": self.step_time,
        }
        if self.group_maxima is not None:
            g = self.schedule.groups or {}
            out["group_maxima"] = self.group_maxima
            out["groups"] = {"start_step": g["start"], "end_step": g["end"], "size": g["size"]}
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


def measure(
    policy: str,
    schedule: Schedule,
    output: np.ndarray,
    eligible: np.ndarray,
    arrival: np.ndarray,
    clock: Clock | None,
    *,
    kv_per_step: np.ndarray | None = None,
    kv_info: dict[str, Any] | None = None,
    step_time: dict[str, Any] | None = None,
) -> PolicyResult:
    """Every metric of a finished schedule."""
    steps = schedule.makespan
    slots = schedule.slots
    tokens = int(output.sum())
    busy, held = per_step(schedule)
    prefill = np.bincount(schedule.chunk_step, minlength=steps)[:steps]
    seconds = float(clock.at(np.array([steps]))[0]) if clock is not None else None
    edges = binned(steps)
    width = np.diff(np.append(edges, steps))
    series: dict[str, np.ndarray] = {
        "step": edges,
        "busy": np.add.reduceat(busy, edges) / width,
        "held": np.add.reduceat(held, edges) / width,
    }
    if clock is not None:
        series["seconds"] = clock.at(edges)
    kv_blocks = None
    if kv_per_step is not None:
        series["kv_blocks_used"] = np.maximum.reduceat(kv_per_step, edges)
        kv_blocks = dict(kv_info or {})
        kv_blocks["peak"] = int(kv_per_step.max())
        kv_blocks["mean"] = float(kv_per_step.mean())
    group_maxima = schedule.groups["longest"] if schedule.groups is not None else None
    return PolicyResult(
        policy=policy,
        slots=slots,
        requests=len(output),
        tokens=tokens,
        steps=steps,
        busy_steps=int(np.count_nonzero((busy > 0) | (prefill > 0))),
        makespan_seconds=seconds,
        utilisation=tokens / (slots * steps),
        occupancy=float(held.sum()) / (slots * steps),
        throughput_tokens_per_step=tokens / steps,
        throughput_tokens_per_second=tokens / seconds if seconds else None,
        requests_per_second=len(output) / seconds if seconds else None,
        preemptions=schedule.preemptions,
        latency=latencies(schedule, output, eligible, arrival, clock),
        schedule=schedule,
        series=series,
        group_maxima=group_maxima,
        kv_blocks=kv_blocks,
        step_time=step_time,
    )
