"""``python -m engine kv``: how many requests fit in the KV cache of one model on one GPU.

A readable table by default; ``--json`` prints the whole plan as one object.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from engine import limits
from engine.errors import UserError
from engine.limits import number_flag, whole_flag
from engine.units import GIB


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from engine.kvcache import DEFAULT_BLOCK_SIZE, DEFAULT_CONTEXTS, KV_DTYPES

    parser.add_argument(
        "--model",
        required=True,
        metavar="NAME|PATH",
        help="a catalog model (e.g. llama-3-8b) or a path to a Hugging Face config.json",
    )
    parser.add_argument("--gpu", metavar="NAME", help="a catalog GPU (e.g. a100-80gb, h100)")
    parser.add_argument(
        "--gpu-memory-gib",
        type=number_flag("--gpu-memory-gib", 0, 2**20, open_low=True),
        metavar="F",
        help="GPU memory in GiB, instead of (or overriding) the catalog's figure",
    )
    parser.add_argument(
        "--budget",
        choices=("reserve", "vllm"),
        help="reserve: memory minus --reserve-gib (the lab's); vllm: vLLM's own "
        "accounting estimated from the card (default)",
    )
    parser.add_argument(
        "--reserve-gib",
        type=number_flag("--reserve-gib", 0, 2**20),
        metavar="F",
        help="reserve for weights, activations and overhead (default 16)",
    )
    parser.add_argument(
        "--gpu-util",
        type=number_flag("--gpu-util", 0, 1, open_low=True),
        metavar="F",
        help="vLLM's gpu_memory_utilization (default 0.9)",
    )
    parser.add_argument(
        "--kv-memory-gib",
        type=number_flag("--kv-memory-gib", 0, 2**20, open_low=True),
        metavar="F",
        help="the KV budget per GPU as given, e.g. vLLM's 'Available KV cache memory' log line",
    )
    parser.add_argument(
        "--kv-dtype", default="auto", choices=KV_DTYPES, help="KV cache dtype (auto = the model's)"
    )
    parser.add_argument(
        "--weight-dtype",
        choices=("fp16", "bf16", "fp8", "int8", "int4"),
        help="weights' storage, for their share (default: the checkpoint's)",
    )
    parser.add_argument(
        "--tp", type=whole_flag("--tp", 1, limits.MAX_TP), default=1, metavar="N", help="tensor-parallel GPUs"
    )
    parser.add_argument(
        "--block-size",
        type=whole_flag("--block-size", 1, limits.MAX_BLOCK_SIZE),
        default=DEFAULT_BLOCK_SIZE,
        metavar="N",
        help=f"tokens per KV block (default {DEFAULT_BLOCK_SIZE})",
    )
    parser.add_argument(
        "--max-model-len",
        type=whole_flag("--max-model-len", 1, limits.MAX_CONTEXT_TOKENS),
        metavar="N",
        help="longest context served (default: the model's)",
    )
    parser.add_argument(
        "--max-num-batched-tokens",
        type=whole_flag("--max-num-batched-tokens", 1, limits.MAX_CONTEXT_TOKENS),
        metavar="N",
        help="vllm budget: tokens of the profiling pass and of a prefill chunk",
    )
    parser.add_argument(
        "--non-torch-gib",
        type=number_flag("--non-torch-gib", 0, 2**20),
        metavar="F",
        help="vllm budget: memory outside PyTorch (default: estimated)",
    )
    parser.add_argument(
        "--context",
        type=whole_flag("--context", 1, limits.MAX_CONTEXT_TOKENS),
        nargs="+",
        metavar="N",
        default=list(DEFAULT_CONTEXTS),
        help="context lengths to tabulate",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


# No device holds a pebibyte; a larger figure is a typo (and inf/nan are not sizes).
MAX_GIB = 2**20


def _gib(value: float, flag: str) -> int:
    if not math.isfinite(value) or value <= 0 or value > MAX_GIB:
        raise UserError(f"must be a positive size up to {MAX_GIB:,} GiB, got {value:g}", field=flag)
    return int(round(value * GIB))


def _budget(args: argparse.Namespace) -> Any:
    from engine.kvcache import GivenBudget, ReserveBudget, VllmBudget

    if args.kv_memory_gib is not None:
        if args.budget is not None:
            raise UserError(
                "--kv-memory-gib takes the KV budget as given; drop --budget", field="--kv-memory-gib"
            )
        return GivenBudget(_gib(args.kv_memory_gib, "--kv-memory-gib"))
    kind = args.budget or ("reserve" if args.reserve_gib is not None else "vllm")
    vllm_only = {
        "--gpu-util": args.gpu_util,
        "--max-num-batched-tokens": args.max_num_batched_tokens,
        "--non-torch-gib": args.non_torch_gib,
    }
    if kind == "reserve":
        stray = [flag for flag, value in vllm_only.items() if value is not None]
        if stray:
            raise UserError("applies to the vllm budget, not to reserve", field=stray[0])
        return ReserveBudget(_gib(16.0 if args.reserve_gib is None else args.reserve_gib, "--reserve-gib"))
    if args.reserve_gib is not None:
        raise UserError("applies to the reserve budget, not to vllm", field="--reserve-gib")
    return VllmBudget(
        gpu_memory_utilization=0.9 if args.gpu_util is None else args.gpu_util,
        max_num_batched_tokens=args.max_num_batched_tokens,
        non_torch_bytes=_non_torch(args.non_torch_gib),
    )


def _non_torch(value: float | None) -> int | None:
    if value is not None and value < 0:
        raise UserError(f"must not be negative, got {value:g}", field="--non-torch-gib")
    return None if value is None else int(round(value * GIB))


def run(args: argparse.Namespace) -> int:
    from engine.catalog import load_gpu, load_model
    from engine.kvcache import plan_kv_cache

    model = load_model(args.model)
    gpu = load_gpu(args.gpu) if args.gpu else None
    if gpu is None and args.gpu_memory_gib is None:
        raise UserError("name a GPU (--gpu) or give its memory (--gpu-memory-gib)", field="--gpu")
    if args.gpu_memory_gib is not None:
        memory = _gib(args.gpu_memory_gib, "--gpu-memory-gib")
    else:
        assert gpu is not None  # refused above without one
        memory = gpu.memory_bytes
    plan = plan_kv_cache(
        model,
        memory,
        _budget(args),
        kv_dtype=args.kv_dtype,
        tp=args.tp,
        block_size=args.block_size,
        contexts=args.context,
        max_model_len=args.max_model_len,
        weight_dtype=args.weight_dtype,
    )
    gpu_info = {
        "name": gpu.name if gpu else "custom",
        "display_name": gpu.display_name if gpu else f"{memory / GIB:.2f} GiB GPU",
        "memory_bytes": memory,
        "memory_source": ("--gpu-memory-gib" if args.gpu_memory_gib is not None else "catalog"),
    }
    if args.json:
        data = plan.to_dict()
        data["gpu"] = gpu_info
        json.dump(data, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_table(plan, gpu_info))
    return 0


# ---------------------------------------------------------------------------------------------
# The readable table


def human_bytes(n: float) -> str:
    """Bytes in binary units, two decimals: 1.00 GiB, 512.00 KiB."""
    for unit, size in (("GiB", GIB), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:.0f} B"


def _budget_line(plan: Any) -> str:
    b = plan.budget
    if b["kind"] == "reserve":
        return f"reserve: {human_bytes(plan.gpu_memory_bytes)} − {human_bytes(b['reserve_bytes'])} reserved"
    if b["kind"] == "given":
        return f"given: {human_bytes(b['kv_memory_bytes'])} of KV cache per GPU"
    return (
        f"vllm: {b['gpu_memory_utilization']:g} × {human_bytes(plan.gpu_memory_bytes)} = "
        f"{human_bytes(b['requested_bytes'])}, less weights, the activation peak of a "
        f"profiling pass over {b['max_num_batched_tokens']:,} tokens "
        f"({human_bytes(b['activation_bytes'])}) and non-torch memory "
        f"({human_bytes(b['non_torch_bytes'])})"
        + (" (estimated)" if b["activation_estimated"] or b["non_torch_estimated"] else "")
    )


def render_table(plan: Any, gpu_info: dict[str, Any]) -> str:
    a = plan.attention
    factor = "1 latent" if a["kind"] == "mla" else f"2 × {a['kv_heads_per_gpu']} KV heads"
    layers = f"{a['layers']} layers"
    if a["sliding_attention_layers"]:
        layers += f", {a['sliding_attention_layers']} of them sliding over {a['sliding_window']:,} tokens"
    lines = [
        f"{plan.model_label} on {gpu_info['display_name']} "
        f"({human_bytes(plan.gpu_memory_bytes)} reported), TP {plan.tp}",
        f"Budget       {_budget_line(plan)}",
        f"KV / token   {plan.bytes_per_token:,} B ({human_bytes(plan.bytes_per_token)}) per GPU = "
        f"{factor} × {a['head_dim']} dims × {plan.kv_dtype_bytes:g} B ({plan.kv_dtype}) × {layers}",
        f"KV budget    {human_bytes(plan.kv_memory_bytes)} → {plan.num_blocks:,} blocks of "
        f"{plan.block_size} tokens = {plan.kv_tokens:,} tokens",
        "",
        "Where the memory goes (per GPU)",
    ]
    br = plan.breakdown
    for label, value in (
        ("weights", br.weights_bytes),
        ("activations + overhead", br.activation_and_overhead_bytes),
        ("KV cache", br.kv_cache_bytes),
        ("unused", br.unused_bytes),
    ):
        lines.append(f"  {label:<24}{human_bytes(value):>12}{100 * value / br.total_bytes:>8.1f} %")
    lines.append(f"  {'total':<24}{human_bytes(br.total_bytes):>12}")
    lines.append("")
    full = a["full_attention_layers"] > 0
    sliding = a["sliding_attention_layers"] > 0
    head = f"{'context':>9}"
    if full:
        head += f"{'blocks/request':>16}" if not sliding else f"{'full-layer blocks':>19}"
    if sliding:
        head += f"{'window blocks':>15}"
    head += f"{'per request':>14}{'requests':>10}"
    lines.append(head)
    beyond = False
    for row in plan.contexts:
        mark = " " if row.within_max_model_len else "*"
        beyond |= not row.within_max_model_len
        line = f"{row.context:>8,}{mark}"
        if full:
            line += f"{row.blocks_per_request:>{19 if sliding else 16},}"
        if sliding:
            line += f"{row.sliding_blocks_per_request:>15,}"
        line += f"{human_bytes(row.bytes_per_request):>14}{row.max_requests:>10,}"
        lines.append(line)
    if beyond:
        lines.append(f"* longer than the model's {plan.max_model_len:,}-token limit")
    lines.extend(f"note: {n}" for n in plan.notes)
    return "\n".join(lines) + "\n"
