"""``python -m engine simulate``: run the batching policies over a workload and compare them.

A workload is a CSV trace (--workload) or generated (--requests and --output-tokens, with
optional --prompt-tokens, --arrival-rate and --seed). Steps become seconds through --step-time:
``unit`` (0.02 s per step, the lab's; ``unit:0.05`` for another), ``roofline`` (from --model and
--gpu in the catalog: a lower bound on every step), ``calibrated:FILE`` (that roofline with
efficiencies and a per-layer kernel cost fitted to a GPU bench's steps or a per-operator CSV) or
``measured:FILE`` (a linear fit of a GPU benchmark's step times).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from engine import batching, limits
from engine import workload as wl
from engine.batching import export, registry, throughput_multiple
from engine.batching.export import Run
from engine.batching.loaders import num_blocks_from_catalog
from engine.batching.paged import VLLM_VERSION
from engine.batching.replicas import simulate_replicas
from engine.errors import UserError
from engine.experiments.batching import BatchingSection, policy_of, step_time_from
from engine.validation import blame_flag, given, number, validate_flags, whole_flag, whole_number
from engine.workload import DISTRIBUTION_SYNTAX

DEFAULT_SECONDS_PER_STEP = 0.02  # the lab's assumption: 20 ms per decode step
# Where a simulator error names a policy field, the user typed a flag.
FLAG_OF = {
    "num_blocks": "--num-blocks",
    "block_size": "--block-size",
    "max_num_seqs": "--max-num-seqs",
    "max_num_batched_tokens": "--max-num-batched-tokens",
    "slots": "--slots",
    "step_time": "--step-time",
    "tp": "--tp",
    "prompt_tokens": "--prompt-tokens",
    "chunked_prefill": "--chunked-prefill",
    "reserve_full_prompt": "--no-reserve-full-prompt",
    "async_scheduling": "--no-async-scheduling",
    "null_block": "--no-null-block",
    "model": "--model",
    "gpu": "--gpu",
    "kv_dtype": "--kv-dtype",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--workload",
        metavar="FILE.csv",
        help="a trace: output_tokens, optional prompt_tokens and arrival_time (s)",
    )
    source.add_argument(
        "--requests",
        type=whole_number("--requests"),
        metavar="N",
        help="generate N requests",
    )
    parser.add_argument("--output-tokens", metavar="SPEC", help=f"output lengths: {DISTRIBUTION_SYNTAX}")
    parser.add_argument("--prompt-tokens", metavar="SPEC", help="prompt lengths (same syntax)")
    parser.add_argument(
        "--arrival-rate",
        type=number("--arrival-rate"),
        metavar="R",
        help="Poisson arrivals, R requests per second (default: all at t = 0)",
    )
    parser.add_argument(
        "--arrival-cv",
        type=number("--arrival-cv"),
        metavar="CV",
        help="gamma arrivals with this coefficient of variation (needs --arrival-rate)",
    )
    parser.add_argument(
        "--seed", type=whole_number("--seed"), default=0, help="seed of the generated workload"
    )
    parser.add_argument(
        "--slots",
        type=whole_number("--slots"),
        required=True,
        metavar="N",
        help="batch slots",
    )
    parser.add_argument(
        "--policy",
        default="static,continuous",
        metavar="LIST",
        help=f"comma-separated: {', '.join(registry.names())} (default: static,continuous)",
    )
    parser.add_argument("--model", metavar="NAME", help="catalog model (roofline, KV blocks)")
    parser.add_argument("--gpu", metavar="NAME", help="catalog GPU (roofline, KV blocks)")
    parser.add_argument("--kv-dtype", default="auto", help="KV cache dtype for --model (default auto)")
    parser.add_argument(
        "--tp",
        type=whole_flag("--tp", 1, limits.MAX_TP),
        default=1,
        metavar="N",
        help="tensor parallel GPUs per replica (with --model and --gpu): weights, KV "
        "heads and FLOPs split as the KV calculator splits them, plus two "
        "all-reduces per layer over the catalog's GPU link (default 1)",
    )
    parser.add_argument(
        "--step-time",
        default="unit",
        metavar="MODEL",
        help="unit[:SECONDS] | roofline (a lower bound) | calibrated:FILE (the "
        "roofline fitted to a bench JSON or a per-operator CSV: batch, context, "
        "prefill, seconds) | measured:FILE (default unit, 0.02 s/step)",
    )
    parser.add_argument(
        "--max-wait",
        type=number("--max-wait"),
        metavar="S",
        help="static: launch a partial group once its oldest waited S seconds",
    )
    parser.add_argument(
        "--num-blocks",
        type=whole_number("--num-blocks"),
        metavar="N",
        help="paged: KV blocks (default: the KV calculator's for --model on --gpu)",
    )
    parser.add_argument(
        "--block-size",
        type=whole_number("--block-size"),
        default=16,
        metavar="N",
        help="paged: tokens per block",
    )
    parser.add_argument(
        "--max-num-seqs",
        type=whole_number("--max-num-seqs"),
        metavar="N",
        help="paged: running requests at most",
    )
    parser.add_argument(
        "--max-num-batched-tokens",
        type=whole_number("--max-num-batched-tokens"),
        metavar="N",
        help="paged: tokens per step at most",
    )
    parser.add_argument("--chunked-prefill", action="store_true", help="paged: Sarathi-style chunks")
    rules = parser.add_argument_group(
        "vLLM's rules",
        f"paged runs vLLM {VLLM_VERSION}'s V1 scheduler as shipped; each flag turns one rule off. "
        "With --no-reserve-full-prompt --no-async-scheduling it is V1's synchronous scheduler "
        "before the full-prompt gate (vLLM PR #37307); add --no-null-block for every block usable.",
    )
    rules.add_argument(
        "--no-reserve-full-prompt",
        dest="reserve_full_prompt",
        action="store_false",
        help="admit on the first chunk's blocks, not the whole prompt's (vLLM's scheduler_reserve_full_isl)",
    )
    rules.add_argument(
        "--no-async-scheduling",
        dest="async_scheduling",
        action="store_false",
        help="schedule each step after the last one's tokens are back (a finished request frees its "
        "seat and blocks one step sooner)",
    )
    rules.add_argument(
        "--no-null-block",
        dest="null_block",
        action="store_false",
        help="every one of --num-blocks is usable (vLLM keeps one back)",
    )
    rules.add_argument(
        "--allow-empty-prompt",
        action="store_true",
        help="run requests without a prompt token (vLLM refuses them)",
    )
    parser.add_argument(
        "--replicas",
        type=whole_flag("--replicas", 1, 4096),
        default=1,
        metavar="N",
        help="N copies of the engine, each with its own scheduler and KV pool, behind --router (default 1)",
    )
    parser.add_argument(
        "--router",
        default="round_robin",
        choices=("round_robin", "random", "least_outstanding", "shared_queue"),
        help="how --replicas share the requests: round_robin (request i to replica "
        "i mod N), random (seeded by --seed), least_outstanding (fewest sent "
        "and unfinished at its arrival) or shared_queue (one FCFS line; a replica "
        "takes the head when its scheduler can admit it); the last two need a step "
        "time and a paged, prefill_first or continuous policy; default round_robin",
    )
    parser.add_argument("--json", action="store_true", help='print {"policies": {...}} as JSON')
    parser.add_argument(
        "--requests-csv",
        metavar="FILE",
        help="write one row per request per policy: arrival, scheduled, first token, "
        "finish (seconds, or steps without a step time), preemptions, restarts; "
        f"at most {export.MAX_CSV_ROWS:,} rows",
    )
    parser.add_argument(
        "--trace",
        metavar="FILE",
        help="write a Chrome/Perfetto trace (JSON) of the simulated timeline: a track "
        f"per slot, a process per policy and replica; at most {export.MAX_TRACE_STAYS:,} "
        "slot stays",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="let --requests-csv and --trace overwrite a file already there (never a link, "
        "device, pipe or folder: those are refused)",
    )


def run(args: argparse.Namespace) -> int:
    if args.tp > 1 and not (args.model and args.gpu):
        raise UserError(
            "tensor parallelism needs --model and --gpu (it splits the model over the catalog GPU)",
            field="--tp",
        )
    section = section_of(args)
    _check_files(args)  # before minutes of simulating: a file there, a link, a device
    with blame_flag("--workload", FLAG_OF_FIELD):
        workload = wl.build_workload(section.workload, Path())
    # Every policy is built before any runs, so a flag mistake is reported before minutes of work.
    with blame_flag("--step-time", FLAG_OF):
        kind, _, rest = args.step_time.partition(":")
        step_time = step_time_from(section.step_time, None, Path(rest) if kind == "measured" else None)
    with blame_flag("--policy", FLAG_OF):
        policies = {name: policy_of(name, section) for name in section.policies}
    if args.replicas != 1:
        return _run_replicas(args, workload, policies, step_time)
    results: dict[str, Any] = {}
    for name, policy in policies.items():
        try:
            results[name] = batching.simulate(workload, policy, slots=args.slots, step_time=step_time)
        except UserError as err:
            raise UserError(err.message, field=FLAG_OF.get(err.field or "", err.field)) from None

    everyone = np.arange(workload.n)
    _write_files(
        args, [Run(name, None, r, everyone, workload.arrival_time, step_time) for name, r in results.items()]
    )
    if args.json:
        doc = {"policies": {name: r.to_dict(timeline=False) for name, r in results.items()}}
        print(json.dumps(doc, indent=2, sort_keys=True))
    else:
        print(_table(workload, results, step_time))
    return 0


def _run_replicas(args: argparse.Namespace, workload: Any, policies: dict[str, Any], step_time: Any) -> int:
    clusters: dict[str, Any] = {}
    runs: list[Any] = []
    for name, policy in policies.items():
        try:
            cluster = simulate_replicas(
                workload,
                policy,
                slots=args.slots,
                step_time=step_time,
                replicas=args.replicas,
                router=args.router,
                seed=args.seed,
            )
        except UserError as err:
            field = {"replicas": "--replicas", "router": "--router"}.get(err.field or "")
            raise UserError(err.message, field=field or FLAG_OF.get(err.field or "", err.field)) from None
        clusters[name] = cluster.to_dict()
        for j, r in enumerate(cluster.replicas):
            if r is not None:
                mine = np.flatnonzero(cluster.replica_of == j)
                runs.append(Run(name, j, r, mine, workload.arrival_time[mine], step_time))
    _write_files(args, runs)
    if args.json:
        print(json.dumps({"policies": clusters}, indent=2, sort_keys=True))
        return 0
    lines = [
        f"{workload.n:,} requests over {args.replicas} replicas, router {args.router}",
        f"step time: {_describe(step_time) if step_time is not None else 'none (steps)'}",
        "",
    ]
    width = max(11, *(len(n) + 2 for n in clusters))
    lines.append(
        f"{'policy':<{width}}{'replica':>8}{'requests':>10}{'seconds':>11}{'req/s':>10}"
        f"{'TTFT p50':>11}{'TTFT p99':>11}{'e2e p50':>11}{'e2e p99':>11}{'preempt':>9}"
    )

    def row(name: str, which: str, d: dict[str, Any]) -> str:
        lat = d["latency"]
        cells = [lat.get(k, {}).get(q, float("nan")) for k in ("ttft", "e2e") for q in ("p50", "p99")]
        seconds = d.get("makespan_seconds")
        rps = d.get("requests_per_second")
        return (
            f"{name:<{width}}{which:>8}{d['requests']:>10,}"
            f"{'-' if seconds is None else _number(seconds):>11}{'-' if rps is None else _number(rps):>10}"
            + "".join(f"{_number(x):>11}" for x in cells)
            + f"{d['preemptions']:>9,}"
        )

    for name, d in clusters.items():
        lines.append(row(name, "all", d))
        for j, rep in enumerate(d["per_replica"]):
            if rep is not None:
                rep = {**rep, "latency": {k: v for k, v in rep["latency"][d["latency_unit"]].items()}}
                lines.append(row("", str(j), rep))
    lines.append(
        f"(latencies in {next(iter(clusters.values()))['latency_unit']}; 'all' = the "
        "cluster: every request, the slowest replica's makespan)"
    )
    print("\n".join(lines))
    return 0


def _write_files(args: argparse.Namespace, runs: list[Any]) -> None:
    """--requests-csv and --trace, each refused whole (before writing) when over its cap."""
    if args.requests_csv:
        export.write_requests_csv(args.requests_csv, runs, force=args.force)
    if args.trace:
        export.write_trace(args.trace, runs, force=args.force)


def _check_files(args: argparse.Namespace) -> None:
    for flag, path in (("--requests-csv", args.requests_csv), ("--trace", args.trace)):
        if path:
            export.check_target(path, force=args.force, flag=flag)


# ---- inputs -------------------------------------------------------------------------------------


# The flag of each field of the batching section the flags build: an error names the flag.
FLAGS = {
    "slots": "--slots",
    "workload": "--workload",
    "workload.requests": "--requests",
    "workload.output_tokens": "--output-tokens",
    "workload.prompt_tokens": "--prompt-tokens",
    "workload.arrivals": "--arrival-rate",
    "workload.arrivals.cv": "--arrival-cv",
    "workload.seed": "--seed",
    "policies": "--policy",
    "step_time": "--step-time",
    "step_time.kv_dtype": "--kv-dtype",
    "step_time.tp": "--tp",
    "paged": "--num-blocks",
    "paged.block_size": "--block-size",
    "paged.max_num_seqs": "--max-num-seqs",
    "paged.max_num_batched_tokens": "--max-num-batched-tokens",
    "static_max_wait": "--max-wait",
}
# Which flag set each field of a generated workload, where drawing it fails.
FLAG_OF_FIELD = {"arrivals.rate": "--arrival-rate"}


def section_of(args: argparse.Namespace) -> Any:
    """The flags as the batching section of a spec: the same models, the same limits, and an
    error that names the flag."""
    step_time = _step_time(args)
    names = _policy_names(args.policy)
    data: dict[str, Any] = {"slots": args.slots, "workload": _workload(args), "policies": names}
    data["step_time"] = step_time
    if args.max_wait is not None:
        data["static_max_wait"] = args.max_wait
    blocks = _num_blocks(names, args)
    if blocks is not None:
        data["paged"] = {
            "num_blocks": blocks,
            "block_size": args.block_size,
            "chunked_prefill": args.chunked_prefill,
            "reserve_full_prompt": args.reserve_full_prompt,
            "async_scheduling": args.async_scheduling,
            "null_block": args.null_block,
            "allow_empty_prompt": args.allow_empty_prompt,
            **given(args, ("max_num_seqs", "max_num_batched_tokens")),
        }
    return validate_flags(
        BatchingSection,
        data,
        flags=FLAGS,
        required={"workload.output_tokens": "--requests needs --output-tokens"},
    )


def _workload(args: argparse.Namespace) -> dict[str, Any]:
    """The workload as a spec writes it: a trace, or requests to draw."""
    if args.workload:
        for flag in ("output_tokens", "prompt_tokens", "arrival_rate", "arrival_cv"):
            if getattr(args, flag) is not None:
                raise UserError(
                    "only with --requests (a trace has its own)", field="--" + flag.replace("_", "-")
                )
        return {"trace": args.workload}
    if args.arrival_cv is not None and args.arrival_rate is None:
        raise UserError("needs --arrival-rate", field="--arrival-cv")
    data: dict[str, Any] = {"requests": args.requests, "seed": args.seed}
    # the distribution syntax, as a spec writes it
    data.update(given(args, ("output_tokens", "prompt_tokens")))
    if args.arrival_cv is not None:
        data["arrivals"] = {"kind": "gamma", "rate": args.arrival_rate, "cv": args.arrival_cv}
    elif args.arrival_rate is not None:
        data["arrivals"] = {"kind": "poisson", "rate": args.arrival_rate}
    return data


def _policy_names(text: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise UserError(
            f"unknown policy {text!r}; choose from {', '.join(registry.names())}", field="--policy"
        )
    for name in names:
        registry.kind(name, field="--policy")
    return list(dict.fromkeys(names))


def _step_time(args: argparse.Namespace) -> dict[str, Any]:
    """The step-time model as a spec writes it: the --step-time syntax is the command line's
    own, the values are the model's to check."""
    kind, _, rest = args.step_time.partition(":")
    if kind == "unit":
        try:
            seconds: float | str = float(rest) if rest else DEFAULT_SECONDS_PER_STEP
        except ValueError:
            seconds = rest  # for the model to refuse in its own words
        return {"kind": "unit", "seconds_per_step": seconds}
    if kind in ("roofline", "calibrated"):
        if not (args.model and args.gpu):
            needs = {"roofline": "", "calibrated": " (the roofline it calibrates)"}[kind]
            raise UserError(f"{kind} needs --model and --gpu{needs}", field="--step-time")
        spec = {"kind": kind, "model": args.model, "gpu": args.gpu, "kv_dtype": args.kv_dtype, "tp": args.tp}
        if kind == "calibrated":
            if not rest:
                raise UserError("give the measurements, as calibrated:FILE", field="--step-time")
            spec["file"] = rest
        return spec
    if kind == "measured":
        if not rest:
            raise UserError("give the benchmark file, as measured:FILE", field="--step-time")
        return {"kind": "measured"}
    raise UserError(
        f"unknown step-time model {kind!r}; use unit[:SECONDS], roofline, calibrated:FILE or measured:FILE",
        field="--step-time",
    )


def _num_blocks(names: list[str], args: argparse.Namespace) -> int | None:
    """The KV pool of the block-keeping policies: --num-blocks, or the catalog's for --model on
    --gpu; None when no policy asked for one needs it."""
    if (args.model is None) != (args.gpu is None):
        raise UserError("--model and --gpu go together", field="--model" if args.model is None else "--gpu")
    if args.num_blocks is not None:
        return int(args.num_blocks)
    needing = [name for name in names if registry.kind(name).needs_blocks]
    if not needing:
        return None
    if not args.model:
        name = needing[0]
        raise UserError(
            f"{name} needs a KV cache size: give --num-blocks N, or --model NAME "
            f"--gpu NAME to size it from the catalog, or leave {name} out of --policy",
            field="--num-blocks",
        )

    with blame_flag("--model", FLAG_OF):
        return num_blocks_from_catalog(args.model, args.gpu, args.block_size, args.kv_dtype, tp=args.tp)


# ---- output -------------------------------------------------------------------------------------


def _table(workload: Any, results: dict[str, Any], step_time: Any) -> str:
    s = workload.summary()
    width = max(11, *(len(name) + 2 for name in results))
    lines = [
        f"{s['requests']:,} requests from {s['source']}: {s['total_output_tokens']:,} output tokens "
        f"(mean {s['mean']:,.1f}, longest {s['longest']:,})"
        + (f", prompts mean {s['mean_prompt']:,.1f}" if workload.has_prompts else ""),
        f"step time: {_describe(step_time)}",
        "",
        f"{'policy':<{width}}{'steps':>11}{'seconds':>11}{'util':>8}{'tok/step':>10}{'req/s':>10}"
        f"{'TTFT p50':>11}{'TTFT p99':>11}{'e2e p50':>11}{'e2e p99':>11}{'preempt':>9}",
    ]
    for name, r in results.items():
        lat = r.latency.seconds or r.latency.steps
        q = {k: _quantiles(v) for k, v in lat.items()}
        seconds = "-" if r.makespan_seconds is None else _number(r.makespan_seconds)
        rps = "-" if r.requests_per_second is None else _number(r.requests_per_second)
        latencies = "".join(f"{_number(x):>11}" for x in (*q["ttft"], *q["e2e"]))
        lines.append(
            f"{name:<{width}}{r.steps:>11,}{seconds:>11}{r.utilisation:>8.1%}"
            f"{_number(r.throughput_tokens_per_step):>10}{rps:>10}{latencies}{r.preemptions:>9,}"
        )
    unit = "seconds" if step_time is not None else "steps"
    lines.append(f"(latencies in {unit}; utilisation = tokens / (slots × steps))")
    if "static" in results and "continuous" in results:
        multiple = throughput_multiple(results["static"], results["continuous"])
        lines.append(f"continuous vs static: {multiple:,.2f}x the throughput")
    return "\n".join(lines)


def _number(value: float) -> str:
    """A figure for people: whole units with thousands separators from 1,000 up, three
    significant digits below, never an exponent: 1630.4 → '1,630', 115.94 → '116',
    12.345 → '12.3', 0.0213 → '0.0213', 0.5 → '0.500'."""
    if not math.isfinite(value):
        return "-"
    if value == 0:
        return "0"
    if abs(value) >= 999.5:  # whole units from here on: 1,234,568, not 1,230,000
        return f"{value:,.0f}"
    value = float(f"{value:.3g}")  # round first, so 0.9996 is '1.00', not '1.000'
    decimals = max(0, 2 - math.floor(math.log10(abs(value))))
    return f"{value:,.{decimals}f}"


def _quantiles(values: Any) -> tuple[float, float]:
    finite = values[np.isfinite(values)]
    if len(finite) == 0:
        return float("nan"), float("nan")
    p50, p99 = np.percentile(finite, [50, 99])
    return float(p50), float(p99)


def _describe(step_time: Any) -> str:
    info = step_time.describe()
    if info["kind"] == "unit":
        return f"unit, {info['seconds_per_step'] * 1000:,g} ms per step"
    if info["kind"] == "roofline":
        return (
            f"roofline, {info['weights_bytes'] / 2**30:,.1f} GiB weights at "
            f"{info['hbm_bytes_per_s'] / 1e12:,.2f} TB/s (a lower bound: peak rates, no "
            "attention FLOPs, no kernel overheads)"
        )
    if info["kind"] == "calibrated":
        return (
            f"calibrated roofline, fitted to {info['points']:,} measured steps: "
            f"{info['memory_efficiency']:.0%} of HBM bandwidth, {info['flops_efficiency']:.0%} of "
            f"peak FLOP/s, {info['kernel_seconds_per_layer'] * 1e6:,.1f} µs per layer; fit error "
            f"{info['rmse_s'] * 1000:.3g} ms rms, {info['max_relative_error']:.1%} at worst"
        )
    return (
        f"measured fit over {info['points']:,} points: {info['intercept_s'] * 1000:.2f} ms + "
        f"{info['per_token_s'] * 1e6:.2f} µs/token + {info['per_context_token_s'] * 1e9:.2f} ns/KV token"
    )
