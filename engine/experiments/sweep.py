"""Capacity planning: the spec's sweep section through the simulator, priced and ranked.

The build and ``python -m engine sweep`` both come here, so a day's post and the command line
quote the same table. The command keeps a results file of the person's, so that a long sweep
resumes; the build keeps none, and remembers the points it computed in the engine's cache
instead (engine.remembered, as POINTS), so that a rebuild simulates only points it has not seen.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from engine import remembered
from engine.catalog import is_model_path, load_gpu, load_model
from engine.sections import Inputs, SectionExample, SpecLocation, blame, register_section
from engine.sweep import adapter, analysis, execute
from engine.sweep.grid import LATENCY_METRICS, MAX_POINTS, Count, Grid, count_points, parse_step_time
from engine.sweep.prices import load_prices, price_of
from engine.sweep.store import ResultStore
from engine.validation import Strict
from engine.workload import GeneratedWorkload, WorkloadSpec

Seconds = Annotated[float, Field(gt=0, le=1e6, allow_inf_nan=False)]


class Targets(Strict):
    """Latency targets in seconds; a point meets them when every one given holds."""

    ttft_p50: Seconds | None = None
    ttft_p99: Seconds | None = None
    tpot_p50: Seconds | None = None
    tpot_p99: Seconds | None = None
    e2e_p50: Seconds | None = None
    e2e_p99: Seconds | None = None

    @model_validator(mode="after")
    def _at_least_one(self) -> Targets:
        if not self.given():
            raise ValueError(f"give at least one target: {', '.join(LATENCY_METRICS)}")
        return self

    def given(self) -> dict[str, float]:
        return {k: v for k in LATENCY_METRICS if (v := getattr(self, k)) is not None}


class RayOptions(Strict):
    """Run the points as Ray tasks: 'auto' (a running local cluster), 'local' (start one here),
    or a cluster address such as ray://head:10001."""

    address: str = Field(min_length=1, max_length=500)


class SweepSection(Strict):
    workload: WorkloadSpec
    grid: Grid
    targets: Targets
    block_size: Count = 16
    chunked_prefill: bool = True
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1)] = 0.9
    pareto_latency: Literal["ttft_p99", "tpot_p99", "e2e_p99"] = "e2e_p99"
    cheapest: Annotated[int, Field(ge=1, le=100, strict=True)] = 5  # how many to list
    workers: Annotated[int, Field(ge=1, le=4096, strict=True)] | None = None  # default: all cores
    ray: RayOptions | None = None

    @model_validator(mode="after")
    def _consistent(self) -> SweepSection:
        if self.grid.arrival_rate is not None and not isinstance(self.workload, GeneratedWorkload):
            raise ValueError("grid.arrival_rate needs a generated workload (a trace has its own arrivals)")
        total = count_points(self.grid)
        if total > MAX_POINTS:
            raise ValueError(f"the grid has {total:,} points, more than {MAX_POINTS:,}")
        return self


# The points a build computed, by their keys (execute.plan's), for the next build.
POINTS = remembered.Memory("sweeps", valid=adapter.is_metrics)

# The full table goes to results.json only up to this many points; beyond it, the CSV has them.
ROWS_IN_RESULTS = 2000


def _files_inside(section: SweepSection, ctx: SpecLocation) -> None:
    """The files a sweep names beside its spec (its trace, its step-time files, a model's
    config.json) are in the spec's folder, as every file a spec names is (SpecLocation.file)."""
    ctx.trace(section.workload, "sweep.workload.trace")
    for name in section.grid.model:
        if is_model_path(name, ctx.spec_dir):
            ctx.config(name, "sweep.grid.model")
    for text in section.grid.step_time:
        kind, rest = parse_step_time(text)
        if kind in ("measured", "calibrated"):
            ctx.file(rest, "sweep.grid.step_time")


def run(
    section: SweepSection,
    ctx: SpecLocation,
    *,
    store_path: Path | None = None,
    store: ResultStore | None = None,
    workers: int | None = None,
    ray_address: str | None = None,
    spec_ray: bool = True,
    progress: bool = False,
    full: bool = False,
) -> dict[str, Any]:
    """The sweep's table. Its points run as Ray tasks at ``ray_address``, else (with
    ``spec_ray``) at the spec's own ``ray.address``, else on this machine's cores."""
    _files_inside(section, ctx)
    with blame(ctx, "sweep"):
        the_plan = execute.plan(section, ctx.spec_dir)
    spec_address = section.ray.address if section.ray and spec_ray else None
    address = ray_address if ray_address is not None else spec_address
    if store is None:
        store = ResultStore(store_path, valid=adapter.is_metrics)
    with blame(ctx, "sweep"):
        raw = execute.run(
            the_plan, store, workers=workers or section.workers, ray_address=address, progress=progress
        )
    return summarise(section, raw, the_plan, full=full)


def summarise(
    section: SweepSection, raw: list[dict[str, Any]], the_plan: execute.Plan, *, full: bool = False
) -> dict[str, Any]:
    """The priced table and what it says, as plain JSON types; `rows` only up to ROWS_IN_RESULTS
    points unless `full` (the command writes them all to its CSV)."""
    prices = load_prices()
    targets = section.targets.given()
    rows = analysis.with_costs(raw, prices, targets)
    front = analysis.pareto_front(rows, section.pareto_latency)
    cheapest = analysis.cheapest(rows, section.cheapest)
    used = {}
    for gpu in section.grid.gpu:
        price = price_of(gpu, prices)
        used[gpu] = (
            None
            if price is None
            else {
                "usd_per_gpu_hour": price.usd_per_gpu_hour,
                "source": price.source(),
                "offer": price.offer,
            }
        )
    meeting = sum(r["meets_targets"] for r in rows)
    load_summary = _workload_summary(section, the_plan)
    return {
        "source": "simulated",
        "simulator": adapter.SIMULATOR,
        "scheduler": adapter.scheduler(),
        "points": count_points(section.grid),
        "feasible": sum(r["status"] == "ok" for r in rows),
        "meeting": meeting,
        "targets": targets,
        "grid": section.grid.model_dump(),
        "names": _display_names(section, Path(the_plan.options["base_dir"])),
        "pareto_latency": section.pareto_latency,
        "workload": load_summary,
        "prices": used,
        "unpriced": [g for g, p in used.items() if p is None],
        "cheapest": [_short(r) for r in cheapest],
        "cheapest_per_rate": [_short(r) for r in analysis.cheapest_per_rate(rows)],
        "pareto": [_short(rows[i]) for i in front],
        "pareto_index": front,
        "statement": analysis.nobody_meets(rows, targets),
        "rows": rows if full or len(rows) <= ROWS_IN_RESULTS else None,
    }


def _display_names(section: SweepSection, base_dir: Path) -> dict[str, str]:
    """Catalog name → the name people use ('llama-3-8b' → 'Llama-3-8B'), for posts and charts."""
    names = {g: load_gpu(g).display_name for g in section.grid.gpu}
    for m in section.grid.model:
        names[m] = load_model(adapter.model_source(m, base_dir)).display_name or m
    return names


def _short(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "config": analysis.describe(row)}


def _workload_summary(section: SweepSection, the_plan: execute.Plan) -> dict[str, Any]:
    """The workload as the posts describe it (at the grid's first arrival rate)."""
    rates = section.grid.arrival_rate
    load = adapter.workload_for(the_plan.workload, rates[0] if rates else None)
    summary = load.summary()
    trace = getattr(section.workload, "trace", None)
    if trace is not None:
        summary["source"] = f"trace {trace}"  # as the spec writes it: same bytes from any cwd
    summary["arrival_rates"] = list(rates) if rates else None
    return summary


def headline(sweep: dict[str, Any]) -> str:
    return f"sweep ({sweep['source']}): {sweep['points']:,} points, {sweep['meeting']:,} meet the targets"


def _run_for_build(section: SweepSection, location: SpecLocation, inputs: Inputs) -> dict[str, Any]:
    """A day's build: every core of this machine, never the spec's Ray address (building a day
    someone else wrote must not start a Ray instance or connect to a host it names: that is
    `engine sweep`'s, a command the person runs on purpose); the points computed are remembered
    in the engine's cache, not in a results file of the person's (a build is a pure function of
    the spec)."""
    return run(section, location, store=POINTS.store(), spec_ray=False)


register_section(
    "sweep",
    model=SweepSection,
    run=_run_for_build,
    title="Capacity sweep",
    headline=headline,
    order=50,
    # One configuration at one rate, forty short requests: the grid, the targets and the table.
    example=SectionExample(
        {
            "workload": {
                "requests": 40,
                "seed": 1,
                "output_tokens": "uniform:8:32",
                "prompt_tokens": "uniform:16:64",
                "arrivals": {"kind": "poisson", "rate": 5},
            },
            "grid": {
                "gpu": ["h100-80gb"],
                "model": ["llama-3-8b"],
                "max_num_seqs": [16],
                "max_num_batched_tokens": [2048],
                "step_time": ["roofline"],
                "arrival_rate": [5],
            },
            "targets": {"ttft_p99": 1.0, "tpot_p50": 0.05},
        }
    ),
)
