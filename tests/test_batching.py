"""The simulator against the lab's published figures and hand-worked cases."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from engine.batching import (
    ContinuousPolicy,
    MeasuredStepTime,
    PagedPolicy,
    RooflineStepTime,
    StaticPolicy,
    UnitStepTime,
    simulate,
)
from engine.batching.blocks import blocks_per_step
from engine.batching.metrics import per_step
from engine.batching.paged import UNGATED_SYNC_RULES
from engine.errors import UserError
from engine.workload import Workload, load_trace

from helpers import LAB_TRACE, assert_no_overlap  # the lab's trace, as committed in days/

LAB_STEP = UnitStepTime(0.02)  # "Requests per second assume 20 ms per step"


@pytest.fixture(scope="module")
def lab():
    return load_trace(LAB_TRACE)


@pytest.fixture(scope="module")
def lab_static(lab):
    return simulate(lab, StaticPolicy(), slots=16, step_time=LAB_STEP)


@pytest.fixture(scope="module")
def lab_continuous(lab):
    return simulate(lab, ContinuousPolicy(), slots=16, step_time=LAB_STEP)


# ---- the lab's reference run (day37-lab.md) -------------------------------------------------------


def test_lab_static(lab_static):
    r = lab_static
    assert r.steps == 5_797
    assert r.utilisation == 13_280 / (16 * 5_797)
    assert round(r.utilisation * 100, 1) == 14.3
    assert r.group_maxima.tolist() == [661, 580, 480, 39, 473, 471, 527, 557, 472, 486, 546, 40, 465]
    assert r.schedule.groups.size.tolist() == [16] * 12 + [8]
    assert r.makespan_seconds == pytest.approx(115.94)
    assert round(r.requests_per_second, 1) == 1.7


def test_lab_continuous(lab_continuous):
    r = lab_continuous
    assert r.steps == 1_148
    assert r.utilisation == 13_280 / (16 * 1_148)
    assert round(r.utilisation * 100, 1) == 72.3
    assert r.makespan_seconds == pytest.approx(22.96)
    assert round(r.makespan_seconds, 1) == 23.0
    assert round(r.requests_per_second, 1) == 8.7
    # "the queue empties at step 700": the last request is admitted then
    assert int(r.schedule.first_start.max()) == 700
    # no better than the ideal bound max(ceil(13,280 / 16), 661) = 830
    assert r.steps >= max(math.ceil(13_280 / 16), 661) == 830


def test_lab_multiple(lab_static, lab_continuous):
    assert round(lab_static.steps / lab_continuous.steps, 2) == 5.05


def test_hand_drill_static_wastes_84_percent():
    """8 slots, seven 20-token requests and one 500: 640 useful of 4,000 slot-steps = 16 %."""
    w = Workload.of([20] * 7 + [500])
    r = simulate(w, StaticPolicy(), slots=8)
    assert r.steps == 500
    assert r.tokens == 640
    assert r.utilisation == 640 / 4_000 == 0.16
    assert r.occupancy == 1.0  # every slot is held for the whole group


def test_all_equal_lengths_tie():
    """Control case: every request 100 tokens, 200 requests, 16 slots → 1,300 steps both ways."""
    w = Workload.of([100] * 200)
    static = simulate(w, StaticPolicy(), slots=16)
    continuous = simulate(w, ContinuousPolicy(), slots=16)
    paged = simulate(w, PagedPolicy(**UNGATED_SYNC_RULES), slots=16)
    assert static.steps == continuous.steps == paged.steps == 1_300


def test_partial_last_group_still_counts_every_slot():
    """Denominator uses all slots for the last, partial group: 3 requests of 10 on 4 slots."""
    r = simulate(Workload.of([10, 10, 10]), StaticPolicy(), slots=4)
    assert r.steps == 10 and r.utilisation == 30 / 40


# ---- semantics worked by hand -----------------------------------------------------------------------


def test_continuous_refills_a_freed_slot_on_the_next_step():
    """2 slots, lengths 3, 1, 2: request 2 takes the slot request 1 frees after step 0."""
    r = simulate(Workload.of([3, 1, 2]), ContinuousPolicy(), slots=2)
    s = r.schedule
    assert s.first_start.tolist() == [0, 0, 1]
    assert s.finish.tolist() == [3, 1, 3]
    assert r.steps == 3 and r.utilisation == 6 / 6


def test_prefill_step_emits_the_first_token():
    """A 10-token prompt and 5 output tokens on 1 slot: the prefill at step 0 emits the first
    token (vLLM samples it from the prompt's last position), tokens 2–5 at steps 1–4."""
    w = Workload.of([5], prompt_tokens=[10])
    for policy in (StaticPolicy(), ContinuousPolicy(), PagedPolicy(**UNGATED_SYNC_RULES)):
        r = simulate(w, policy, slots=1)
        assert r.steps == 5
        assert r.schedule.first_token.tolist() == [0]
        assert r.schedule.decode_start.tolist() == [1]  # the prefill step is not a decode step
        assert r.latency.steps["ttft"].tolist() == [1.0]  # out at the end of step 0
        assert r.latency.steps["tpot"].tolist() == [1.0]
        assert r.tokens == 5 and r.utilisation == 5 / 5 and r.occupancy == 1.0
    # one output token: the prefill step is the whole request
    one = simulate(Workload.of([1], prompt_tokens=[10]), ContinuousPolicy(), slots=1)
    assert one.steps == 1 and one.schedule.finish.tolist() == [1]
    # without a prompt the lab's count holds
    assert simulate(Workload.of([5]), ContinuousPolicy(), slots=1).steps == 5


def test_static_waits_for_its_members_or_max_wait():
    """Arrivals at 0, 0, 10 s on 3 slots, 1 s per step: a full group waits for the third
    request; with max_wait 4 s the first two launch at step 4 and the third alone later."""
    w = Workload.of([2, 2, 2], arrival_time=[0.0, 0.0, 10.0])
    one = UnitStepTime(1.0)
    full = simulate(w, StaticPolicy(), slots=3, step_time=one)
    assert full.schedule.first_start.tolist() == [10, 10, 10] and full.steps == 12
    partial = simulate(w, StaticPolicy(max_wait=4.0), slots=3, step_time=one)
    assert partial.schedule.first_start.tolist() == [4, 4, 10] and partial.steps == 12
    assert partial.latency.seconds["queueing"].tolist() == [4.0, 4.0, 0.0]


# a + b·batch + c·(KV tokens read), seconds; a prompt token costs b + c (MeasuredStepTime)
A, B, C = 0.01, 0.001, 0.0001
HAND = MeasuredStepTime(intercept=A, per_token=B, per_context_token=C)


def test_static_steps_compute_the_whole_group_until_it_ends():
    """2 slots, lengths 1 and 3: one group of 3 steps. Request 0 ends after step 0 but pads on,
    as in the torch benchmark, reading one more token each step like request 1:
    step 0: batch 2, reads 1 + 1;  step 1: batch 2, reads 2 + 2;  step 2: batch 2, reads 3 + 3.
    So 3a + 6b + 12c. Continuous batching drops it: batch 2, 1, 1 reading 2, 2, 3: 3a + 4b + 7c."""
    w = Workload.of([1, 3])
    static = simulate(w, StaticPolicy(), slots=2, step_time=HAND)
    assert static.makespan_seconds == pytest.approx(3 * A + 6 * B + 12 * C)  # 0.0372 s
    continuous = simulate(w, ContinuousPolicy(), slots=2, step_time=HAND)
    assert continuous.makespan_seconds == pytest.approx(3 * A + 4 * B + 7 * C)  # 0.0347 s
    # the padding costs seconds, not steps: the counts are the lab's
    assert static.steps == continuous.steps == 3
    assert static.utilisation == continuous.utilisation == 4 / 6
    # request 0's latency still ends with its own token, at the end of step 0
    assert static.latency.seconds["e2e"][0] == pytest.approx(A + 2 * B + 2 * C)


def test_static_padding_with_a_prompt_by_hand():
    """Lengths 1 and 3, request 0 with a 4-token prompt: the group runs 3 steps.
    step 0: request 0 prefills 4 tokens, request 1 decodes reading 1: a + b(1 + 4) + c(1 + 4);
    step 1: request 0 reads 4 + 1 (its last token), request 1 reads 2: a + 2b + 7c;
    step 2: request 0 pads reading 6, request 1 reads 3: a + 2b + 9c.
    Total 3a + 9b + 21c; the timed path (arrivals, group by group) agrees."""
    w = Workload.of([1, 3], prompt_tokens=[4, 0])
    r = simulate(w, StaticPolicy(), slots=2, step_time=HAND)
    assert r.steps == 3
    assert r.makespan_seconds == pytest.approx(3 * A + 9 * B + 21 * C)
    late = Workload.of([1, 3], prompt_tokens=[4, 0], arrival_time=[0.5, 0.5])
    timed = simulate(late, StaticPolicy(), slots=2, step_time=HAND)
    idle = A + B + C  # the engine polls at one request's cost until 0.5 s: 42 idle steps
    waited = math.ceil(0.5 / idle - 1e-9)
    assert timed.schedule.first_start.tolist() == [waited, waited]
    assert timed.makespan_seconds == pytest.approx(waited * idle + 3 * A + 9 * B + 21 * C)


def test_lab_counts_do_not_depend_on_the_step_time(lab):
    """Pricing padding changes seconds only: 5,797 steps and 14.3 % under any step time."""
    roofline = RooflineStepTime(14e9, 524_288, 14e9, 2e12, 1e15)
    for step_time in (None, LAB_STEP, HAND, roofline):
        r = simulate(lab, StaticPolicy(), slots=16, step_time=step_time)
        assert r.steps == 5_797 and round(r.utilisation * 100, 1) == 14.3
    # every static step reads the whole group's caches, so it costs more than continuous's steps
    static = simulate(lab, StaticPolicy(), slots=16, step_time=roofline)
    continuous = simulate(lab, ContinuousPolicy(), slots=16, step_time=roofline)
    assert static.makespan_seconds / static.steps > continuous.makespan_seconds / continuous.steps


def test_series_built_from_stays_equal_the_step_by_step_counts(lab):
    """Runs longer than the 500 points of a series: each bin's mean busy and held slots, and the
    paged run's peak, mean and per-bin maximum of KV blocks, against per-step arrays."""
    w = Workload.of(lab.output_tokens, prompt_tokens=(np.arange(lab.n) * 37) % 300)
    for policy in (
        StaticPolicy(),
        ContinuousPolicy(),
        PagedPolicy(**UNGATED_SYNC_RULES, num_blocks=400, block_size=8),
        PagedPolicy(
            **UNGATED_SYNC_RULES,
            num_blocks=2_000,
            block_size=5,
            max_num_batched_tokens=64,
            chunked_prefill=True,
        ),
    ):
        r = simulate(w, policy, slots=16, step_time=LAB_STEP)
        assert r.steps > 1_000
        edges = np.asarray(r.series["step"])
        width = np.diff(np.append(edges, r.steps))
        busy, held = per_step(r.schedule)
        np.testing.assert_array_equal(r.series["busy"], np.add.reduceat(busy, edges) / width)
        np.testing.assert_array_equal(r.series["held"], np.add.reduceat(held, edges) / width)
        assert r.occupancy == held.sum() / (16 * r.steps)
        if isinstance(policy, PagedPolicy):
            used = blocks_per_step(r.schedule, policy.block_size)
            assert r.kv_blocks["peak"] == used.max() <= policy.num_blocks
            assert r.kv_blocks["mean"] == pytest.approx(used.mean(), rel=1e-12)
            assert r.series["kv_blocks_used"].tolist() == np.maximum.reduceat(used, edges).tolist()
            for method in ("crossings", "residues"):
                assert np.array_equal(blocks_per_step(r.schedule, policy.block_size, method), used)


def test_arrivals_join_at_the_first_step_after_them():
    """20 ms steps; an arrival at 0.05 s joins step 3 (starts 0.06 s), not step 2 (0.04 s)."""
    w = Workload.of([1, 1], arrival_time=[0.0, 0.05])
    r = simulate(w, ContinuousPolicy(), slots=1, step_time=LAB_STEP)
    assert r.schedule.first_start.tolist() == [0, 3]
    assert r.steps == 4
    assert r.latency.seconds["queueing"][1] == pytest.approx(0.01)
    assert r.latency.seconds["e2e"][1] == pytest.approx(0.03)
    assert r.busy_steps == 2 and r.utilisation == 2 / 4  # idle steps count against utilisation


def test_paged_admits_on_current_need_then_preempts():
    """Block size 4, 4 blocks, three 8-token requests on 3 slots. Admission needs one block each,
    so all three start at step 0. At step 4 every cache holds 4 tokens and needs a second block;
    one is free: request 0 takes it, request 1 evicts the newest (request 2, 4 tokens emitted)
    and takes its block. Requests 0 and 1 leave at step 8; request 2 comes back: a prefill step
    for its 4 cached tokens (step 8) that emits its fifth token, then its last 3 (steps 9–11)."""
    w = Workload.of([8, 8, 8])
    r = simulate(w, PagedPolicy(**UNGATED_SYNC_RULES, num_blocks=4, block_size=4), slots=3)
    s = r.schedule
    assert r.preemptions == 1
    assert s.request.tolist() == [0, 1, 2, 2]
    assert s.start.tolist() == [0, 0, 0, 8] and s.end.tolist() == [8, 8, 4, 12]
    assert s.decode_start.tolist() == [0, 0, 0, 9] and s.context.tolist() == [0, 0, 0, 4]
    assert s.emit_start.tolist() == [0, 0, 0, 8]
    assert s.finish.tolist() == [8, 8, 12] and r.steps == 12 and r.tokens == 24
    assert r.kv_blocks["peak"] == 4
    assert simulate(w, ContinuousPolicy(), slots=3).steps == 8


def test_a_request_that_is_itself_the_newest_evicts_itself():
    """Block size 2, 3 blocks, two 4-token requests. At step 2 both caches hold 2 tokens and
    need a second block; the older takes the one free block, the newer is the newest and evicts
    itself (2 tokens emitted). No admission in a step that preempted, so it returns at step 3
    (prefill of 2 tokens, which emits its third token) and decodes its fourth at step 4, when
    request 0 has left and freed 2 blocks."""
    w = Workload.of([4, 4])
    r = simulate(w, PagedPolicy(**UNGATED_SYNC_RULES, num_blocks=3, block_size=2), slots=2)
    s = r.schedule
    assert r.preemptions == 1
    assert s.request.tolist() == [0, 1, 1]
    assert s.start.tolist() == [0, 0, 3] and s.end.tolist() == [4, 2, 5]
    assert s.decode_start.tolist() == [0, 0, 4] and s.context.tolist() == [0, 0, 2]
    assert s.finish.tolist() == [4, 5] and r.steps == 5 and r.tokens == 8
    assert s.first_token.tolist() == [0, 0]
    assert r.kv_blocks["peak"] == 3


def test_tokens_are_conserved_and_slots_never_double_booked(lab):
    w = Workload.of(lab.output_tokens, prompt_tokens=np.arange(200) % 50)
    for policy in (
        StaticPolicy(),
        ContinuousPolicy(),
        PagedPolicy(**UNGATED_SYNC_RULES, num_blocks=300, block_size=8),
    ):
        r = simulate(w, policy, slots=16)
        s = r.schedule
        assert int((s.end - s.emit_start).sum()) == r.tokens == 13_280
        assert_no_overlap(s)


def test_result_dict_is_plain_json(lab_static, lab_continuous):
    for r in (lab_static, lab_continuous):
        d = r.to_dict()
        assert json.loads(json.dumps(d)) == d
        for key in (
            "policy",
            "slots",
            "steps",
            "makespan_steps",
            "makespan_seconds",
            "makespan",
            "tokens",
            "utilisation",
            "throughput_tokens_per_step",
            "throughput_tokens_per_second",
            "requests_per_second",
            "latency",
            "preemptions",
            "timeline",
            "series",
        ):
            assert key in d
        assert set(d["latency"]["steps"]) == {"queueing", "ttft", "tpot", "e2e"}
        assert set(d["latency"]["seconds"]["e2e"]) >= {"p50", "p90", "p99"}
        assert len(d["timeline"]["slot"]) == 200
        assert len(d["series"]["step"]) == len(d["series"]["busy"]) <= 500
        assert "timeline" not in r.to_dict(timeline=False)
        # one makespan under every key results.json carries: the run's own two numbers
        assert d["steps"] == d["makespan_steps"] == d["makespan"]["steps"] == r.steps
        assert d["makespan_seconds"] == d["makespan"]["seconds"] == pytest.approx(r.makespan_seconds)
    assert lab_static.to_dict()["group_maxima"][0] == 661
    assert lab_static.to_dict()["throughput_tokens_per_step"] == pytest.approx(13_280 / 5_797)


def test_busy_series_averages_to_utilisation(lab_continuous):
    series = lab_continuous.series
    width = np.diff(np.append(series["step"], lab_continuous.steps))
    assert (series["busy"] * width).sum() == pytest.approx(13_280)


def test_untimed_results_have_no_seconds(lab):
    r = simulate(lab, ContinuousPolicy(), slots=16)
    assert r.makespan_seconds is None and r.requests_per_second is None
    assert r.to_dict()["latency"]["seconds"] is None


def test_user_mistakes_are_user_errors():
    w = Workload.of([3], arrival_time=[1.0])
    with pytest.raises(UserError, match="step-time model"):
        simulate(w, ContinuousPolicy(), slots=1)
    with pytest.raises(UserError):
        simulate(Workload.of([3]), ContinuousPolicy(), slots=0)
    with pytest.raises(UserError, match="needs 2 blocks"):
        simulate(Workload.of([30]), PagedPolicy(**UNGATED_SYNC_RULES, num_blocks=1, block_size=16), slots=1)
    with pytest.raises(UserError, match="does not fit"):
        simulate(
            Workload.of([3], prompt_tokens=[100]),
            PagedPolicy(**UNGATED_SYNC_RULES, max_num_batched_tokens=64),
            slots=1,
        )
    with pytest.raises(UserError):
        PagedPolicy(**UNGATED_SYNC_RULES, chunked_prefill=True)  # a chunk needs a token budget
