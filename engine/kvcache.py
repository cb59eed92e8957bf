"""The KV-cache calculator: how many requests fit, and where a GPU's memory goes.

Per GPU, in the order vLLM sizes its cache:

1. bytes per token = Σ over attention layers of (2 for K and V, 1 for an MLA latent)
   × KV heads on this GPU × head_dim × KV-dtype bytes, with KV heads per GPU =
   max(1, num_kv_heads // tp); an MLA latent is replicated on every tensor-parallel rank.
2. the KV budget, one of three ways: the lab's fixed reserve (``ReserveBudget``), vLLM's own
   accounting estimated from the card (``VllmBudget``), or a size taken as given
   (``GivenBudget``, e.g. vLLM's "Available KV cache memory" log line).
3. blocks = floor(budget / (block_size × bytes per token)); tokens = blocks × block_size.
4. requests at context C = floor(blocks / ceil(C / block_size)) for full attention. A sliding
   layer holds at most ceil((window − 1 + prefill chunk) / block_size) + 1 blocks of a request
   (vLLM's bound for sliding-window layers), so mixed models (Gemma-2) and windowed ones
   (Mistral-7B) are counted layer by layer: a pool of blocks × layers layer-blocks, and a request
   needs full_layers × ceil(C / block_size) + sliding_layers × its bounded block count.

Everything here is pure arithmetic on integers (bytes), so the numbers are exact and repeatable.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, ClassVar, Literal, get_args

from engine import numbers
from engine.catalog import WEIGHT_DTYPE_BITS, ModelArch
from engine.errors import UserError
from engine.limits import MAX_BLOCK_SIZE, MAX_CONTEXT_TOKENS, MAX_CONTEXTS, MAX_TP
from engine.units import MIB

DEFAULT_CONTEXTS = (512, 1024, 2048, 4096, 8192, 16384, 32768)
DEFAULT_BLOCK_SIZE = 16
# The prefill chunk a sliding window must also hold, when no vLLM budget sets one: vLLM's chunked
# prefill default for online serving (max_num_batched_tokens 2048).
DEFAULT_PREFILL_CHUNK = 2048

# The KV cache dtypes the calculator prices, said once: the spec, the sweep and the kv command
# take their choices from here.
KvDtype = Literal["auto", "fp16", "bf16", "fp8", "int8", "int4"]
KV_DTYPES: tuple[str, ...] = get_args(KvDtype)
_KV_BITS = {"fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "int4": 4}
_KV_ALIASES = {
    "float16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "fp8_e4m3": "fp8",
    "fp8_e5m2": "fp8",
    "fp8_inc": "fp8",
    "float8": "fp8",
}


# ---------------------------------------------------------------------------------------------
# Bytes per token


def serving_dtype(model: ModelArch) -> str:
    """The dtype vLLM computes in with ``dtype=auto``: the checkpoint's, except that float32
    checkpoints are served in 16 bits (bfloat16 for Gemma, which overflows in float16)."""
    if model.dtype != "float32":
        return model.dtype
    return "bfloat16" if model.model_type.startswith("gemma") else "float16"


def resolve_kv_dtype(model: ModelArch, kv_dtype: str = "auto") -> str:
    """The KV dtype's name after ``auto`` and aliases are resolved (fp16, bf16, fp8, int8, int4)."""
    key = str(kv_dtype).lower()
    key = _KV_ALIASES.get(key, key)
    if key == "auto":
        return "bf16" if serving_dtype(model) == "bfloat16" else "fp16"
    if key not in _KV_BITS:
        raise UserError(f"unknown KV dtype {kv_dtype!r}; use one of {', '.join(KV_DTYPES)}", field="kv_dtype")
    return key


def _check_tp(model: ModelArch, tp: int) -> None:
    if not isinstance(tp, int) or tp < 1:
        raise UserError(f"tensor parallel size must be a whole number ≥ 1, got {tp!r}", field="tp")
    if model.num_attention_heads % tp:
        raise UserError(
            f"{model.name} has {model.num_attention_heads} attention heads, which "
            f"{tp} GPUs cannot split evenly",
            field="tp",
        )


def kv_heads_per_gpu(model: ModelArch, tp: int = 1) -> int:
    """KV heads one GPU stores: split across ranks, never below one (each rank needs a copy of
    a head it cannot split); an MLA latent is one head kept whole on every rank."""
    _check_tp(model, tp)
    if model.is_mla:
        return 1
    return max(1, model.num_kv_heads // tp)


def kv_bytes_per_token_per_layer(model: ModelArch, kv_dtype: str = "auto", tp: int = 1) -> int:
    """One token in one attention layer, on one GPU."""
    factor = 1 if model.is_mla else 2  # MLA caches a single latent, not K and V
    bits = factor * kv_heads_per_gpu(model, tp) * model.head_dim * _KV_BITS[resolve_kv_dtype(model, kv_dtype)]
    return bits // 8 if bits % 8 == 0 else math.ceil(bits / 8)


def kv_bytes_per_token(model: ModelArch, kv_dtype: str = "auto", tp: int = 1) -> int:
    """What one cached token costs on one GPU across every attention layer.

    A sliding-window layer holds a token only while it is inside the window; that bound is
    applied per request (``blocks_per_request``), not here, so this is also the size of a token
    slot in vLLM's block pool (block bytes = block_size × this).
    """
    return kv_bytes_per_token_per_layer(model, kv_dtype, tp) * model.num_layers


# ---------------------------------------------------------------------------------------------
# Weights


def weight_bytes(model: ModelArch, tp: int = 1, weight_dtype: str | None = None) -> int:
    """Weights on one GPU: parameters × bytes, split evenly across tensor-parallel ranks.

    A quantised checkpoint (config's quantization_config, or ``weight_dtype`` fp8/int8/int4)
    stores its linear layers at that width and keeps the embedding and LM head at 16 bits, as
    AWQ, GPTQ and FP8 checkpoints do; scales (under 1 %) are not counted.
    """
    _check_tp(model, tp)
    if weight_dtype is not None and weight_dtype.lower() not in WEIGHT_DTYPE_BITS:
        raise UserError(
            f"unknown weight dtype {weight_dtype!r}; use one of {', '.join(sorted(WEIGHT_DTYPE_BITS))}",
            field="weight_dtype",
        )
    chosen = (weight_dtype or model.weight_quant or serving_dtype(model)).lower()
    bits = WEIGHT_DTYPE_BITS[chosen]
    if bits >= 16:
        total_bits = model.num_params * bits
    else:
        embedding = min(model.embedding_params, model.num_params)
        total_bits = (model.num_params - embedding) * bits + embedding * 16
    return math.ceil(total_bits / 8 / tp)


# ---------------------------------------------------------------------------------------------
# Budgets


@dataclass(frozen=True)
class ReserveBudget:
    """The lab's budget: the GPU's memory minus a fixed reserve for weights, activations and
    overhead. ``weights_bytes`` optionally says how much of the reserve the weights take (for
    the breakdown); otherwise it is computed from the model's parameter count when known."""

    reserve_bytes: int
    weights_bytes: int | None = None
    kind: ClassVar[str] = "reserve"


@dataclass(frozen=True)
class VllmBudget:
    """vLLM's accounting: total × gpu_memory_utilization − weights − activation peak of a
    profiling pass over max_num_batched_tokens − non-torch memory. None means estimate it."""

    gpu_memory_utilization: float = 0.9
    max_num_batched_tokens: int | None = None
    max_num_seqs: int = 256
    non_torch_bytes: int | None = None
    activation_bytes: int | None = None
    kind: ClassVar[str] = "vllm"


@dataclass(frozen=True)
class GivenBudget:
    """A KV size per GPU taken as given, e.g. vLLM's "Available KV cache memory" log line."""

    kv_memory_bytes: int
    kind: ClassVar[str] = "given"


Budget = ReserveBudget | VllmBudget | GivenBudget

# The pieces of the vLLM estimate that are not computed from the model.
# A CUDA context with lazy module loading (CUDA ≥ 11.7) holds about 300 MB before any tensor:
# driver state and the kernels loaded so far (PyTorch maintainers, pytorch/pytorch#107667).
CUDA_CONTEXT_BYTES = 300 * MIB
# Tensor parallelism adds NCCL's communication buffers: NCCL_BUFFSIZE (4 MiB) per channel and
# direction for each ring neighbour, up to 32 channels on NVLink, i.e. about 512 MiB per GPU.
NCCL_BUFFER_BYTES = 2 * 2 * 4 * MIB * 32
# vLLM's sampler in the profiling pass keeps float32 logits, probabilities and log-probabilities
# for each sequence and sorts them for top-p/top-k (float32 values + int64 indices).
SAMPLER_BYTES_PER_LOGIT = 4 + 4 + 4 + 4 + 8


def default_max_num_batched_tokens(max_model_len: int | None) -> int:
    """What vLLM profiles when max_num_batched_tokens is not set.

    Without chunked prefill a whole prompt must fit in one step, so vLLM (0.2 to 0.5) used
    max(max_model_len, 2048). For contexts above 32K vLLM turns chunked prefill on instead;
    there we take 8,192, V1's offline default. Set it explicitly to match a given server.
    """
    length = max_model_len or 2048
    return max(length, 2048) if length <= 32768 else 8192


def non_torch_bytes_estimate(tp: int = 1) -> int:
    """Memory outside PyTorch's allocator: the CUDA context, plus NCCL buffers when tp > 1."""
    return CUDA_CONTEXT_BYTES + (NCCL_BUFFER_BYTES if tp > 1 else 0)


def activation_peak_bytes(model: ModelArch, tokens: int, max_num_seqs: int = 256, tp: int = 1) -> int:
    """Peak activation memory of one forward pass over ``tokens`` tokens, per GPU.

    Layers run one after another, so the peak is the largest set of tensors alive at once in any
    one layer (or in the sampler), not a sum over layers:

    - feed-forward: residual + normed input (h each) + gate/up output (2·I/tp) + activation
      output (I/tp) + down-projection output (h): tokens × (3h + 3I/tp) × dtype bytes;
      for experts (vLLM's fused MoE) each token has k copies of the gate/up, activation and down
      buffers, plus float32 router logits;
    - attention: residual + normed input + q/k/v projection + attention output + o-projection
      output: tokens × (3h + 2q + 2kv) × dtype bytes, with q and kv the per-GPU widths;
    - sampler: the final hidden states (2h per token) plus, for each of the
      min(tokens, max_num_seqs) sampled sequences, vocab × 24 bytes (``SAMPLER_BYTES_PER_LOGIT``).

    For Llama-2-7B over 4,096 tokens this gives 371,195,904 B (354 MiB, the feed-forward), which
    with the weights reproduces the torch-only peak that vLLM logged before its profiling fix
    (7,449 blocks; see the tests).
    """
    if tokens < 1:
        raise UserError(
            f"max_num_batched_tokens must be positive, got {tokens}", field="max_num_batched_tokens"
        )
    _check_tp(model, tp)
    a = 2 if serving_dtype(model) in ("float16", "bfloat16") else 4
    h = model.hidden_size
    if model.is_mla:
        # MLA expands its latent into per-head keys and values for prefill; ModelArch keeps only
        # the cached latent's width, so take the nominal head width h / heads for q, k and v.
        q = kv = h // tp
    else:
        q = model.num_attention_heads * model.head_dim // tp
        kv = kv_heads_per_gpu(model, tp) * model.head_dim
    attention = tokens * a * (3 * h + 2 * q + 2 * kv)
    dense = tokens * a * (3 * h + 3 * math.ceil(model.intermediate_size / tp))
    feed_forward = dense
    if model.num_experts:
        inner = math.ceil(model.expert_intermediate_size / tp)
        shared = math.ceil(model.shared_expert_intermediate_size / tp)
        moe = tokens * (
            a * (2 * h + model.experts_per_token * (3 * inner + h) + 3 * shared) + 4 * model.num_experts
        )
        # Mixtral's intermediate_size is the expert's; DeepSeek's is that of its dense layers.
        has_dense_layers = model.intermediate_size != model.expert_intermediate_size
        feed_forward = max(moe, dense) if has_dense_layers else moe
    sampled = min(tokens, max_num_seqs)
    sampler = tokens * a * 2 * h + sampled * model.vocab_size * SAMPLER_BYTES_PER_LOGIT
    return max(attention, feed_forward, sampler)


@dataclass(frozen=True)
class VllmEstimate:
    """The pieces of vLLM's budget for one GPU."""

    total_bytes: int
    requested_bytes: int
    weights_bytes: int
    activation_bytes: int
    non_torch_bytes: int
    max_num_batched_tokens: int
    kv_memory_bytes: int


def estimate_vllm_kv_memory(
    model: ModelArch,
    gpu_memory_bytes: int,
    budget: VllmBudget,
    *,
    tp: int = 1,
    max_model_len: int | None = None,
    weight_dtype: str | None = None,
) -> VllmEstimate:
    """vLLM's KV budget on one GPU, estimated from first principles.

    vLLM measures, after a profiling forward pass, everything the process holds on the device and
    gives the KV cache what is left of ``total × gpu_memory_utilization``. The estimate rebuilds
    that sum:

    - total: the memory the device reports to torch (79.15 GiB on an A100 80GB), not the
      marketed 80 GB;
    - weights: parameters × bytes / tp (``weight_bytes``);
    - activation peak: ``activation_peak_bytes`` over max_num_batched_tokens, which defaults to
      max(max_model_len, 2048) (``default_max_num_batched_tokens``), the setting of the vLLM
      releases that printed "# GPU blocks";
    - non-torch memory: vLLM ≥ 0.2.5 counts total − free after profiling (its "peak memory
      profiling" fix), which includes the CUDA context (about 300 MiB) and, with tp > 1, NCCL's
      buffers (about 512 MiB): ``non_torch_bytes_estimate``.

    Not modelled: the caching allocator's slack and kernel images loaded during the pass (together
    a few hundred MiB, which is why the estimate runs about 1 % above vLLM's published count),
    CUDA-graph memory (subtracted only by releases from 2025 on) and NCCL's larger buffers of some
    releases with tp > 1. A measured figure can replace any piece (``activation_bytes``,
    ``non_torch_bytes``).
    """
    util = budget.gpu_memory_utilization
    if not 0 < util <= 1:
        raise UserError(f"gpu_memory_utilization must be in (0, 1], got {util}", field="gpu_util")
    if model.num_params <= 0:
        raise UserError(
            f"{model.name} has no parameter count; the vllm budget needs one "
            "(give num_params, or use a reserve or given budget)",
            field="num_params",
        )
    if budget.max_num_batched_tokens is not None and budget.max_num_batched_tokens < 1:
        # 0 used to mean "the default" silently; a typo must not change the budget unseen.
        raise UserError(
            f"max_num_batched_tokens must be at least 1, got {budget.max_num_batched_tokens}",
            field="max_num_batched_tokens",
        )
    if budget.max_num_seqs < 1:
        raise UserError(f"max_num_seqs must be at least 1, got {budget.max_num_seqs}", field="max_num_seqs")
    for name, value in (
        ("non_torch_bytes", budget.non_torch_bytes),
        ("activation_bytes", budget.activation_bytes),
    ):
        if value is not None and not 0 <= value <= 2**60:
            raise UserError(f"{name} must be between 0 and 2^60, got {value}", field=name)
    tokens = (
        budget.max_num_batched_tokens
        if budget.max_num_batched_tokens is not None
        else default_max_num_batched_tokens(max_model_len or model.max_position_embeddings or None)
    )
    weights = weight_bytes(model, tp, weight_dtype)
    activation = (
        budget.activation_bytes
        if budget.activation_bytes is not None
        else activation_peak_bytes(model, tokens, budget.max_num_seqs, tp)
    )
    non_torch = budget.non_torch_bytes if budget.non_torch_bytes is not None else non_torch_bytes_estimate(tp)
    requested = int(gpu_memory_bytes * util)
    return VllmEstimate(
        total_bytes=gpu_memory_bytes,
        requested_bytes=requested,
        weights_bytes=weights,
        activation_bytes=activation,
        non_torch_bytes=non_torch,
        max_num_batched_tokens=tokens,
        kv_memory_bytes=requested - weights - activation - non_torch,
    )


# ---------------------------------------------------------------------------------------------
# Blocks and requests


def sliding_window_blocks(window: int, block_size: int, prefill_chunk: int) -> int:
    """Most blocks a sliding layer holds for one request: the window, the tokens of a prefill
    chunk that are being written while it slides, and one block of misalignment."""
    return math.ceil((window - 1 + prefill_chunk) / block_size) + 1


def layer_blocks_per_request(
    model: ModelArch, context: int, block_size: int, prefill_chunk: int
) -> tuple[int, int]:
    """(blocks a full-attention layer needs, blocks a sliding layer needs) at this context."""
    full = math.ceil(context / block_size)
    sliding = full
    if model.sliding_attention_layers and model.sliding_window:
        sliding = min(full, sliding_window_blocks(model.sliding_window, block_size, prefill_chunk))
    return full, sliding


@dataclass(frozen=True)
class ContextFit:
    """How many requests of one context length fit in the cache."""

    context: int
    blocks_per_request: int  # blocks one full-attention layer holds for the request
    sliding_blocks_per_request: int | None  # the same for a sliding layer (None: no sliding)
    bytes_per_request: int
    max_requests: int  # whole requests that fit at once
    concurrency: float  # vLLM's "Maximum concurrency" figure (blocks / blocks per request)
    within_max_model_len: bool


@dataclass(frozen=True)
class MemoryBreakdown:
    """Where one GPU's memory goes. The five parts add up to ``total_bytes`` exactly."""

    total_bytes: int
    weights_bytes: int
    activation_and_overhead_bytes: int
    kv_cache_bytes: int  # the blocks allocated
    unused_bytes: int  # utilisation headroom plus the remainder smaller than one block


@dataclass(frozen=True)
class KvPlan:
    """Everything the calculator worked out for one model on one GPU, with its inputs."""

    model: str
    model_label: str
    gpu_memory_bytes: int
    budget: dict[str, Any]
    kv_dtype: str
    kv_dtype_bytes: float
    tp: int
    block_size: int
    prefill_chunk: int
    max_model_len: int | None
    attention: dict[str, Any]
    bytes_per_token: int
    bytes_per_block: int
    kv_memory_bytes: int
    num_blocks: int
    kv_tokens: int
    contexts: tuple[ContextFit, ...]
    breakdown: MemoryBreakdown
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (ints stay ints)."""
        data = asdict(self)
        data["contexts"] = [asdict(c) for c in self.contexts]
        data["notes"] = list(self.notes)
        return data

    def fit(self, context: int) -> ContextFit:
        """The row for one context length."""
        for row in self.contexts:
            if row.context == context:
                return row
        raise KeyError(context)


def _positive(value: Any, fieldname: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserError(f"must be a positive whole number, got {value!r}", field=fieldname)
    return value


def plan_kv_cache(
    model: ModelArch,
    gpu_memory_bytes: int,
    budget: Budget,
    *,
    kv_dtype: str = "auto",
    tp: int = 1,
    block_size: int = DEFAULT_BLOCK_SIZE,
    contexts: Iterable[int] = DEFAULT_CONTEXTS,
    max_model_len: int | None = None,
    weight_dtype: str | None = None,
    prefill_chunk: int | None = None,
) -> KvPlan:
    """Size the KV cache of ``model`` on one GPU of ``gpu_memory_bytes`` under ``budget``.

    ``max_model_len`` (default: the model's max_position_embeddings) only flags contexts the
    model cannot take and sets vLLM's default max_num_batched_tokens. ``prefill_chunk`` is the
    tokens a sliding window must also hold (default: the vllm budget's max_num_batched_tokens,
    else 2,048).
    """
    _positive(gpu_memory_bytes, "gpu_memory")
    _positive(block_size, "block_size")
    context_list = tuple(_positive(c, "context") for c in contexts)
    if max_model_len is not None:
        _positive(max_model_len, "max_model_len")
    # The stated limits (engine/limits.py), for callers that did not come through the spec or
    # the command line: a billion-token block or a million contexts is a typo, not a plan.
    for name, value, most in (
        ("block_size", block_size, MAX_BLOCK_SIZE),
        ("tp", tp, MAX_TP),
        ("max_model_len", max_model_len or 1, MAX_CONTEXT_TOKENS),
        ("gpu_memory", gpu_memory_bytes, 2**60),
    ):
        if not 1 <= value <= most:
            raise UserError(f"must be between 1 and {most:,}, got {value:,}", field=name)
    if len(context_list) > MAX_CONTEXTS or max(context_list, default=1) > MAX_CONTEXT_TOKENS:
        raise UserError(
            f"at most {MAX_CONTEXTS:,} contexts of at most {MAX_CONTEXT_TOKENS:,} tokens", field="context"
        )
    per_layer = kv_bytes_per_token_per_layer(model, kv_dtype, tp)
    per_token = per_layer * model.num_layers
    per_block = per_token * block_size
    notes: list[str] = []
    estimated_weights = weight_bytes(model, tp, weight_dtype) if model.num_params > 0 else 0

    budget_info: dict[str, Any] = {"kind": budget.kind}
    chunk_default = DEFAULT_PREFILL_CHUNK
    if isinstance(budget, ReserveBudget):
        reserve = int(budget.reserve_bytes)
        if not 0 <= reserve < gpu_memory_bytes:
            raise UserError(
                f"the reserve ({numbers.gib(reserve)}) must be smaller than the GPU's "
                f"memory ({numbers.gib(gpu_memory_bytes)})",
                field="reserve",
            )
        kv_memory = gpu_memory_bytes - reserve
        weights = budget.weights_bytes if budget.weights_bytes is not None else estimated_weights
        if weights > reserve:
            notes.append(
                f"the weights ({numbers.gib(weights)}) exceed the reserve "
                f"({numbers.gib(reserve)}); the breakdown caps them at the reserve"
            )
            weights = reserve
        if weights == 0:
            notes.append(
                "the reserve's split between weights and activations is not known "
                "(no parameter count); it is shown as activations and overhead"
            )
        overhead = reserve - weights
        budget_info.update(reserve_bytes=reserve)
    elif isinstance(budget, VllmBudget):
        est = estimate_vllm_kv_memory(
            model, gpu_memory_bytes, budget, tp=tp, max_model_len=max_model_len, weight_dtype=weight_dtype
        )
        if est.kv_memory_bytes <= 0:
            raise UserError(
                f"{model.name} leaves no memory for the KV cache on this GPU: of "
                f"{numbers.gib(est.requested_bytes)} ({numbers.setting(budget.gpu_memory_utilization)} of "
                f"{numbers.gib(gpu_memory_bytes)}), weights take {numbers.gib(est.weights_bytes)} "
                f"and activations and overhead "
                f"{numbers.gib(est.activation_bytes + est.non_torch_bytes)}; try more GPUs "
                "(--tp), a quantised KV or weight dtype, or a bigger card",
                field="gpu",
            )
        kv_memory = est.kv_memory_bytes
        weights = est.weights_bytes
        overhead = est.activation_bytes + est.non_torch_bytes
        chunk_default = est.max_num_batched_tokens
        budget_info.update(
            gpu_memory_utilization=budget.gpu_memory_utilization,
            requested_bytes=est.requested_bytes,
            max_num_batched_tokens=est.max_num_batched_tokens,
            max_num_seqs=budget.max_num_seqs,
            activation_bytes=est.activation_bytes,
            non_torch_bytes=est.non_torch_bytes,
            activation_estimated=budget.activation_bytes is None,
            non_torch_estimated=budget.non_torch_bytes is None,
        )
    elif isinstance(budget, GivenBudget):
        kv_memory = _positive(int(budget.kv_memory_bytes), "kv_memory")
        if kv_memory > gpu_memory_bytes:
            raise UserError(
                f"the given KV memory ({numbers.gib(kv_memory)}) is more than the "
                f"GPU has ({numbers.gib(gpu_memory_bytes)})",
                field="kv_memory",
            )
        weights = min(estimated_weights, gpu_memory_bytes - kv_memory)
        overhead = gpu_memory_bytes - kv_memory - weights
        notes.append(
            "with a given KV size, everything besides weights and KV cache (activations, "
            "overhead and utilisation headroom) is one figure"
        )
        budget_info.update(kv_memory_bytes=kv_memory)
    else:  # pragma: no cover - the type says which budgets exist
        raise TypeError(f"unknown budget {budget!r}")

    num_blocks = kv_memory // per_block
    kv_cache = num_blocks * per_block
    unused = gpu_memory_bytes - weights - overhead - kv_cache
    chunk = _positive(prefill_chunk, "prefill_chunk") if prefill_chunk else chunk_default
    limit = max_model_len or model.max_position_embeddings or None

    layers, sliding_layers = model.num_layers, model.sliding_attention_layers
    full_layers = layers - sliding_layers
    pool = num_blocks * layers  # layer-blocks: one layer's share of one block
    fits = []
    for context in context_list:
        full, sliding = layer_blocks_per_request(model, context, block_size, chunk)
        need = full_layers * full + sliding_layers * sliding
        fits.append(
            ContextFit(
                context=context,
                blocks_per_request=full,
                sliding_blocks_per_request=sliding if sliding_layers else None,
                bytes_per_request=need * block_size * per_layer,
                max_requests=pool // need,
                concurrency=round(pool / need, 2),
                within_max_model_len=limit is None or context <= limit,
            )
        )
    if limit:
        full, sliding = layer_blocks_per_request(model, limit, block_size, chunk)
        if pool < full_layers * full + sliding_layers * sliding:
            notes.append(
                f"one request of the full {limit:,}-token context does not fit "
                "(vLLM refuses to start unless max_model_len is lowered)"
            )

    return KvPlan(
        model=model.name,
        model_label=model.label,
        gpu_memory_bytes=gpu_memory_bytes,
        budget=budget_info,
        kv_dtype=resolve_kv_dtype(model, kv_dtype),
        kv_dtype_bytes=_KV_BITS[resolve_kv_dtype(model, kv_dtype)] / 8,
        tp=tp,
        block_size=block_size,
        prefill_chunk=chunk,
        max_model_len=limit,
        attention={
            "kind": "mla"
            if model.is_mla
            else ("mha" if model.num_kv_heads == model.num_attention_heads else "gqa"),
            "layers": layers,
            "full_attention_layers": full_layers,
            "sliding_attention_layers": sliding_layers,
            "sliding_window": model.sliding_window if sliding_layers else None,
            "kv_heads": model.num_kv_heads,
            "kv_heads_per_gpu": kv_heads_per_gpu(model, tp),
            "head_dim": model.head_dim,
            "bytes_per_token_per_layer": per_layer,
        },
        bytes_per_token=per_token,
        bytes_per_block=per_block,
        kv_memory_bytes=kv_memory,
        num_blocks=num_blocks,
        kv_tokens=num_blocks * block_size,
        contexts=tuple(fits),
        breakdown=MemoryBreakdown(
            total_bytes=gpu_memory_bytes,
            weights_bytes=weights,
            activation_and_overhead_bytes=overhead,
            kv_cache_bytes=kv_cache,
            unused_bytes=unused,
        ),
        notes=tuple(notes),
    )
