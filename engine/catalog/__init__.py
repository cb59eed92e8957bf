"""Models and GPUs as data: one YAML file per entry, every figure with its source.

A model entry keeps the fields of its Hugging Face ``config.json`` as published, and is read by the
same function that reads any config.json a user points at (``model_from_config``), so the catalog
and a user's file cannot drift apart. A GPU entry keeps the memory the device reports to torch
(``torch.cuda.get_device_properties().total_memory``, the total vLLM multiplies by
``gpu_memory_utilization``), which is less than the marketed size: an A100 80GB reports 79.15 GiB.

Why config.json terms: the KV cache is sized from ``num_hidden_layers``, ``num_key_value_heads``,
``head_dim``, ``sliding_window``/``layer_types`` and ``kv_lora_rank``; public calculators that
re-derive these (head_dim = hidden / heads, ignoring num_key_value_heads) get real models wrong.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import Any

from engine import yamlfile
from engine.catalog.params import count_params, moe_layout, ties_embeddings
from engine.catalog.shapes import check_shapes
from engine.errors import UserError
from engine.limits import MAX_CONFIG_BYTES, present, read_json_limited

CATALOG_DIR = Path(__file__).parent
MODEL_DTYPES = ("bfloat16", "float16", "float32")
LAYER_TYPES = ("full_attention", "sliding_attention")
_DTYPE_ALIASES = {
    "fp16": "float16",
    "half": "float16",
    "bf16": "bfloat16",
    "fp32": "float32",
    "float": "float32",
}
# Weight formats a quantised checkpoint can declare (bits per weight, before scales).
WEIGHT_DTYPE_BITS = {
    "float32": 32,
    "bfloat16": 16,
    "float16": 16,
    "bf16": 16,
    "fp16": 16,
    "fp8": 8,
    "int8": 8,
    "int4": 4,
}


@dataclass(frozen=True)
class ModelArch:
    """Everything the KV math and a roofline need, in config.json terms.

    ``layer_types`` has one entry per layer; a sliding layer keeps at most ``sliding_window``
    tokens. MLA models (``kv_lora_rank`` set) cache one latent per layer instead of K and V, so
    for them ``num_kv_heads`` is 1 and ``head_dim`` is kv_lora_rank + qk_rope_head_dim, as vLLM
    sizes it. ``num_params`` is 0 when unknown (an inline model given by its KV shape only).
    """

    name: str
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    dtype: str
    num_params: int
    active_params: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int
    kv_lora_rank: int | None
    qk_rope_head_dim: int | None
    sliding_window: int | None
    layer_types: tuple[str, ...]
    sources: tuple[str, ...]
    display_name: str = ""
    model_type: str = ""
    weight_quant: str | None = None  # 'fp8' | 'int8' | 'int4' when the checkpoint is quantised
    tie_word_embeddings: bool = False
    num_experts: int = 0
    experts_per_token: int = 0
    expert_intermediate_size: int = 0
    shared_expert_intermediate_size: int = 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def full_attention_layers(self) -> int:
        return sum(1 for t in self.layer_types if t == "full_attention")

    @property
    def sliding_attention_layers(self) -> int:
        return sum(1 for t in self.layer_types if t == "sliding_attention")

    @property
    def embedding_params(self) -> int:
        """Input embedding plus LM head: the share quantisation usually leaves at 16 bits."""
        return self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)

    @property
    def label(self) -> str:
        return self.display_name or self.name


@dataclass(frozen=True)
class GpuSpec:
    """One accelerator: the memory the device reports, and the two roofline ceilings."""

    name: str
    display_name: str
    memory_bytes: int
    hbm_bandwidth_bytes_per_s: float
    bf16_dense_flops: float
    sources: tuple[str, ...]
    marketed_memory_gb: float = 0.0
    aliases: tuple[str, ...] = field(default=())
    # GPU-to-GPU link, one direction, per GPU (0: not in the catalog): tensor parallelism's
    # all-reduces move at this rate
    interconnect_bytes_per_s: float = 0.0


# ---------------------------------------------------------------------------------------------
# Reading a config.json


def _first(c: Mapping[str, Any], *keys: str, default: Any = None) -> Any:
    for key in keys:
        if c.get(key) is not None:
            return c[key]
    return default


def _text_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Multimodal configs nest the language model under text_config; lift it, keep the dtype."""
    if "num_hidden_layers" not in config and isinstance(config.get("text_config"), Mapping):
        merged = dict(config["text_config"])
        for key in ("torch_dtype", "dtype", "quantization_config", "tie_word_embeddings"):
            if key not in merged and key in config:
                merged[key] = config[key]
        return merged
    return dict(config)


def _dtype(value: Any, *, file: str | None, fieldname: str) -> str:
    text = str(value).removeprefix("torch.")
    text = _DTYPE_ALIASES.get(text, text)
    if text not in MODEL_DTYPES:
        raise UserError(
            f"dtype {value!r} is not one of {', '.join(MODEL_DTYPES)}", file=file, field=fieldname
        )
    return text


def _weight_quant(c: Mapping[str, Any]) -> str | None:
    """The stored weight format from quantization_config, or None for plain 16/32-bit weights."""
    q = c.get("quantization_config")
    if not isinstance(q, Mapping):
        return None
    method = str(q.get("quant_method", "")).lower()
    if q.get("load_in_4bit"):
        return "int4"
    if q.get("load_in_8bit"):
        return "int8"
    if "fp8" in method or str(q.get("fmt", "")).startswith("e4m3"):
        return "fp8"
    bits = q.get("bits") or q.get("w_bit") or q.get("weight_bits")
    if bits in (4, 8):
        return f"int{bits}"
    if method in ("mxfp4",):
        return "int4"
    return None


def _layer_types(
    c: Mapping[str, Any], layers: int, window: int | None, *, file: str | None
) -> tuple[str, ...]:
    """Per-layer attention kind, as transformers derives it when the config does not list it."""
    listed = c.get("layer_types")
    if listed is not None:
        types = tuple(str(t) for t in listed)
        if len(types) != layers:
            raise UserError(f"has {len(types)} entries for {layers} layers", file=file, field="layer_types")
        unknown = sorted(set(types) - set(LAYER_TYPES))
        if unknown:
            raise UserError(
                f"layer type {unknown[0]!r} is not supported (only "
                f"{' and '.join(LAYER_TYPES)} layers keep a KV cache this calculator "
                "sizes)",
                file=file,
                field="layer_types",
            )
        if "sliding_attention" in types and window is None:
            raise UserError(
                "lists sliding_attention layers but sliding_window is not set", file=file, field="layer_types"
            )
        return types
    if window is None:
        return ("full_attention",) * layers
    pattern = _first(c, "sliding_window_pattern", "_sliding_window_pattern")
    model_type = str(c.get("model_type", ""))
    if pattern:  # Gemma-3: every pattern-th layer is global
        return tuple(
            "full_attention" if (i + 1) % int(pattern) == 0 else "sliding_attention" for i in range(layers)
        )
    if model_type == "gemma2":  # even layers local, odd layers global
        return tuple("sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers))
    if c.get("max_window_layers") is not None and model_type.startswith("qwen"):
        first = int(c["max_window_layers"])
        return tuple("sliding_attention" if i >= first else "full_attention" for i in range(layers))
    return ("sliding_attention",) * layers  # Mistral-7B-v0.1: every layer windowed


def model_from_config(
    config: Mapping[str, Any],
    name: str,
    *,
    source: str | None = None,
    display_name: str = "",
    extra_sources: tuple[str, ...] = (),
) -> ModelArch:
    """A ModelArch from a Hugging Face config.json's fields.

    Rules (transformers' and vLLM's): num_key_value_heads absent means multi-head attention;
    head_dim absent means hidden_size / num_attention_heads; a sliding_window with
    ``use_sliding_window: false`` (Qwen2.5) is off; the dtype is torch_dtype (``dtype`` in newer
    files), float32 when absent. The parameter count is computed from the shapes.
    """
    file = source
    c = _text_config(config)
    for canonical, alias in (
        ("num_hidden_layers", "n_layer"),
        ("hidden_size", "n_embd"),
        ("num_attention_heads", "n_head"),
    ):
        if c.get(canonical) is None and c.get(alias) is not None:
            c[canonical] = c[alias]
    missing = [k for k in ("num_hidden_layers", "hidden_size", "num_attention_heads") if c.get(k) is None]
    if missing:
        raise UserError(
            f"missing {', '.join(missing)}; is this a decoder model's config.json?",
            file=file,
            field=missing[0],
        )
    check_shapes(c, file)
    try:
        layers = int(c["num_hidden_layers"])
        hidden = int(c["hidden_size"])
        heads = int(c["num_attention_heads"])
        kv_heads = int(_first(c, "num_key_value_heads", default=heads))
        if c.get("head_dim") is None and heads and hidden % heads:
            raise UserError(
                f"hidden_size {hidden} is not a multiple of num_attention_heads {heads}: give head_dim",
                file=file,
                field="head_dim",
            )
        head_dim = int(_first(c, "head_dim", default=hidden // heads if heads else 0))
    except (TypeError, ValueError) as exc:
        raise UserError(f"a shape field is not a whole number ({exc})", file=file) from None
    for fname, value in (
        ("num_hidden_layers", layers),
        ("hidden_size", hidden),
        ("num_attention_heads", heads),
        ("num_key_value_heads", kv_heads),
        ("head_dim", head_dim),
    ):
        if value <= 0:
            raise UserError(f"must be positive, got {value}", file=file, field=fname)

    window = c.get("sliding_window")
    if c.get("use_sliding_window") is False:
        window = None
    window = int(window) if window else None

    kv_lora: Any = c.get("kv_lora_rank")
    rope: Any = c.get("qk_rope_head_dim")
    if kv_lora and not rope:
        raise UserError(
            "MLA config has kv_lora_rank but no qk_rope_head_dim", file=file, field="qk_rope_head_dim"
        )
    if kv_lora:  # what vLLM caches for MLA: one latent "head" of kv_lora_rank + rope dims
        kv_heads, head_dim = 1, int(kv_lora) + int(rope)
    if c.get("intermediate_size") is None:
        c["intermediate_size"] = _first(c, "n_inner", "ffn_dim", default=4 * hidden)
    total, active = count_params(c)
    experts, per_token, expert_inner, shared_inner = moe_layout(c)
    return ModelArch(
        name=name,
        num_layers=layers,
        hidden_size=hidden,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        dtype=_dtype(
            _first(c, "torch_dtype", "dtype", default="float32"), file=file, fieldname="torch_dtype"
        ),
        num_params=total,
        active_params=active,
        intermediate_size=int(c["intermediate_size"]),
        vocab_size=int(c.get("vocab_size") or 0),
        max_position_embeddings=int(_first(c, "max_position_embeddings", "n_positions", default=0)),
        kv_lora_rank=int(kv_lora) if kv_lora else None,
        qk_rope_head_dim=int(rope) if kv_lora else None,
        sliding_window=window,
        layer_types=_layer_types(c, layers, window, file=file),
        sources=((f"config.json: {source}",) if source else ()) + tuple(extra_sources),
        display_name=display_name,
        model_type=str(c.get("model_type", "")),
        weight_quant=_weight_quant(c),
        tie_word_embeddings=ties_embeddings(c),
        num_experts=experts,
        experts_per_token=per_token,
        expert_intermediate_size=expert_inner,
        shared_expert_intermediate_size=shared_inner,
    )


_FIELD_OPTIONS = {
    "num_attention_heads",
    "hidden_size",
    "intermediate_size",
    "vocab_size",
    "max_position_embeddings",
    "num_params",
    "active_params",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "sliding_window",
    "layer_types",
    "sources",
    "display_name",
    "tie_word_embeddings",
    "weight_quant",
    "model_type",
}


def model_from_fields(
    name: str, num_layers: int, num_kv_heads: int, head_dim: int, dtype: str = "float16", **optional: Any
) -> ModelArch:
    """An inline model, e.g. the lab's "7B-class: 32 layers, 32 KV heads, head dim 128, fp16".

    Only the KV shape is required. Attention heads default to the KV heads (multi-head),
    hidden size to heads × head_dim. The parameter count is taken as given, else computed when
    intermediate_size and vocab_size are given, else 0 (unknown: the vllm budget then asks for it).
    """
    unknown = sorted(set(optional) - _FIELD_OPTIONS)
    if unknown:
        raise UserError(f"unknown model field (known: {', '.join(sorted(_FIELD_OPTIONS))})", field=unknown[0])
    heads = int(optional.get("num_attention_heads") or num_kv_heads)
    config: dict[str, Any] = {
        "model_type": optional.get("model_type", ""),
        "num_hidden_layers": num_layers,
        "num_attention_heads": heads,
        "num_key_value_heads": num_kv_heads,
        "head_dim": head_dim,
        "hidden_size": optional.get("hidden_size") or heads * head_dim,
        "torch_dtype": dtype,
        "tie_word_embeddings": bool(optional.get("tie_word_embeddings", False)),
    }
    for key in (
        "intermediate_size",
        "vocab_size",
        "max_position_embeddings",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "sliding_window",
        "layer_types",
    ):
        if optional.get(key) is not None:
            config[key] = optional[key]
    arch = model_from_config(
        config,
        name,
        display_name=optional.get("display_name", ""),
        extra_sources=tuple(optional.get("sources") or ()),
    )
    known_shapes = "intermediate_size" in config and "vocab_size" in config
    total = int(optional.get("num_params") or (arch.num_params if known_shapes else 0))
    active = int(optional.get("active_params") or (arch.active_params if known_shapes else total))
    return replace(
        arch,
        num_params=total,
        active_params=active,
        weight_quant=optional.get("weight_quant"),
        intermediate_size=arch.intermediate_size
        if known_shapes
        else int(optional.get("intermediate_size") or 0),
    )


# ---------------------------------------------------------------------------------------------
# The catalog files


def _read_yaml(path: Path) -> dict[str, Any]:
    data = yamlfile.read(path, MAX_CONFIG_BYTES, "catalog")
    if not isinstance(data, dict):
        raise UserError("a catalog entry must be a mapping", file=path)
    return data


@cache
def _model_entries() -> dict[str, Path]:
    return {p.stem: p for p in sorted((CATALOG_DIR / "models").glob("*.yaml"))}


@cache
def _gpu_entries() -> dict[str, tuple[Path, tuple[str, ...]]]:
    entries = {}
    for p in sorted((CATALOG_DIR / "gpus").glob("*.yaml")):
        entries[p.stem] = (p, tuple(str(a).lower() for a in _read_yaml(p).get("aliases") or ()))
    return entries


def model_names() -> list[str]:
    return list(_model_entries())


def gpu_names() -> list[str]:
    return list(_gpu_entries())


def _nearest(name: str, names: list[str]) -> str:
    close = difflib.get_close_matches(name.lower(), names, n=3, cutoff=0.5)
    return ", ".join(close or names)


def _sources_of(entry: Mapping[str, Any]) -> tuple[str, ...]:
    sources = entry.get("sources") or {}
    if isinstance(sources, Mapping):
        listed = tuple(f"{k}: {v}" for k, v in sources.items())
    else:
        listed = tuple(str(s) for s in sources)
    published = entry.get("published")
    if isinstance(published, Mapping) and published.get("source"):
        listed += (f"published: {published['source']}",)
    return listed


@cache
def catalog_model_entry(name: str) -> dict[str, Any]:
    """The raw YAML entry of a catalog model (config fields, published figures, sources)."""
    return _read_yaml(_model_entries()[name])


def load_model(name_or_path: str) -> ModelArch:
    """A catalog model by name, or any Hugging Face config.json by path (file or its folder)."""
    key = str(name_or_path).strip()
    entries = _model_entries()
    if key.lower() in entries:
        entry = catalog_model_entry(key.lower())
        return model_from_config(
            entry["config"],
            key.lower(),
            display_name=str(entry.get("display_name", "")),
            extra_sources=_sources_of(entry),
        )
    path = model_file(key)
    if path is not None:
        config = read_json_limited(path, MAX_CONFIG_BYTES, "config.json")
        if not isinstance(config, dict):
            raise UserError("a config.json must hold one JSON object", file=path)
        name = path.parent.name if path.name == "config.json" and path.parent.name else path.stem
        return model_from_config(config, name, source=str(path))
    if key.endswith(".json") or "/" in key:
        raise UserError(f"no such file {key!r}", field="model")
    raise UserError(
        f"unknown model {key!r}; nearest: {_nearest(key, list(entries))} (or give a path to a config.json)",
        field="model",
    )


def in_catalog(name: str) -> bool:
    """Whether ``name`` is a catalog model (any case), not a path to a config.json."""
    return str(name).strip().lower() in _model_entries()


def is_model_path(name: str, folder: Path) -> bool:
    """Whether a spec's model ``name`` is a config.json (or its folder) relative to ``folder``
    rather than a catalog name: it reads as a path (a '/', a '.json'), or names something there.
    A mistyped catalog name ('llama-3-8') is neither, and is told the nearest catalog names."""
    key = str(name).strip()
    if in_catalog(key):
        return False
    return "/" in key or key.endswith(".json") or present(Path(folder) / key)


def model_file(name_or_path: str) -> Path | None:
    """The config.json a model that is not in the catalog is read from (a file, or a folder's
    config.json); None for a catalog name or a path that does not exist."""
    key = str(name_or_path).strip()
    if in_catalog(key) or ("/" not in key and not key.endswith(".json")):
        return None  # a bare word is a catalog name, mistyped or not: never a file here
    path = Path(key).expanduser()
    if path.is_dir():
        path = path / "config.json"
    return path if path.exists() else None


@cache
def load_gpu(name: str) -> GpuSpec:
    """A catalog GPU by name or alias (case-insensitive)."""
    key = str(name).strip().lower()
    entries = _gpu_entries()
    found = entries.get(key)
    if found is None:
        found = next((v for v in entries.values() if key in v[1]), None)
    if found is None:
        raise UserError(f"unknown GPU {name!r}; nearest: {_nearest(key, list(entries))}", field="gpu")
    path = found[0]
    entry = _read_yaml(path)
    try:
        return GpuSpec(
            name=path.stem,
            display_name=str(entry["display_name"]),
            memory_bytes=int(
                _gpu_number(entry, "memory_bytes", path, least=MIN_GPU_MEMORY_BYTES, whole=True)
            ),
            hbm_bandwidth_bytes_per_s=_gpu_number(entry, "hbm_bandwidth_bytes_per_s", path),
            bf16_dense_flops=_gpu_number(entry, "bf16_dense_flops", path),
            sources=_sources_of(entry),
            marketed_memory_gb=_gpu_number(entry, "marketed_memory_gb", path, least=0, default=0),
            aliases=found[1],
            interconnect_bytes_per_s=_gpu_number(entry, "interconnect_bytes_per_s", path, least=0, default=0),
        )
    except KeyError as exc:
        raise UserError("missing field", file=path, field=str(exc.args[0])) from None


# A card holds at least its own kernels and one model's weights: no accelerator a model is served
# on has under 1 GiB (the smallest in the catalog has 16); a smaller figure is a typo or a unit slip.
MIN_GPU_MEMORY_BYTES = 2**30
MAX_GPU_FIGURE = 1e18  # bytes, bytes per second, FLOPs: past an exa- is not one card


def _gpu_number(
    entry: Mapping[str, Any],
    key: str,
    path: Path,
    *,
    least: float = 1,
    whole: bool = False,
    default: float | None = None,
) -> float:
    """A GPU entry's figure: a finite number in [least, MAX_GPU_FIGURE], else one line."""
    value = entry[key] if default is None else (entry.get(key) or default)
    ok = isinstance(value, int) if whole else isinstance(value, (int, float))
    if isinstance(value, bool) or not ok or not least <= value <= MAX_GPU_FIGURE:
        kind = "a whole number" if whole else "a number"
        raise UserError(
            f"must be {kind} from {least:,g} to {MAX_GPU_FIGURE:g}, got {value!r}", file=path, field=key
        )
    return float(value)
