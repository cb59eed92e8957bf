"""Model shapes the benchmark can build, without importing torch.

The weights are random, so a shape is all a benchmark needs from a model: step time and memory
depend on how many bytes the weights and the cache hold, never on their values.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class ModelShape:
    """The numbers of a Llama-shaped decoder that decide its size and its KV cache."""

    name: str
    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int

    def kv_bytes_per_token(self, dtype_bytes: int) -> int:
        """K and V, every layer: 2 × layers × KV heads × head dim × dtype bytes (the lab's formula)."""
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim * dtype_bytes

    def param_count(self) -> int:
        """Parameters of the decoder as engine.gpubench.model builds it (untied output head)."""
        h, d = self.hidden_size, self.head_dim
        per_layer = (
            2 * h
            + (self.num_heads + 2 * self.num_kv_heads) * d * h
            + h * self.num_heads * d
            + 3 * self.intermediate_size * h
        )
        return 2 * self.vocab_size * h + h + self.num_layers * per_layer

    def decode_weight_bytes(self, dtype_bytes: int) -> int:
        """The weight bytes one decode step reads: every parameter but the embedding table, of
        which a step reads only one row per request (the output head is read whole)."""
        return (self.param_count() - self.vocab_size * self.hidden_size) * dtype_bytes

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# Small enough that the whole benchmark runs on a laptop CPU in seconds, with grouped KV heads so
# the GQA path is exercised too.
TINY = ModelShape(
    name="tiny",
    num_layers=2,
    hidden_size=256,
    num_heads=4,
    num_kv_heads=2,
    head_dim=64,
    intermediate_size=688,
    vocab_size=1024,
)

# The lab's "7B-class" model (Llama-2-7B's config.json): 32 layers, 32 KV heads, head dim 128.
SEVEN_B = ModelShape(
    name="7b-class",
    num_layers=32,
    hidden_size=4096,
    num_heads=32,
    num_kv_heads=32,
    head_dim=128,
    intermediate_size=11008,
    vocab_size=32000,
)

BUILTIN: dict[str, ModelShape] = {s.name: s for s in (TINY, SEVEN_B)}


def shape_from_arch(name: str, arch: Any) -> ModelShape:
    """A catalog ModelArch (engine.catalog.load_model) as a benchmark shape.

    Only dense models: the decoder has no MLA and no experts, and timing a different architecture
    under the model's name would mislead. A sliding window is ignored (full attention reads at
    least as much, so such a model's step time comes out pessimistic past its window)."""
    unsupported = [
        what
        for what, present in (
            ("MLA", getattr(arch, "kv_lora_rank", None) is not None),
            ("mixture of experts", bool(getattr(arch, "num_experts", 0))),
        )
        if present
    ]
    if unsupported:
        raise ValueError(
            f"{name}: {', '.join(unsupported)} not supported by the benchmark's dense Llama-shaped decoder"
        )
    return ModelShape(
        name=name,
        num_layers=int(arch.num_layers),
        hidden_size=int(arch.hidden_size),
        num_heads=int(arch.num_attention_heads),
        num_kv_heads=int(arch.num_kv_heads),
        head_dim=int(arch.head_dim),
        intermediate_size=int(arch.intermediate_size),
        vocab_size=int(arch.vocab_size),
    )
