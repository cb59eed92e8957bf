"""Memory caps the batch: the spec's kv_cache section through the KV-cache calculator.

The builders here (a model, a GPU and a budget from their spec models, then the plan) are the
only way from a kv_cache model to the calculator: the ``kv`` command builds the same models from
its flags and calls the same functions, so a flag and a YAML key cannot mean different things.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from engine import catalog, kvcache, limits
from engine.kvcache import KvDtype
from engine.render.review_tables import gib_cell, num_cell, source_kind
from engine.sections import Inputs, SectionExample, SpecLocation, blame, register_section
from engine.units import gib_bytes
from engine.validation import ContextTokens, GiB, Label, OneLine, Slots, Strict, TensorParallel, Unset

# ---- the section's model -----------------------------------------------------------------------

# A model's shape, within its stated limits (engine/limits.py).
ModelDim = Annotated[int, Field(ge=1, le=limits.MAX_MODEL_DIM, strict=True)]
Layers = Annotated[int, Field(ge=1, le=limits.MAX_LAYERS, strict=True)]


class InlineModel(Strict):
    """A model described by its shape alone, as the lab's '7B-class' model is."""

    name: OneLine
    num_layers: Layers
    num_kv_heads: ModelDim
    head_dim: ModelDim
    dtype: Literal["float16", "bfloat16", "float32"] = "float16"
    num_attention_heads: ModelDim | None = None
    hidden_size: ModelDim | None = None
    num_params: Annotated[int, Field(ge=1, le=limits.MAX_PARAMS, strict=True)] | None = None

    @model_validator(mode="after")
    def _heads_group(self) -> InlineModel:
        """Grouped-query attention shares each KV head among a whole number of query heads."""
        heads = self.num_attention_heads
        if heads is not None and (self.num_kv_heads > heads or heads % self.num_kv_heads):
            raise ValueError(
                f"num_kv_heads {self.num_kv_heads} must divide num_attention_heads "
                f"{heads} (each KV head serves a whole group of query heads)"
            )
        return self


class ModelRef(Strict):
    """Exactly one of: a catalog name, a Hugging Face config.json path, or an inline shape.

    A bare string in YAML is a catalog name, or a config path when it ends in ``.json``.
    """

    catalog: str | None = None
    config: str | None = None
    inline: InlineModel | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"config": value} if value.endswith(".json") else {"catalog": value}
        if isinstance(value, dict) and "name" in value and "num_layers" in value:
            return {"inline": value}
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> ModelRef:
        given = [k for k in ("catalog", "config", "inline") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("give a catalog name, a config.json path, or an inline shape")
        return self


class InlineGpu(Strict):
    name: OneLine
    memory_gib: Annotated[GiB, Field(gt=0)]


class GpuRef(Strict):
    """A catalog GPU by name, or an inline one: a name and the memory it offers.

    A catalog GPU may state the memory it reports instead of the catalog's figure (a MIG slice,
    a driver that reserves more): ``{catalog: h100-80gb, memory_gib: 79.1}``.
    """

    catalog: str | None = None
    inline: InlineGpu | None = None
    memory_gib: Annotated[GiB, Field(gt=0)] | None = Unset

    @model_validator(mode="before")
    @classmethod
    def _from_shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"catalog": value}
        if isinstance(value, dict) and "memory_gib" in value and "catalog" not in value:
            return {"inline": value}
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> GpuRef:
        if (self.catalog is None) == (self.inline is None):
            raise ValueError("give a catalog GPU name or an inline {name, memory_gib}")
        if self.inline is not None and self.memory_gib is not None:
            raise ValueError("memory_gib overrides a catalog GPU's figure; an inline GPU states its own")
        return self


class ReserveBudgetSpec(Strict):
    """The lab's budget: the card's memory minus a fixed reserve for weights and overhead."""

    kind: Literal["reserve"]
    reserve_gib: GiB
    weights_gib: GiB | None = None  # the reserve's share for weights

    @model_validator(mode="after")
    def _weights_within_reserve(self) -> ReserveBudgetSpec:
        if self.weights_gib is not None and self.weights_gib > self.reserve_gib:
            raise ValueError(f"weights_gib {self.weights_gib} exceeds reserve_gib {self.reserve_gib}")
        return self


class VllmBudgetSpec(Strict):
    """vLLM's own accounting: utilisation × memory − weights − activations − non-torch.

    ``non_torch_gib``: the memory outside PyTorch (CUDA context, NCCL), when known; estimated
    otherwise.
    """

    kind: Literal["vllm"]
    gpu_memory_utilization: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = 0.9
    max_num_batched_tokens: ContextTokens | None = None
    max_num_seqs: Slots = 256
    non_torch_gib: GiB | None = Unset


class GivenBudgetSpec(Strict):
    """A KV budget taken as given, as vLLM's 'Available KV cache memory' log line reports it."""

    kind: Literal["given"]
    kv_memory_gib: Annotated[GiB, Field(gt=0)]


BUDGET_SPECS = (ReserveBudgetSpec, VllmBudgetSpec, GivenBudgetSpec)
BudgetSpec = Annotated[ReserveBudgetSpec | VllmBudgetSpec | GivenBudgetSpec, Field(discriminator="kind")]
WeightDtype = Literal["fp16", "bf16", "fp8", "int8", "int4"]


class KvView(Strict):
    """One way of sizing the cache: a model on a GPU under a budget.

    ``max_model_len`` (default: the model's own limit) marks longer contexts and sets vLLM's
    default prefill budget; ``weight_dtype`` (default: the checkpoint's) sizes the weights.
    """

    label: Label | None = None
    model: ModelRef
    gpu: GpuRef
    budget: BudgetSpec
    kv_dtype: KvDtype = "auto"
    tp: TensorParallel = 1
    block_size: Annotated[int, Field(ge=1, le=limits.MAX_BLOCK_SIZE, strict=True)] = 16
    max_model_len: ContextTokens | None = Unset
    weight_dtype: WeightDtype | None = Unset


class KvCacheSection(KvView):
    """The post's memory table, plus optional second views (real accounting, GQA, …)."""

    contexts: Annotated[list[ContextTokens], Field(min_length=1, max_length=limits.MAX_CONTEXTS)]
    highlight: Annotated[list[ContextTokens], Field(max_length=limits.MAX_CONTEXTS)] = []
    compare: Annotated[list[KvView], Field(max_length=limits.MAX_VIEWS)] = []

    @field_validator("contexts")
    @classmethod
    def _increasing(cls, contexts: list[int]) -> list[int]:
        if contexts != sorted(set(contexts)):
            raise ValueError("contexts must be increasing and distinct")
        return contexts

    @model_validator(mode="after")
    def _highlight_in_contexts(self) -> KvCacheSection:
        missing = [c for c in self.highlight if c not in self.contexts]
        if missing:
            raise ValueError(f"highlight {missing} must be among contexts {self.contexts}")
        return self


# ---- the run -----------------------------------------------------------------------------------


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
    if view.model.config is not None:  # a config.json the spec names: in the spec's folder
        location.config(view.model.config, f"{field}.model")
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
    # An 8B model on an 80 GB card, vLLM's accounting, two contexts: the calculator's own case.
    example=SectionExample(
        {
            "label": "Llama-3-8B on an H100 80GB",
            "model": "llama-3-8b",
            "gpu": "h100-80gb",
            "budget": {"kind": "vllm", "gpu_memory_utilization": 0.9},
            "contexts": [2048, 8192],
        }
    ),
)
