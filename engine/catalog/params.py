"""Parameter counts from a Hugging Face config.json, for configs that do not state one.

Weights are the largest share of a GPU's memory after the KV cache, and a config.json gives the
shapes but never the count. The count is the sum of the weight matrices those shapes imply, so it
can be checked to the parameter against the figures the model publishers print (Llama-2-7B
6,738,415,616; Mixtral 46.7 B total, 12.9 B active; DeepSeek-V3 671 B, 37 B active).

Covered: decoder-only transformers with gated MLPs (Llama, Mistral, Qwen2/2.5/3, Gemma/Gemma-2/3),
Mixtral-style and Qwen-MoE experts, DeepSeek-V2/V3 MLA with shared experts and leading dense
layers. Non-gated MLPs (GPT-2, OPT, GPT-NeoX) count two matrices instead of three; biases and
norms are counted where the family has them. Families outside these get the closest rule, which is
within a few per cent; the catalog's tests pin the families above exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Families whose MLP is up/down only (no gate projection).
_UNGATED = {"gpt2", "gpt_neox", "opt", "gptj", "bloom", "falcon", "phi", "starcoder2", "gpt_bigcode"}
# Families with four RMSNorms per layer (pre/post attention and pre/post feed-forward).
_FOUR_NORMS = {"gemma2", "gemma3", "gemma3_text"}
# Families that always carry a bias on q, k and v (not on o).
_QKV_BIAS = {"qwen2", "qwen2_moe"}
# Families with per-head RMSNorm on q and k.
_QK_NORM = {"qwen3", "qwen3_moe", "gemma3", "gemma3_text"}
# Families whose input and output embeddings are one matrix unless the config says otherwise.
_TIED_BY_DEFAULT = {"gemma", "gemma2", "gemma3", "gemma3_text", "gpt2", "opt"}


def ties_embeddings(config: Mapping[str, Any]) -> bool:
    """Whether the LM head reuses the input embedding (counted once)."""
    if "tie_word_embeddings" in config and config["tie_word_embeddings"] is not None:
        return bool(config["tie_word_embeddings"])
    return str(config.get("model_type", "")) in _TIED_BY_DEFAULT


def _attention_params(c: Mapping[str, Any], h: int) -> int:
    heads = int(c["num_attention_heads"])
    if c.get("kv_lora_rank"):  # MLA (DeepSeek-V2/V3): low-rank q and a shared latent for k, v
        nope, rope = int(c["qk_nope_head_dim"]), int(c["qk_rope_head_dim"])
        v_dim, kv_rank = int(c["v_head_dim"]), int(c["kv_lora_rank"])
        q_rank = c.get("q_lora_rank")
        q = (h * q_rank + q_rank + q_rank * heads * (nope + rope)) if q_rank else h * heads * (nope + rope)
        kv = h * (kv_rank + rope) + kv_rank + kv_rank * heads * (nope + v_dim)
        return q + kv + heads * v_dim * h
    head_dim = int(c.get("head_dim") or h // heads)
    kv_heads = int(c.get("num_key_value_heads") or heads)
    q_out, kv_out = heads * head_dim, kv_heads * head_dim
    params = h * q_out + 2 * h * kv_out + q_out * h
    model_type = str(c.get("model_type", ""))
    if c.get("attention_bias") or model_type in _QKV_BIAS:
        params += q_out + 2 * kv_out
    if c.get("attention_bias"):  # Llama's flag also puts a bias on o_proj
        params += h
    if model_type in _QK_NORM:
        params += 2 * head_dim
    return params


def _mlp_params(h: int, inner: int, gated: bool) -> int:
    return (3 if gated else 2) * h * inner


def _moe_layout(c: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """(experts, experts per token, per-expert inner size, shared inner size); zeros for dense."""
    experts = int(c.get("num_local_experts") or c.get("n_routed_experts") or c.get("num_experts") or 0)
    if experts == 0:
        return 0, 0, 0, 0
    per_token = int(c.get("num_experts_per_tok") or c.get("num_experts_per_token") or 2)
    inner = int(c.get("moe_intermediate_size") or c["intermediate_size"])
    shared = 0
    if c.get("n_shared_experts"):
        shared = int(c["n_shared_experts"]) * inner
    elif c.get("shared_expert_intermediate_size"):
        shared = int(c["shared_expert_intermediate_size"])
    return experts, per_token, inner, shared


def _is_moe_layer(c: Mapping[str, Any], i: int) -> bool:
    if "first_k_dense_replace" in c:  # DeepSeek: the first k layers stay dense
        freq = int(c.get("moe_layer_freq") or 1)
        return i >= int(c["first_k_dense_replace"]) and i % freq == 0
    if "mlp_only_layers" in c or "decoder_sparse_step" in c:  # Qwen-MoE
        step = int(c.get("decoder_sparse_step") or 1)
        return i not in (c.get("mlp_only_layers") or []) and (i + 1) % step == 0
    return True


def moe_layout(config: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """Public view of the expert layout (used for the activation estimate)."""
    return _moe_layout(config)


def count_params(config: Mapping[str, Any]) -> tuple[int, int]:
    """(total, active per token) parameters implied by the config's shapes.

    ``active`` counts the experts a token is routed to (plus shared experts and the router), so it
    equals ``total`` for dense models.
    """
    c = config
    h = int(c["hidden_size"])
    layers = int(c["num_hidden_layers"])
    vocab = int(c.get("vocab_size") or 0)
    model_type = str(c.get("model_type", ""))
    gated = model_type not in _UNGATED
    norms = (4 if model_type in _FOUR_NORMS else 2) * h

    embeddings = vocab * h * (1 if ties_embeddings(c) else 2)
    total = active = embeddings + h  # + final norm
    attention = _attention_params(c, h)
    experts, per_token, expert_inner, shared_inner = _moe_layout(c)
    dense_inner = int(c.get("intermediate_size") or 4 * h)
    for i in range(layers):
        layer_total = layer_active = attention + norms
        if experts and _is_moe_layer(c, i):
            router = h * experts + (experts if c.get("topk_method") == "noaux_tc" else 0)
            shared = _mlp_params(h, shared_inner, gated) if shared_inner else 0
            if c.get("shared_expert_intermediate_size"):
                shared += h  # Qwen-MoE's sigmoid gate on the shared expert
            one_expert = _mlp_params(h, expert_inner, gated)
            layer_total += experts * one_expert + shared + router
            layer_active += per_token * one_expert + shared + router
        else:
            mlp = _mlp_params(h, dense_inner, gated)
            layer_total += mlp
            layer_active += mlp
        total += layer_total
        active += layer_active
    return total, active
