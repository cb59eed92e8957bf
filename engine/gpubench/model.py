"""A Llama-shaped decoder with a static KV cache, in the manner of gpt-fast's model.py.

RMSNorm, rotary embeddings, grouped-KV attention and a SwiGLU MLP, with random weights drawn from
a seeded generator on the device itself (a 7B model is never built on the host). Random weights
are honest for this benchmark: step time and memory depend on the shapes, not on the values.

The KV cache is allocated once for ``slots × max_context`` and never grows, as in gpt-fast: a
request lives in one slot, decode runs over the first ``n`` slots (a view, no copy), and a batching
policy keeps its running requests in slots ``0 … n-1`` (see engine.gpubench.replay). Every slot
has its own length, so a batch can be ragged. No method reads a value back to the host, so the GPU
runs ahead of Python and a step can be captured in a CUDA graph.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from engine.gpubench.shapes import ModelShape

ROPE_BASE = 10_000.0
NORM_EPS = 1e-5


class KVCache:
    """K and V for every layer, each ``[slots, kv_heads, max_context, head_dim]``, zero-filled once.

    Zeros rather than ``torch.empty``: the values are never used unmasked, but garbage can hold
    NaNs or denormals, and denormals are slow on CPUs.
    """

    def __init__(
        self, shape: ModelShape, slots: int, max_context: int, *, device: torch.device, dtype: torch.dtype
    ):
        size = (slots, shape.num_kv_heads, max_context, shape.head_dim)
        self.k = [torch.zeros(size, device=device, dtype=dtype) for _ in range(shape.num_layers)]
        self.v = [torch.zeros(size, device=device, dtype=dtype) for _ in range(shape.num_layers)]
        self.slots = slots
        self.max_context = max_context

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.k + self.v)

    def move(self, src: int, dst: int, length: int) -> None:
        """Copy the first ``length`` positions of slot ``src`` into slot ``dst`` (compaction)."""
        for t in self.k + self.v:
            t[dst, :, :length].copy_(t[src, :, :length])


def rms_norm(x: Tensor, weight: Tensor) -> Tensor:
    """RMSNorm over the last dimension. torch's own op: it normalises half inputs in fp32, as
    Llama does, and where torch has a fused kernel for it that is one kernel instead of seven (a
    decode step is a few thousand small kernels, and each costs a few microseconds even in a CUDA
    graph, so fewer kernels is closer to the bandwidth bound)."""
    return F.rms_norm(x, (x.shape[-1],), weight, NORM_EPS)


def rope_angles(positions: Tensor, head_dim: int) -> tuple[Tensor, Tensor]:
    """cos and sin of the rotary angles, ``[len(positions), head_dim // 2]`` in fp32.

    Computed from the positions on the fly rather than from a table: no table to size for the
    longest context, and it costs nothing next to the matmuls.
    """
    inv_freq = ROPE_BASE ** (
        -torch.arange(0, head_dim, 2, device=positions.device, dtype=torch.float32) / head_dim
    )
    angles = positions.float()[:, None] * inv_freq[None, :]
    return angles.cos(), angles.sin()


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """Rotate the two halves of each head (the Hugging Face Llama convention).

    ``x`` is ``[tokens, heads, head_dim]``; ``cos`` and ``sin`` are ``[tokens, head_dim // 2]``.
    """
    x1, x2 = x.float().chunk(2, dim=-1)
    c, s = cos[:, None, :], sin[:, None, :]
    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1).to(x.dtype)


class Block(nn.Module):
    """One decoder layer. Q, K and V share one matmul, as do the MLP's gate and up projections:
    fewer, larger kernels read the same bytes in less time."""

    def __init__(self, shape: ModelShape, make: _Maker):
        super().__init__()
        s = shape
        self.attention_norm = nn.Parameter(make.ones(s.hidden_size), requires_grad=False)
        self.wqkv = nn.Parameter(
            make.linear((s.num_heads + 2 * s.num_kv_heads) * s.head_dim, s.hidden_size), requires_grad=False
        )
        self.wo = nn.Parameter(make.linear(s.hidden_size, s.num_heads * s.head_dim), requires_grad=False)
        self.ffn_norm = nn.Parameter(make.ones(s.hidden_size), requires_grad=False)
        self.w13 = nn.Parameter(make.linear(2 * s.intermediate_size, s.hidden_size), requires_grad=False)
        self.w2 = nn.Parameter(make.linear(s.hidden_size, s.intermediate_size), requires_grad=False)

    def qkv(self, x: Tensor, shape: ModelShape, cos: Tensor, sin: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``[tokens, hidden]`` → q ``[tokens, heads, d]``, k and v ``[tokens, kv_heads, d]``,
        q and k rotated (in one pass: they lie side by side in the fused projection)."""
        n, d = x.shape[0], shape.head_dim
        qk_heads = shape.num_heads + shape.num_kv_heads
        qkv = F.linear(rms_norm(x, self.attention_norm), self.wqkv)
        qk = apply_rope(qkv[:, : qk_heads * d].view(n, qk_heads, d), cos, sin)
        q, k = qk.split([shape.num_heads, shape.num_kv_heads], dim=1)
        return q, k, qkv[:, qk_heads * d :].view(n, shape.num_kv_heads, d)

    def attention_out(self, x: Tensor, out: Tensor) -> Tensor:
        """``x + out @ wo.T`` as one matmul that adds into the residual."""
        return torch.addmm(x, out, self.wo.t())

    def mlp(self, x: Tensor) -> Tensor:
        """``x + SwiGLU(x)``, the residual added by the last matmul."""
        gate, up = F.linear(rms_norm(x, self.ffn_norm), self.w13).chunk(2, dim=-1)
        return torch.addmm(x, F.silu(gate) * up, self.w2.t())


class _Maker:
    """Draws the random weights on the device from one seeded generator."""

    def __init__(self, device: torch.device, dtype: torch.dtype, seed: int):
        self.device, self.dtype = device, dtype
        self.generator = torch.Generator(device=device)
        self.generator.manual_seed(seed)

    def normal(self, *size: int, std: float) -> Tensor:
        t = torch.empty(size, device=self.device, dtype=self.dtype)
        return t.normal_(0.0, std, generator=self.generator)

    def linear(self, out_features: int, in_features: int) -> Tensor:
        # std 1/sqrt(fan_in) keeps activations near unit size through the layers: no inf or NaN.
        return self.normal(out_features, in_features, std=1.0 / math.sqrt(in_features))

    def ones(self, n: int) -> Tensor:
        return torch.ones(n, device=self.device, dtype=self.dtype)


class Decoder(nn.Module):
    """The model. ``prefill`` puts a prompt into one slot; ``decode`` advances slots ``0 … n-1``."""

    def __init__(
        self,
        shape: ModelShape,
        *,
        device: torch.device | str = "cpu",
        dtype: torch.dtype = torch.float32,
        seed: int = 0,
    ):
        super().__init__()
        device = torch.device(device)
        make = _Maker(device, dtype, seed)
        self.shape = shape
        self.tok_embeddings = nn.Parameter(
            make.normal(shape.vocab_size, shape.hidden_size, std=1.0), requires_grad=False
        )
        self.layers = nn.ModuleList(Block(shape, make) for _ in range(shape.num_layers))
        self.norm = nn.Parameter(make.ones(shape.hidden_size), requires_grad=False)
        self.output = nn.Parameter(make.linear(shape.vocab_size, shape.hidden_size), requires_grad=False)

    def blocks(self) -> list[Block]:
        """The layers, typed: a ModuleList hands its items out as plain Modules."""
        return [layer for layer in self.layers if isinstance(layer, Block)]

    @property
    def device(self) -> torch.device:
        return self.norm.device

    @property
    def dtype(self) -> torch.dtype:
        return self.norm.dtype

    @property
    def weight_bytes(self) -> int:
        """Every parameter, as loaded on the device."""
        return sum(p.numel() * p.element_size() for p in self.parameters())

    @property
    def decode_weight_bytes(self) -> int:
        """The weight bytes one decode step reads: all but the embedding table, of which a step
        reads only one row per request."""
        emb = self.tok_embeddings
        return self.weight_bytes - emb.numel() * emb.element_size()

    def new_cache(self, slots: int, max_context: int) -> KVCache:
        return KVCache(self.shape, slots, max_context, device=self.device, dtype=self.dtype)

    @torch.inference_mode()
    def prefill(self, cache: KVCache, slot: int, tokens: Tensor) -> Tensor:
        """Write a prompt's K and V into positions ``0 … T-1`` of ``slot``; return the last
        token's logits (fp32, ``[vocab]``). Whatever the slot held before is overwritten or lies
        past the new length, where decode masks it out; other slots are not touched."""
        s = self.shape
        n = tokens.shape[0]
        positions = torch.arange(n, device=tokens.device)
        cos, sin = rope_angles(positions, s.head_dim)
        x = F.embedding(tokens, self.tok_embeddings)
        for i, layer in enumerate(self.blocks()):
            q, k, v = layer.qkv(x, s, cos, sin)
            cache.k[i][slot, :, :n] = k.transpose(0, 1)
            cache.v[i][slot, :, :n] = v.transpose(0, 1)
            # enable_gqa: the kernel shares each KV head with its group of query heads itself,
            # rather than from a copy of K and V repeated per query head.
            out = F.scaled_dot_product_attention(
                q.transpose(0, 1)[None],
                k.transpose(0, 1)[None],
                v.transpose(0, 1)[None],
                is_causal=True,
                enable_gqa=True,
            )
            x = layer.attention_out(x, out[0].transpose(0, 1).reshape(n, -1))
            x = layer.mlp(x)
        return F.linear(rms_norm(x[-1:], self.norm), self.output).float()[0]

    @torch.inference_mode()
    def decode(self, cache: KVCache, tokens: Tensor, positions: Tensor, attn_len: int) -> Tensor:
        """One decode step for slots ``0 … n-1``, ``n = len(tokens)``; returns fp32 logits ``[n, vocab]``.

        Slot ``b`` gets token ``tokens[b]`` at position ``positions[b]`` (its current length),
        writes its K and V there, and attends to its positions ``0 … positions[b]``. Every slot
        reads the cache up to ``attn_len`` (at least ``max(positions) + 1``) and masks the rest,
        so one step serves a ragged batch with one set of kernels.
        """
        s = self.shape
        n = tokens.shape[0]
        group = s.num_heads // s.num_kv_heads
        rows = torch.arange(n, device=tokens.device)
        cos, sin = rope_angles(positions, s.head_dim)
        # The mask as an fp32 bias (0 where visible, -inf past the slot's length), built once per
        # step on the device: the same for every layer, and no value goes back to the host.
        visible = torch.arange(attn_len, device=tokens.device)[None, :] <= positions[:, None]
        bias = torch.zeros(visible.shape, dtype=torch.float32, device=tokens.device)
        bias = bias.masked_fill_(~visible, float("-inf"))[:, None, None, :]  # [n, 1, 1, L]
        scale = 1.0 / math.sqrt(s.head_dim)
        x = F.embedding(tokens, self.tok_embeddings)
        for i, layer in enumerate(self.blocks()):
            q, k, v = layer.qkv(x, s, cos, sin)
            cache.k[i][rows, :, positions] = k
            cache.v[i][rows, :, positions] = v
            keys = cache.k[i][:n, :, :attn_len]  # [n, kv_heads, L, d], a view
            values = cache.v[i][:n, :, :attn_len]
            # Grouped-KV attention without repeating K and V: the heads that share a KV head
            # become the rows of one small matmul, so the cache is read once. The scores are
            # scaled and masked in fp32 by one add ([n, kv_heads, group, L]).
            q = q.reshape(n, s.num_kv_heads, group, s.head_dim)
            scores = torch.add(bias, q @ keys.transpose(-1, -2), alpha=scale)
            out = scores.softmax(dim=-1).to(values.dtype) @ values  # [n, kv_heads, group, d]
            x = layer.attention_out(x, out.reshape(n, -1))
            x = layer.mlp(x)
        return F.linear(rms_norm(x, self.norm), self.output).float()
