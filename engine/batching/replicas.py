"""Replicas behind a router: N copies of one engine, each with its own scheduler and KV pool.

Every replica runs the batching policy on the requests it was given, exactly as a single
engine (engine.batching.simulate). The routers differ in when and how they choose:

- ``round_robin``: request i goes to replica i mod N, as it arrives;
- ``random``: each request to a replica drawn uniformly (seeded, so the same seed gives the
  same split);
- ``least_outstanding``: as it arrives, to the replica with the fewest requests sent and not yet
  finished at that moment, which needs the replicas run side by side (engine.batching.cosim);
- ``shared_queue``: one first-come-first-served queue in front of all of them; a request is
  bound to a replica only when that replica's own scheduler can admit it (a free slot, the
  token budget and the KV blocks for its first step), so nobody waits behind a long request on
  one replica while another has room: Day 4's "one shared line beats separate lines" at
  cluster scale (engine.batching.shared). One replica behind it is exactly one engine.

The first two are decided from the arrival order alone, so the replicas are independent runs.
The last two look at the replicas' state, so they run paged engines (paged, prefill-first, and
continuous as paged with unlimited blocks) side by side and need a step-time model; static
batching is refused by them (engine.batching.cosim.paged_engine says why).

Metrics: each replica's own PolicyResult, and the cluster's: per-request latencies in the
workload's order, the makespan of the slowest replica, throughput over it, preemptions summed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.batching import registry, simulate
from engine.batching.cosim import least_outstanding
from engine.batching.shared import shared_queue
from engine.errors import UserError
from engine.workload import Workload

ROUTERS = ("round_robin", "random", "least_outstanding", "shared_queue")
MAX_REPLICAS = 4096


def route(workload: Workload, replicas: int, router: str, seed: int = 0) -> np.ndarray:
    """The replica of every request (int64, workload order)."""
    if router == "round_robin":
        return np.arange(workload.n, dtype=np.int64) % replicas
    if router == "random":
        return np.random.default_rng(seed).integers(0, replicas, size=workload.n).astype(np.int64)
    raise UserError(f"unknown router {router!r}; choose from {', '.join(ROUTERS)}", field="router")


@dataclass(frozen=True, eq=False)
class ClusterResult:
    router: str
    replica_of: np.ndarray  # per request
    replicas: list[Any]  # PolicyResult per replica; None for a replica that got no request
    latency_seconds: dict[str, np.ndarray] | None  # per request, workload order
    latency_steps: dict[str, np.ndarray]  # per request, in its replica's steps
    makespan_seconds: float | None
    tokens: int
    requests: int
    preemptions: int

    def to_dict(self) -> dict[str, Any]:
        def quantiles(values: np.ndarray) -> dict[str, float]:
            finite = values[np.isfinite(values)]
            if len(finite) == 0:
                return {}
            p50, p90, p99 = np.percentile(finite, [50, 90, 99])
            return {"p50": float(p50), "p90": float(p90), "p99": float(p99), "mean": float(finite.mean())}

        lat = self.latency_seconds if self.latency_seconds is not None else self.latency_steps
        seconds = self.makespan_seconds
        return {
            "router": self.router,
            "replicas": len(self.replicas),
            "requests": self.requests,
            "tokens": self.tokens,
            "preemptions": self.preemptions,
            "makespan_seconds": seconds,
            "tokens_per_second": self.tokens / seconds if seconds else None,
            "requests_per_second": self.requests / seconds if seconds else None,
            "latency_unit": "seconds" if self.latency_seconds is not None else "steps",
            "latency": {name: quantiles(v) for name, v in sorted(lat.items())},
            "per_replica": [
                None if r is None else {"requests": r.requests, **r.to_dict(timeline=False)}
                for r in self.replicas
            ],
        }


def simulate_replicas(
    workload: Workload,
    policy: Any,
    *,
    slots: int,
    step_time: Any = None,
    replicas: int,
    router: str = "round_robin",
    seed: int = 0,
) -> ClusterResult:
    """Route, then run each replica as one engine (see the module docstring)."""
    if not 1 <= replicas <= MAX_REPLICAS:
        raise UserError(f"must be between 1 and {MAX_REPLICAS}, got {replicas}", field="replicas")

    registry.kind(policy.name)
    if router == "least_outstanding":
        replica_of, side_by_side = least_outstanding(workload, policy, slots, step_time, replicas)
    elif router == "shared_queue":
        replica_of, side_by_side = shared_queue(workload, policy, slots, step_time, replicas)
    else:
        replica_of, side_by_side = route(workload, replicas, router, seed), None
    results: list[Any] = []
    n = workload.n
    lat_s: dict[str, np.ndarray] | None = None
    lat_steps: dict[str, np.ndarray] = {}
    for j in range(replicas):
        mine = np.flatnonzero(replica_of == j)
        if len(mine) == 0:
            results.append(None)
            continue
        if side_by_side is not None:
            r = side_by_side[j]
        else:
            part = Workload.of(
                workload.output_tokens[mine],
                workload.prompt_tokens[mine],
                workload.arrival_time[mine],
                source=f"{workload.source}, replica {j}",
            )
            r = simulate(part, policy, slots=slots, step_time=step_time)
        results.append(r)
        for name, values in r.latency.steps.items():
            lat_steps.setdefault(name, np.full(n, np.nan))[mine] = values
        if r.latency.seconds is not None:
            if lat_s is None:
                lat_s = {}
            for name, values in r.latency.seconds.items():
                lat_s.setdefault(name, np.full(n, np.nan))[mine] = values
    ran = [r for r in results if r is not None]
    spans = [r.makespan_seconds for r in ran]
    return ClusterResult(
        router=router,
        replica_of=replica_of,
        replicas=results,
        latency_seconds=lat_s,
        latency_steps=lat_steps,
        makespan_seconds=max(spans) if all(s is not None for s in spans) else None,
        tokens=int(workload.output_tokens.sum()),
        requests=n,
        preemptions=sum(r.preemptions for r in ran),
    )
