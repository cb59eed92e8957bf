"""The KV-cache calculator against hand-worked cases, vLLM's published numbers and naive loops."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.catalog import load_gpu, load_model, model_from_fields
from engine.errors import UserError
from engine.kvcache import (
    GivenBudget,
    ReserveBudget,
    VllmBudget,
    activation_peak_bytes,
    kv_bytes_per_token,
    plan_kv_cache,
    weight_bytes,
)

from helpers import examples

GIB = 1 << 30
MIB = 1 << 20
FIXTURES = Path(__file__).parent / "fixtures" / "kv"


def lab_model():
    return model_from_fields("7B-class", num_layers=32, num_kv_heads=32, head_dim=128, dtype="fp16")


# --- the lab's case ---------------------------------------------------------------------------


def test_lab_case_reproduces_the_post_table():
    plan = plan_kv_cache(lab_model(), 80 * GIB, ReserveBudget(16 * GIB))
    assert plan.bytes_per_token == 2 * 32 * 32 * 128 * 2 == 524_288
    assert plan.kv_memory_bytes == 64 * GIB
    assert plan.block_size == 16 and plan.num_blocks == 8_192
    assert plan.kv_tokens == 131_072
    assert [(c.context, c.max_requests) for c in plan.contexts] == [
        (512, 256),
        (1024, 128),
        (2048, 64),
        (4096, 32),
        (8192, 16),
        (16384, 8),
        (32768, 4),
    ]
    assert plan.fit(2048).bytes_per_request == 1 * GIB
    assert plan.fit(8192).bytes_per_request == 4 * GIB


def test_lab_breakdown_adds_up_and_splits_the_reserve_when_weights_are_given():
    plan = plan_kv_cache(lab_model(), 80 * GIB, ReserveBudget(16 * GIB, weights_bytes=14 * GIB))
    b = plan.breakdown
    assert (b.weights_bytes, b.activation_and_overhead_bytes) == (14 * GIB, 2 * GIB)
    assert (b.kv_cache_bytes, b.unused_bytes) == (64 * GIB, 0)
    assert (
        b.weights_bytes + b.activation_and_overhead_bytes + b.kv_cache_bytes + b.unused_bytes
        == b.total_bytes
        == 80 * GIB
    )


# --- bytes per token, one feature at a time ---------------------------------------------------


@pytest.mark.parametrize(
    "name, expected",
    [
        ("llama-2-7b", 2 * 32 * 32 * 128 * 2),  # multi-head: 32 KV heads
        ("llama-3-8b", 2 * 32 * 8 * 128 * 2),  # grouped: 8 KV heads, a quarter of the above
        ("qwen2.5-7b", 2 * 28 * 4 * 128 * 2),  # 4 KV heads for 28 query heads
        ("qwen3-8b", 2 * 36 * 8 * 128 * 2),  # explicit head_dim 128
        ("gemma-2-9b", 2 * 42 * 8 * 256 * 2),  # head_dim 256, not 3584 / 16 = 224; fp32 → 16 bits
        ("deepseek-v3", 61 * (512 + 64) * 2),  # MLA: one latent, no factor 2
    ],
)
def test_bytes_per_token_by_attention_kind(name, expected):
    assert kv_bytes_per_token(load_model(name)) == expected


@pytest.mark.parametrize(
    "kv_dtype, expected",
    [
        ("auto", 131_072),
        ("bf16", 131_072),
        ("fp16", 131_072),
        ("fp8", 65_536),
        ("int8", 65_536),
        ("int4", 32_768),
    ],
)
def test_kv_dtype_bytes(kv_dtype, expected):
    assert kv_bytes_per_token(load_model("llama-3-8b"), kv_dtype) == expected


def test_tensor_parallel_splits_kv_heads_but_never_below_one():
    model = load_model("llama-3-70b")  # 80 layers, 8 KV heads, 64 query heads
    per_head = 2 * 80 * 128 * 2
    assert [kv_bytes_per_token(model, tp=tp) for tp in (1, 2, 4, 8, 16)] == [
        8 * per_head,
        4 * per_head,
        2 * per_head,
        per_head,
        per_head,
    ]


def test_mla_latent_is_replicated_on_every_rank():
    model = load_model("deepseek-v3")
    assert kv_bytes_per_token(model, tp=8) == kv_bytes_per_token(model, tp=1) == 70_272


def test_tensor_parallel_must_split_the_heads_evenly():
    with pytest.raises(UserError, match="cannot split"):
        kv_bytes_per_token(load_model("llama-2-7b"), tp=3)


def test_unknown_kv_dtype_is_a_user_error():
    with pytest.raises(UserError, match="unknown KV dtype"):
        kv_bytes_per_token(load_model("llama-2-7b"), "fp6")


# --- vLLM's formula where the KV memory is given ----------------------------------------------


def _naive_requests(num_blocks: int, context: int, block_size: int) -> int:
    """Hand out whole requests one at a time until the blocks run out."""
    per_request = -(-context // block_size)
    left, count = num_blocks, 0
    while left >= per_request:
        left -= per_request
        count += 1
    return count


@settings(max_examples=examples(30, 600), deadline=None)
@given(
    layers=st.integers(1, 48),
    kv_heads=st.sampled_from([1, 2, 4, 8]),
    head_dim=st.sampled_from([64, 128, 256]),
    kv_dtype=st.sampled_from(["fp16", "fp8", "int4"]),
    block_size=st.sampled_from([8, 16, 32]),
    kv_mib=st.integers(1, 4096),
    context=st.integers(1, 40_000),
)
def test_given_budget_matches_vllm_formula(layers, kv_heads, head_dim, kv_dtype, block_size, kv_mib, context):
    model = model_from_fields("m", layers, kv_heads, head_dim)
    kv_memory = kv_mib * MIB + 12_345
    plan = plan_kv_cache(
        model, 200 * GIB, GivenBudget(kv_memory), kv_dtype=kv_dtype, block_size=block_size, contexts=[context]
    )
    bits = {"fp16": 16, "fp8": 8, "int4": 4}[kv_dtype]
    per_token = 2 * layers * kv_heads * head_dim * bits // 8
    assert plan.bytes_per_token == per_token
    blocks = 0  # the largest whole number of blocks that fits
    while (blocks + 1) * block_size * per_token <= kv_memory:
        blocks += 1
    assert plan.num_blocks == blocks == kv_memory // (block_size * per_token)
    assert plan.kv_tokens == blocks * block_size
    assert plan.contexts[0].max_requests == _naive_requests(blocks, context, block_size)


@pytest.mark.parametrize(
    "blocks, context, logged",
    [
        # (# blocks, tokens per request, "Maximum concurrency ... X.XXx") from vLLM start-up logs
        (715, 2048, 5.59),
        (1394, 10000, 2.23),
        (1353, 512, 42.28),
        (307_335, 3072, 1600.70),
        (190_100, 32768, 92.82),
    ],
)
def test_concurrency_matches_vllm_log_lines(blocks, context, logged):
    model = lab_model()
    per_block = 16 * kv_bytes_per_token(model)
    plan = plan_kv_cache(model, 10**15, GivenBudget(blocks * per_block + per_block - 1), contexts=[context])
    assert plan.num_blocks == blocks
    assert plan.contexts[0].concurrency == pytest.approx(logged, abs=0.005)


def test_vllm_v1_log_pair_for_qwen2_5_1_5b():
    """'Available KV cache memory: 0.56 GiB' and 'GPU KV cache size: 20,992 tokens' (vLLM V1):
    every KV size that rounds to 0.56 GiB gives a token count on each side of 20,992."""
    model = load_model(str(FIXTURES / "qwen2.5-1.5b-instruct" / "config.json"))
    assert kv_bytes_per_token(model) == 2 * 28 * 2 * 128 * 2 == 28_672

    def tokens(gib: float) -> int:
        return plan_kv_cache(model, 8 * GIB, GivenBudget(int(gib * GIB))).kv_tokens

    assert tokens(0.555) <= 20_992 < tokens(0.565)
    exact = plan_kv_cache(model, 8 * GIB, GivenBudget(1312 * 16 * 28_672))
    assert (exact.num_blocks, exact.kv_tokens) == (1312, 20_992)


# --- vLLM's budget estimated from the card ----------------------------------------------------


def test_vllm_estimate_lands_within_3_percent_of_the_published_block_count():
    """vLLM PR #2031 (Dec 2023): Llama-2-7B, one A100 80GB, utilisation 0.9 → '# GPU blocks: 7351'."""
    plan = plan_kv_cache(load_model("llama-2-7b"), load_gpu("a100-80gb").memory_bytes, VllmBudget())
    assert plan.budget["max_num_batched_tokens"] == 4096  # max(max_model_len 4096, 2048)
    assert abs(plan.num_blocks - 7351) / 7351 <= 0.03


def test_vllm_estimate_pieces_are_hand_computable():
    model = load_model("llama-2-7b")
    assert weight_bytes(model) == 6_738_415_616 * 2
    # feed-forward peak: residual, normed input, gate/up (2 × 11008), activation, down output
    assert activation_peak_bytes(model, 4096) == 4096 * (3 * 4096 + 3 * 11008) * 2
    plan = plan_kv_cache(model, load_gpu("a100-80gb").memory_bytes, VllmBudget())
    requested = int(84_987_740_160 * 0.9)
    expected_kv = requested - 6_738_415_616 * 2 - 4096 * 45_312 * 2 - 300 * MIB
    assert plan.kv_memory_bytes == expected_kv
    assert plan.num_blocks == expected_kv // (16 * 524_288)


@pytest.mark.parametrize(
    "model, tp, logged",
    [
        ("llama-2-7b", 1, 7449),  # before the fix: torch-allocated peak only
        ("llama-2-70b", 4, 31615),
    ],
)
def test_weights_plus_activation_match_the_torch_only_profiler(model, tp, logged):
    """Before vLLM PR #2031 the profiler counted torch's peak allocation alone (weights +
    activations); the same two estimates, with no non-torch memory, land within 1 %."""
    plan = plan_kv_cache(
        load_model(model), load_gpu("a100-80gb").memory_bytes, VllmBudget(non_torch_bytes=0), tp=tp
    )
    assert abs(plan.num_blocks - logged) / logged <= 0.01


@pytest.mark.parametrize(
    "budget", [ReserveBudget(20 * GIB), VllmBudget(), VllmBudget(0.5), GivenBudget(30 * GIB)]
)
@pytest.mark.parametrize("model", ["llama-3-8b", "gemma-2-9b", "qwen3-14b"])
def test_breakdown_accounts_for_every_byte(budget, model):
    gpu = load_gpu("h100-80gb").memory_bytes
    b = plan_kv_cache(load_model(model), gpu, budget).breakdown
    parts = [b.weights_bytes, b.activation_and_overhead_bytes, b.kv_cache_bytes, b.unused_bytes]
    assert all(p >= 0 for p in parts)
    assert sum(parts) == b.total_bytes == gpu


def test_vllm_breakdown_leaves_the_utilisation_headroom_unused():
    gpu = load_gpu("a100-80gb").memory_bytes
    plan = plan_kv_cache(load_model("llama-3-8b"), gpu, VllmBudget())
    headroom = gpu - int(gpu * 0.9)
    assert headroom <= plan.breakdown.unused_bytes < headroom + plan.bytes_per_block


def test_tensor_parallel_splits_weights():
    model = load_model("llama-3-70b")
    assert weight_bytes(model, tp=4) == math.ceil(70_553_706_496 * 2 / 4)


def test_fp8_checkpoint_keeps_embeddings_at_16_bits():
    model = load_model("deepseek-v3")
    embeddings = 2 * 129_280 * 7168
    assert weight_bytes(model, tp=8) == math.ceil(((671_026_419_200 - embeddings) * 1 + embeddings * 2) / 8)


def test_weight_dtype_override():
    model = load_model("llama-3-8b")
    embeddings = 2 * 128_256 * 4096
    assert weight_bytes(model, weight_dtype="int4") == (8_030_261_248 - embeddings) // 2 + embeddings * 2


# --- sliding windows --------------------------------------------------------------------------


def test_mistral_window_bounds_the_cache_per_request():
    model = load_model("mistral-7b")  # every layer slides over 4,096 tokens
    per_block = 16 * kv_bytes_per_token(model)
    plan = plan_kv_cache(
        model, 80 * GIB, GivenBudget(10_000 * per_block), contexts=[4096, 8192, 32768], prefill_chunk=2048
    )
    window_blocks = math.ceil((4096 - 1 + 2048) / 16) + 1  # 385
    assert [c.sliding_blocks_per_request for c in plan.contexts] == [256, 385, 385]
    assert [c.max_requests for c in plan.contexts] == [
        10_000 // 256,
        10_000 // window_blocks,
        10_000 // window_blocks,
    ]


def test_gemma_2_counts_global_and_local_layers_separately():
    model = load_model("gemma-2-9b")  # 21 global layers, 21 local layers (window 4096)
    per_block = 16 * kv_bytes_per_token(model)
    plan = plan_kv_cache(
        model, 80 * GIB, GivenBudget(10_000 * per_block), contexts=[32768], prefill_chunk=2048
    )
    row = plan.contexts[0]
    assert (row.blocks_per_request, row.sliding_blocks_per_request) == (2048, 385)
    # a pool of 10,000 blocks × 42 layers; a request needs 21 × 2,048 + 21 × 385 layer-blocks
    assert row.max_requests == (10_000 * 42) // (21 * 2048 + 21 * 385) == 20_000 // 2433 == 8
    assert row.bytes_per_request == (21 * 2048 + 21 * 385) * 16 * 2 * 8 * 256 * 2


def test_qwen2_5_window_is_switched_off():
    plan = plan_kv_cache(load_model("qwen2.5-7b"), 80 * GIB, GivenBudget(10 * GIB), contexts=[32768])
    assert plan.attention["sliding_attention_layers"] == 0
    assert plan.contexts[0].sliding_blocks_per_request is None


# --- the halving property ---------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(
    blocks=st.integers(1, 200_000),
    context=st.integers(1, 100_000),
    block_size=st.sampled_from([1, 8, 16, 32, 64]),
)
def test_doubling_the_context_at_least_halves_the_requests(blocks, context, block_size):
    model = lab_model()
    per_block = block_size * kv_bytes_per_token(model)
    plan = plan_kv_cache(
        model, 10**15, GivenBudget(blocks * per_block), block_size=block_size, contexts=[context, 2 * context]
    )
    now, doubled = plan.contexts[0].max_requests, plan.contexts[1].max_requests
    k = -(-context // block_size)
    # A doubled request needs at least 2k − 1 blocks (2k when C fills whole blocks), so at most
    # blocks / (2k − 1) of them fit: half as many, within one block of rounding.
    assert doubled * (2 * k - 1) <= blocks
    assert doubled <= now
    if context % block_size == 0:
        assert doubled == now // 2  # whole blocks: exactly half, rounded down


@settings(max_examples=60, deadline=None)
@given(
    blocks=st.integers(1, 50_000),
    context=st.integers(1, 60_000),
    model_name=st.sampled_from(["mistral-7b", "gemma-2-9b", "llama-3-8b"]),
)
def test_doubling_never_costs_more_than_half_even_with_windows(blocks, context, model_name):
    model = load_model(model_name)
    per_block = 16 * kv_bytes_per_token(model)
    plan = plan_kv_cache(model, 10**15, GivenBudget(blocks * per_block), contexts=[context, 2 * context])
    now, doubled = plan.contexts[0].max_requests, plan.contexts[1].max_requests
    assert now // 2 <= doubled <= now


# --- mistakes ---------------------------------------------------------------------------------


def test_reserve_larger_than_the_gpu_is_a_user_error():
    with pytest.raises(UserError, match="reserve"):
        plan_kv_cache(lab_model(), 16 * GIB, ReserveBudget(16 * GIB))


def test_model_that_does_not_fit_says_why():
    with pytest.raises(UserError, match="weights take 131.42 GiB"):
        plan_kv_cache(load_model("llama-3-70b"), load_gpu("a100-80gb").memory_bytes, VllmBudget())
    plan = plan_kv_cache(load_model("llama-3-70b"), load_gpu("a100-80gb").memory_bytes, VllmBudget(), tp=2)
    assert plan.num_blocks > 0


def test_vllm_budget_needs_a_parameter_count():
    with pytest.raises(UserError, match="no parameter count"):
        plan_kv_cache(lab_model(), 80 * GIB, VllmBudget())


def test_contexts_beyond_the_model_are_flagged():
    plan = plan_kv_cache(load_model("llama-2-7b"), 80 * GIB, ReserveBudget(16 * GIB))
    assert [c.within_max_model_len for c in plan.contexts] == [True] * 4 + [False] * 3
    plan = plan_kv_cache(load_model("llama-2-7b"), 80 * GIB, ReserveBudget(16 * GIB), max_model_len=32768)
    assert all(c.within_max_model_len for c in plan.contexts)


def test_plan_to_dict_has_the_promised_keys():
    data = plan_kv_cache(lab_model(), 80 * GIB, ReserveBudget(16 * GIB)).to_dict()
    for key in (
        "bytes_per_token",
        "kv_memory_bytes",
        "block_size",
        "num_blocks",
        "kv_tokens",
        "contexts",
        "breakdown",
        "model",
        "kv_dtype",
        "tp",
        "budget",
    ):
        assert key in data
    assert set(data["breakdown"]) >= {
        "total_bytes",
        "weights_bytes",
        "activation_and_overhead_bytes",
        "kv_cache_bytes",
        "unused_bytes",
    }
    assert {"context", "blocks_per_request", "bytes_per_request", "max_requests"} <= set(data["contexts"][0])
    assert data["budget"] == {"kind": "reserve", "reserve_bytes": 16 * GIB}
