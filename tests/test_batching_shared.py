"""One shared queue in front of the replicas (engine.batching.shared), against the naive
reference that walks every step of every replica (tests/naive_batching.py), and by hand.

Step times are whole seconds and arrivals whole or half seconds, so the simulator's
closed-form clock and the naive loop's step-by-step sums agree exactly, ties included: steps of
two replicas that begin at the same moment are common, and must go lowest replica first.
"""

from __future__ import annotations

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
)
from engine.batching.paged import UNGATED_SYNC_RULES
from engine.batching.prefill_first import PrefillFirstPolicy
from engine.batching.replicas import simulate_replicas
from engine.errors import UserError
from engine.workload import Workload

from helpers import examples
from naive_batching import limits_of, naive_shared_queue

ONE_SECOND = UnitStepTime(1.0)
# 3 s + 2 s per token + 1 s per KV token read: whole seconds, and the replicas' clocks drift apart
WHOLE_SECONDS = MeasuredStepTime(intercept=3.0, per_token=2.0, per_context_token=1.0)


@st.composite
def clusters(draw, tight: bool = False, vllm: bool = False):
    """A small workload, a paged or prefill-first policy that fits it, 1 to 3 replicas.
    tight: 2 or 3 replicas of 2 or 3 slots, and the fewest blocks that fit the longest request.
    vllm: paged under vLLM 0.33.0's rules, each drawn on or off (prompts of a token or more,
    the null block on top of the pool)."""
    n = draw(st.integers(1, 14))
    first = "paged" if vllm else draw(st.sampled_from(["paged", "prefill_first"]))
    output = draw(st.lists(st.integers(1, 12), min_size=n, max_size=n))
    low = 1 if first == "prefill_first" or vllm else 0
    prompt = draw(st.lists(st.integers(low, 14), min_size=n, max_size=n))
    gaps = draw(st.lists(st.integers(0, 8), min_size=n, max_size=n))
    arrival = (np.cumsum(gaps) / 2).tolist()  # half seconds: some between steps, some on them
    slots = draw(st.integers(2, 3) if tight else st.integers(1, 3))
    block_size = draw(st.integers(1, 4))
    peak = max(-(-(p + o) // block_size) for p, o in zip(prompt, output))
    num_blocks = peak if tight else draw(st.one_of(st.none(), st.integers(peak, peak + 8)))
    chunked = first == "paged" and draw(st.booleans())
    budget = None
    if chunked or draw(st.booleans()):
        least = (
            slots
            if chunked
            else max(slots, max(p + (o - 1 if num_blocks else 0) for p, o in zip(prompt, output)))
        )
        budget = draw(st.integers(max(least, 1), max(least, 1) + 10))
    kind = PagedPolicy if first == "paged" else PrefillFirstPolicy
    rules: dict = dict(UNGATED_SYNC_RULES) if first == "paged" else {}  # the naive cluster's rules
    if vllm:
        rules = {
            name: draw(st.booleans()) for name in ("reserve_full_prompt", "async_scheduling", "null_block")
        }
        if num_blocks is not None and rules["null_block"]:
            num_blocks += 1
    policy = kind(
        **rules,
        num_blocks=num_blocks,
        block_size=block_size,
        max_num_batched_tokens=budget,
        chunked_prefill=chunked and budget is not None,
    )
    model = draw(st.sampled_from([ONE_SECOND, WHOLE_SECONDS]))
    replicas = draw(st.integers(2, 3) if tight else st.integers(1, 3))
    return (output, prompt, arrival), slots, policy, replicas, model


def run_both(load, slots, policy, replicas, model):
    output, prompt, arrival = load
    w = Workload.of(output, prompt, arrival)
    fast = simulate_replicas(
        w, policy, slots=slots, step_time=model, replicas=replicas, router="shared_queue"
    )
    naive = naive_shared_queue(
        arrival,
        prompt,
        output,
        replicas,
        model,
        slots,
        *limits_of(policy),
        prefill_first=policy.name == "prefill_first",
        reserve_full_prompt=policy.reserve_full_prompt,
        async_scheduling=policy.async_scheduling,
        null_block=policy.null_block,
    )
    return fast, naive


@settings(max_examples=examples(50, 1000), deadline=None)
@given(setup=clusters())
def test_shared_queue_matches_the_naive_cluster(setup):
    check_against_the_naive_cluster(setup)


@settings(max_examples=examples(50, 1000), deadline=None)
@given(setup=st.one_of(clusters(vllm=True), clusters(tight=True, vllm=True)))
def test_shared_queue_matches_the_naive_cluster_under_vllm_rules(setup):
    """Async scheduling's late release, the gate and the null block, behind one shared queue."""
    check_against_the_naive_cluster(setup)


def check_against_the_naive_cluster(setup):
    load, slots, policy, replicas, model = setup
    fast, naive = run_both(load, slots, policy, replicas, model)
    assert fast.replica_of.tolist() == naive.replica_of
    arrival = np.asarray(load[2])
    for j, result in enumerate(fast.replicas):
        mine = np.flatnonzero(fast.replica_of == j)
        if result is None:
            assert len(mine) == 0
            continue
        run, at = naive.runs[j], np.asarray(naive.clocks[j])
        s = result.schedule
        assert s.first_start.tolist() == [run.start[i] for i in mine]
        assert s.first_token.tolist() == [run.first_token[i] for i in mine]
        assert s.finish.tolist() == [run.finish[i] for i in mine]
        assert result.preemptions == run.preemptions
        assert fast.latency_seconds["e2e"][mine].tolist() == (at[s.finish] - arrival[mine]).tolist()
        assert fast.latency_seconds["ttft"][mine].tolist() == (at[s.first_token + 1] - arrival[mine]).tolist()
        assert fast.latency_seconds["queueing"][mine].tolist() == (at[s.first_start] - arrival[mine]).tolist()


@settings(max_examples=40, deadline=None)
@given(setup=clusters())
def test_one_replica_behind_a_shared_queue_is_the_engine(setup):
    (output, prompt, arrival), slots, policy, _, model = setup
    w = Workload.of(output, prompt, arrival)
    one = simulate_replicas(w, policy, slots=slots, step_time=model, replicas=1, router="shared_queue")
    alone = simulate(w, policy, slots=slots, step_time=model)
    s, t = one.replicas[0].schedule, alone.schedule
    for name in ("first_start", "first_token", "finish", "request", "slot", "start", "end"):
        assert getattr(s, name).tolist() == getattr(t, name).tolist(), name
    assert one.preemptions == alone.preemptions
    assert one.makespan_seconds == alone.makespan_seconds
    assert one.latency_seconds["ttft"].tolist() == alone.latency.seconds["ttft"].tolist()


def test_shared_queue_beats_round_robin_by_hand():
    """Two one-slot replicas, 1 s steps, no prompts. Request 0 (10 tokens) at 0 s, then three
    1-token requests at 1, 2 and 3 s.

    Round robin: replica 0 gets 0 and 2, replica 1 gets 1 and 3. Request 2 waits behind
    request 0 until step 10: queueing 8 s, TTFT 9 s. The others start at once (TTFT 1 s).
    Mean TTFT (1 + 1 + 9 + 1) / 4 = 3 s.

    Shared queue: request 0 takes replica 0 at step 0; replica 1 takes 1, 2 and 3 as each
    arrives (each done in its step): every request starts at once, mean TTFT 1 s."""
    w = Workload.of([10, 1, 1, 1], arrival_time=[0.0, 1.0, 2.0, 3.0])
    rr = simulate_replicas(
        w, ContinuousPolicy(), slots=1, step_time=ONE_SECOND, replicas=2, router="round_robin"
    )
    sq = simulate_replicas(
        w, ContinuousPolicy(), slots=1, step_time=ONE_SECOND, replicas=2, router="shared_queue"
    )
    assert rr.replica_of.tolist() == [0, 1, 0, 1]
    assert rr.latency_seconds["queueing"].tolist() == [0, 0, 8, 0]
    assert rr.latency_seconds["ttft"].tolist() == [1, 1, 9, 1]
    assert sq.replica_of.tolist() == [0, 1, 1, 1]
    assert sq.latency_seconds["queueing"].tolist() == [0, 0, 0, 0]
    assert sq.latency_seconds["ttft"].tolist() == [1, 1, 1, 1]
    assert rr.to_dict()["latency"]["ttft"]["mean"] == 3.0 and sq.to_dict()["latency"]["ttft"]["mean"] == 1.0
    d = sq.to_dict()
    assert d["router"] == "shared_queue" and [r["requests"] for r in d["per_replica"]] == [1, 3]


def test_a_request_waits_in_the_shared_line_until_a_replica_has_room():
    """Two one-slot replicas busy with 5- and 3-token requests from 0 s; request 2 arrives at
    1 s and is bound to nobody until replica 1 frees its slot at step 3 (ties go lowest first:
    at 0 s replica 0 takes request 0, replica 1 takes request 1)."""
    w = Workload.of([5, 3, 2], arrival_time=[0.0, 0.0, 1.0])
    c = simulate_replicas(
        w, ContinuousPolicy(), slots=1, step_time=ONE_SECOND, replicas=2, router="shared_queue"
    )
    assert c.replica_of.tolist() == [0, 1, 1]
    assert c.latency_seconds["queueing"].tolist() == [0, 0, 2]
    assert c.latency_seconds["e2e"].tolist() == [5, 3, 4]


def test_shared_queue_refusals():
    w = Workload.of([3, 4], arrival_time=[0.0, 1.0])
    with pytest.raises(UserError) as err:
        simulate_replicas(w, ContinuousPolicy(), slots=1, replicas=2, router="shared_queue")
    assert err.value.field == "step_time"
    for router in ("shared_queue", "least_outstanding"):
        with pytest.raises(UserError) as err:
            simulate_replicas(w, StaticPolicy(), slots=1, step_time=ONE_SECOND, replicas=2, router=router)
        assert (
            err.value.field == "router" and "static batching" in str(err.value) and "\n" not in str(err.value)
        )
    with pytest.raises(UserError) as err:
        simulate_replicas(
            Workload.of([3, 4], [2, 0]),
            PrefillFirstPolicy(),
            slots=1,
            step_time=ONE_SECOND,
            replicas=2,
            router="shared_queue",
        )
    assert err.value.field == "prompt_tokens"


def test_a_replica_blocked_on_the_head_looks_again_when_another_takes_it():
    """Two replicas of two slots, 12 blocks of 1 token, 1 s steps.

    A (prompt 6, 4 tokens) and B (prompt 10, 2 tokens) at 0 s: replica 0 takes A, and B does
    not fit beside it (6 blocks free), so replica 1 takes B. C (prompt 10) and D (prompt 3)
    arrive at 0.5 s. C fits nowhere until B leaves replica 1 at step 2; replica 1 takes C there
    (replica 0's step 2 came first, lowest replica first, and C did not fit it). D, now the head,
    does not fit replica 1 (2 blocks free) but fits replica 0 at its step 3, where A holds 9
    blocks: queueing 2.5 s. A replica that waited for its own next event (A leaving at step 4)
    would start D a step late."""
    w = Workload.of([4, 2, 2, 1], prompt_tokens=[6, 10, 10, 3], arrival_time=[0.0, 0.0, 0.5, 0.5])
    policy = PagedPolicy(**UNGATED_SYNC_RULES, num_blocks=12, block_size=1)
    c = simulate_replicas(w, policy, slots=2, step_time=ONE_SECOND, replicas=2, router="shared_queue")
    assert c.replica_of.tolist() == [0, 1, 1, 0]
    assert c.latency_seconds["queueing"].tolist() == [0, 0, 1.5, 2.5]
    assert c.latency_seconds["e2e"].tolist() == [4, 2, 3.5, 3.5]


@settings(max_examples=examples(40, 600), deadline=None)
@given(setup=clusters(tight=True))
def test_shared_queue_matches_the_naive_cluster_when_blocks_are_short(setup):
    """Several replicas with room for several requests each and the tightest pool: heads that
    fit one replica and not another, taken while others wait."""
    test_shared_queue_matches_the_naive_cluster.hypothesis.inner_test(setup)
