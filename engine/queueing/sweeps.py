"""The Day 4 sweeps: the M/M/1 hockey stick, and one shared line against separate lines.

Each function draws its randomness once from `seed` and reuses it for every row (common random
numbers, see traffic.py), simulates, and returns Rows that carry their closed form alongside.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.queueing import expected
from engine.queueing.simulate import (
    round_robin_lines,
    separate_lines_starts,
    shared_line_starts,
    single_server_starts,
)
from engine.queueing.summary import WARMUP_FRACTION, Row, summarise
from engine.queueing.traffic import ServiceLaw, draw

POLICIES = ("shared", "separate_random", "separate_round_robin")
RATIO_STATS = ("mean_wait", "p99_wait", "mean_sojourn", "p99_sojourn")


def mm1_sweep(
    utilisations: Sequence[float],
    service_mean: float,
    requests: int,
    seed: int,
    service: str = "exponential",
    service_cv: float | None = None,
    warmup_fraction: float = WARMUP_FRACTION,
) -> list[Row]:
    """One server at each utilisation ρ (arrival rate ρ/S), same requests in every row."""
    law = ServiceLaw.of(service, service_cv)
    draws = draw(requests, seed, law)
    services = draws.services(service_mean)
    rows = []
    for rho in utilisations:
        rate = rho / service_mean
        arrivals = draws.arrivals(rate)
        rows.append(
            summarise(
                policy="single",
                arrivals=arrivals,
                services=services,
                starts=single_server_starts(arrivals, services),
                servers=1,
                arrival_rate=rate,
                service_mean=service_mean,
                service=law.kind,
                service_cv=law.cv,
                warmup_fraction=warmup_fraction,
                expected=expected.single_server(rate, service_mean, law),
                utilisation=rho,
            )
        )
    return rows


def shared_sweep(
    servers: Sequence[int],
    arrival_rate: float,
    service_mean: float,
    requests: int,
    seed: int,
    service: str = "exponential",
    service_cv: float | None = None,
    warmup_fraction: float = WARMUP_FRACTION,
) -> list[Row]:
    """One shared line for each c in `servers`, at a fixed arrival rate (the lab's M/M/c table)."""
    law = ServiceLaw.of(service, service_cv)
    draws = draw(requests, seed, law)
    arrivals, services = draws.arrivals(arrival_rate), draws.services(service_mean)
    return [
        _row(
            "shared",
            c,
            arrivals,
            services,
            arrival_rate,
            service_mean,
            law,
            warmup_fraction,
            shared_line_starts(arrivals, services, c),
        )
        for c in servers
    ]


def compare_lines(
    servers: int,
    arrival_rate: float,
    service_mean: float,
    requests: int,
    seed: int,
    service: str = "exponential",
    service_cv: float | None = None,
    warmup_fraction: float = WARMUP_FRACTION,
) -> dict:
    """The same requests through one shared line and through `servers` separate lines.

    Returns {"shared": Row, "separate_random": Row, "separate_round_robin": Row,
    "ratios": {"separate_random": {"mean_wait": x, …}, "separate_round_robin": {…}}}, where
    each ratio is separate ÷ shared (how many times longer separate lines make people wait at
    the same load; None if the shared value is 0). Use comparison_to_dict for JSON.
    """
    law = ServiceLaw.of(service, service_cv)
    draws = draw(requests, seed, law)
    arrivals, services = draws.arrivals(arrival_rate), draws.services(service_mean)
    args = (servers, arrivals, services, arrival_rate, service_mean, law, warmup_fraction)
    rows = {
        "shared": _row("shared", *args, shared_line_starts(arrivals, services, servers)),
        "separate_random": _row(
            "separate_random",
            *args,
            separate_lines_starts(arrivals, services, draws.random_lines(servers), servers),
        ),
        "separate_round_robin": _row(
            "separate_round_robin",
            *args,
            separate_lines_starts(arrivals, services, round_robin_lines(arrivals.size, servers), servers),
        ),
    }
    shared = rows["shared"]
    ratios = {
        policy: {stat: _ratio(getattr(rows[policy], stat), getattr(shared, stat)) for stat in RATIO_STATS}
        for policy in POLICIES[1:]
    }
    return {**rows, "ratios": ratios}


def comparison_to_dict(comparison: dict) -> dict:
    """compare_lines' result with every Row turned into plain JSON types (times in ms)."""
    out = {policy: comparison[policy].to_dict() for policy in POLICIES}
    out["ratios"] = comparison["ratios"]
    return out


_EXPECTED = {
    "shared": expected.shared_line,
    "separate_random": expected.separate_random,
    "separate_round_robin": expected.separate_round_robin,
}


def _row(
    policy: str,
    servers: int,
    arrivals: np.ndarray,
    services: np.ndarray,
    arrival_rate: float,
    service_mean: float,
    law: ServiceLaw,
    warmup: float,
    starts: np.ndarray,
) -> Row:
    return summarise(
        policy=policy,
        arrivals=arrivals,
        services=services,
        starts=starts,
        servers=servers,
        arrival_rate=arrival_rate,
        service_mean=service_mean,
        service=law.kind,
        service_cv=law.cv,
        warmup_fraction=warmup,
        expected=_EXPECTED[policy](servers, arrival_rate, service_mean, law),
    )


def _ratio(numerator: float, denominator: float) -> float | None:
    return None if denominator == 0.0 else float(numerator / denominator)
