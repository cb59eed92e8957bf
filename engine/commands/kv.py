"""``python -m engine kv``: how many requests fit in the KV cache of one model on one GPU.

A readable table by default; ``--json`` prints the whole plan as one object.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, get_args

from engine.experiments.kv_cache import BUDGET_SPECS, KvCacheSection, WeightDtype, gpu_of, model_of, plan_of
from engine.kvcache import DEFAULT_BLOCK_SIZE, DEFAULT_CONTEXTS, KV_DTYPES
from engine.units import GIB
from engine.validation import blame_flag, given, number, validate_flags, whole_number

# The flag of each field of the kv_cache section the flags build: an error names the flag.
FLAGS = {
    "model": "--model",
    "gpu": "--gpu",
    "gpu.memory_gib": "--gpu-memory-gib",
    "budget": "--budget",
    "budget.reserve_gib": "--reserve-gib",
    "budget.gpu_memory_utilization": "--gpu-util",
    "budget.max_num_batched_tokens": "--max-num-batched-tokens",
    "budget.non_torch_gib": "--non-torch-gib",
    "budget.kv_memory_gib": "--kv-memory-gib",
    "kv_dtype": "--kv-dtype",
    "weight_dtype": "--weight-dtype",
    "tp": "--tp",
    "block_size": "--block-size",
    "max_model_len": "--max-model-len",
    "contexts": "--context",
}
# The calculator's own field names, where it refuses a combination the models cannot see.
FLAG_OF_PLAN_FIELD = {
    "tp": "--tp",
    "kv_dtype": "--kv-dtype",
    "block_size": "--block-size",
    "max_model_len": "--max-model-len",
    "max_num_batched_tokens": "--max-num-batched-tokens",
    "gpu_util": "--gpu-util",
    "weight_dtype": "--weight-dtype",
    "context": "--context",
    "reserve": "--reserve-gib",
    "kv_memory": "--kv-memory-gib",
    "gpu": "--gpu",
    "gpu_memory": "--gpu-memory-gib",
}
# The lab's reserve for weights, activations and overhead, when --budget reserve names no other.
DEFAULT_RESERVE_GIB = 16.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        required=True,
        metavar="NAME|PATH",
        help="a catalog model (e.g. llama-3-8b) or a path to a Hugging Face config.json",
    )
    parser.add_argument("--gpu", metavar="NAME", help="a catalog GPU (e.g. a100-80gb, h100)")
    parser.add_argument(
        "--gpu-memory-gib",
        type=number("--gpu-memory-gib"),
        metavar="F",
        help="GPU memory in GiB, instead of (or overriding) the catalog's figure",
    )
    parser.add_argument(
        "--budget",
        choices=[get_args(b.model_fields["kind"].annotation)[0] for b in BUDGET_SPECS],
        help="reserve: memory minus --reserve-gib (the lab's); vllm: vLLM's own "
        "accounting estimated from the card (default); given: --kv-memory-gib as given",
    )
    parser.add_argument(
        "--reserve-gib",
        type=number("--reserve-gib"),
        metavar="F",
        help=f"reserve for weights, activations and overhead (default {DEFAULT_RESERVE_GIB:g})",
    )
    parser.add_argument(
        "--gpu-util",
        type=number("--gpu-util"),
        metavar="F",
        help="vLLM's gpu_memory_utilization (default 0.9)",
    )
    parser.add_argument(
        "--kv-memory-gib",
        type=number("--kv-memory-gib"),
        metavar="F",
        help="the KV budget per GPU as given, e.g. vLLM's 'Available KV cache memory' log line",
    )
    parser.add_argument(
        "--kv-dtype", default="auto", choices=KV_DTYPES, help="KV cache dtype (auto = the model's)"
    )
    parser.add_argument(
        "--weight-dtype",
        choices=get_args(WeightDtype),
        help="weights' storage, for their share (default: the checkpoint's)",
    )
    parser.add_argument(
        "--tp", type=whole_number("--tp"), default=1, metavar="N", help="tensor-parallel GPUs"
    )
    parser.add_argument(
        "--block-size",
        type=whole_number("--block-size"),
        default=DEFAULT_BLOCK_SIZE,
        metavar="N",
        help=f"tokens per KV block (default {DEFAULT_BLOCK_SIZE})",
    )
    parser.add_argument(
        "--max-model-len",
        type=whole_number("--max-model-len"),
        metavar="N",
        help="longest context served (default: the model's)",
    )
    parser.add_argument(
        "--max-num-batched-tokens",
        type=whole_number("--max-num-batched-tokens"),
        metavar="N",
        help="vllm budget: tokens of the profiling pass and of a prefill chunk",
    )
    parser.add_argument(
        "--non-torch-gib",
        type=number("--non-torch-gib"),
        metavar="F",
        help="vllm budget: memory outside PyTorch (default: estimated)",
    )
    parser.add_argument(
        "--context",
        type=whole_number("--context"),
        nargs="+",
        metavar="N",
        default=list(DEFAULT_CONTEXTS),
        help="context lengths to tabulate, increasing",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def section_of(args: argparse.Namespace) -> Any:
    """The flags as the kv_cache section of a spec: the same model, the same limits, and an
    error that names the flag."""
    data: dict[str, Any] = {
        "model": args.model,
        "budget": _budget(args),
        "kv_dtype": args.kv_dtype,
        "tp": args.tp,
        "block_size": args.block_size,
        "contexts": args.context,
    }
    if args.gpu is not None:
        data["gpu"] = {"catalog": args.gpu}
        if args.gpu_memory_gib is not None:
            data["gpu"]["memory_gib"] = args.gpu_memory_gib
    elif args.gpu_memory_gib is not None:
        data["gpu"] = {"name": "custom", "memory_gib": args.gpu_memory_gib}
    data.update(given(args, ("max_model_len", "weight_dtype")))
    return validate_flags(
        KvCacheSection,
        data,
        flags=FLAGS,
        required={"gpu": "name a GPU (--gpu) or give its memory (--gpu-memory-gib)"},
    )


def _budget(args: argparse.Namespace) -> dict[str, Any]:
    """The budget the flags describe; a flag of another kind of budget is left in, for the model
    to refuse by name."""
    given = {
        "reserve_gib": args.reserve_gib,
        "gpu_memory_utilization": args.gpu_util,
        "max_num_batched_tokens": args.max_num_batched_tokens,
        "non_torch_gib": args.non_torch_gib,
        "kv_memory_gib": args.kv_memory_gib,
    }
    budget: dict[str, Any] = {key: value for key, value in given.items() if value is not None}
    if args.budget is not None:
        kind = args.budget
    elif args.kv_memory_gib is not None:
        kind = "given"
    else:
        kind = "reserve" if args.reserve_gib is not None else "vllm"
    if kind == "reserve":
        budget.setdefault("reserve_gib", DEFAULT_RESERVE_GIB)
    return {"kind": kind, **budget}


def run(args: argparse.Namespace) -> int:
    section = section_of(args)
    with blame_flag("--model"):
        model = model_of(section.model, None)
    with blame_flag("--gpu"):
        _, memory, gpu = gpu_of(section.gpu)
    with blame_flag("--model", FLAG_OF_PLAN_FIELD):
        plan = plan_of(section, model, memory, section.contexts)
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
