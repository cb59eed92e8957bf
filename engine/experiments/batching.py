"""Batching decides throughput: the spec's batching section through the simulator."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from engine import batching, workload
from engine.errors import UserError
from engine.limits import MAX_TIMELINE_REQUESTS
from engine.experiments import Context, blame
from engine.spec import BatchingSection, RooflineStepTimeSpec, UnitStepTimeSpec

# Per-request timelines feed the slot-timeline chart; past this many requests the chart would be
# unreadable and results.json large, so they are left out.
TIMELINE_LIMIT = MAX_TIMELINE_REQUESTS


def policy_of(name: str, section: BatchingSection) -> Any:
    if name == "static":
        return batching.StaticPolicy(max_wait=section.static_max_wait)
    if name == "continuous":
        return batching.ContinuousPolicy()
    paged = section.paged
    assert paged is not None  # the spec refuses 'paged' without its section
    return batching.PagedPolicy(
        num_blocks=paged.num_blocks,
        block_size=paged.block_size,
        max_num_seqs=paged.max_num_seqs,
        max_num_batched_tokens=paged.max_num_batched_tokens,
        chunked_prefill=paged.chunked_prefill,
    )


def step_time_of(section: BatchingSection, ctx: Context, measurement: Path | None) -> Any:
    spec = section.step_time
    if spec is None:
        return None
    if isinstance(spec, UnitStepTimeSpec):
        return batching.UnitStepTime(seconds_per_step=spec.seconds_per_step)
    if isinstance(spec, RooflineStepTimeSpec):
        with blame(ctx, "batching.step_time"):
            return batching.roofline_from_catalog(spec.model, spec.gpu, kv_dtype=spec.kv_dtype)
    if measurement is None:
        raise UserError(
            "kind 'measured' needs a measurement file: set measured: latest (or a file name) "
            "and run the bench first",
            file=ctx.spec_path,
            field="batching.step_time",
        )
    from engine.batching.loaders import load_measured_step_time

    return load_measured_step_time(measurement)


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


def run(
    section: BatchingSection, ctx: Context, measurement: Path | None = None
) -> dict[str, Any]:
    trace = getattr(section.workload, "trace", None)
    if trace is not None and not (ctx.spec_dir / trace).is_file():
        raise UserError(
            f"no such workload file {ctx.spec_dir / trace}",
            file=ctx.spec_path,
            field="batching.workload.trace",
        )
    with blame(ctx, "batching.workload"):
        load = workload.build_workload(section.workload, ctx.spec_dir)
    step_time = step_time_of(section, ctx, measurement)
    policies: dict[str, Any] = {}
    runs: dict[str, batching.PolicyResult] = {}
    for name in section.policies:
        with blame(ctx, f"batching.policies.{name}"):
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
        out["head_of_line"] = head_of_line_example(
            load.output_tokens, policies["static"]["groups"]["size"]
        )
    if "static" in policies and "continuous" in policies:
        out["multiple"] = batching.throughput_multiple(runs["static"], runs["continuous"])
    return out
