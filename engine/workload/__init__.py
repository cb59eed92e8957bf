"""Workloads: the requests a batching simulation serves.

A workload is three aligned arrays in arrival order: how many tokens each request generates,
how long its prompt is, and when it arrives (seconds). It comes either from a trace (a CSV the
user replays, such as the lab's 200 output lengths) or from a generator spec: distributions for
the lengths and an arrival process, drawn from a seeded numpy Generator so that the same spec
gives the same requests on every machine.

Why each length distribution is here: constant and uniform reproduce the lab; a clipped normal
or a lognormal is what output lengths of chat traffic look like; a capped exponential and a
capped zipf give the heavy tail that makes static batching hurt; a weighted mixture is the lab's
"90 % short, 10 % long" shape. Continuous draws are rounded to whole tokens (the exponential
upward, so its values start at 1) and then clipped to the bounds the spec gives.

Every distribution knows its bounds without drawing, so "output lengths must be at least 1" is
checked once, from the spec, instead of depending on the seed.

Caps, so that a typo cannot ask for petabytes (each is a UserError naming the file, row and
column of a trace, or the spec's field):

- tokens per request, output and prompt alike: at most MAX_TOKENS (10,000,000), more than any
  model's context. A distribution's numbers (value, low, high, cap, mean, median, std) are
  capped the same way, and draws of a distribution without an upper bound (a normal or
  lognormal without `high`, an exponential without `cap`) are clipped to MAX_TOKENS;
- arrival times: finite and at most MAX_ARRIVAL_SECONDS (1e9 s, about 32 years); a generated
  arrival process whose last arrival would come later is refused;
- generated requests: at most MAX_REQUESTS (10,000,000);
- every number of a length distribution finite; lognormal sigma at most MAX_SIGMA (10). An
  arrival rate may be infinite (everyone at t = 0); a gamma cv must be finite.
"""

from __future__ import annotations

from engine.workload.arrivals import AllAtZero, Arrivals, Gamma, Poisson
from engine.workload.core import MAX_ARRIVAL_SECONDS, MAX_REQUESTS, MAX_TOKENS, Workload
from engine.workload.distributions import (
    DISTRIBUTION_EXAMPLE,
    DISTRIBUTION_SYNTAX,
    MAX_SIGMA,
    Component,
    Constant,
    Distribution,
    Exponential,
    Lognormal,
    Mixture,
    Normal,
    Uniform,
    Zipf,
    parse_distribution,
)
from engine.workload.spec import GeneratedWorkload, TraceWorkload, WorkloadSpec, build_workload, generate
from engine.workload.trace import OPTIONAL_COLUMNS, REQUIRED_COLUMN, load_trace

__all__ = [
    "DISTRIBUTION_EXAMPLE",
    "DISTRIBUTION_SYNTAX",
    "MAX_ARRIVAL_SECONDS",
    "MAX_REQUESTS",
    "MAX_SIGMA",
    "MAX_TOKENS",
    "OPTIONAL_COLUMNS",
    "REQUIRED_COLUMN",
    "AllAtZero",
    "Arrivals",
    "Component",
    "Constant",
    "Distribution",
    "Exponential",
    "Gamma",
    "GeneratedWorkload",
    "Lognormal",
    "Mixture",
    "Normal",
    "Poisson",
    "TraceWorkload",
    "Uniform",
    "Workload",
    "WorkloadSpec",
    "Zipf",
    "build_workload",
    "generate",
    "load_trace",
    "parse_distribution",
]
