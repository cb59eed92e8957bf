"""The one place the sweep meets the simulator: a point and a workload in, a metrics dict out.

Why one function: the simulator grows (scheduling rules, step-time models, routers). When it
does, ``evaluate`` and ``check_supported`` follow it and everything else (grid, store,
execution, analysis, charts) stays as it is. ``SIMULATOR`` names the simulator's semantics: it
is part of every point's key, so bump it whenever results would change and stored results are
recomputed rather than reused.

How a point becomes a simulation (engine.batching):
- the engine is the paged (vLLM V1) policy from the registry, its KV blocks what vLLM would
  allocate for the model on one GPU of the point (``num_blocks_from_catalog`` with ``tp``:
  weights and KV heads split over the tensor-parallel group);
- the step time: ``roofline`` is each GPU's share of the bytes and FLOPs plus the all-reduces
  (``roofline_from_catalog`` with ``tp``); ``calibrated:FILE`` is that roofline fitted to the
  file's steps, which the bench measures on one GPU: the fit is made at tp 1 and its efficiencies
  and per-layer kernel cost carry over to the point's tp (the measured steps are not re-fitted to
  a split model, which would fold the split into the efficiencies); ``measured:FILE`` prices
  every step as measured, so it is refused for tp > 1; ``unit:S`` is a constant step;
- ``replicas`` > 1 is a cluster (``simulate_replicas``): the router sends each request to one
  copy of the engine, and the metrics are the cluster's (per-request latencies over every
  replica, the slowest replica's makespan). One replica is one engine, whatever the router.
  The random router draws with the workload's seed (0 for a trace), so a table is reproducible.

A configuration that cannot run (the model does not fit on the card, a request longer than the
KV cache, a tp that does not divide the attention heads) is a result, not an error: its row says
``infeasible`` and why, and the sweep goes on. An axis value this simulator cannot express is an
error before any work starts (``check_supported``).

Workloads are built once per process and arrival rate (``workload_for``), not once per point:
with thousands of points per process that is the difference between generating 10,000 requests
once and a thousand times.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import TypeAdapter

from engine import batching
from engine import workload as wl
from engine.batching.calibrated import CalibratedStepTime, calibrate_from_catalog
from engine.batching.loaders import load_measured_step_time, num_blocks_from_catalog
from engine.batching.replicas import MAX_REPLICAS, ROUTERS, simulate_replicas
from engine.catalog import is_model_path
from engine.errors import UserError
from engine.limits import MAX_TRACE_BYTES, sha256_limited
from engine.sweep.grid import Point, parse_step_time

SIMULATOR = "batching-event-driven/3"  # bump when the simulator's results change (3: vLLM 0.33.0 rules)
METRICS = (
    "status",
    "reason",
    "num_blocks",
    "requests",
    "makespan_s",
    "throughput_tok_s",
    "requests_per_s",
    "ttft_p50",
    "ttft_p99",
    "tpot_p50",
    "tpot_p99",
    "e2e_p50",
    "e2e_p99",
    "preemptions",
)


def scheduler() -> str:
    """The vLLM scheduler every point reproduces, as results and posts name it: the paged
    policy's rules as simulate_point builds it (the settings' defaults, vLLM's as shipped)."""
    policy = batching.registry.build("paged", batching.PolicySettings())
    assert isinstance(policy, batching.PagedPolicy)
    return policy.reproduces


def check_supported(point: Point) -> None:
    """Refuse, before any work, a point the current simulator cannot express."""
    if point.router not in ROUTERS:
        raise UserError(
            f"router {point.router!r} is not supported by this simulator; use {', '.join(ROUTERS)}",
            field="grid.router",
        )
    if point.replicas > MAX_REPLICAS:
        raise UserError(f"replicas {point.replicas}: at most {MAX_REPLICAS}", field="grid.replicas")
    if point.tp != 1 and point.step_time.startswith("measured:"):
        raise UserError(
            f"step_time {point.step_time!r} prices steps as measured on one GPU, so it cannot speak "
            f"for tp {point.tp}; use calibrated:FILE (the same file fitted to the roofline, then "
            "split over the GPUs) or roofline",
            field="grid.step_time",
        )


def simulated(point: Point) -> Point:
    """The point as the simulator sees it: with one replica the router sends every request to
    it, so the router is dropped (one key for every router: the run is made once)."""
    return replace(point, router="round_robin") if point.replicas == 1 else point


COUNTED = ("num_blocks", "requests", "preemptions")  # whole numbers among METRICS


def is_metrics(value: Any) -> bool:
    """Whether stored metrics have the shape ``evaluate`` gives them. The results file is the
    person's and may be edited by hand: metrics of any other shape are computed again, never read
    into the table, where a missing or mistyped column would stop the analysis with a traceback."""
    if not isinstance(value, dict) or set(value) != set(METRICS):
        return False
    if value["status"] not in ("ok", "infeasible") or not isinstance(value["reason"], str):
        return False
    for name in METRICS:
        v = value[name]
        if name in ("status", "reason"):
            continue
        kinds = int if name in COUNTED else (int, float)
        if v is not None and (isinstance(v, bool) or not isinstance(v, kinds) or not 0 <= v < math.inf):
            return False
    return True


def evaluate(point: Point, workload_doc: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Simulate one point: paged (vLLM-style) batching of the workload on the point's engine(s)."""
    load = workload_for(workload_doc, point.arrival_rate)
    try:
        step_time = _step_time(point, options)
        blocks = _num_blocks(
            model_source(point.model, options["base_dir"]),
            _model_hash(point, options),
            point.gpu,
            options["block_size"],
            point.kv_dtype,
            point.tp,
            options["gpu_memory_utilization"],
        )
        policy = batching.registry.build(
            "paged",
            batching.PolicySettings(
                num_blocks=blocks,
                block_size=options["block_size"],
                max_num_seqs=point.max_num_seqs,
                max_num_batched_tokens=point.max_num_batched_tokens,
                chunked_prefill=options["chunked_prefill"],
            ),
        )
        if point.replicas == 1:
            one = batching.simulate(load, policy, slots=point.max_num_seqs, step_time=step_time)
            lat, requests, makespan = one.latency.seconds, one.requests, one.makespan_seconds
            preemptions = one.preemptions
            tok_s, req_s = one.throughput_tokens_per_second, one.requests_per_second
        else:
            cluster = simulate_replicas(
                load,
                policy,
                slots=point.max_num_seqs,
                step_time=step_time,
                replicas=point.replicas,
                router=point.router,
                seed=router_seed(workload_doc),
            )
            lat, requests, makespan = cluster.latency_seconds, cluster.requests, cluster.makespan_seconds
            preemptions = cluster.preemptions
            # the cluster's throughput: every replica's tokens over the slowest one's makespan
            tok_s = cluster.tokens / makespan if makespan else None
            req_s = requests / makespan if makespan else None
    except UserError as err:
        if err.file is not None:  # a step-time file that stopped reading: the user's, not the point's
            raise
        return _infeasible(err.line())
    assert lat is not None  # every sweep step-time model prices steps in seconds
    out: dict[str, Any] = {
        "status": "ok",
        "reason": "",
        "num_blocks": blocks,
        "requests": requests,
        "makespan_s": makespan,
        "throughput_tok_s": tok_s,
        "requests_per_s": req_s,
        "preemptions": preemptions,
    }
    for name in ("ttft", "tpot", "e2e"):
        p50, p99 = _quantiles(lat[name])
        out[f"{name}_p50"], out[f"{name}_p99"] = p50, p99
    return out


def router_seed(workload_doc: dict[str, Any]) -> int:
    """The random router's seed: the workload's own (0 for a trace), so a table is reproducible."""
    seed = workload_doc["spec"].get("seed", 0)
    return int(seed) if isinstance(seed, int) else 0


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
    kind, rest = parse_step_time(point.step_time)
    if kind == "unit":
        return batching.UnitStepTime(float(rest) if rest else 0.02)
    model, model_hash = model_source(point.model, options["base_dir"]), _model_hash(point, options)
    if kind == "roofline":
        return _roofline(model, model_hash, point.gpu, point.kv_dtype, point.tp)
    path, sha256 = str(Path(options["base_dir"]) / rest), options["files"][point.step_time]
    if kind == "calibrated":
        return calibrated_step_time(path, sha256, model, model_hash, point.gpu, point.kv_dtype, point.tp)
    return measured_step_time(path, sha256)


def model_source(name: str, base_dir: str | Path) -> str:
    """What the catalog reads a grid's model from: a catalog name (or a mistyped one, for the
    catalog to name the nearest) as it is, a config.json path (or its folder) from the spec's
    folder, where the spec's check found it (SpecLocation.config), never from where the
    command runs."""
    return str(Path(base_dir) / name) if is_model_path(name, Path(base_dir)) else name


def _model_hash(point: Point, options: dict[str, Any]) -> str | None:
    """The content hash of the point's model when it is a config.json path (None: a catalog
    name): part of each look-up's cache key below, so an edited file is read again."""
    return options.get("models", {}).get(point.model)


# Catalog look-ups repeat across thousands of points: once per process each (and model file).
@lru_cache(maxsize=1024)
def _num_blocks(
    model: str, model_hash: str | None, gpu: str, block_size: int, kv_dtype: str, tp: int, utilisation: float
) -> int:
    return num_blocks_from_catalog(model, gpu, block_size, kv_dtype, tp, utilisation)


@lru_cache(maxsize=1024)
def _roofline(model: str, model_hash: str | None, gpu: str, kv_dtype: str, tp: int) -> Any:
    return batching.roofline_from_catalog(model, gpu, kv_dtype=kv_dtype, tp=tp)


@lru_cache(maxsize=256)
def calibrated_step_time(
    path: str, sha256: str, model: str, model_hash: str | None, gpu: str, kv_dtype: str, tp: int
) -> Any:
    """The roofline of the model on one GPU calibrated on the file's steps (measured on one GPU),
    its fitted efficiencies and per-layer kernel cost then carried to each GPU's share under tp
    (and the all-reduces added). Fitted once per process, file content and configuration."""
    one = calibrate_from_catalog(model, gpu, path, kv_dtype=kv_dtype, tp=1)
    if tp == 1:
        return one
    return CalibratedStepTime.from_roofline(
        _roofline(model, model_hash, gpu, kv_dtype, tp),
        one.attention_flops_per_kv_token / tp,
        one.layers,
        memory_efficiency=one.memory_efficiency,
        flops_efficiency=one.flops_efficiency,
        kernel_seconds=one.kernel_seconds,
        points=one.points,
        rmse=one.rmse,
        max_relative_error=one.max_relative_error,
    )


@lru_cache(maxsize=8)
def measured_step_time(path: str, sha256: str) -> Any:
    """A measured step time from a benchmark file, fitted once per process and file content
    (the hash is the cache's key: a file re-measured in place is read again)."""
    return load_measured_step_time(path)


# ---- the workload, once per process ---------------------------------------------------------

_WORKLOADS: dict[tuple[str, float | None], Any] = {}


def workload_for(doc: dict[str, Any], rate: float | None) -> Any:
    """The workload of `doc` (see ``workload_doc``) at arrival `rate`, built once per process."""
    key = (json.dumps(doc, sort_keys=True), rate)
    if key not in _WORKLOADS:
        _WORKLOADS[key] = _build(doc, rate)
    return _WORKLOADS[key]


def _build(doc: dict[str, Any], rate: float | None) -> Any:
    spec = TypeAdapter(wl.WorkloadSpec).validate_python(doc["spec"])
    if rate is not None:
        assert isinstance(spec, wl.GeneratedWorkload)  # the grid refuses rates for traces
        spec = spec.model_copy(update={"arrivals": with_rate(spec.arrivals, rate)})
    return wl.build_workload(spec, Path(doc["base_dir"]))


def with_rate(arrivals: Any, rate: float) -> Any:
    """The same arrival process at another mean rate: a gamma keeps its burstiness (cv); all at
    zero becomes Poisson, the usual model of independent users."""
    if isinstance(arrivals, wl.Gamma):
        return wl.Gamma(rate=rate, cv=arrivals.cv)
    return wl.Poisson(rate=rate)


def workload_doc(spec: Any, base_dir: Path) -> dict[str, Any]:
    """A plain, picklable description of the workload for worker processes and Ray tasks."""
    return {"spec": spec.model_dump(mode="json"), "base_dir": str(base_dir)}


def workload_fingerprint(spec: Any, base_dir: Path) -> dict[str, Any]:
    """What the workload's results depend on: the spec, and a trace's bytes (not its path)."""
    doc: dict[str, Any] = {"spec": spec.model_dump(mode="json")}
    trace = getattr(spec, "trace", None)
    if trace is not None:
        path = Path(trace) if Path(trace).is_absolute() else Path(base_dir) / trace
        doc["trace_sha256"] = sha256_limited(path, MAX_TRACE_BYTES, "workload", field="workload.trace")
        doc["spec"] = {"trace": path.name}
    return doc
