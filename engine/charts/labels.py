"""Where a chart's numbers came from, said the same way on every chart.

Every number on a post is labelled calculated, simulated, or measured on a named device; the
results carry that word under each section's "source", and these functions add the few inputs
a reader needs to weigh it (how many requests, how many slots, which model and card).
"""

from __future__ import annotations

from typing import Any

from engine import numbers
from engine.charts.style import gib


def section(results: dict[str, Any], key: str, chart: str) -> dict[str, Any]:
    """results[key], or a ValueError saying which chart needed it (the pipeline asks only for
    charts whose data exist, so reaching this is a bug in the spec-to-chart wiring)."""
    value = results.get(key)
    if not value:
        raise ValueError(f"chart '{chart}' needs the '{key}' section in results, which is absent")
    return value


def batching_source(batching: dict[str, Any]) -> str:
    """'simulated, 200 requests, 16 slots' or 'measured on NVIDIA H100 80GB HBM3, …'."""
    parts = [str(batching.get("source", "simulated"))]
    requests = (batching.get("workload") or {}).get("requests")
    if requests is not None:
        parts.append(f"{requests:,} requests")
    if batching.get("slots") is not None:
        parts.append(f"{batching['slots']} slots")
    return ", ".join(parts)


def view_label(view: dict[str, Any]) -> str:
    """'7B-class, 80 GiB GPU' from a KV view: the model and the card's memory."""
    model = view.get("model", {}).get("name", "model")
    gpu = view.get("gpu", {})
    memory = gpu.get("memory_bytes")
    card = f"{gib(memory)} {gpu.get('name', 'GPU')}" if memory else gpu.get("name", "GPU")
    return view.get("label") or f"{model} on {card}"


def kv_source(kv: dict[str, Any]) -> str:
    """'calculated: 7B-class on 80 GiB H100, 64 GiB for the KV cache'."""
    main = kv["main"]
    budget = main["plan"].get("kv_memory_bytes")
    tail = f", {gib(budget)} for the KV cache" if budget else ""
    return f"{kv.get('source', 'calculated')}: {view_label(main)}{tail}"


def queueing_source(queueing: dict[str, Any], detail: str = "") -> str:
    """'simulated' plus what was simulated, e.g. '2 servers at 90% load'."""
    source = str(queueing.get("source", "simulated"))
    return f"{source}, {detail}" if detail else source


def model_name(view: dict[str, Any]) -> str:
    """'Llama-3-8B': the calculator's display name for the view's model, else the spec's name."""
    return view.get("plan", {}).get("model_label") or view.get("model", {}).get("name") or "model"


def budget_phrase(view: dict[str, Any]) -> str:
    """How a view's KV budget was worked out: "vLLM's accounting (90% of GPU memory)", or ''."""
    budget = view.get("budget") or view.get("plan", {}).get("budget") or {}
    if budget.get("kind") == "vllm":
        share = budget.get("gpu_memory_utilization")
        return "vLLM accounting" + (f" at {numbers.pct(share, 0)} of GPU memory" if share else "")
    if budget.get("kind") == "reserve" and budget.get("reserve_gib") is not None:
        return f"{numbers.setting(budget['reserve_gib'])} GiB reserved"
    return ""


def compare_source(kv: dict[str, Any]) -> str:
    """Where the compare views' numbers came from, one clause for all of them:
    'compare views: Llama-2-7B and Llama-3-8B, vLLM accounting at 90% of GPU memory'; ''
    when there are none. Views with the same budget share one clause; the section's source
    (calculated, …) covers them too and is said on the main view's line."""
    groups: dict[str, list[str]] = {}
    for view in kv.get("compare", []):
        phrase = budget_phrase(view)
        groups.setdefault(phrase, []).append(model_name(view) if phrase else view_label(view))
    if not groups:
        return ""
    clauses = []
    for phrase, names in groups.items():
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        clauses.append(f"{listed}, {phrase}" if phrase else listed)
    return "compare views: " + "; ".join(clauses)
