"""The workload part of a day spec (a trace to replay, or requests to draw) and drawing it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import Discriminator, Field, Tag, field_validator

from engine.errors import UserError
from engine.limits import MAX_ARRIVAL_SECONDS, MAX_REQUESTS
from engine.workload.arrivals import AllAtZero, Arrivals
from engine.workload.core import Workload
from engine.workload.distributions import Distribution, _Model
from engine.workload.trace import load_trace


class TraceWorkload(_Model):
    """Replay a CSV: `output_tokens` required; `prompt_tokens`, `arrival_time` optional."""

    trace: str  # path, relative to the spec's folder


class GeneratedWorkload(_Model):
    """Draw `requests` requests from distributions, deterministically per seed."""

    requests: Annotated[int, Field(ge=1, le=MAX_REQUESTS, strict=True)]
    output_tokens: Distribution
    prompt_tokens: Distribution | None = None
    arrivals: Arrivals = AllAtZero()
    # numpy's SeedSequence takes no negative seeds; strict: YAML's `true` is not the seed 1.
    seed: Annotated[int, Field(ge=0, le=2**63 - 1, strict=True)] = 0

    @field_validator("output_tokens")
    @classmethod
    def _outputs_at_least_one(cls, output_tokens: Distribution) -> Distribution:
        low, _ = output_tokens.bounds()
        if low < 1:
            raise ValueError(f"output_tokens can draw {low}; every request must generate at least 1 token")
        return output_tokens


def _workload_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "trace" if "trace" in value else "generated"
    return "trace" if isinstance(value, TraceWorkload) else "generated"


# The day spec embeds this under batching.workload. A callable discriminator (rather than
# pydantic's smart union) keeps errors to the one form the user meant.
WorkloadSpec = Annotated[
    Annotated[TraceWorkload, Tag("trace")] | Annotated[GeneratedWorkload, Tag("generated")],
    Discriminator(_workload_kind),
]


def generate(spec: GeneratedWorkload) -> Workload:
    """Draw the workload. Lengths and arrivals use separate streams spawned from the seed, so
    adding prompts or arrivals to a spec does not change the output lengths already drawn."""
    out_seq, prompt_seq, arrival_seq = np.random.SeedSequence(spec.seed).spawn(3)
    n = spec.requests
    output = spec.output_tokens.sample(np.random.default_rng(out_seq), n)
    prompt = (
        np.zeros(n, dtype=np.int64)
        if spec.prompt_tokens is None
        else spec.prompt_tokens.sample(np.random.default_rng(prompt_seq), n)
    )
    arrival = spec.arrivals.sample(np.random.default_rng(arrival_seq), n).astype(np.float64)
    if n and not arrival[-1] <= MAX_ARRIVAL_SECONDS:
        raise UserError(
            f"arrivals: the last of {n:,} arrivals would come at {arrival[-1]:.3g} s, past the cap "
            f"of {MAX_ARRIVAL_SECONDS:g} s (about 32 years); raise the rate",
            field="arrivals.rate",
        )
    return Workload(output, prompt, arrival, f"generated seed={spec.seed}")


def build_workload(spec: TraceWorkload | GeneratedWorkload, base_dir: Path) -> Workload:
    """The workload a spec asks for; a trace path is relative to the spec's folder."""
    if isinstance(spec, TraceWorkload):
        path = Path(spec.trace)
        return load_trace(path if path.is_absolute() else Path(base_dir) / path)
    return generate(spec)
