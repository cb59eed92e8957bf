"""Batching decides throughput: the spec's batching section through the simulator.

The builders here (a policy's settings, the step-time model) are the only way from the section's
models to the simulator: the ``simulate`` command builds the same models from its flags and calls
the same functions.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from engine import batching, numbers, workload
from engine.batching.calibrated import calibrate_from_catalog
from engine.batching.loaders import load_measured_step_time
from engine.errors import UserError
from engine.limits import MAX_TIMELINE_REQUESTS
from engine.render.review_tables import num_cell, pct_cell, source_kind
from engine.sections import Inputs, SpecLocation, blame, register_section
from engine.spec import (
    BatchingSection,
    CalibratedStepTimeSpec,
    PagedSpec,
    RooflineStepTimeSpec,
    StepTimeModel,
    UnitStepTimeSpec,
)

# Per-request timelines feed the slot-timeline chart; past this many requests the chart would be
# unreadable and results.json large, so they are left out.
TIMELINE_LIMIT = MAX_TIMELINE_REQUESTS


def settings_of(paged: PagedSpec | None, max_wait: float | None) -> batching.PolicySettings:
    """What any policy is built from (engine.batching.registry), from the section's models."""
    if paged is None:
        return batching.PolicySettings(max_wait=max_wait)
    return batching.PolicySettings(
        max_wait=max_wait,
        num_blocks=paged.num_blocks,
        block_size=paged.block_size,
        max_num_seqs=paged.max_num_seqs,
        max_num_batched_tokens=paged.max_num_batched_tokens,
        chunked_prefill=paged.chunked_prefill,
        reserve_full_prompt=paged.reserve_full_prompt,
        async_scheduling=paged.async_scheduling,
        null_block=paged.null_block,
        allow_empty_prompt=paged.allow_empty_prompt,
    )


def policy_of(name: str, section: BatchingSection) -> Any:
    """The registered policy `name`, built from the section (engine.batching.registry)."""
    return batching.registry.build(name, settings_of(section.paged, section.static_max_wait))


def step_time_from(spec: StepTimeModel, folder: Path | None, measurement: Path | None) -> Any:
    """The step-time model ``spec`` asks for. A calibrated ``file`` is relative to ``folder`` (the
    spec's; None: as given on the command line); measurements, where the spec takes them from
    elsewhere (``measured:``), arrive as ``measurement``, which the caller has checked is there."""
    if isinstance(spec, UnitStepTimeSpec):
        return batching.UnitStepTime(seconds_per_step=spec.seconds_per_step)
    if isinstance(spec, RooflineStepTimeSpec):
        return batching.roofline_from_catalog(spec.model, spec.gpu, kv_dtype=spec.kv_dtype, tp=spec.tp)
    if isinstance(spec, CalibratedStepTimeSpec):
        source = (
            measurement if spec.file is None else Path(spec.file) if folder is None else folder / spec.file
        )
        assert source is not None  # the caller refuses a calibration with nothing to fit
        return calibrate_from_catalog(spec.model, spec.gpu, source, kv_dtype=spec.kv_dtype, tp=spec.tp)

    assert measurement is not None  # the caller refuses a measured step time without a file
    return load_measured_step_time(measurement)


def step_time_of(section: BatchingSection, location: SpecLocation, measurement: Path | None) -> Any:
    spec = section.step_time
    if spec is None:
        return None
    if isinstance(spec, CalibratedStepTimeSpec) and spec.file is None and measurement is None:
        raise UserError(
            "kind 'calibrated' needs measurements: set measured: latest (and run "
            "the bench) or give file: a per-operator CSV",
            file=location.spec_path,
            field="batching.step_time",
        )
    if not isinstance(spec, (UnitStepTimeSpec, RooflineStepTimeSpec, CalibratedStepTimeSpec)):
        if measurement is None:
            raise UserError(
                "kind 'measured' needs a measurement file: set measured: latest (or a file name) "
                "and run the bench first",
                file=location.spec_path,
                field="batching.step_time",
            )
        return step_time_from(spec, location.spec_dir, measurement)
    with blame(location, "batching.step_time"):
        return step_time_from(spec, location.spec_dir, measurement)


def head_of_line_example(output_tokens: np.ndarray, group_sizes: list[int]) -> dict[str, int]:
    """The static group that wastes the most slot-steps, described for the post.

    Groups are the simulator's own (consecutive requests in arrival order, sizes as it launched
    them); a group lasts as long as its longest member, so everything shorter idles behind it.
    """
    best: dict[str, int] = {}
    best_idle = -1
    bounds = np.cumsum([0, *group_sizes])
    for index, (start, stop) in enumerate(zip(bounds[:-1], bounds[1:]), start=1):
        group = np.sort(output_tokens[start:stop])
        longest = int(group[-1])
        idle = len(group) * longest - int(group.sum())
        if idle > best_idle:
            median = int(group[(len(group) - 1) // 2])
            best_idle = idle
            best = {
                "group": index,
                "members": int(len(group)),
                "longest": longest,
                "median": median,
                "median_waits": longest - median,
                "idle_slot_steps": idle,
            }
    return best


def run(section: BatchingSection, location: SpecLocation, inputs: Inputs) -> dict[str, Any]:
    measurement = inputs.measurement
    trace = getattr(section.workload, "trace", None)
    if trace is not None and not (location.spec_dir / trace).is_file():
        raise UserError(
            f"no such workload file {location.spec_dir / trace}",
            file=location.spec_path,
            field="batching.workload.trace",
        )
    with blame(location, "batching.workload"):
        load = workload.build_workload(section.workload, location.spec_dir)
    step_time = step_time_of(section, location, measurement)
    policies: dict[str, Any] = {}
    runs: dict[str, batching.PolicyResult] = {}
    for name in section.policies:
        with blame(location, f"batching.policies.{name}"):
            result = batching.simulate(
                load, policy_of(name, section), slots=section.slots, step_time=step_time
            )
        runs[name] = result
        policies[name] = result.to_dict(timeline=load.n <= TIMELINE_LIMIT)
    summary = load.summary()
    if trace is not None:
        # As the spec writes it, not as the command line reached it: the same spec gives the
        # same bytes whether built as days/day37.yaml or by an absolute path.
        summary["source"] = f"trace {trace}"
    tokens = int(load.output_tokens.sum())
    out: dict[str, Any] = {
        "source": "simulated",
        "slots": section.slots,
        "workload": summary,
        "step_time": section.step_time.model_dump() if section.step_time else None,
        "step_time_source": (
            f"fitted to {measurement.parent.name}/{measurement.name}"
            if measurement is not None and section.step_time and section.step_time.kind == "measured"
            else None
        ),
        "policies": policies,
        "ideal_steps": max(math.ceil(tokens / section.slots), int(load.output_tokens.max())),
    }
    if "static" in policies:
        out["head_of_line"] = head_of_line_example(load.output_tokens, policies["static"]["groups"]["size"])
    if "static" in policies and "continuous" in policies:
        out["multiple"] = batching.throughput_multiple(runs["static"], runs["continuous"])
    return out


def headline(result: dict[str, Any]) -> str:
    parts = [
        f"{name} {numbers.count(p['steps'])} steps {numbers.pct(p['utilisation'])}"
        for name, p in result["policies"].items()
    ]
    multiple = f", {numbers.multiple(result['multiple'], 2)}" if "multiple" in result else ""
    return f"batching ({result['source']}): " + ", ".join(parts) + multiple


def e2e_latency(policies: dict[str, Any]) -> tuple[str, dict[str, dict[str, Any]]]:
    """(unit, {policy: {'p50': …, 'p99': …}}) for the end-to-end latency columns.

    The simulator writes latency.seconds.e2e when steps are priced, and latency.steps.e2e always.
    Seconds are shown when every policy has them, so one column never mixes units; otherwise
    steps.
    """

    def pick(p: dict[str, Any], unit: str) -> dict[str, Any]:
        found = ((p.get("latency") or {}).get(unit) or {}).get("e2e")
        return found if isinstance(found, dict) else {}

    if policies and all(pick(p, "seconds") for p in policies.values()):
        return "s", {name: pick(p, "seconds") for name, p in policies.items()}
    return "steps", {name: pick(p, "steps") for name, p in policies.items()}


def review_tables(bt: dict[str, Any]) -> list[dict[str, Any]]:
    """The workload and the headline figures, then one row per policy."""
    rows = [("slots", num_cell(bt.get("slots")))]
    rows += [
        (f"workload: {k.replace('_', ' ')}", num_cell(v))
        for k, v in (bt.get("workload") or {}).items()
        if not isinstance(v, (list, dict))
    ]
    for key in ("multiple", "ideal_steps"):
        if key in bt:
            rows.append((key.replace("_", " "), num_cell(bt[key])))
    policies = bt.get("policies") or {}
    unit, latency = e2e_latency(policies)
    head = [
        "policy",
        "steps",
        "GPU busy",
        "tokens / step",
        "makespan (s)",
        "requests / s",
        f"p50 end-to-end ({unit})",
        f"p99 end-to-end ({unit})",
    ]
    body = [
        {
            "highlight": False,
            "cells": [
                name,
                num_cell(p.get("steps")),
                pct_cell(p.get("utilisation")),
                num_cell(p.get("throughput_tokens_per_step")),
                num_cell(p.get("makespan_seconds")),
                num_cell(p.get("requests_per_second")),
                num_cell(latency[name].get("p50")),
                num_cell(latency[name].get("p99")),
            ],
        }
        for name, p in policies.items()
    ]
    return [
        {
            "title": "Batching",
            "source": bt.get("source", ""),
            "kind": source_kind(bt.get("source", "")),
            "rows": rows,
            "table": {"head": head, "rows": body},
        }
    ]


register_section(
    "batching",
    model=BatchingSection,
    run=run,
    title="Batching",
    headline=headline,
    review_tables=review_tables,
    order=20,
)
