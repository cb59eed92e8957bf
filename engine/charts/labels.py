"""Where a chart's numbers came from, said the same way on every chart.

Every number on a post is labelled calculated, simulated, or measured on a named device; the
results carry that word under each section's "source", and these functions add the few inputs
a reader needs to weigh it (how many requests, how many slots, which model and card).
"""
from __future__ import annotations

from typing import Any

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
