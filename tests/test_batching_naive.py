"""The event-driven simulator agrees exactly with the naive per-step loop (tests/naive_batching.py).

Random workloads (hypothesis): lengths, prompts, arrival steps, slots, and for paged batching
blocks, block size, max_num_seqs, token budget and chunked prefill. Arrivals are whole seconds
with 1 s per step, so the simulator's arrival steps are the naive loop's inputs exactly.

Seconds are checked with a step-time model whose every figure is a whole number of seconds, so
the simulator's closed-form sums and the naive loop's step-by-step sums must agree exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.batching import (
    ContinuousPolicy,
    MeasuredStepTime,
    PagedPolicy,
    StaticPolicy,
    UnitStepTime,
    simulate,
    windows,
)
from engine.batching.blocks import blocks_at, blocks_per_step, kv_usage
from engine.batching.continuous import fcfs_servers
from engine.batching.metrics import per_step
from engine.batching.paged import UNGATED_SYNC_RULES
from engine.batching.prefill_first import PrefillFirstPolicy
from engine.workload import Workload

from helpers import assert_no_overlap, examples
from naive_batching import naive_clock, naive_continuous, naive_paged_for, naive_static

ONE_SECOND = UnitStepTime(1.0)
# 3 s + 2 s per token + 1 s per KV token read: whole seconds, so every sum is exact
WHOLE_SECONDS = MeasuredStepTime(intercept=3.0, per_token=2.0, per_context_token=1.0)
# Examples per property (helpers.examples): `make test` checks a fixed set (about half a second
# per hundred, generation included), `make soak` many more, new each run.
EXAMPLES = settings(max_examples=examples(60, 1000), deadline=None)


@st.composite
def workloads(draw, max_requests: int = 25) -> tuple[list[int], list[int], list[int]]:
    n = draw(st.integers(1, max_requests))
    output = draw(st.lists(st.integers(1, 25), min_size=n, max_size=n))
    prompt = draw(st.lists(st.integers(0, 20), min_size=n, max_size=n)) if draw(st.booleans()) else [0] * n
    gaps = draw(st.lists(st.integers(0, 6), min_size=n, max_size=n)) if draw(st.booleans()) else [0] * n
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
    assert_series_match(result, naive)


def bins_of(result) -> tuple[np.ndarray, np.ndarray]:
    edges = np.asarray(result.series["step"])
    return edges, np.append(edges, result.steps)


def assert_series_match(result, naive) -> None:
    """The binned series and busy steps, built from the stays, against the naive loop's steps."""
    edges, bounds = bins_of(result)
    busy = np.asarray(naive.busy)
    width = np.diff(bounds)
    np.testing.assert_array_equal(result.series["busy"], np.add.reduceat(busy, edges) / width)
    held = per_step(result.schedule)[1]
    np.testing.assert_array_equal(result.series["held"], np.add.reduceat(held, edges) / width)
    assert result.occupancy == held.sum() / (result.slots * result.steps)
    assert result.busy_steps == sum(1 for b, _, p in naive.load if b or p)


def assert_clock_matches(result, naive, arrival) -> None:
    """Seconds: the makespan and every latency against the naive loop's step-by-step clock."""
    clock = naive.clock or naive_clock(naive, WHOLE_SECONDS)
    assert len(clock) == naive.steps + 1
    s = result.schedule
    assert result.makespan_seconds == clock[-1]
    at = np.asarray(clock)
    assert result.latency.seconds["e2e"].tolist() == (at[s.finish] - arrival).tolist()
    assert result.latency.seconds["ttft"].tolist() == (at[s.first_token + 1] - arrival).tolist()
    assert result.latency.seconds["queueing"].tolist() == (at[s.first_start] - arrival).tolist()
    np.testing.assert_array_equal(result.series["seconds"], at[bins_of(result)[0]])


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
    result = simulate(as_workload(*load), StaticPolicy(max_wait=max_wait), slots=slots, step_time=ONE_SECOND)
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


@settings(max_examples=examples(50, 500), deadline=None)
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
        least = (
            cap
            if chunked
            else max(cap, max(p + (o - 1 if num_blocks else 0) for p, o in zip(prompt, output)))
        )
        budget = draw(st.integers(max(least, 1), max(least, 1) + 12))
    policy = PagedPolicy(
        **UNGATED_SYNC_RULES,
        num_blocks=num_blocks,
        block_size=block_size,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=budget,
        chunked_prefill=chunked and budget is not None,
    )
    return (output, prompt, eligible), slots, policy


@settings(max_examples=examples(60, 1000), deadline=None)
@given(setup=paged_setups())
def test_paged_matches_naive(setup):
    load, slots, policy = setup
    result = simulate(as_workload(*load), policy, slots=slots, step_time=ONE_SECOND)
    naive = naive_paged_for(*in_naive_order(load), slots, policy)
    cap = policy.max_num_seqs or slots
    assert_same(result, naive, cap)
    assert result.preemptions == naive.preemptions
    assert per_step(result.schedule)[0].tolist() == naive.busy
    assert_no_overlap(result.schedule)
    if policy.num_blocks is not None:
        for method in (None, "crossings", "residues"):
            used = blocks_per_step(result.schedule, policy.block_size, method)
            assert used.tolist() == naive.blocks
        # never more blocks held than the cache has
        assert used.max() <= policy.num_blocks
        assert result.kv_blocks["peak"] <= policy.num_blocks
        # the summary, built without a per-step array, against the naive loop's steps
        edges, _ = bins_of(result)
        assert result.kv_blocks["peak"] == max(naive.blocks)
        assert result.kv_blocks["mean"] == pytest.approx(np.mean(naive.blocks), rel=1e-12)
        assert result.series["kv_blocks_used"].tolist() == np.maximum.reduceat(naive.blocks, edges).tolist()


@st.composite
def vllm_setups(draw):
    """paged_setups under vLLM 0.33.0's rules, each on or off: every prompt has a token (vLLM
    needs one) and the pool has the null block on top of what the longest request needs."""
    (output, prompt, eligible), slots, old = draw(paged_setups())
    rules = {
        "reserve_full_prompt": draw(st.booleans()),
        "async_scheduling": draw(st.booleans()),
        "null_block": draw(st.booleans()),
    }
    prompt = [max(p, 1) for p in prompt]
    bs, budget = old.block_size, old.max_num_batched_tokens
    num_blocks = old.num_blocks
    if num_blocks is not None:
        peak = max(-(-(p + o) // bs) for p, o in zip(prompt, output))
        num_blocks = max(num_blocks, peak) + (1 if rules["null_block"] else 0)
    if budget is not None and not old.chunked_prefill:
        budget = max(budget, max(p + (o - 1 if num_blocks else 0) for p, o in zip(prompt, output)))
    policy = PagedPolicy(
        num_blocks=num_blocks,
        block_size=bs,
        max_num_seqs=old.max_num_seqs,
        max_num_batched_tokens=budget,
        chunked_prefill=old.chunked_prefill,
        **rules,
    )
    return (output, prompt, eligible), slots, policy, rules


@settings(max_examples=examples(40, 1000), deadline=None)  # the recorded vLLM traces check these rules too
@given(setup=vllm_setups())
def test_paged_matches_naive_under_vllm_rules(setup):
    """The full-prompt gate, async scheduling's late release and the null block, walked step
    by step by the naive loop: the same schedule, preemptions and blocks (those of the requests
    that work in each step: a lingering request's are not in its Schedule)."""
    load, slots, policy, rules = setup
    result = simulate(as_workload(*load), policy, slots=slots, step_time=ONE_SECOND)
    naive = naive_paged_for(*in_naive_order(load), slots, policy, **rules)
    assert_same(result, naive, policy.max_num_seqs or slots)
    assert result.preemptions == naive.preemptions
    assert per_step(result.schedule)[0].tolist() == naive.busy
    assert_no_overlap(result.schedule)
    if policy.num_blocks is not None:
        used = blocks_per_step(result.schedule, policy.block_size)
        assert used.tolist() == naive.blocks
        assert used.max() <= policy.usable_blocks


@settings(max_examples=examples(40, 800), deadline=None)
@given(setup=vllm_setups(), stays=st.integers(1, 5))
def test_counts_a_window_at_a_time_match_the_naive_loop(setup, stays):
    """At a million requests the blocks held and the busy steps are counted a window of steps
    at a time, each over the stays that hold a slot in it (engine.batching.windows): with
    windows of one to five stays, every bin's maximum, the peak, the mean and the busy steps are
    the naive loop's, counted step by step."""
    load, slots, policy, rules = setup
    with patch.object(windows, "WINDOW_STAYS", stays):
        result = simulate(as_workload(*load), policy, slots=slots, step_time=ONE_SECOND)
        # bins of several steps, so that some straddle two windows
        wide = np.append(np.arange(0, result.steps, 7), result.steps)
        wide_max = kv_usage(result.schedule, policy.block_size, wide).bin_max
    naive = naive_paged_for(*in_naive_order(load), slots, policy, **rules)
    assert result.busy_steps == sum(1 for b, _, p in naive.load if b or p)
    if policy.num_blocks is not None:
        assert wide_max.tolist() == np.maximum.reduceat(naive.blocks, wide[:-1]).tolist()
        edges, _ = bins_of(result)
        blocks = blocks_per_step(result.schedule, policy.block_size)  # the whole schedule's
        assert blocks.tolist() == naive.blocks  # (lingering requests' blocks are not counted)
        assert result.kv_blocks["peak"] == max(naive.blocks)
        assert result.kv_blocks["mean"] == pytest.approx(np.mean(naive.blocks), rel=1e-12)
        assert result.series["kv_blocks_used"].tolist() == np.maximum.reduceat(naive.blocks, edges).tolist()


@settings(max_examples=examples(30, 500), deadline=None)
@given(setup=vllm_setups(), cut=st.tuples(st.integers(0, 60), st.integers(1, 60)))
def test_a_window_of_a_schedule_is_its_stays_that_hold_a_slot_in_it(setup, cut):
    """Schedule.within(a, b): exactly the stays with a step in [a, b), each row as it was, with
    their own chunks, late preemptions and requests; the KV blocks held at each step of [a, b)
    are the whole schedule's."""
    load, slots, policy, _ = setup
    s = simulate(as_workload(*load), policy, slots=slots, step_time=ONE_SECOND).schedule
    a, b = cut[0], cut[0] + cut[1]
    w = s.within(a, b)
    kept = [i for i in range(len(s.start)) if s.start[i] < b and s.end[i] > a]
    rows = lambda x, i: (
        x.request[i],
        x.slot[i],
        x.start[i],
        x.decode_start[i],
        x.end[i],
        x.context[i],
        x.emit_start[i],
    )  # noqa: E731
    assert [rows(w, j) for j in range(len(w.start))] == [rows(s, i) for i in kept]
    chunks = lambda x, stays: sorted(  # noqa: E731
        (stays[c], x.chunk_step[k], x.chunk_tokens[k], x.chunk_done[k])
        for k, c in enumerate(x.chunk_stay)
        if c in stays
    )
    assert chunks(w, dict(enumerate(kept))) == chunks(s, {i: i for i in kept})
    if s.late_preempted is not None:
        assert [kept[j] for j in w.late_preempted] == [i for i in s.late_preempted if i in kept]
    if policy.num_blocks is not None:
        steps = np.arange(a, min(b, s.makespan), dtype=np.int64)
        whole = blocks_per_step(s, policy.block_size)[a : min(b, s.makespan)]
        assert blocks_at(w, policy.block_size, steps).tolist() == whole.tolist()


@EXAMPLES
@given(load=workloads(), slots=st.integers(1, 6))
def test_static_seconds_match_the_naive_clock(load, slots):
    """Every step of a static group computes the whole group, finished members as padding."""
    output, prompt, _ = load
    result = simulate(Workload.of(output, prompt), StaticPolicy(), slots=slots, step_time=WHOLE_SECONDS)
    naive = naive_static([0] * len(output), prompt, output, slots)
    assert_same(result, naive, slots)
    assert_clock_matches(result, naive, np.zeros(len(output)))
    # padding: a group's every step after its first holds all its members
    groups = result.schedule.groups
    for size, start, end in zip(groups.size, groups.start, groups.end):
        assert all(naive.load[k][0] == size for k in range(start + 1, end))


@EXAMPLES
@given(
    load=workloads(),
    slots=st.integers(1, 6),
    wait=st.one_of(st.none(), st.integers(0, 40)),
    spacing=st.integers(1, 9),
)
def test_static_with_arrivals_keeps_the_naive_clock(load, slots, wait, spacing):
    """Arrivals in seconds and a batch-dependent step: the simulator keeps its clock group by
    group (closed forms), the naive loop step by step; both must launch the same groups."""
    output, prompt, eligible = load
    arrival = np.asarray(eligible, dtype=float) * spacing
    max_wait = None if wait is None else float(wait)
    result = simulate(
        Workload.of(output, prompt, arrival),
        StaticPolicy(max_wait=max_wait),
        slots=slots,
        step_time=WHOLE_SECONDS,
    )
    naive = naive_static(
        None, prompt, output, slots, arrival=arrival.tolist(), model=WHOLE_SECONDS, max_wait=max_wait
    )
    assert_same(result, naive, slots)
    assert_clock_matches(result, naive, arrival)
    # the step each request could first join: the first that begins at or after its arrival
    clock = np.asarray(naive.clock)
    joins = np.searchsorted(clock, arrival, side="left")
    beyond = joins >= len(clock)
    joins[beyond] = naive.steps + np.ceil((arrival[beyond] - clock[-1]) / WHOLE_SECONDS.idle_seconds)
    assert result.latency.steps["queueing"].tolist() == (result.schedule.first_start - joins).tolist()


@EXAMPLES
@given(load=workloads(), slots=st.integers(1, 6))
def test_continuous_seconds_match_the_naive_clock(load, slots):
    output, prompt, _ = load
    result = simulate(Workload.of(output, prompt), ContinuousPolicy(), slots=slots, step_time=WHOLE_SECONDS)
    naive = naive_continuous([0] * len(output), prompt, output, slots)
    assert_same(result, naive, slots)
    assert_clock_matches(result, naive, np.zeros(len(output)))


@settings(max_examples=examples(40, 600), deadline=None)
@given(setup=paged_setups())
def test_paged_seconds_match_the_naive_clock(setup):
    (output, prompt, _), slots, policy = setup
    result = simulate(Workload.of(output, prompt), policy, slots=slots, step_time=WHOLE_SECONDS)
    naive = naive_paged_for([0] * len(output), prompt, output, slots, policy)
    assert_same(result, naive, policy.max_num_seqs or slots)
    assert_clock_matches(result, naive, np.zeros(len(output)))


@EXAMPLES
@given(load=workloads(), slots=st.integers(1, 6))
def test_paged_with_unlimited_blocks_is_continuous(load, slots):
    w = as_workload(*load)
    paged = simulate(w, PagedPolicy(**UNGATED_SYNC_RULES), slots=slots, step_time=ONE_SECOND)
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


@settings(max_examples=examples(40, 500), deadline=None)
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
    for policy in (
        StaticPolicy(max_wait=None if wait is None else wait / 4),
        ContinuousPolicy(),
        PagedPolicy(**UNGATED_SYNC_RULES, num_blocks=peak + 2, block_size=block),
    ):
        grid = simulate(w, policy, slots=slots, step_time=UnitStepTime(0.5))
        kept = simulate(w, policy, slots=slots, step_time=_UnitButVariable(0.5))
        assert grid.steps == kept.steps and grid.preemptions == kept.preemptions
        for name in ("first_start", "first_token", "finish"):
            assert np.array_equal(getattr(grid.schedule, name), getattr(kept.schedule, name))
        np.testing.assert_allclose(grid.latency.seconds["e2e"], kept.latency.seconds["e2e"])


# ---- prefill-first (vLLM V0) -------------------------------------------------------------------


@st.composite
def prefill_first_setups(draw):
    """As paged_setups, with a prompt on every request (V0 admits by prefill) and no chunking."""
    (output, prompt, eligible), slots, paged = draw(paged_setups())
    prompt = [p + 1 for p in prompt]
    bs = paged.block_size
    peak = max(-(-(p + o) // bs) for p, o in zip(prompt, output))
    num_blocks = None if paged.num_blocks is None else max(paged.num_blocks, peak)
    cap = paged.max_num_seqs or slots
    budget = None
    if draw(st.booleans()):
        least = max(cap, max(p + (o - 1 if num_blocks else 0) for p, o in zip(prompt, output)))
        budget = draw(st.integers(least, least + 12))
    policy = PrefillFirstPolicy(
        num_blocks=num_blocks, block_size=bs, max_num_seqs=paged.max_num_seqs, max_num_batched_tokens=budget
    )
    return (output, prompt, eligible), slots, policy


def naive_prefill_first(load, slots, policy):
    return naive_paged_for(*in_naive_order(load), slots, policy, prefill_first=True)


@settings(max_examples=examples(50, 800), deadline=None)
@given(setup=prefill_first_setups())
def test_prefill_first_matches_naive(setup):
    load, slots, policy = setup
    result = simulate(as_workload(*load), policy, slots=slots, step_time=ONE_SECOND)
    naive = naive_prefill_first(load, slots, policy)
    assert_same(result, naive, policy.max_num_seqs or slots)
    assert result.preemptions == naive.preemptions
    assert per_step(result.schedule)[0].tolist() == naive.busy
    assert_no_overlap(result.schedule)
    if policy.num_blocks is not None:
        for method in (None, "crossings", "residues"):
            assert blocks_per_step(result.schedule, policy.block_size, method).tolist() == naive.blocks
        assert result.kv_blocks["peak"] == max(naive.blocks)


@settings(max_examples=examples(40, 500), deadline=None)
@given(setup=prefill_first_setups())
def test_prefill_first_seconds_match_the_naive_clock(setup):
    """A prefill step prices its prompts alone: the paused requests read nothing in it."""
    (output, prompt, _), slots, policy = setup
    result = simulate(Workload.of(output, prompt), policy, slots=slots, step_time=WHOLE_SECONDS)
    naive = naive_prefill_first((output, prompt, [0] * len(output)), slots, policy)
    assert_same(result, naive, policy.max_num_seqs or slots)
    assert_clock_matches(result, naive, np.zeros(len(output)))


@settings(max_examples=examples(30, 500), deadline=None)
@given(setup=prefill_first_setups(), shift=st.floats(0.01, 0.99))
def test_prefill_first_keeps_the_grid_with_arrivals_in_seconds(setup, shift):
    (output, prompt, eligible), slots, policy = setup
    arrival = np.asarray(eligible, dtype=float) * 0.5 + shift * 0.5 * (np.asarray(eligible) > 0)
    w = Workload.of(output, prompt, arrival)
    grid = simulate(w, policy, slots=slots, step_time=UnitStepTime(0.5))
    kept = simulate(w, policy, slots=slots, step_time=_UnitButVariable(0.5))
    assert grid.steps == kept.steps and grid.preemptions == kept.preemptions
    for name in ("first_start", "first_token", "finish"):
        assert np.array_equal(getattr(grid.schedule, name), getattr(kept.schedule, name))


def test_prefill_first_pauses_decodes_by_hand():
    """Two requests, prompts of 4, outputs of 3, the second arriving at step 1, 2 slots.
    Step 0 prefills request 0 (its first token); step 1 prefills request 1 and request 0 sits it
    out; steps 2 and 3 decode both: request 0 ends at 4, request 1 at 4 too. Mixed batches
    (paged) decode request 0 in step 1 alongside the prefill, so it ends at 3."""
    w = Workload.of([3, 3], prompt_tokens=[4, 4], arrival_time=[0.0, 1.0])
    v0 = simulate(w, PrefillFirstPolicy(), slots=2, step_time=ONE_SECOND)
    v1 = simulate(w, PagedPolicy(**UNGATED_SYNC_RULES), slots=2, step_time=ONE_SECOND)
    assert v0.schedule.first_token.tolist() == [0, 1] and v0.schedule.finish.tolist() == [4, 4]
    assert v1.schedule.first_token.tolist() == [0, 1] and v1.schedule.finish.tolist() == [3, 4]
    assert v0.schedule.request.tolist() == [0, 1, 0]  # request 0's pause is a new stay
    assert v0.schedule.slot.tolist() == [0, 1, 0]


def test_prefill_first_refuses_requests_without_a_prompt():
    from engine.errors import UserError

    with pytest.raises(UserError) as err:
        simulate(Workload.of([3, 3], prompt_tokens=[4, 0]), PrefillFirstPolicy(), slots=2)
    assert err.value.field == "prompt_tokens"
