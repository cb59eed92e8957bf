"""The one place the sweep meets the simulator: a point and a workload in, a metrics dict out.

Why one function: the simulator is growing (tensor parallelism, replicas behind a router,
scheduling rules, a calibrated step time). When it does, ``evaluate`` and ``check_supported``
are re-pointed at the new API and everything else (grid, store, execution, analysis, charts)
stays as it is. ``SIMULATOR`` names the simulator's semantics: it is part of every point's key,
so bump it whenever results would change and stored results are recomputed rather than reused.

A configuration that cannot run (the model does not fit on the card, a request longer than the
KV cache) is a result, not an error: its row says ``infeasible`` and why, and the sweep goes on.
An axis value this simulator cannot express yet is an error before any work starts.

Re-pointing at the simulator with tensor parallelism, replicas and a calibrated step time: the
catalog loaders already take ``tp`` (KV blocks, and a roofline with the all-reduce cost), so the
tp refusal goes; replicas become a cluster run (route, then one engine per replica) whose
per-request latencies and makespan give the same metrics; ``calibrated:FILE`` becomes a step
time fitted to that file. ``check_supported`` lists what is still refused.

Workloads are built once per process and arrival rate (``workload_for``), not once per point:
with thousands of points per process that is the difference between generating 10,000 requests
once and a thousand times.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from engine.errors import UserError
from engine.sweep.grid import Point, parse_step_time

SIMULATOR = "batching-event-driven/1"  # bump when the simulator's results change
METRICS = (
    "status", "reason", "num_blocks", "requests", "makespan_s", "throughput_tok_s",
    "requests_per_s", "ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99", "e2e_p50", "e2e_p99",
    "preemptions",
)


def check_supported(point: Point) -> None:
    """Refuse, before any work, a point the current simulator cannot express."""
    if point.tp != 1:
        raise UserError(
            f"tp {point.tp} is not supported by this simulator yet (no all-reduce cost per layer); "
            "use tp: [1]", field="grid.tp",
        )
    if point.step_time.startswith("calibrated:"):
        raise UserError(
            f"step_time {point.step_time!r} is not supported by this simulator yet (no calibrated "
            "step time); use roofline, unit or measured:FILE", field="grid.step_time",
        )
    if point.replicas != 1:
        raise UserError(
            f"replicas {point.replicas} is not supported by this simulator yet (one engine, no "
            "router); use replicas: [1]", field="grid.replicas",
        )


def evaluate(point: Point, workload_doc: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Simulate one point: paged (vLLM-style) batching of the workload on the point's engine."""
    from engine import batching

    load = workload_for(workload_doc, point.arrival_rate)
    step_time = _step_time(point, options)  # a bad file is the user's error, not the point's
    try:
        blocks = _num_blocks(point.model, point.gpu, options["block_size"], point.kv_dtype, point.tp,
                             options["gpu_memory_utilization"])
        policy = batching.PagedPolicy(
            num_blocks=blocks,
            block_size=options["block_size"],
            max_num_seqs=point.max_num_seqs,
            max_num_batched_tokens=point.max_num_batched_tokens,
            chunked_prefill=options["chunked_prefill"],
        )
        result = batching.simulate(load, policy, slots=point.max_num_seqs, step_time=step_time)
    except UserError as err:
        return _infeasible(err.line())
    lat = result.latency.seconds
    assert lat is not None  # every sweep step-time model prices steps in seconds
    out: dict[str, Any] = {
        "status": "ok",
        "reason": "",
        "num_blocks": blocks,
        "requests": result.requests,
        "makespan_s": result.makespan_seconds,
        "throughput_tok_s": result.throughput_tokens_per_second,
        "requests_per_s": result.requests_per_second,
        "preemptions": result.preemptions,
    }
    for name in ("ttft", "tpot", "e2e"):
        p50, p99 = _quantiles(lat[name])
        out[f"{name}_p50"], out[f"{name}_p99"] = p50, p99
    return out


def _infeasible(reason: str) -> dict[str, Any]:
    out: dict[str, Any] = {name: None for name in METRICS}
    out.update(status="infeasible", reason=reason)
    return out


def _quantiles(values: np.ndarray) -> tuple[float | None, float | None]:
    finite = values[np.isfinite(values)]
    if len(finite) == 0:  # e.g. TPOT when every request emits one token
        return None, None
    p50, p99 = np.percentile(finite, [50, 99])
    return float(p50), float(p99)


def _step_time(point: Point, options: dict[str, Any]) -> Any:
    from engine import batching

    kind, rest = parse_step_time(point.step_time)
    if kind == "unit":
        return batching.UnitStepTime(float(rest) if rest else 0.02)
    if kind == "roofline":
        return _roofline(point.model, point.gpu, point.kv_dtype, point.tp)
    return measured_step_time(str(Path(options["base_dir"]) / rest), options["files"][point.step_time])


# Catalog look-ups repeat across thousands of points: once per process each.
@lru_cache(maxsize=1024)
def _num_blocks(model: str, gpu: str, block_size: int, kv_dtype: str, tp: int, utilisation: float) -> int:
    from engine.batching.loaders import num_blocks_from_catalog

    return num_blocks_from_catalog(model, gpu, block_size, kv_dtype, tp, utilisation)


@lru_cache(maxsize=1024)
def _roofline(model: str, gpu: str, kv_dtype: str, tp: int) -> Any:
    from engine import batching

    return batching.roofline_from_catalog(model, gpu, kv_dtype=kv_dtype, tp=tp)


@lru_cache(maxsize=8)
def measured_step_time(path: str, sha256: str) -> Any:
    """A measured step time from a benchmark file, fitted once per process and file content
    (the hash is the cache's key: a file re-measured in place is read again)."""
    from engine.batching.loaders import load_measured_step_time

    return load_measured_step_time(path)


# ---- the workload, once per process ---------------------------------------------------------

_WORKLOADS: dict[tuple[str, float | None], Any] = {}


def workload_for(doc: dict[str, Any], rate: float | None) -> Any:
    """The workload of `doc` (see ``workload_doc``) at arrival `rate`, built once per process."""
    import json

    key = (json.dumps(doc, sort_keys=True), rate)
    if key not in _WORKLOADS:
        _WORKLOADS[key] = _build(doc, rate)
    return _WORKLOADS[key]


def _build(doc: dict[str, Any], rate: float | None) -> Any:
    from pydantic import TypeAdapter

    from engine import workload as wl

    spec = TypeAdapter(wl.WorkloadSpec).validate_python(doc["spec"])
    if rate is not None:
        assert isinstance(spec, wl.GeneratedWorkload)  # the grid refuses rates for traces
        spec = spec.model_copy(update={"arrivals": with_rate(spec.arrivals, rate)})
    return wl.build_workload(spec, Path(doc["base_dir"]))


def with_rate(arrivals: Any, rate: float) -> Any:
    """The same arrival process at another mean rate: a gamma keeps its burstiness (cv); all at
    zero becomes Poisson, the usual model of independent users."""
    from engine import workload as wl

    if isinstance(arrivals, wl.Gamma):
        return wl.Gamma(rate=rate, cv=arrivals.cv)
    return wl.Poisson(rate=rate)


def workload_doc(spec: Any, base_dir: Path) -> dict[str, Any]:
    """A plain, picklable description of the workload for worker processes and Ray tasks."""
    return {"spec": spec.model_dump(mode="json"), "base_dir": str(base_dir)}


def workload_fingerprint(spec: Any, base_dir: Path) -> dict[str, Any]:
    """What the workload's results depend on: the spec, and a trace's bytes (not its path)."""
    import hashlib

    doc: dict[str, Any] = {"spec": spec.model_dump(mode="json")}
    trace = getattr(spec, "trace", None)
    if trace is not None:
        path = Path(trace) if Path(trace).is_absolute() else Path(base_dir) / trace
        try:
            doc["trace_sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as exc:
            raise UserError(f"cannot read {path}: {exc.strerror}", field="workload.trace") from None
        doc["spec"] = {"trace": path.name}
    return doc

