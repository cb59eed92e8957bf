"""Arrival processes: when each request reaches the server, drawn from a seeded generator."""

from __future__ import annotations

import math
from typing import Annotated, Literal

import numpy as np
from pydantic import ConfigDict, Field, model_validator

from engine.limits import MAX_ARRIVAL_CV
from engine.workload.distributions import _Model

# Requests per second, over 0; infinite is allowed (the models say so): everyone waits at t = 0.
Rate = Annotated[float, Field(gt=0)]


class AllAtZero(_Model):
    """Everyone is already waiting when the clock starts: the lab's setting."""

    kind: Literal["all_at_zero"] = "all_at_zero"

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.zeros(n)


class Poisson(_Model):
    """Independent arrivals at `rate` per second: exponential gaps."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=True)  # rate inf: all at 0
    kind: Literal["poisson"] = "poisson"
    rate: Rate

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.cumsum(rng.exponential(1.0 / self.rate, size=n))


class Gamma(_Model):
    """Gaps with mean 1/rate and coefficient of variation `cv`: cv > 1 is bursty, < 1 smooth."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=True)  # rate inf: all at 0
    kind: Literal["gamma"] = "gamma"
    rate: Rate
    cv: Annotated[float, Field(gt=0, le=MAX_ARRIVAL_CV)]

    @model_validator(mode="after")
    def _finite_cv(self) -> Gamma:
        if not math.isfinite(self.cv):
            raise ValueError("cv must be a finite number")
        return self

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.cv**2 == 0:  # so smooth that the gaps are their mean (1 / cv² would overflow)
            return np.cumsum(np.full(n, 1.0 / self.rate))
        shape = 1.0 / self.cv**2
        return np.cumsum(rng.gamma(shape, 1.0 / (self.rate * shape), size=n))


Arrivals = Annotated[AllAtZero | Poisson | Gamma, Field(discriminator="kind")]
