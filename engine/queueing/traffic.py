"""The random input of a queueing run: when requests arrive and how much work each brings.

Draws are made once per seed at unit scale (Exp(1) gaps, unit-mean work) and then scaled by
the row's arrival rate and service mean. Every row of a sweep, and every policy of a
comparison, therefore sees the same requests (common random numbers): the differences between
rows are the queue's doing, not the dice's, and the hockey-stick curve comes out monotone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.errors import UserError
from engine.limits import MAX_QUEUEING_REQUESTS

SERVICE_KINDS = ("exponential", "deterministic", "lognormal")


@dataclass(frozen=True)
class ServiceLaw:
    """A service-time distribution with mean 1, described by its kind and coefficient of variation.

    exponential has CV 1 and deterministic CV 0 by definition; lognormal takes any CV > 0
    (default 1, which matches the exponential's first two moments but has a heavier tail).
    """

    kind: str = "exponential"
    cv: float = 1.0

    @staticmethod
    def of(kind: str = "exponential", cv: float | None = None) -> ServiceLaw:
        if kind not in SERVICE_KINDS:
            raise ValueError(f"service must be one of {', '.join(SERVICE_KINDS)}, got {kind!r}")
        fixed = {"exponential": 1.0, "deterministic": 0.0}
        if kind in fixed:
            if cv is not None and cv != fixed[kind]:
                raise ValueError(f"{kind} service has CV {fixed[kind]:g}; got service_cv={cv}")
            return ServiceLaw(kind, fixed[kind])
        cv = 1.0 if cv is None else float(cv)
        if not cv > 0.0:
            raise ValueError(f"lognormal service needs a CV > 0, got {cv}")
        return ServiceLaw(kind, cv)

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n service times with mean 1 (scale by the service mean)."""
        if self.kind == "exponential":
            return rng.exponential(1.0, n)
        if self.kind == "deterministic":
            return np.ones(n)
        sigma2 = math.log1p(self.cv**2)  # lognormal: CV² = e^{σ²} − 1, mean = e^{m + σ²/2} = 1
        return rng.lognormal(-0.5 * sigma2, math.sqrt(sigma2), n)


@dataclass(frozen=True)
class Draws:
    """Unit-scale randomness for one run: Exp(1) gaps, unit-mean work, and a line pick in [0, 1)."""

    gaps: np.ndarray
    work: np.ndarray
    pick: np.ndarray
    law: ServiceLaw

    def arrivals(self, arrival_rate: float) -> np.ndarray:
        """Poisson arrival times (s) at arrival_rate req/s."""
        return np.cumsum(self.gaps) / arrival_rate

    def services(self, service_mean: float) -> np.ndarray:
        """Service times (s) with the given mean."""
        return self.work * service_mean

    def random_lines(self, lines: int) -> np.ndarray:
        """Each request's line when arrivals are split uniformly at random over `lines`."""
        return np.minimum((self.pick * lines).astype(np.int64), lines - 1)


def draw(requests: int, seed: int, law: ServiceLaw = ServiceLaw()) -> Draws:
    """All randomness of a run, from one seed, in three independent streams.

    The streams are spawned from one SeedSequence so that changing the service law does not
    change the arrivals, and the split does not change either.
    """
    if requests < 2:
        raise ValueError(f"need at least 2 requests, got {requests}")
    if requests > MAX_QUEUEING_REQUESTS:  # 10^8 used to take 7.5 GB before anyone noticed
        raise UserError(
            f"at most {MAX_QUEUEING_REQUESTS:,} requests per run, got {requests:,}", field="requests"
        )
    gaps_ss, work_ss, pick_ss = np.random.SeedSequence(seed).spawn(3)
    return Draws(
        gaps=np.random.default_rng(gaps_ss).exponential(1.0, requests),
        work=law.draw(np.random.default_rng(work_ss), requests),
        pick=np.random.default_rng(pick_ss).random(requests),
        law=law,
    )
