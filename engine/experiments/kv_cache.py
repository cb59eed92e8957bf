"""Memory caps the batch: the spec's kv_cache section through the KV-cache calculator.

The builders here (a model, a GPU and a budget from their spec models, then the plan) are the
only way from a kv_cache model to the calculator: the ``kv`` command builds the same models from
its flags and calls the same functions, so a flag and a YAML key cannot mean different things.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine import catalog, kvcache
from engine.render.review_tables import gib_cell, num_cell, source_kind
from engine.sections import Inputs, SpecLocation, blame, register_section
from engine.spec import (
    GivenBudgetSpec,
    GpuRef,
    KvCacheSection,
    KvView,
    ModelRef,
    ReserveBudgetSpec,
    VllmBudgetSpec,
)
from engine.units import gib_bytes


def model_of(ref: ModelRef, folder: Path | None) -> catalog.ModelArch:
    """The model a reference names; a config path is relative to ``folder`` (the spec's), or
    taken as given (the command line's, relative to where it runs)."""
    if ref.catalog is not None:
        return catalog.load_model(ref.catalog)
    if ref.config is not None:
        return catalog.load_model(ref.config if folder is None else str((folder / ref.config).resolve()))
    assert ref.inline is not None
    inline = ref.inline.model_dump(exclude_none=True)
    return catalog.model_from_fields(**inline)


def gpu_of(ref: GpuRef) -> tuple[str, int, catalog.GpuSpec | None]:
    """(display name, memory in bytes, catalog entry when there is one)."""
    if ref.catalog is not None:
        gpu = catalog.load_gpu(ref.catalog)
        memory = gpu.memory_bytes if ref.memory_gib is None else gib_bytes(ref.memory_gib)
        return gpu.display_name, memory, gpu
    assert ref.inline is not None
    return ref.inline.name, gib_bytes(ref.inline.memory_gib), None


def budget_of(spec: ReserveBudgetSpec | VllmBudgetSpec | GivenBudgetSpec) -> kvcache.Budget:
    if isinstance(spec, ReserveBudgetSpec):
        weights = None if spec.weights_gib is None else gib_bytes(spec.weights_gib)
        return kvcache.ReserveBudget(reserve_bytes=gib_bytes(spec.reserve_gib), weights_bytes=weights)
    if isinstance(spec, VllmBudgetSpec):
        return kvcache.VllmBudget(
            gpu_memory_utilization=spec.gpu_memory_utilization,
            max_num_batched_tokens=spec.max_num_batched_tokens,
            max_num_seqs=spec.max_num_seqs,
            non_torch_bytes=None if spec.non_torch_gib is None else gib_bytes(spec.non_torch_gib),
        )
    return kvcache.GivenBudget(kv_memory_bytes=gib_bytes(spec.kv_memory_gib))


def plan_of(
    view: KvView, model: catalog.ModelArch, gpu_bytes: int, contexts: Sequence[int]
) -> kvcache.KvPlan:
    """The calculator's plan for a view, on a GPU of ``gpu_bytes``."""
    return kvcache.plan_kv_cache(
        model,
        gpu_bytes,
        budget_of(view.budget),
        kv_dtype=view.kv_dtype,
        tp=view.tp,
        block_size=view.block_size,
        contexts=tuple(contexts),
        max_model_len=view.max_model_len,
        weight_dtype=view.weight_dtype,
    )


def run_view(view: KvView, contexts: list[int], location: SpecLocation, field: str) -> dict[str, Any]:
    with blame(location, f"{field}.model"):
        model = model_of(view.model, location.spec_dir)
    with blame(location, f"{field}.gpu"):
        gpu_name, gpu_bytes, _ = gpu_of(view.gpu)
    with blame(location, field):
        plan = plan_of(view, model, gpu_bytes, contexts)
    return {
        "label": view.label or f"{model.name} on {gpu_name}",
        "model": {
            "name": model.name,
            "num_layers": model.num_layers,
            "num_kv_heads": model.num_kv_heads,
            "head_dim": model.head_dim,
            "dtype": model.dtype,
        },
        "gpu": {"name": gpu_name, "memory_bytes": gpu_bytes},
        "budget": view.budget.model_dump(),
        "kv_dtype": view.kv_dtype,
        "tp": view.tp,
        "plan": plan.to_dict(),
    }


def run(section: KvCacheSection, location: SpecLocation, inputs: Inputs) -> dict[str, Any]:
    main = run_view(section, section.contexts, location, "kv_cache")
    compare = [
        run_view(view, section.contexts, location, f"kv_cache.compare.{i}")
        for i, view in enumerate(section.compare)
    ]
    main["headline_row"] = headline_row(main["plan"]["contexts"], section.highlight)
    if compare:
        # Compare views side by side at one context, the longest highlighted one every compared
        # model accepts: at different contexts a post would compare apples with oranges.
        shared = common_context([v["plan"]["contexts"] for v in compare], section.highlight)
        for view in compare:
            view["headline_row"] = next(r for r in view["plan"]["contexts"] if r["context"] == shared)
    rows = {row["context"]: row for row in main["plan"]["contexts"]}
    return {
        "source": "calculated",
        "main": main,
        "compare": compare,
        "highlight": list(section.highlight),
        "highlight_rows": [rows[c] for c in section.highlight],
        "halves_when_context_doubles": halves_when_context_doubles(main["plan"]["contexts"]),
    }


def headline_row(rows: list[dict[str, Any]], highlight: list[int]) -> dict[str, Any]:
    """The row a post quotes for a view: the longest highlighted context the model accepts.

    A model is never quoted past its own context limit (Llama-2's 4,096 tokens, say); with no
    highlighted context inside the limit, the longest context inside it stands in.
    """
    inside = [r for r in rows if r.get("within_max_model_len", True)]
    chosen = [r for r in inside if r["context"] in highlight] or inside or rows
    return max(chosen, key=lambda r: r["context"])


def common_context(tables: list[list[dict[str, Any]]], highlight: list[int]) -> int:
    """The longest context inside every model's limit, a highlighted one when there is one."""
    inside = set.intersection(
        *({r["context"] for r in rows if r.get("within_max_model_len", True)} for rows in tables)
    )
    if not inside:  # no context suits every model: fall back to the shortest tabulated
        return min(r["context"] for r in tables[0])
    return max((c for c in inside if c in highlight), default=max(inside))


def halves_when_context_doubles(rows: list[dict[str, Any]]) -> bool:
    """True when every doubling of the context in the table halves the requests that fit.

    The post states this; it is checked on the numbers, not assumed. A table with nothing left
    to halve (fewer than two requests before the doubling) does not count as halving.
    """
    by_context = {r["context"]: r["max_requests"] for r in rows}
    pairs = [(c, 2 * c) for c in by_context if 2 * c in by_context]
    return bool(pairs) and all(
        by_context[small] >= 2 and by_context[big] in (by_context[small] // 2, (by_context[small] + 1) // 2)
        for small, big in pairs
    )


def headline(result: dict[str, Any]) -> str:
    fits = ", ".join(f"{r['context']:,} → {r['max_requests']:,}" for r in result["highlight_rows"])
    return f"kv cache ({result['source']}): requests that fit: {fits}"


def review_tables(kv: dict[str, Any]) -> list[dict[str, Any]]:
    """One table per view: the model, card and budget, then requests that fit per context."""
    tables = []
    for view in [kv["main"], *kv.get("compare", [])]:
        plan, model, gpu = view.get("plan", {}), view.get("model", {}), view.get("gpu", {})
        rows = [(k.replace("_", " "), num_cell(v)) for k, v in model.items()]
        rows += [("GPU", gpu.get("name", "—")), ("GPU memory", gib_cell(gpu.get("memory_bytes")))]
        if view.get("budget"):
            rows.append(("budget", ", ".join(f"{k} {num_cell(v)}" for k, v in view["budget"].items())))
        rows += [
            ("bytes per token", num_cell(plan.get("bytes_per_token"))),
            ("KV cache memory", gib_cell(plan.get("kv_memory_bytes"))),
            ("block size (tokens)", num_cell(plan.get("block_size"))),
            ("blocks", num_cell(plan.get("num_blocks"))),
        ]
        highlight = set(kv.get("highlight", []))
        table = {
            "head": ["context", "blocks per request", "memory per request", "requests that fit"],
            "rows": [
                {
                    "cells": [
                        num_cell(r["context"]),
                        num_cell(r.get("blocks_per_request")),
                        gib_cell(r.get("bytes_per_request")),
                        num_cell(r["max_requests"]),
                    ],
                    "highlight": r["context"] in highlight,
                }
                for r in plan.get("contexts", [])
            ],
        }
        tables.append(
            {
                "title": f"KV cache: {view.get('label') or model.get('name', '')}",
                "source": kv.get("source", ""),
                "kind": source_kind(kv.get("source", "")),
                "rows": rows,
                "table": table,
            }
        )
    return tables


register_section(
    "kv_cache",
    model=KvCacheSection,
    run=run,
    title="KV cache",
    headline=headline,
    review_tables=review_tables,
    order=10,
)
