"""Batching decides throughput: the spec's batching section through the simulator.

The builders here (a policy's settings, the step-time model) are the only way from the section's
models to the simulator: the ``simulate`` command builds the same models from its flags and calls
the same functions.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import AfterValidator, Field, model_validator

from engine import batching, limits, numbers, workload
from engine.batching import registry as policy_registry
from engine.batching.calibrated import calibrate_from_catalog
from engine.batching.loaders import load_measured_step_time
from engine.errors import UserError
from engine.kvcache import KvDtype
from engine.limits import MAX_TIMELINE_REQUESTS
from engine.render.review_tables import num_cell, pct_cell, source_kind
from engine.sections import Inputs, SectionExample, SpecLocation, blame, register_section
from engine.validation import ContextTokens, PositiveFloat, Slots, Strict, TensorParallel
from engine.workload import WorkloadSpec

# ---- the section's model -----------------------------------------------------------------------


class UnitStepTimeSpec(Strict):
    kind: Literal["unit"]
    # An hour a step is no GPU's; a larger figure is a typo. A nanosecond is the least.
    seconds_per_step: Annotated[
        PositiveFloat, Field(ge=limits.MIN_SECONDS_PER_STEP, le=limits.MAX_SECONDS_PER_STEP)
    ]


class RooflineStepTimeSpec(Strict):
    """Peak bandwidth and FLOPs for the model on the card: a lower bound on every step."""

    kind: Literal["roofline"]
    model: str
    gpu: str
    kv_dtype: KvDtype = "auto"
    tp: TensorParallel = 1


class CalibratedStepTimeSpec(Strict):
    """The roofline for the model on the card, with efficiencies and a per-layer kernel cost
    fitted to the device measurement the spec's ``measured:`` key picks (or to `file`, a
    per-operator CSV next to the spec); the fit error is reported with it."""

    kind: Literal["calibrated"]
    model: str
    gpu: str
    kv_dtype: KvDtype = "auto"
    tp: TensorParallel = 1
    file: str | None = None


class MeasuredStepTimeSpec(Strict):
    """Step time fitted to the device measurement the spec's ``measured:`` key picks."""

    kind: Literal["measured"]


StepTimeModel = UnitStepTimeSpec | RooflineStepTimeSpec | CalibratedStepTimeSpec | MeasuredStepTimeSpec
StepTimeSpec = Annotated[StepTimeModel, Field(discriminator="kind")]


def _registered_policy(name: str) -> str:
    """A policy name the registry knows (engine.batching.registry), checked when the spec is
    read, so a policy registered by a plugin or a test is accepted and a typo is not."""
    if policy_registry.find(name) is None:
        choices = [repr(n) for n in policy_registry.names()]
        listed = ", ".join(choices[:-1]) + " or " + choices[-1] if len(choices) > 1 else choices[0]
        raise ValueError(f"must be one of {listed}, got {name!r}")
    return name


PolicyName = Annotated[str, AfterValidator(_registered_policy)]


class PagedSpec(Strict):
    """The paged scheduler's pool, limits and vLLM rules. num_blocks is vLLM's num_gpu_blocks;
    the four rules default to vLLM 0.33.0 as shipped (engine.batching.paged.PagedPolicy)."""

    num_blocks: Annotated[int, Field(ge=1, le=limits.MAX_BLOCKS, strict=True)]
    block_size: Annotated[int, Field(ge=1, le=limits.MAX_BLOCK_SIZE, strict=True)] = 16
    max_num_seqs: Slots | None = None
    max_num_batched_tokens: ContextTokens | None = None
    chunked_prefill: bool = False
    reserve_full_prompt: bool = True  # vLLM's scheduler_reserve_full_isl
    async_scheduling: bool = True
    null_block: bool = True
    allow_empty_prompt: bool = False


class BatchingSection(Strict):
    slots: Slots
    workload: WorkloadSpec
    policies: Annotated[list[PolicyName], Field(min_length=1)] = ["static", "continuous"]
    step_time: StepTimeSpec | None = None
    paged: PagedSpec | None = None
    # Static batching's wait for a partial group, seconds; 0 launches it at once.
    static_max_wait: (
        Annotated[float, Field(ge=0, le=limits.MAX_ARRIVAL_SECONDS, allow_inf_nan=False)] | None
    ) = None

    @model_validator(mode="after")
    def _paged_needs_blocks(self) -> BatchingSection:
        if len(set(self.policies)) != len(self.policies):
            raise ValueError(f"policies {self.policies} name a policy twice")

        for name in self.policies:
            if policy_registry.kind(name).needs_blocks and self.paged is None:
                raise ValueError(f"policy '{name}' needs a 'paged' section with num_blocks")
        return self


# ---- the run -----------------------------------------------------------------------------------


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
    if isinstance(spec, CalibratedStepTimeSpec) and spec.file is not None:
        location.file(spec.file, "batching.step_time.file")
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
    trace = getattr(section.workload, "trace", None)  # as the spec writes it
    trace_file = location.trace(section.workload, "batching.workload.trace")
    if trace_file is not None and not trace_file.is_file():
        raise UserError(
            f"{trace_file} is not a regular file (a folder, a pipe or a device)"
            if trace_file.exists()
            else f"no such workload file {trace_file}",
            file=location.spec_path,
            field="batching.workload.trace",
        )
    with blame(location, "batching.workload"):
        load = workload.build_workload(section.workload, location.spec_dir)
    step_time = step_time_of(section, location, measurement)
    policies: dict[str, Any] = {}
    runs: dict[str, batching.PolicyResult] = {}
    scheduler: dict[str, str] = {}  # policy → the vLLM scheduler its rules reproduce, where one does
    for name in section.policies:
        policy = policy_of(name, section)
        if isinstance(policy, batching.PagedPolicy):
            scheduler[name] = policy.reproduces
        with blame(location, f"batching.policies.{name}"):
            result = batching.simulate(load, policy, slots=section.slots, step_time=step_time)
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
        "scheduler": scheduler,
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
    # Twelve requests of a few tokens on four slots, static against continuous.
    example=SectionExample(
        {"slots": 4, "workload": {"requests": 12, "seed": 1, "output_tokens": "uniform:2:9"}}
    ),
)
