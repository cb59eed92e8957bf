"""Day 4's claim, one shared line beats separate lines, through the queueing simulator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field

from engine import limits, numbers, queueing, remembered
from engine.errors import UserError
from engine.render.review_tables import num_cell, pct_cell, source_kind
from engine.sections import Inputs, SectionExample, SpecLocation, register_section
from engine.validation import PositiveFloat, Strict

# ---- the section's model -----------------------------------------------------------------------

# Servers behind a line, within their stated limit (engine/limits.py).
Servers = Annotated[int, Field(ge=1, le=limits.MAX_SERVERS, strict=True)]


class SharedLineSpec(Strict):
    """One shared line feeding c servers, at a fixed arrival rate (the lab's M/M/c table)."""

    arrival_rate: Annotated[PositiveFloat, Field(ge=limits.MIN_ARRIVAL_RATE)]
    servers: Annotated[list[Servers], Field(min_length=1, max_length=limits.MAX_QUEUE_ROWS)]


class LinesSpec(Strict):
    """One shared line against c separate lines, at the same load per server."""

    servers: Annotated[int, Field(ge=2, le=limits.MAX_SERVERS, strict=True)]
    load: Annotated[float, Field(ge=limits.MIN_LOAD, lt=1)]


class QueueingSection(Strict):
    service_ms: PositiveFloat
    requests: Annotated[int, Field(ge=1000, le=limits.MAX_QUEUEING_REQUESTS, strict=True)]
    seed: Annotated[int, Field(ge=0, le=2**63 - 1, strict=True)] = 0
    service: Literal["exponential", "deterministic", "lognormal"] = "exponential"
    service_cv: PositiveFloat | None = None
    utilisations: Annotated[
        list[Annotated[float, Field(ge=limits.MIN_LOAD, lt=1)]],
        Field(min_length=1, max_length=limits.MAX_QUEUE_ROWS),
    ]
    shared: SharedLineSpec | None = None
    lines: LinesSpec


# ---- the run -----------------------------------------------------------------------------------


def _mm1_row(row: dict[str, Any]) -> dict[str, Any]:
    expected = row.get("expected") or {}
    return {
        **row,
        "mean_time_in_system_ms": row["mean_sojourn_ms"],
        "p99_time_in_system_ms": row["p99_sojourn_ms"],
        "closed_form_mean_ms": expected.get("mean_sojourn_ms"),
        "closed_form_p99_ms": expected.get("p99_sojourn_ms"),
        "settled": settled(row["mean_sojourn_ms"], expected.get("mean_sojourn_ms")),
    }


# How far (relative) a simulated mean may sit from its closed form before the post calls the
# row unsettled. Near ρ = 1 a queue's mean converges so slowly that even 300,000 requests
# leave it off by more than this, and batch-means error bars understate that (see summary.py).
SETTLED_WITHIN = 0.05


def settled(simulated: float, theory: float | None) -> bool | None:
    """Whether a simulated mean is within SETTLED_WITHIN of its closed form (None: no theory)."""
    if theory is None:
        return None
    return abs(simulated - theory) <= SETTLED_WITHIN * theory


def run(section: QueueingSection, location: SpecLocation, inputs: Inputs) -> dict[str, Any]:
    service = section.service_ms / 1000.0
    common: dict[str, Any] = dict(
        service_mean=service,
        requests=section.requests,
        seed=section.seed,
        service=section.service,
        service_cv=section.service_cv,
    )
    try:
        mm1 = _simulated("mm1_sweep", utilisations=section.utilisations, **common)
        shared = (
            _simulated(
                "shared_sweep",
                servers=section.shared.servers,
                arrival_rate=section.shared.arrival_rate,
                **common,
            )
            if section.shared
            else []
        )
        lines = compare_lines(section, service)
    except ValueError as exc:  # e.g. a service law that needs a cv
        raise UserError(str(exc), file=location.spec_path, field="queueing") from None
    mm1_rows = [_mm1_row(r) for r in mm1]
    unsettled = [r["utilisation"] for r in mm1_rows if r["settled"] is False]
    return {
        "source": "simulated",
        "requests": section.requests,
        "service_ms": section.service_ms,
        "service": section.service,
        "mm1": mm1_rows,
        "unsettled_utilisations": unsettled,
        "settled_within": SETTLED_WITHIN,
        # The hockey stick: how many times longer the busiest settled row spends in the system
        # than the least busy. Unsettled rows (still noisy) are left out of the claim.
        **growth(mm1_rows),
        "shared": shared,
        "lines": lines,
    }


def growth(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The growth in time in system from the first row to the busiest settled one."""
    settled_rows = [r for r in rows if r["settled"] is not False] or rows
    top = settled_rows[-1]
    return {
        "growth": top["mean_sojourn_ms"] / rows[0]["mean_sojourn_ms"],
        "growth_to_utilisation": top["utilisation"],
    }


# What the simulations gave, by their arguments, for the next build and for a later day that
# links back (Day 37 cites Day 4's lines): a warm build simulates no queue (engine.remembered).
SIMULATIONS = remembered.Memory("queueing", valid=lambda kept: isinstance(kept.get("sha256"), str))

# The simulations a section runs, each giving JSON types (Rows as their dicts).
_SIMULATE: dict[str, Callable[..., Any]] = {
    "mm1_sweep": lambda **args: [row.to_dict() for row in queueing.mm1_sweep(**args)],
    "shared_sweep": lambda **args: [row.to_dict() for row in queueing.shared_sweep(**args)],
    "compare_lines": lambda **args: queueing.comparison_to_dict(queueing.compare_lines(**args)),
}


def _simulated(what: str, **args: Any) -> Any:
    """``queueing.<what>(**args)`` as JSON types, simulated once per version of the engine."""
    return SIMULATIONS.recall(what, lambda: _SIMULATE[what](**args), args)


def compare_lines(section: QueueingSection, service: float) -> dict[str, Any]:
    """Shared vs separate lines at the spec's load; the ratio Day 37 cites comes from here."""
    servers, load = section.lines.servers, section.lines.load
    out = _simulated(
        "compare_lines",
        servers=servers,
        arrival_rate=load * servers / service,
        service_mean=service,
        requests=section.requests,
        seed=section.seed,
        service=section.service,
        service_cv=section.service_cv,
    )
    ratios = out["ratios"]["separate_random"]
    shared = out["shared"]
    return {
        **out,
        "servers": servers,
        "load": load,
        "wait_ratio": ratios["mean_wait"],
        "p99_wait_ratio": ratios["p99_wait"],
        "round_robin_wait_ratio": out["ratios"]["separate_round_robin"]["mean_wait"],
        "shared_matches_theory": matches_theory(shared),
    }


# How many batch-means standard errors a simulated mean may sit from its closed form and still
# be called a match (a two-sided 4-sigma band: false alarms about 1 in 16,000).
MATCH_SIGMAS = 4.0


def matches_theory(row: dict[str, Any]) -> bool | None:
    """Whether a row's mean wait agrees with its closed form within sampling error.

    The post says the shared line 'matches Erlang C'; this is where that sentence is earned.
    None when the row has no closed form (e.g. lognormal service on several servers).
    """
    expected = row.get("expected")
    if not expected or expected.get("mean_wait_ms") is None:
        return None
    gap = abs(row["mean_wait_ms"] - expected["mean_wait_ms"])
    return bool(gap <= MATCH_SIGMAS * row["mean_wait_se_ms"])


def headline(result: dict[str, Any]) -> str | None:
    if "lines" not in result:
        return None
    return f"queueing ({result['source']}): separate lines wait {numbers.multiple(result['lines']['wait_ratio'])}"


def link_figure(section: QueueingSection, location: SpecLocation) -> dict[str, Any]:
    """What a later day cites from this one: how much longer separate lines wait."""
    lines = compare_lines(section, section.service_ms / 1000.0)
    return {
        "source": "simulated",
        "servers": lines["servers"],
        "load": lines["load"],
        "wait_ratio": lines["wait_ratio"],
    }


def review_tables(qu: dict[str, Any]) -> list[dict[str, Any]]:
    """Shared against separate lines at the spec's load, then the M/M/1 sweep."""
    source, kind = qu.get("source", ""), source_kind(qu.get("source", ""))
    lines = qu.get("lines") or {}
    rows = [(k, num_cell(v)) for k, v in lines.items() if not isinstance(v, (dict, list))]
    arrangements = {
        "head": ["arrangement", "mean wait (ms)", "p99 wait (ms)"],
        "rows": [
            {
                "highlight": False,
                "cells": [
                    k.replace("_", " "),
                    num_cell(v.get("mean_wait_ms")),
                    num_cell(v.get("p99_wait_ms")),
                ],
            }
            for k, v in lines.items()
            if isinstance(v, dict) and "mean_wait_ms" in v
        ],
    }
    tables = [
        {
            "title": "Queueing: shared line against separate lines",
            "source": source,
            "kind": kind,
            "rows": rows,
            "table": arrangements,
        }
    ]
    if qu.get("mm1"):
        sweep = {
            "head": ["utilisation", "mean time in system (ms)", "closed form (ms)"],
            "rows": [
                {
                    "highlight": False,
                    "cells": [
                        pct_cell(r["utilisation"], 0),
                        num_cell(r.get("mean_time_in_system_ms")),
                        num_cell(r.get("closed_form_mean_ms")),
                    ],
                }
                for r in qu["mm1"]
            ],
        }
        tables.append(
            {
                "title": "Queueing: one server (M/M/1)",
                "source": source,
                "kind": kind,
                "rows": [],
                "table": sweep,
            }
        )
    return tables


register_section(
    "queueing",
    model=QueueingSection,
    run=run,
    title="Queueing",
    headline=headline,
    review_tables=review_tables,
    link_figure=link_figure,
    order=30,
    # Day 4's questions on a few thousand requests: one line, and two servers shared or not.
    example=SectionExample(
        {
            "service_ms": 10,
            "requests": 4000,
            "seed": 1,
            "utilisations": [0.5, 0.8],
            "shared": {"arrival_rate": 90, "servers": [1, 2]},
            "lines": {"servers": 2, "load": 0.8},
        }
    ),
)
