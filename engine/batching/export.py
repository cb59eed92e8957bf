"""Files people can open: a per-request CSV and a Chrome/Perfetto trace of the simulated timeline.

Both are written from finished runs (a PolicyResult, or each replica's), never during one, and
both are size-capped so a million-request run cannot fill a disk by accident: the CSV at
MAX_CSV_ROWS rows, the trace at MAX_TRACE_STAYS slot stays (two events each). A run over the
cap is refused with one line naming the flag, before anything is written; a file is written
whole to a temporary name first, so a failure never leaves half a file in the person's folder.

Times are seconds when the run had a step-time model, else steps. In the trace a stay is one
bar per slot (thread) per engine (process: the policy, and the replica when there are several):
its prefill, then its decode; Perfetto (ui.perfetto.dev) and chrome://tracing open it.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.batching.clock import asked
from engine.errors import UserError
from engine.outdir import atomic

MAX_CSV_ROWS = 1_000_000
MAX_TRACE_STAYS = 200_000


@dataclass(frozen=True)
class Run:
    """One engine's run: which policy, which replica, its result, and which of the workload's
    requests it served (their indices, in its own order)."""

    policy: str
    replica: int | None
    result: Any  # PolicyResult
    requests: np.ndarray
    arrival: np.ndarray  # seconds, aligned with `requests`
    step_time: Any


def _times(run: Run, *steps: np.ndarray) -> list[np.ndarray]:
    """When each of `steps` begins: seconds by the run's clock, asked once for them all (a
    window of steps at a time, engine.batching.clock.asked, so a run of a million requests
    builds no whole clock), or the steps themselves as floats when the run is untimed."""
    if run.step_time is None:
        return [np.asarray(a, dtype=np.float64) for a in steps]
    return asked(run.result.schedule, run.step_time, at=steps)[0]


def preemptions_per_request(schedule: Any, n: int) -> np.ndarray:
    """Times each request was evicted: a stay that ended before its request finished and was not
    followed in the same step by the next (a prefill-first pause continues at once; a preempted
    request is re-admitted a step later at the earliest)."""
    order = np.lexsort((schedule.start, schedule.request))
    req, start, end = schedule.request[order], schedule.start[order], schedule.end[order]
    same = req[1:] == req[:-1]
    evicted = same & (start[1:] > end[:-1])
    return np.bincount(req[:-1][evicted], minlength=n).astype(np.int64)


EXISTS = "already exists; pass --force to overwrite it"


def check_target(path: str | Path, *, force: bool, flag: str) -> None:
    """What writing ``path`` would refuse, refused before the run: a link, device, FIFO or
    folder there, or (without ``force``) a file the person already has."""
    atomic.check_target(path, what=flag, existing=None if force else EXISTS, field=flag)


def write_requests_csv(
    path: str | Path, runs: Iterable[Run], flag: str = "--requests-csv", *, force: bool = True
) -> int:
    """One row per request per policy: when it arrived, was first scheduled, emitted its first
    token, finished; how often it was preempted (each preemption is one restart: recompute)."""
    runs = list(runs)
    rows = sum(len(r.requests) for r in runs)
    if rows > MAX_CSV_ROWS:
        raise UserError(
            f"{rows:,} rows (requests × policies) is over the cap of {MAX_CSV_ROWS:,}", field=flag
        )
    unit = "s" if all(r.step_time is not None for r in runs) else "step"

    existing = None if force else EXISTS
    with atomic.replacing(path, what=flag, newline="", existing=existing, field=flag) as f:
        out = csv.writer(f)
        out.writerow(
            [
                "policy",
                "replica",
                "request",
                f"arrival_{unit}",
                f"scheduled_{unit}",
                f"first_token_{unit}",
                f"finish_{unit}",
                "preemptions",
                "restarts",
            ]
        )
        for run in runs:
            s = run.result.schedule
            n = len(run.requests)
            # the first token is out when its step ends
            scheduled, first, finish = _times(run, s.first_start, s.first_token + 1, s.finish)
            arrival = run.arrival if unit == "s" else run.result.latency.eligible
            evicted = preemptions_per_request(s, n)
            for i in range(n):
                out.writerow(
                    [
                        run.policy,
                        "" if run.replica is None else run.replica,
                        int(run.requests[i]),
                        _fmt(arrival[i]),
                        _fmt(scheduled[i]),
                        _fmt(first[i]),
                        _fmt(finish[i]),
                        int(evicted[i]),
                        int(evicted[i]),
                    ]
                )

    return rows


def _fmt(value: float) -> str:
    return f"{float(value):.9g}"


def write_trace(path: str | Path, runs: Iterable[Run], flag: str = "--trace", *, force: bool = True) -> int:
    """Chrome trace-event JSON: a process per engine, a thread per slot, a bar per stay."""
    runs = list(runs)
    stays = sum(len(r.result.schedule.request) for r in runs)
    if stays > MAX_TRACE_STAYS:
        raise UserError(
            f"{stays:,} slot stays is over the trace's cap of {MAX_TRACE_STAYS:,}; trace fewer requests",
            field=flag,
        )
    timed = all(r.step_time is not None for r in runs)
    scale = 1e6 if timed else 1e3  # microseconds; untimed, one step is drawn as one millisecond
    events: list[dict[str, Any]] = []
    for pid, run in enumerate(runs, start=1):
        s = run.result.schedule
        label = run.policy if run.replica is None else f"{run.policy}, replica {run.replica}"
        events.append({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": label}})
        for slot in np.unique(s.slot).tolist():
            events.append(
                {
                    "ph": "M",
                    "pid": pid,
                    "tid": int(slot),
                    "name": "thread_name",
                    "args": {"name": f"slot {slot}"},
                }
            )
        start, decode, end = (t * scale for t in _times(run, s.start, s.decode_start, s.end))
        for k in range(len(s.request)):
            request = int(run.requests[int(s.request[k])])
            for name, lo, hi in (("prefill", start[k], decode[k]), ("decode", decode[k], end[k])):
                if hi > lo:
                    events.append(
                        {
                            "ph": "X",
                            "pid": pid,
                            "tid": int(s.slot[k]),
                            "name": f"{name} {request}",
                            "cat": name,
                            "ts": round(float(lo), 3),
                            "dur": round(float(hi - lo), 3),
                            "args": {"request": request},
                        }
                    )
    doc = {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {"time": "simulated seconds" if timed else "steps, one drawn as 1 ms"},
    }

    existing = None if force else EXISTS
    atomic.write_text(path, json.dumps(doc, separators=(",", ":")), what=flag, existing=existing, field=flag)
    return stays
