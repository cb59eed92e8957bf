"""The numeric fields of a config.json, checked before anything is computed from them.

A config.json is a user's file: `num_hidden_layers: 1e12` would loop a trillion times in the
parameter count, `"hidden_size": "big"` or `32.7` would end in a traceback, and KV heads that do
not divide the attention heads describe a model that cannot exist. Each is one line naming the
file and the field, with the limit from engine/limits.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.errors import UserError
from engine.limits import MAX_CONTEXT_TOKENS, MAX_LAYERS, MAX_MODEL_DIM

MAX_EXPERTS = 100_000

# field → (least, most). Every field the calculator or the parameter count reads as a number.
_INT_FIELDS: dict[str, tuple[int, int]] = {
    "num_hidden_layers": (1, MAX_LAYERS),
    "hidden_size": (1, MAX_MODEL_DIM),
    "num_attention_heads": (1, MAX_MODEL_DIM),
    "num_key_value_heads": (1, MAX_MODEL_DIM),
    "head_dim": (1, MAX_MODEL_DIM),
    "intermediate_size": (0, MAX_MODEL_DIM),
    "n_inner": (0, MAX_MODEL_DIM),
    "ffn_dim": (0, MAX_MODEL_DIM),
    "moe_intermediate_size": (0, MAX_MODEL_DIM),
    "shared_expert_intermediate_size": (0, MAX_MODEL_DIM),
    "vocab_size": (0, MAX_MODEL_DIM),
    "max_position_embeddings": (0, MAX_CONTEXT_TOKENS),
    "n_positions": (0, MAX_CONTEXT_TOKENS),
    "sliding_window": (0, MAX_CONTEXT_TOKENS),
    "sliding_window_pattern": (0, MAX_LAYERS),
    "_sliding_window_pattern": (0, MAX_LAYERS),
    "max_window_layers": (0, MAX_LAYERS),
    "kv_lora_rank": (0, MAX_MODEL_DIM),
    "q_lora_rank": (0, MAX_MODEL_DIM),
    "qk_rope_head_dim": (0, MAX_MODEL_DIM),
    "qk_nope_head_dim": (0, MAX_MODEL_DIM),
    "v_head_dim": (0, MAX_MODEL_DIM),
    "num_local_experts": (0, MAX_EXPERTS),
    "n_routed_experts": (0, MAX_EXPERTS),
    "num_experts": (0, MAX_EXPERTS),
    "num_experts_per_tok": (0, MAX_EXPERTS),
    "num_experts_per_token": (0, MAX_EXPERTS),
    "n_shared_experts": (0, MAX_EXPERTS),
    "first_k_dense_replace": (0, MAX_LAYERS),
    "moe_layer_freq": (0, MAX_LAYERS),
    "decoder_sparse_step": (0, MAX_LAYERS),
}
_MLA_NEEDS = ("qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")


def whole(value: Any, field: str, file: str | None, least: int, most: int) -> int:
    """A whole number within [least, most]; true/false, fractions and text are refused."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or (isinstance(value, float) and not value.is_integer())
    ):
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:39] + "…"
        raise UserError(f"must be a whole number, got {shown}", file=file, field=field)
    number = int(value)
    if not least <= number <= most:
        raise UserError(f"must be between {least:,} and {most:,}, got {number:,}", file=file, field=field)
    return number


def check_shapes(c: Mapping[str, Any], file: str | None) -> None:
    """Refuse a config whose numbers could not describe a real model (see the module doc)."""
    for field, (least, most) in _INT_FIELDS.items():
        if c.get(field) is not None:
            whole(c[field], field, file, least, most)
    for field in ("mlp_only_layers", "layer_types"):
        listed = c.get(field)
        if listed is not None and (not isinstance(listed, list) or len(listed) > MAX_LAYERS):
            raise UserError(f"must be a list of at most {MAX_LAYERS:,} entries", file=file, field=field)
    for i, layer in enumerate(c.get("mlp_only_layers") or []):
        whole(layer, f"mlp_only_layers[{i}]", file, 0, MAX_LAYERS)
    if c.get("kv_lora_rank"):
        for field in _MLA_NEEDS:
            if not c.get(field):
                raise UserError("an MLA config (kv_lora_rank) needs it", file=file, field=field)
        return
    heads = c.get("num_attention_heads")
    kv_heads = c.get("num_key_value_heads")
    if heads is not None and kv_heads is not None and (kv_heads > heads or heads % kv_heads):
        raise UserError(
            f"{int(kv_heads)} KV heads must divide {int(heads)} attention heads (each KV "
            "head serves a whole group of query heads)",
            file=file,
            field="num_key_value_heads",
        )
    experts = c.get("num_local_experts") or c.get("n_routed_experts") or c.get("num_experts") or 0
    per_token = c.get("num_experts_per_tok") or c.get("num_experts_per_token") or 0
    if experts and per_token > experts:
        raise UserError(
            f"{int(per_token)} experts per token, but the model has {int(experts)}",
            file=file,
            field="num_experts_per_tok",
        )
