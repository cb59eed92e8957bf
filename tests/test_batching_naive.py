"""The event-driven simulator agrees exactly with the naive per-step loop (tests/naive_batching.py).

Random workloads (hypothesis): lengths, prompts, arrival steps, slots, and for paged batching
blocks, block size, max_num_seqs, token budget and chunked prefill. Arrivals are whole seconds
with 1 s per step, so the simulator's arrival steps are the naive loop's inputs exactly.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.batching import ContinuousPolicy, PagedPolicy, StaticPolicy, UnitStepTime, simulate
from engine.batching.continuous import fcfs_servers
from engine.batching.metrics import per_step
from engine.batching.paged import blocks_per_step
from engine.workload import Workload
from naive_batching import naive_continuous, naive_paged, naive_static
from test_batching import assert_no_overlap

ONE_SECOND = UnitStepTime(1.0)
EXAMPLES = settings(max_examples=150, deadline=None)


@st.composite
def workloads(draw, max_requests: int = 25) -> tuple[list[int], list[int], list[int]]:
    n = draw(st.integers(1, max_requests))
    output = draw(st.lists(st.integers(1, 25), min_size=n, max_size=n))
    prompt = (draw(st.lists(st.integers(0, 20), min_size=n, max_size=n))
              if draw(st.booleans()) else [0] * n)
    gaps = (draw(st.lists(st.integers(0, 6), min_size=n, max_size=n))
            if draw(st.booleans()) else [0] * n)
    return output, prompt, np.cumsum(gaps).tolist()


def in_naive_order(load):
    """The naive loops take (eligible, prompt, output), as the lab listed a request."""
    output, prompt, eligible = load
    return eligible, prompt, output


def as_workload(output, prompt, eligible) -> Workload:
    return Workload.of(output, prompt, np.asarray(eligible, dtype=float))


def assert_same(result, naive, slots: int) -> None:
    s = result.schedule
    assert result.steps == naive.steps
    assert result.tokens == naive.tokens
    assert result.utilisation == naive.tokens / (slots * naive.steps)
    assert s.first_start.tolist() == naive.start
    assert s.first_token.tolist() == naive.first_token
    assert s.finish.tolist() == naive.finish


@EXAMPLES
@given(load=workloads(), slots=st.integers(1, 6))
def test_static_matches_naive(load, slots):
    result = simulate(as_workload(*load), StaticPolicy(), slots=slots, step_time=ONE_SECOND)
    naive = naive_static(*in_naive_order(load), slots)
    assert_same(result, naive, slots)
    assert result.schedule.slot.tolist() == naive.slot_of
    assert per_step(result.schedule)[0].tolist() == naive.busy
    assert_no_overlap(result.schedule)


@EXAMPLES
@given(load=workloads(), slots=st.integers(1, 6), wait=st.integers(0, 16))
def test_static_with_max_wait_matches_naive(load, slots, wait):
    max_wait = wait / 2  # half-seconds: deadlines fall between steps too
    result = simulate(as_workload(*load), StaticPolicy(max_wait=max_wait), slots=slots,
                      step_time=ONE_SECOND)
    deadline = np.ceil(np.asarray(load[2]) + max_wait).astype(int).tolist()
    assert_same(result, naive_static(*in_naive_order(load), slots, deadline), slots)


@EXAMPLES
@given(load=workloads(), slots=st.integers(1, 6))
def test_continuous_matches_naive(load, slots):
    result = simulate(as_workload(*load), ContinuousPolicy(), slots=slots, step_time=ONE_SECOND)
    naive = naive_continuous(*in_naive_order(load), slots)
    assert_same(result, naive, slots)
    assert per_step(result.schedule)[0].tolist() == naive.busy
    assert_no_overlap(result.schedule)


@settings(max_examples=100, deadline=None)
@given(
    eligible_gaps=st.lists(st.integers(0, 3), min_size=1, max_size=400),
    lengths=st.data(),
    slots=st.integers(1, 40),
)
def test_both_fcfs_methods_agree(eligible_gaps, lengths, slots):
    """The heap (few slots) and the blocked fixed point (many) are two routes to one answer."""
    n = len(eligible_gaps)
    service = np.asarray(lengths.draw(st.lists(st.integers(1, 60), min_size=n, max_size=n)))
    eligible = np.cumsum(eligible_gaps)
    by_heap = fcfs_servers(eligible, service, slots, method="heap")
    by_blocks = fcfs_servers(eligible, service, slots, method="blocks")
    assert np.array_equal(by_heap[0], by_blocks[0])
    assert np.array_equal(by_heap[1], by_blocks[1])


@st.composite
def paged_setups(draw):
    output, prompt, eligible = draw(workloads(max_requests=20))
    slots = draw(st.integers(1, 6))
    block_size = draw(st.integers(1, 5))
    peak = max(-(-(p + o) // block_size) for p, o in zip(prompt, output))
    num_blocks = draw(st.one_of(st.none(), st.integers(peak, peak + 12)))
    max_num_seqs = draw(st.one_of(st.none(), st.integers(1, 6)))
    cap = max_num_seqs or slots
    chunked = draw(st.booleans())
    budget = None
    if chunked or draw(st.booleans()):
        least = cap if chunked else max(cap, max(p + (o - 1 if num_blocks else 0) for p, o in zip(prompt, output)))
        budget = draw(st.integers(max(least, 1), max(least, 1) + 12))
    policy = PagedPolicy(num_blocks=num_blocks, block_size=block_size, max_num_seqs=max_num_seqs,
                         max_num_batched_tokens=budget, chunked_prefill=chunked and budget is not None)
    return (output, prompt, eligible), slots, policy


@settings(max_examples=250, deadline=None)
@given(setup=paged_setups())
def test_paged_matches_naive(setup):
    load, slots, policy = setup
    result = simulate(as_workload(*load), policy, slots=slots, step_time=ONE_SECOND)
    naive = naive_paged(*in_naive_order(load), slots, policy.num_blocks, policy.block_size, policy.max_num_seqs,
                        policy.max_num_batched_tokens, policy.chunked_prefill)
    cap = policy.max_num_seqs or slots
    assert_same(result, naive, cap)
    assert result.preemptions == naive.preemptions
    assert per_step(result.schedule)[0].tolist() == naive.busy
    assert_no_overlap(result.schedule)
    if policy.num_blocks is not None:
        used = blocks_per_step(result.schedule, policy.block_size)
        assert used.tolist() == naive.blocks
        # never more blocks held than the cache has
        assert used.max() <= policy.num_blocks
        assert result.kv_blocks["peak"] <= policy.num_blocks


@EXAMPLES
@given(load=workloads(), slots=st.integers(1, 6))
def test_paged_with_unlimited_blocks_is_continuous(load, slots):
    w = as_workload(*load)
    paged = simulate(w, PagedPolicy(), slots=slots, step_time=ONE_SECOND)
    continuous = simulate(w, ContinuousPolicy(), slots=slots, step_time=ONE_SECOND)
    assert paged.steps == continuous.steps and paged.preemptions == 0
    for name in ("first_start", "first_token", "finish"):
        assert np.array_equal(getattr(paged.schedule, name), getattr(continuous.schedule, name))
    assert paged.utilisation == continuous.utilisation


@dataclass(frozen=True)
class _UnitButVariable(UnitStepTime):
    """The unit step time, presented as batch-dependent: the clock-keeping paths must then
    reproduce the exact grid."""

    @property
    def constant(self) -> None:
        return None


@settings(max_examples=100, deadline=None)
@given(
    load=workloads(),
    slots=st.integers(1, 5),
    wait=st.one_of(st.none(), st.integers(0, 10)),
    shift=st.floats(0.01, 0.99),
)
def test_clock_keeping_paths_reproduce_the_grid(load, slots, wait, shift):
    output, prompt, eligible = load
    arrival = np.asarray(eligible, dtype=float) * 0.5 + shift * 0.5 * (np.asarray(eligible) > 0)
    w = Workload.of(output, prompt, arrival)
    block = 2
    peak = max(-(-(p + o) // block) for p, o in zip(prompt, output))
    for policy in (StaticPolicy(max_wait=None if wait is None else wait / 4), ContinuousPolicy(),
                   PagedPolicy(num_blocks=peak + 2, block_size=block)):
        grid = simulate(w, policy, slots=slots, step_time=UnitStepTime(0.5))
        kept = simulate(w, policy, slots=slots, step_time=_UnitButVariable(0.5))
        assert grid.steps == kept.steps and grid.preemptions == kept.preemptions
        for name in ("first_start", "first_token", "finish"):
            assert np.array_equal(getattr(grid.schedule, name), getattr(kept.schedule, name))
        np.testing.assert_allclose(grid.latency.seconds["e2e"], kept.latency.seconds["e2e"])
