"""The torch benchmark on the CPU with tiny shapes, against independent truth:

- the cached, batched, ragged decode against a plain full recompute of attention written here;
- the batching runs' step counts against the lab's rules computed here, and each running
  request's logits against that request decoded alone;
- the memory probe against the formula under a fake budget, and its out-of-memory path;
- the command end to end, and its bad inputs (exit 2, nothing written or overwritten).
"""

from __future__ import annotations

import csv
import gc
import math
import weakref
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
# One thread, as the CPU bench itself runs (BenchConfig.cpu_threads): these shapes are too small
# for a second thread to help, and it spins between operations, CPU time the results never see.
torch.set_num_threads(1)

from engine.cli import main  # noqa: E402
from engine.gpubench import device as dev  # noqa: E402
from engine.gpubench import memory, replay, runner, steptime  # noqa: E402
from engine.gpubench.model import Decoder  # noqa: E402
from engine.gpubench.shapes import SEVEN_B, TINY, ModelShape  # noqa: E402
from engine.measured import load_measurement  # noqa: E402

from helpers import LAB_TRACE  # noqa: E402  (the lab's trace, as committed in days/)

# Smaller than TINY where speed matters, with 4 query heads sharing each KV head.
MICRO = ModelShape(
    name="micro",
    num_layers=2,
    hidden_size=64,
    num_heads=4,
    num_kv_heads=1,
    head_dim=16,
    intermediate_size=96,
    vocab_size=101,
)


@pytest.fixture(scope="module")
def model() -> Decoder:
    return Decoder(TINY, seed=1)


# ---------------------------------------------------------------------------------------------
# An independent reference: the whole sequence, no cache, attention head by head.


def reference_logits(model: Decoder, tokens: list[int]) -> torch.Tensor:
    """Logits ``[T, vocab]`` of a plain causal forward over ``tokens``, sharing only the weights."""
    s = model.shape
    n, d, group = len(tokens), s.head_dim, s.num_heads // s.num_kv_heads
    half = d // 2
    angles = (
        torch.arange(n, dtype=torch.float64)[:, None]
        / (10_000.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))[None, :]
    )
    turn = torch.polar(torch.ones_like(angles), angles)  # e^{i·angle}, [T, d/2]

    def rope(t: torch.Tensor) -> torch.Tensor:  # (x1 + i·x2) · e^{i·angle}
        z = torch.complex(t[..., :half].double(), t[..., half:].double()) * turn[:, None, :]
        return torch.cat((z.real, z.imag), dim=-1).float()

    def norm(v: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return v / torch.sqrt((v * v).mean(-1, keepdim=True) + 1e-5) * w

    causal = torch.ones(n, n).tril().bool()
    x = model.tok_embeddings[torch.tensor(tokens)]
    for layer in model.layers:
        qkv = norm(x, layer.attention_norm) @ layer.wqkv.T
        q = rope(qkv[:, : s.num_heads * d].reshape(n, s.num_heads, d))
        k = rope(qkv[:, s.num_heads * d : (s.num_heads + s.num_kv_heads) * d].reshape(n, s.num_kv_heads, d))
        v = qkv[:, (s.num_heads + s.num_kv_heads) * d :].reshape(n, s.num_kv_heads, d)
        heads = []
        for h in range(s.num_heads):
            scores = (q[:, h] @ k[:, h // group].T) / math.sqrt(d)
            heads.append(scores.masked_fill(~causal, float("-inf")).softmax(-1) @ v[:, h // group])
        x = x + torch.cat(heads, dim=-1) @ layer.wo.T
        gate_up = norm(x, layer.ffn_norm) @ layer.w13.T
        gate, up = gate_up[:, : s.intermediate_size], gate_up[:, s.intermediate_size :]
        x = x + (torch.nn.functional.silu(gate) * up) @ layer.w2.T
    return norm(x, model.norm) @ model.output.T


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.allclose(a, b, atol=2e-4, rtol=1e-4)


# ---------------------------------------------------------------------------------------------
# The model


def test_cached_decode_equals_full_recompute(model):
    prompt = [5, 17, 900, 3, 42]
    cache = model.new_cache(slots=2, max_context=32)
    first = model.prefill(cache, 0, torch.tensor(prompt))
    assert close(first, reference_logits(model, prompt)[-1])
    seq = list(prompt)
    for token in [7, 1000, 64, 3, 512, 9]:
        logits = model.decode(cache, torch.tensor([token]), torch.tensor([len(seq)]), attn_len=32)
        seq.append(token)
        assert close(logits[0], reference_logits(model, seq)[-1])


def test_ragged_batch_equals_each_sequence_alone(model):
    prompts = [[1, 2, 3], [10, 20, 30, 40, 50, 60, 70], [99], [500, 501, 502, 503, 504]]
    cache = model.new_cache(slots=4, max_context=24)
    seqs = [list(p) for p in prompts]
    for slot, p in enumerate(prompts):
        model.prefill(cache, slot, torch.tensor(p))
    gen = torch.Generator().manual_seed(3)
    for _ in range(4):
        tokens = torch.randint(0, TINY.vocab_size, (4,), generator=gen)
        positions = torch.tensor([len(s) for s in seqs])
        logits = model.decode(cache, tokens, positions, attn_len=24)
        for b, seq in enumerate(seqs):
            seq.append(int(tokens[b]))
            assert close(logits[b], reference_logits(model, seq)[-1]), f"slot {b}"
    # and the same sequence run alone through the cached path, batch of one
    alone = model.new_cache(slots=1, max_context=24)
    model.prefill(alone, 0, torch.tensor(seqs[1][:-1][:7]))
    for pos in range(7, len(seqs[1])):
        out = model.decode(alone, torch.tensor([seqs[1][pos]]), torch.tensor([pos]), attn_len=24)
    assert close(out[0], logits[1])


def test_prefill_into_a_freed_slot_leaves_the_others_alone(model):
    cache = model.new_cache(slots=3, max_context=40)
    seqs = [[4, 8, 15, 16], [23, 42, 108, 7, 9, 11, 13, 17, 19, 21], [1, 1, 2, 3, 5]]
    for slot, p in enumerate(seqs):
        model.prefill(cache, slot, torch.tensor(p))
    for t in (6, 7):
        model.decode(cache, torch.tensor([t] * 3), torch.tensor([len(s) for s in seqs]), 40)
        for s in seqs:
            s.append(t)
    before = [(k[[0, 2]].clone(), v[[0, 2]].clone()) for k, v in zip(cache.k, cache.v)]
    seqs[1] = [300, 301]  # a new, shorter request where a longer one was: stale K/V lies beyond
    model.prefill(cache, 1, torch.tensor(seqs[1]))
    for (k0, v0), k, v in zip(before, cache.k, cache.v):
        assert torch.equal(k0, k[[0, 2]]) and torch.equal(v0, v[[0, 2]])
    logits = model.decode(cache, torch.tensor([9, 9, 9]), torch.tensor([len(s) for s in seqs]), 40)
    for b, s in enumerate(seqs):
        assert close(logits[b], reference_logits(model, s + [9])[-1]), f"slot {b}"


def test_moving_a_slot_carries_its_sequence(model):
    cache = model.new_cache(slots=3, max_context=16)
    seq = [11, 12, 13, 14, 15, 16]
    model.prefill(cache, 0, torch.tensor([1, 2, 3, 4, 5, 6, 7, 8, 9]))
    model.prefill(cache, 2, torch.tensor(seq))
    cache.move(2, 0, len(seq))
    logits = model.decode(cache, torch.tensor([17]), torch.tensor([len(seq)]), attn_len=16)
    assert close(logits[0], reference_logits(model, seq + [17])[-1])


def test_weights_are_seeded_and_counted():
    a, b, c = Decoder(MICRO, seed=0), Decoder(MICRO, seed=0), Decoder(MICRO, seed=1)
    assert torch.equal(a.layers[1].w2, b.layers[1].w2)
    assert not torch.equal(a.layers[1].w2, c.layers[1].w2)
    s = MICRO
    per_layer = (
        2 * s.hidden_size
        + (s.num_heads + 2 * s.num_kv_heads) * s.head_dim * s.hidden_size
        + s.hidden_size * s.num_heads * s.head_dim
        + 3 * s.intermediate_size * s.hidden_size
    )
    params = 2 * s.vocab_size * s.hidden_size + s.hidden_size + s.num_layers * per_layer
    assert a.weight_bytes == 4 * params == 4 * MICRO.param_count()
    assert a.decode_weight_bytes == 4 * (params - s.vocab_size * s.hidden_size)


# ---------------------------------------------------------------------------------------------
# Batching: the lab's rules, computed here without the model


def lab_static_steps(lengths: list[int], slots: int) -> int:
    return sum(max(lengths[i : i + slots]) for i in range(0, len(lengths), slots))


def lab_static_schedule(lengths: list[int], slots: int) -> list[list[tuple[int, int]]]:
    """For every step, (request, tokens it emitted before) for each request in the batch."""
    steps = []
    for first in range(0, len(lengths), slots):
        group = range(first, min(first + slots, len(lengths)))
        steps += [[(r, k) for r in group] for k in range(max(lengths[r] for r in group))]
    return steps


def lab_continuous(lengths: list[int], slots: int) -> list[list[tuple[int, int]]]:
    """The same for greedy slot filling: fill free slots FIFO, step, drop the finished."""
    queue, running, steps = list(range(len(lengths))), [], []  # running: [request, emitted]
    while queue or running:
        while len(running) < slots and queue:
            running.append([queue.pop(0), 0])
        steps.append([(r, e) for r, e in running])
        running = [[r, e + 1] for r, e in running if e + 1 < lengths[r]]
    return steps


class Spy:
    """The model, recording every decode step's positions and logits."""

    def __init__(self, model: Decoder):
        self.model, self.steps, self.prefills = model, [], 0
        self.shape, self.device = model.shape, model.device

    def prefill(self, cache, slot, tokens):
        self.prefills += 1
        return self.model.prefill(cache, slot, tokens)

    def decode(self, cache, tokens, positions, attn_len):
        logits = self.model.decode(cache, tokens, positions, attn_len)
        self.steps.append((positions.tolist(), logits.clone()))
        return logits


def greedy_alone(model: Decoder, prompt: list[int], steps: int) -> list[torch.Tensor]:
    """A request by itself, batch of one: the logits of each of its decode steps."""
    cache = model.new_cache(1, len(prompt) + steps)
    if len(prompt) > 1:
        model.prefill(cache, 0, torch.tensor(prompt[:-1]))
    token, out = torch.tensor(prompt[-1]), []
    for k in range(steps):
        logits = model.decode(
            cache, token.view(1), torch.tensor([len(prompt) - 1 + k]), attn_len=len(prompt) + steps
        )
        out.append(logits[0])
        token = logits[0].argmax()
    return out


def test_lab_rules_reproduce_the_reference_run():
    if not LAB_TRACE.is_file():
        pytest.skip("the lab's reference trace is not in this checkout")
    with LAB_TRACE.open() as f:
        lengths = [int(r["output_tokens"]) for r in csv.DictReader(f)]
    assert lab_static_steps(lengths, 16) == len(lab_static_schedule(lengths, 16)) == 5797
    assert len(lab_continuous(lengths, 16)) == 1148


@pytest.mark.parametrize(
    "lengths, slots, prompt",
    [
        ([3, 9, 1, 4, 7, 2, 8, 5, 6, 1, 2], 3, 1),  # the default: the prompt token rides in a step
        ([3, 9, 1, 4, 7, 2, 8, 5, 6, 1, 2], 3, 4),  # three tokens prefilled into the slot first
        ([5] * 10, 4, 1),  # the control case: equal lengths tie
    ],
)
def test_policies_follow_the_lab_rules(lengths, slots, prompt):
    model = Decoder(MICRO, seed=2)
    prompts = replay.request_prompts(len(lengths), prompt, MICRO.vocab_size, seed=0).tolist()
    assert len({tuple(p) for p in prompts}) == len(lengths)  # no two requests alike
    alone = [greedy_alone(model, p, max(lengths)) for p in prompts]
    cache = model.new_cache(slots, replay.cache_context(lengths, prompt))
    runs = {}
    for name, run, schedule in (
        ("static", replay.run_static, lab_static_schedule),
        ("continuous", replay.run_continuous, lab_continuous),
    ):
        spy = Spy(model)
        runs[name] = result = run(spy, cache, lengths, prompt_tokens=prompt)  # cache reused: stale
        expected = schedule(lengths, slots)
        assert result.steps == len(expected) == len(spy.steps)
        assert result.tokens == sum(lengths)
        assert result.utilisation == pytest.approx(sum(lengths) / (result.steps * slots))
        assert result.tokens_per_second == pytest.approx(result.tokens / result.wall_seconds)
        assert spy.prefills == (len(lengths) if prompt > 1 else 0)
        # Each row of each step is one expected request at its expected position, with the logits
        # that request gets when decoded alone: prefill into reused slots and compaction included.
        for (positions, logits), want in zip(spy.steps, expected):
            unmatched = list(want)
            for row, pos in enumerate(positions):
                hit = next(
                    (
                        rk
                        for rk in unmatched
                        if prompt - 1 + rk[1] == pos and close(logits[row], alone[rk[0]][rk[1]])
                    ),
                    None,
                )
                assert hit is not None, f"{name}: row {row} at position {pos} is no running request"
                unmatched.remove(hit)
            assert not unmatched
    assert runs["static"].steps == lab_static_steps(lengths, slots)
    if len(set(lengths)) == 1:
        assert runs["static"].steps == runs["continuous"].steps


@pytest.mark.parametrize("run", [replay.run_static, replay.run_continuous])
def test_a_warm_pass_leaves_the_timed_pass_unchanged(run):
    """CUDA graphs are captured in an untimed first pass; the state must reset cleanly after it."""
    lengths, model = [4, 1, 6, 2, 3], Decoder(MICRO, seed=4)
    cache = model.new_cache(2, replay.cache_context(lengths, 2))
    once, twice = Spy(model), Spy(model)
    plain = run(once, cache, lengths, prompt_tokens=2)
    warmed = run(twice, cache, lengths, prompt_tokens=2, warm_pass=True)
    assert warmed.steps == plain.steps and len(twice.steps) == 2 * len(once.steps)
    for (pos_a, logits_a), (pos_b, logits_b) in zip(once.steps * 2, twice.steps):
        assert pos_a == pos_b and close(logits_a, logits_b)


def test_static_hand_drill_is_sixteen_percent_busy():
    """The lab's drill (8 slots, seven 20-token requests and one 500-token request) at a tenth
    of its lengths, which keeps its busy share: (7 × 2 + 50) / (8 × 50) = 16 %, as
    (7 × 20 + 500) / (8 × 500) is."""
    lengths = [2] * 7 + [50]
    model = Decoder(MICRO, seed=0)
    run = replay.run_static(model, model.new_cache(8, 51), lengths, prompt_tokens=1)
    assert run.steps == 50 and run.tokens == 64
    assert run.utilisation == pytest.approx(0.16)


def test_scaling_keeps_every_request():
    assert replay.scale_lengths([1, 10, 661], 0.1) == [1, 1, 66]


# ---------------------------------------------------------------------------------------------
# Memory and step time


def test_memory_probe_against_a_budget():
    kv_per_token = TINY.kv_bytes_per_token(4)
    assert kv_per_token == 2 * 2 * 2 * 64 * 4
    budget = 3 * 2**20 + 12345
    fits = memory.measure_fits(
        [16, 100, 4096], kv_per_token, budget, torch.device("cpu"), budget_bytes=budget
    )
    for fit, context in zip(fits, [16, 100, 4096]):
        assert fit.context == context
        assert fit.max_requests_measured == budget // (context * kv_per_token)
        assert fit.max_requests_calculated == fit.max_requests_measured
    assert fits[-1].max_requests_measured == 0  # 4096 tokens × 2 KiB = 8 MiB > 3 MiB


def test_memory_probe_stops_at_out_of_memory_and_frees(monkeypatch):
    taken: list[weakref.ref] = []
    released: list[bool] = []  # at release time (empty_cache on CUDA), was everything let go?
    monkeypatch.setattr(
        memory, "release", lambda device: released.append(all(ref() is None for ref in taken))
    )

    class Block:
        pass

    def allocate(nbytes: int) -> Block:
        if len(taken) == 7:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        block = Block()
        taken.append(weakref.ref(block))
        return block

    n = memory.probe_max_requests(2**30, torch.device("cpu"), budget_bytes=None, allocate=allocate)
    assert n == 7 and len(taken) == 7
    assert released == [True]


def test_step_times_cover_what_fits(model):
    kv = TINY.kv_bytes_per_token(4)
    budget = 4 * 64 * kv  # batch 4 fits at context 64, only batch 1 and 2 at context 128
    points, notes = steptime.measure_step_times(model, [64, 128], 4, budget, warmup=1, repeats=2)
    assert [(p.batch, p.context) for p in points] == [(1, 64), (2, 64), (4, 64), (1, 128), (2, 128)]
    assert any("context 128: batch 4" in n for n in notes)
    for p in points:
        assert p.bytes_moved == model.decode_weight_bytes + p.batch * p.context * kv
        assert p.achieved_bytes_per_s == pytest.approx(p.bytes_moved / p.seconds)
    assert steptime.share_of_peak_at_slots(points, 4, None) is None
    share = steptime.share_of_peak_at_slots(points, 4, 1e12)
    assert share == pytest.approx(points[2].achieved_bytes_per_s / 1e12)
    assert steptime.batch_sizes(16) == [1, 2, 4, 8, 16] and steptime.batch_sizes(12)[-1] == 12


def test_prefill_passes_cover_the_prompts_that_fit(model):
    assert steptime.prefill_lengths([512, 32768]) == [128, 512, 2048, 8192]
    assert steptime.prefill_lengths([512, 32768], cap=512) == [128, 512]
    assert steptime.prefill_lengths([48]) == [48]
    kv = TINY.kv_bytes_per_token(4)
    points, notes = steptime.measure_prefill_times(model, [16, 64, 128], 64 * kv, warmup=1, repeats=2)
    assert [p.tokens for p in points] == [16, 64] and all(p.seconds > 0 for p in points)
    assert notes == ["prefill: prompts of 128 tokens do not fit in memory, not timed"]


def test_a_failed_capture_times_the_rest_eagerly_with_one_note(model, monkeypatch):
    def capture(step, *, warmup=0):
        raise RuntimeError("capture refused\nsecond line")

    monkeypatch.setattr(steptime, "graphs_supported", lambda device: True)
    monkeypatch.setattr(steptime, "cuda_graph", capture)
    points, notes = steptime.measure_prefill_times(model, [8, 16], 2**30, warmup=0, repeats=1)
    assert [p.tokens for p in points] == [8, 16]
    assert notes == ["prefill: CUDA graph capture failed (capture refused); eager passes from 8 tokens"]
    decode, notes = steptime.measure_step_times(model, [16], 2, 2**30, warmup=0, repeats=1)
    assert [p.batch for p in decode] == [1, 2]
    assert notes == [
        "step time: CUDA graph capture failed (capture refused); eager steps from context 16, batch 1"
    ]


def test_release_collects_and_empties_the_cache_on_cuda_only(monkeypatch):
    """CUDA: a collection, then the allocator's cache back to the driver. CPU: neither (no
    device cache; memory goes back with the last reference, see the next test)."""
    calls: list[str] = []
    monkeypatch.setattr(dev.gc, "collect", lambda *a: calls.append("collect") or 0)
    monkeypatch.setattr(dev.torch.cuda, "empty_cache", lambda: calls.append("empty_cache"))
    dev.release(torch.device("cpu"))
    assert calls == []
    dev.release(torch.device("cuda"))
    assert calls == ["collect", "empty_cache"]


def test_cpu_phases_free_their_caches_without_a_collection(model, monkeypatch):
    """Why the CPU's release need not collect: with Python's collector off, every cache a
    measurement phase made is gone when the phase returns (no reference cycle keeps one)."""
    made: list[weakref.ref] = []
    new_cache = model.new_cache

    def tracked(slots: int, context: int):
        cache = new_cache(slots, context)
        made.extend(weakref.ref(t) for t in (*cache.k, *cache.v))
        return cache

    monkeypatch.setattr(model, "new_cache", tracked)
    enabled = gc.isenabled()
    gc.disable()
    try:
        steptime.measure_step_times(model, [16], 2, 2**30, warmup=1, repeats=1)
        steptime.measure_prefill_times(model, [8], 2**30, warmup=1, repeats=1)
        for run in (replay.run_static, replay.run_continuous):
            cache = model.new_cache(2, 12)
            run(model, cache, [3, 5, 2], prompt_tokens=2)
            del cache  # as the runner does before release
        assert len(made) == 4 * 2 * TINY.num_layers  # step time, prefill, two policies: K and V
        assert all(ref() is None for ref in made)
    finally:
        if enabled:
            gc.enable()


def test_device_names():
    assert dev.slugify("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"
    assert dev.slugify("Intel(R) Xeon(R) CPU @ 2.20GHz") == "intel-xeon-cpu-2-20ghz"
    assert dev.catalog_candidates("NVIDIA H100 80GB HBM3") == ["h100-80gb", "h100"]
    assert dev.catalog_candidates("NVIDIA A100-SXM4-80GB") == ["a100-80gb", "a100"]
    assert dev.catalog_candidates("NVIDIA H100 PCIe") == ["h100-pcie"]
    assert dev.catalog_candidates("NVIDIA GeForce RTX 4090") == ["rtx-4090"]
    info = dev.describe(torch.device("cpu"))
    assert info.kind == "cpu" and info.slug.startswith("cpu-") and info.slug == dev.slugify(info.slug)


def test_catalog_peak_matches_cuda_names_or_says_why_not():
    catalog = pytest.importorskip("engine.catalog")
    if "h100-80gb" not in catalog.gpu_names():
        pytest.skip("no h100-80gb in this checkout's catalog")
    want = catalog.load_gpu("h100-80gb").hbm_bandwidth_bytes_per_s
    assert dev.catalog_peak("NVIDIA H100 80GB HBM3") == (want, None)
    peak, note = dev.catalog_peak("NVIDIA Imaginary X1 7GB")
    assert peak is None and "Imaginary" in note


# ---------------------------------------------------------------------------------------------
# The CUDA path, as far as a CPU can check it: the figures it divides by, the memory it plans for,
# that it is never entered off CUDA, and the capture bookkeeping with a stand-in for torch's graphs.

GIB = 2**30
# What torch reports for the cards (engine/catalog/gpus/*.yaml), and an assumption: CUDA's
# context, cuBLAS and lazily loaded kernels hold about 1 GiB once the runtime is warm.
H100_TOTAL, H200_TOTAL, RUNTIME = 85_198_045_184, 150_109_945_856, 1 * GIB


def test_bytes_moved_for_the_7b_shape_by_hand():
    # Llama-2-7B: 32 layers × (4·4096² attention + 3·4096·11008 MLP + 2·4096 norms)
    # + 2 × 32000·4096 (embedding, head) + 4096 = 6,738,415,616 parameters.
    assert SEVEN_B.param_count() == 6_738_415_616
    # A step reads all of them but the embedding table (one row per request): in bf16,
    # (6,738,415,616 − 131,072,000) × 2 bytes.
    assert SEVEN_B.decode_weight_bytes(2) == 13_214_687_232
    assert SEVEN_B.kv_bytes_per_token(2) == 2 * 32 * 32 * 128 * 2 == 524_288  # 0.5 MiB
    # batch 16 at 2,048 positions: + 16 × 2,048 × 0.5 MiB = 16 GiB of K and V.
    moved = steptime.bytes_moved(SEVEN_B.decode_weight_bytes(2), 524_288, 16, 2048)
    assert moved == 13_214_687_232 + 17_179_869_184 == 30_394_556_416
    # so 70 % of an H100's 3.35 TB/s is a step of 12.96 ms, and batch 1 at 512 positions is
    # dominated by the weights: 4.02 ms at 100 %.
    assert moved / (0.7 * 3.35e12) == pytest.approx(12.96e-3, abs=0.01e-3)
    assert steptime.bytes_moved(13_214_687_232, 524_288, 1, 512) / 3.35e12 == pytest.approx(
        4.025e-3, abs=0.001e-3
    )
    # the model counts the same bytes as the shape, for any dtype
    assert Decoder(MICRO).decode_weight_bytes == MICRO.decode_weight_bytes(4)


def test_the_h100_times_batch_16_at_8k_beside_the_weights():
    """The day's row: 16 requests of 8,192 tokens (64 GiB of bf16 cache) beside 12.6 GiB of
    weights. A flat 90 % of free memory would skip it; the capped reserve keeps it."""
    kv, weights = SEVEN_B.kv_bytes_per_token(2), SEVEN_B.param_count() * 2
    free = H100_TOTAL - RUNTIME - weights  # 65.8 GiB
    budget = runner.kv_budget_bytes(free)
    assert free - budget == GIB
    assert 16 * 8192 * kv > 0.9 * free  # what the flat share did
    assert steptime.fitting_batches(16, 8192, kv, budget) == ([1, 2, 4, 8, 16], [])
    assert steptime.fitting_batches(16, 16384, kv, budget) == ([1, 2, 4, 8], [16])
    assert steptime.fitting_batches(16, 32768, kv, budget) == ([1, 2, 4], [8, 16])
    h200 = runner.kv_budget_bytes(H200_TOTAL - RUNTIME - weights)
    assert steptime.fitting_batches(16, 16384, kv, h200) == ([1, 2, 4, 8], [16])
    # the memory probe's calculated figure for the same free memory: 16 requests of 8k
    assert memory.calculated_max_requests(free, 8192, kv) == 16
    # a small budget (the CPU run's) keeps 10 %, not a whole GiB
    assert runner.kv_budget_bytes(500 * 2**20) == 450 * 2**20


def test_a_point_that_runs_out_of_memory_is_dropped_not_fatal(model, monkeypatch):
    real = model.new_cache

    def new_cache(slots, max_context):  # the device refuses a cache for more than 2 slots
        if slots > 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 64.00 GiB")
        return real(slots, max_context)

    monkeypatch.setattr(model, "new_cache", new_cache)
    budget = 10**9
    points, notes = steptime.measure_step_times(model, [32], 4, budget, warmup=0, repeats=1)
    assert [(p.batch, p.context) for p in points] == [(1, 32), (2, 32)]
    assert any("context 32: batch 4 ran out of device memory" in n for n in notes)
    monkeypatch.setattr(model, "new_cache", real)

    timed = []

    def median_seconds(step, device, *, warmup, repeats):  # out of memory while timing batch 2
        if len(timed) == 1:
            raise torch.OutOfMemoryError("CUDA out of memory")
        timed.append(step)
        return 1e-3

    monkeypatch.setattr(steptime, "median_seconds", median_seconds)
    points, notes = steptime.measure_step_times(model, [32, 64], 4, budget, warmup=0, repeats=1)
    assert [(p.batch, p.context) for p in points] == [(1, 32)]
    assert sum("ran out of device memory" in n for n in notes) == 2  # batch 2 at 32, 1 at 64


def test_graph_capture_is_never_entered_off_cuda(model, monkeypatch):
    def boom(*_args, **_kwargs):
        raise AssertionError("a CUDA graph path was entered on the CPU")

    for target, name in (
        (steptime, "cuda_graph"),
        (replay, "cuda_graph"),
        (replay, "graph_pool"),
        (torch.cuda, "CUDAGraph"),
        (torch.cuda, "graph_pool_handle"),
        (torch.cuda, "Stream"),
        (torch.cuda, "synchronize"),
    ):
        monkeypatch.setattr(target, name, boom)
    assert not dev.graphs_supported(torch.device("cpu")) and dev.graphs_supported(torch.device("cuda"))
    points, _ = steptime.measure_step_times(model, [16], 2, 10**9, warmup=0, repeats=1, use_cuda_graphs=True)
    assert len(points) == 2
    run = replay.run_continuous(
        Decoder(MICRO), Decoder(MICRO).new_cache(2, 8), [3, 1, 2], prompt_tokens=1, cuda_graphs=True
    )
    assert run.note is None and run.steps == 3


def test_batching_captures_each_shape_once_in_the_warm_pass(monkeypatch):
    """torch's graphs stood in for by a capture that runs the warm-up as asked and replays the
    Python step: checks which shapes are captured, when, from which pool, and that the warm-up
    (one decode, no token or position update) leaves the timed pass what an eager run gets."""
    captures = []

    def capture(step, *, warmup=0, warmup_step=None, pool=None):
        captures.append((len(spy.steps), pool))
        assert warmup >= 1 and warmup_step is not None  # torch: warm up before capturing
        for _ in range(warmup):
            warmup_step()
        return step

    monkeypatch.setattr(replay, "graphs_supported", lambda device: True)
    monkeypatch.setattr(replay, "graph_pool", lambda: "the pool")
    monkeypatch.setattr(replay, "cuda_graph", capture)
    lengths, model = [70, 3, 9, 1, 4, 7, 2, 8], Decoder(MICRO, seed=5)
    for run in (replay.run_static, replay.run_continuous):
        cache = model.new_cache(3, replay.cache_context(lengths, 2))
        eager = Spy(model)
        run(eager, cache, lengths, prompt_tokens=2)
        spy, captures = Spy(model), []
        result = run(spy, cache, lengths, prompt_tokens=2, cuda_graphs=True)
        assert result.note is None and result.steps == len(eager.steps)
        timed = spy.steps[-len(eager.steps) :]
        warm = len(spy.steps) - len(timed)
        assert all(at < warm for at, _ in captures)  # nothing captured while timing
        assert {pool for _, pool in captures} == {"the pool"}
        shapes = {
            (len(pos), -(-(max(pos) + 1) // replay.ATTN_ROUND) * replay.ATTN_ROUND) for pos, _ in eager.steps
        }
        assert len(captures) == len(shapes) >= 2  # one per (running, attention length)
        for (pos_a, logits_a), (pos_b, logits_b) in zip(eager.steps, timed):
            assert pos_a == pos_b and close(logits_a, logits_b)


@pytest.mark.parametrize(
    "error",
    [
        RuntimeError("operation not permitted when stream is capturing"),
        torch.OutOfMemoryError("CUDA out of memory"),
    ],
)
def test_a_failed_capture_falls_back_to_eager_steps(monkeypatch, error):
    made = []

    def capture(step, *, warmup=0, warmup_step=None, pool=None):
        if len(made) == 2:
            raise error
        made.append(step)
        return step

    monkeypatch.setattr(replay, "graphs_supported", lambda device: True)
    monkeypatch.setattr(replay, "graph_pool", lambda: None)
    monkeypatch.setattr(replay, "cuda_graph", capture)
    lengths, model = [70, 3, 9, 1, 4, 7, 2, 8], Decoder(MICRO, seed=5)
    cache = model.new_cache(3, replay.cache_context(lengths, 1))
    eager = Spy(model)
    replay.run_continuous(eager, cache, lengths, prompt_tokens=1)
    spy = Spy(model)
    run = replay.run_continuous(spy, cache, lengths, prompt_tokens=1, cuda_graphs=True)
    assert "capture failed" in run.note and "after 2 step shapes" in run.note
    assert run.steps == len(eager.steps)
    for (pos_a, logits_a), (pos_b, logits_b) in zip(eager.steps, spy.steps[-len(eager.steps) :]):
        assert pos_a == pos_b and close(logits_a, logits_b)


def test_a_policy_without_graphs_makes_the_other_run_without_them(model, monkeypatch):
    calls = []

    def fake(name, note):
        def run(model, cache, lengths, *, cuda_graphs, **_kwargs):
            calls.append((name, cuda_graphs))
            return replay.PolicyRun(1.0, 1, 1, 1.0, 1.0, note if cuda_graphs else None)

        return run

    monkeypatch.setattr(
        runner,
        "POLICIES",
        (("static", fake("static", None)), ("continuous", fake("continuous", "capture failed"))),
    )
    monkeypatch.setattr(runner.dev, "release", lambda device: None)
    config = runner.BenchConfig(
        device="cuda", shape=MICRO, dtype="float32", slots=2, contexts=[8], output_tokens=[1], day=37
    )
    notes: list[str] = []
    bar = runner.tqdm(disable=True)
    runs = runner._run_policies(model, config, [1], 4, notes, bar)
    assert calls == [("static", True), ("continuous", True), ("static", False)]
    assert runs["static"].note is None and notes[0] == "capture failed"
    assert "static timed again without CUDA graphs" in notes[1]


def test_bf16_decode_runs_on_the_cpu_and_agrees_with_fp32():
    """The dtypes the CUDA run uses (bf16 weights and cache, fp32 mask bias and softmax)."""
    fp32 = Decoder(MICRO, seed=6)
    bf16 = Decoder(MICRO, seed=6).to(torch.bfloat16)
    assert bf16.dtype == torch.bfloat16 and bf16.decode_weight_bytes == MICRO.decode_weight_bytes(2)
    out = []
    for m in (fp32, bf16):
        cache = m.new_cache(3, 16)
        m.prefill(cache, 0, torch.tensor([1, 2, 3, 4]))
        m.prefill(cache, 1, torch.tensor([5, 6]))
        out.append(m.decode(cache, torch.tensor([7, 8, 9]), torch.tensor([4, 2, 0]), 16))
    assert out[1].dtype == torch.float32 and torch.isfinite(out[1]).all()
    assert torch.nn.functional.cosine_similarity(out[0], out[1], dim=-1).min() > 0.999


# ---------------------------------------------------------------------------------------------
# The command


def write_spec(folder: Path, lengths: list[int], *, day: int = 37) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "trace.csv").write_text("output_tokens\n" + "".join(f"{n}\n" for n in lengths))
    spec = folder / f"day{day}.yaml"
    spec.write_text(
        f"day: {day}\nseries: {{name: test series, length: 60}}\ntitle: t\nrepository: r\n"
        "hashtags: [A, B, C]\n"
        "kv_cache:\n  model: {name: m, num_layers: 2, num_kv_heads: 2, head_dim: 64}\n"
        "  gpu: {name: g, memory_gib: 1}\n  budget: {kind: reserve, reserve_gib: 0}\n"
        "  contexts: [32, 64]\n"
        "batching:\n  slots: 4\n  workload:\n    trace: trace.csv\n"
    )
    return spec


def test_bench_command_writes_a_valid_measurement(tmp_path, capsys):
    lengths = [3, 12, 2, 5, 9, 1, 4, 7, 2, 6]
    spec = write_spec(tmp_path / "days", lengths)
    assert main(["bench", str(spec), "--device", "cpu", "--quick", "--scale", "1"]) == 0
    files = list((tmp_path / "days" / "day37.measured").iterdir())
    assert len(files) == 1 and files[0].name == dev.describe(torch.device("cpu")).slug + ".json"
    doc = load_measurement(files[0], day=37)
    assert doc["device"]["kind"] == "cpu" and doc["random_weights"] is True
    assert doc["settings"]["model"]["name"] == "tiny" and doc["settings"]["dtype"] == "float32"
    assert [c["context"] for c in doc["memory"]["contexts"]] == [32, 64]
    assert {(p["batch"], p["context"]) for p in doc["step_time"]["points"]} == {
        (b, c) for b in (1, 2, 4) for c in (32, 64)
    }
    # the day's longest context is shorter than the shortest prompt timed: one pass of 64 tokens
    assert [p["tokens"] for p in doc["step_time"]["prefill"]] == [64]
    assert doc["step_time"]["prefill"][0]["seconds"] > 0
    policies = doc["batching"]["policies"]
    assert policies["static"]["steps"] == lab_static_steps(lengths, 4)
    assert policies["continuous"]["steps"] == len(lab_continuous(lengths, 4))
    assert doc["batching"]["multiple"] == pytest.approx(
        policies["static"]["wall_seconds"] / policies["continuous"]["wall_seconds"]
    )
    assert "wrote" in capsys.readouterr().out


def test_cuda_without_cuda_is_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    spec = write_spec(tmp_path / "days", [3, 4])
    out = tmp_path / "days" / "day37.measured"
    out.mkdir()
    kept = out / "nvidia-h100-80gb-hbm3.json"
    kept.write_text('{"earlier": "run"}')
    assert main(["bench", str(spec), "--device", "cuda"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--device" in err and "CUDA is not available" in err
    assert [p.name for p in out.iterdir()] == [kept.name]
    assert kept.read_text() == '{"earlier": "run"}'


def test_a_model_too_big_for_the_device_stops_before_loading(tmp_path, capsys):
    spec = write_spec(tmp_path / "days", [3, 4])
    assert main(["bench", str(spec), "--device", "cpu", "--model", "7b-class"]) == 2
    err = capsys.readouterr().err
    assert "--model" in err and "25.1 GiB" in err  # 6.74 B parameters × 4 bytes
    assert not (tmp_path / "days" / "day37.measured").exists()


@pytest.mark.parametrize(
    "breakage, where",
    [
        (lambda folder: (folder / "trace.csv").write_text("output_tokens\n3\nlots\n"), "row 3"),
        (lambda folder: (folder / "trace.csv").unlink(), "trace.csv"),
        (
            lambda folder: (folder / "day37.yaml").write_text(
                (folder / "day37.yaml").read_text().replace("contexts: [32, 64]", "contexts: []")
            ),
            "kv_cache.contexts",
        ),
    ],
)
def test_bad_day_inputs_exit_2_before_anything_is_written(tmp_path, capsys, breakage, where):
    folder = tmp_path / "days"
    spec = write_spec(folder, [3, 4])
    breakage(folder)
    assert main(["bench", str(spec), "--device", "cpu", "--quick"]) == 2
    assert where in capsys.readouterr().err
    assert not (folder / "day37.measured").exists()


# That engine.measured, the bench command's module and the shapes import no torch is checked in a
# fresh process by test_build_day37's CLI build test (one child process for every such check).


def test_an_out_that_is_a_file_is_refused_before_measuring(tmp_path, capsys):
    spec = write_spec(tmp_path / "days", [3, 4])
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert main(["bench", str(spec), "--device", "cpu", "--quick", "--out", str(blocker)]) == 2
    err = capsys.readouterr()
    assert err.err.strip() == f"{blocker}: --out: is a file, not a folder for measurements"
    assert "bench" not in err.err.splitlines()[0][:5]  # refused before the progress bar started
