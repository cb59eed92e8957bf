"""The workload itself: N requests in arrival order, as three aligned numpy arrays.

Everything else in this package produces one of these (a trace replayed, a spec drawn); the
simulator only ever sees this type, so the checks below hold for every source.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.limits import MAX_ARRIVAL_SECONDS, MAX_REQUESTS, MAX_TOKENS

__all__ = ["MAX_ARRIVAL_SECONDS", "MAX_REQUESTS", "MAX_TOKENS", "Workload"]


@dataclass(frozen=True, eq=False)
class Workload:
    """N requests in arrival order. Arrays are int64 / float64 and never mutated."""

    output_tokens: np.ndarray  # int64, ≥ 1: tokens each request generates (decode steps)
    prompt_tokens: np.ndarray  # int64, ≥ 0: zeros when the trace has none
    arrival_time: np.ndarray  # float64 seconds, non-decreasing; zeros = all waiting at t = 0
    source: str  # where it came from, for labels: 'trace days/x.csv' or 'generated seed=7'

    def __post_init__(self) -> None:
        n = len(self.output_tokens)
        if n == 0:
            raise ValueError("a workload needs at least one request")
        if len(self.prompt_tokens) != n or len(self.arrival_time) != n:
            raise ValueError("output_tokens, prompt_tokens and arrival_time must align")
        if self.output_tokens.min() < 1 or self.prompt_tokens.min() < 0:
            raise ValueError("output lengths must be ≥ 1 and prompt lengths ≥ 0")
        if max(self.output_tokens.max(), self.prompt_tokens.max()) > MAX_TOKENS:
            raise ValueError(f"output and prompt lengths must be ≤ {MAX_TOKENS:,} tokens")
        if not (np.all(np.isfinite(self.arrival_time)) and self.arrival_time[-1] <= MAX_ARRIVAL_SECONDS):
            raise ValueError(f"arrival times must be finite and ≤ {MAX_ARRIVAL_SECONDS:g} s")
        if self.arrival_time[0] < 0 or np.any(np.diff(self.arrival_time) < 0):
            raise ValueError("arrival times must be ≥ 0 and non-decreasing")
        for array in (self.output_tokens, self.prompt_tokens, self.arrival_time):
            array.setflags(write=False)

    @classmethod
    def of(
        cls,
        output_tokens: Any,
        prompt_tokens: Any = None,
        arrival_time: Any = None,
        source: str = "given",
    ) -> Workload:
        """Build from anything array-like; missing prompts and arrivals are zeros."""
        out = np.asarray(output_tokens, dtype=np.int64).copy()
        prompt = (
            np.zeros_like(out) if prompt_tokens is None else np.asarray(prompt_tokens, dtype=np.int64).copy()
        )
        arrival = (
            np.zeros(len(out)) if arrival_time is None else np.asarray(arrival_time, dtype=np.float64).copy()
        )
        return cls(out, prompt, arrival, source)

    @property
    def n(self) -> int:
        return len(self.output_tokens)

    @property
    def has_prompts(self) -> bool:
        return bool(self.prompt_tokens.any())

    @property
    def has_arrivals(self) -> bool:
        return bool(self.arrival_time.any())

    def summary(self) -> dict[str, Any]:
        """What a post says about the workload, in plain JSON types."""
        out = self.output_tokens
        summary: dict[str, Any] = {
            "source": self.source,
            "requests": self.n,
            "total_output_tokens": int(out.sum()),
            "longest": int(out.max()),
            "shortest": int(out.min()),
            "mean": float(out.mean()),
            "median": float(np.median(out)),
            "p90": float(np.percentile(out, 90)),
            "p99": float(np.percentile(out, 99)),
            "total_prompt_tokens": int(self.prompt_tokens.sum()),
            "mean_prompt": float(self.prompt_tokens.mean()),
            "longest_prompt": int(self.prompt_tokens.max()),
            "all_at_zero": not self.has_arrivals,
            "last_arrival": float(self.arrival_time[-1]),
        }
        if self.has_arrivals and self.n > 1 and self.arrival_time[-1] > self.arrival_time[0]:
            span = float(self.arrival_time[-1] - self.arrival_time[0])
            summary["offered_rate"] = (self.n - 1) / span  # requests per second
        return summary
