"""Replicas behind a router: each replica is one engine on the requests it was sent."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine.batching import ContinuousPolicy, PagedPolicy, UnitStepTime, simulate
from engine.batching.paged import UNGATED_SYNC_RULES
from engine.batching.prefill_first import PrefillFirstPolicy
from engine.batching.replicas import route, simulate_replicas
from engine.cli import main
from engine.errors import UserError
from engine.workload import Workload


def test_round_robin_by_hand():
    """Lengths 3, 1, 4, 1, 5, 9 on two one-slot replicas: replica 0 runs requests 0, 2, 4 back to
    back (done at steps 3, 7, 12), replica 1 runs 1, 3, 5 (done at 1, 2, 11)."""
    w = Workload.of([3, 1, 4, 1, 5, 9])
    c = simulate_replicas(w, ContinuousPolicy(), slots=1, replicas=2, router="round_robin")
    assert c.replica_of.tolist() == [0, 1, 0, 1, 0, 1]
    assert c.latency_steps["e2e"].tolist() == [3, 1, 7, 2, 12, 11]
    assert [r.steps for r in c.replicas] == [12, 11]
    d = c.to_dict()
    assert d["requests"] == 6 and d["tokens"] == 23 and d["latency_unit"] == "steps"
    assert [r["requests"] for r in d["per_replica"]] == [3, 3]


def test_one_replica_is_the_engine_and_seconds_merge_in_workload_order():
    rng = np.random.default_rng(3)
    w = Workload.of(rng.integers(1, 30, 60), rng.integers(0, 50, 60), np.sort(rng.uniform(0, 20, 60)))
    policy, step = PagedPolicy(**UNGATED_SYNC_RULES, num_blocks=200, block_size=4), UnitStepTime(0.05)
    one = simulate_replicas(w, policy, slots=4, step_time=step, replicas=1)
    alone = simulate(w, policy, slots=4, step_time=step)
    assert one.makespan_seconds == alone.makespan_seconds
    assert np.array_equal(one.latency_seconds["e2e"], alone.latency.seconds["e2e"])
    three = simulate_replicas(w, policy, slots=4, step_time=step, replicas=3, router="random", seed=5)
    for j in range(len(three.replicas)):
        mine = np.flatnonzero(three.replica_of == j)
        part = Workload.of(w.output_tokens[mine], w.prompt_tokens[mine], w.arrival_time[mine])
        assert np.array_equal(
            three.latency_seconds["ttft"][mine],
            simulate(part, policy, slots=4, step_time=step).latency.seconds["ttft"],
        )
    assert three.makespan_seconds == max(r.makespan_seconds for r in three.replicas)


def test_random_router_is_seeded_and_uses_every_replica():
    w = Workload.of(np.ones(1000, dtype=int))
    a, b = route(w, 4, "random", seed=1), route(w, 4, "random", seed=1)
    assert np.array_equal(a, b) and set(a.tolist()) == {0, 1, 2, 3}
    assert not np.array_equal(a, route(w, 4, "random", seed=2))
    with pytest.raises(UserError):
        route(w, 4, "least_busy")
    with pytest.raises(UserError) as err:
        simulate_replicas(w, ContinuousPolicy(), slots=1, replicas=0)
    assert err.value.field == "replicas"


def test_simulate_replicas_flag(capsys):
    code = main(
        [
            "simulate",
            "--requests",
            "40",
            "--output-tokens",
            "uniform:5:20",
            "--arrival-rate",
            "10",
            "--slots",
            "4",
            "--policy",
            "continuous",
            "--replicas",
            "2",
            "--json",
        ]
    )
    assert code == 0
    d = json.loads(capsys.readouterr().out)["policies"]["continuous"]
    assert d["replicas"] == 2 and d["requests"] == 40 and len(d["per_replica"]) == 2
    assert sum(r["requests"] for r in d["per_replica"]) == 40
    assert (
        main(["simulate", "--requests", "4", "--output-tokens", "5", "--slots", "1", "--replicas", "0"]) == 2
    )
    assert "--replicas" in capsys.readouterr().err


def _brute_least_outstanding(w, policy, slots, step, replicas):
    """The definition, re-simulated from scratch for every arrival: each replica runs the
    requests it was sent so far; those whose finish time lies before this arrival are done."""
    from engine.batching.clock import clock_for

    replica_of = []
    finished: dict[tuple[int, ...], np.ndarray] = {}  # a replica's requests → their finish times

    def finish_times(mine: list[int]) -> np.ndarray:
        # Only one replica's requests change per arrival: the others' runs are the same runs,
        # so they are simulated once (the same workload gives the same schedule).
        if tuple(mine) not in finished:
            part = Workload.of(w.output_tokens[mine], w.prompt_tokens[mine], w.arrival_time[mine])
            r = simulate(part, policy, slots=slots, step_time=step)
            finished[tuple(mine)] = clock_for(r.schedule, step).at(r.schedule.finish)
        return finished[tuple(mine)]

    for k in range(w.n):
        a = float(w.arrival_time[k])
        counts = []
        for j in range(replicas):
            mine = [i for i in range(k) if replica_of[i] == j]
            if not mine:
                counts.append(0)
                continue
            done = finish_times(mine) < a - 1e-9 * step.idle_seconds
            counts.append(len(mine) - int(done.sum()))
        replica_of.append(int(np.argmin(counts)))
    return replica_of


@pytest.mark.parametrize("kind", [PagedPolicy, PrefillFirstPolicy])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_least_outstanding_matches_its_definition(seed, kind):
    """Prefill-first (vLLM V0) too: its replicas pause for the router as the mixed-batch ones do."""
    rng = np.random.default_rng(seed)
    n = 40
    least_prompt = 1 if kind is PrefillFirstPolicy else 0  # prefill-first admits by prefill
    w = Workload.of(rng.integers(1, 25, n), rng.integers(least_prompt, 30, n), np.sort(rng.uniform(0, 3, n)))
    rules = UNGATED_SYNC_RULES if kind is PagedPolicy else {}  # empty prompts allowed
    policy, step = kind(**rules, num_blocks=40, block_size=4, max_num_seqs=3), UnitStepTime(0.05)
    c = simulate_replicas(w, policy, slots=3, step_time=step, replicas=3, router="least_outstanding")
    assert c.replica_of.tolist() == _brute_least_outstanding(w, policy, 3, step, 3)
    for j, r in enumerate(c.replicas):  # and each replica is the engine on what it was sent
        mine = np.flatnonzero(c.replica_of == j)
        alone = simulate(
            Workload.of(w.output_tokens[mine], w.prompt_tokens[mine], w.arrival_time[mine]),
            policy,
            slots=3,
            step_time=step,
        )
        assert r.schedule.finish.tolist() == alone.schedule.finish.tolist()
        assert r.preemptions == alone.preemptions


def test_least_outstanding_needs_time_and_a_paged_engine():
    w = Workload.of([3, 4], arrival_time=[0.0, 1.0])
    with pytest.raises(UserError):
        simulate_replicas(w, ContinuousPolicy(), slots=1, replicas=2, router="least_outstanding")
    from engine.batching import StaticPolicy

    with pytest.raises(UserError) as err:
        simulate_replicas(
            w, StaticPolicy(), slots=1, step_time=UnitStepTime(0.1), replicas=2, router="least_outstanding"
        )
    assert err.value.field == "router"
    # by hand, 0.1 s steps: request 0 (30 tokens) runs until 3 s, so request 1 (at 1 s) goes to
    # the idle replica 1; at 5 s both are done and the tie goes to replica 0
    w = Workload.of([30, 4, 2], arrival_time=[0.0, 1.0, 5.0])
    c = simulate_replicas(
        w, ContinuousPolicy(), slots=1, step_time=UnitStepTime(0.1), replicas=2, router="least_outstanding"
    )
    assert c.replica_of.tolist() == [0, 1, 0]


def test_shared_queue_from_the_command_line(capsys):
    flags = ["simulate", "--requests", "30", "--output-tokens", "uniform:5:40", "--arrival-rate", "20"]
    flags += [
        "--slots",
        "2",
        "--policy",
        "continuous,prefill_first",
        "--num-blocks",
        "64",
        "--prompt-tokens",
        "8",
    ]
    code = main([*flags, "--step-time", "unit", "--replicas", "3", "--router", "shared_queue", "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)["policies"]
    for name in ("continuous", "prefill_first"):
        d = doc[name]
        assert d["router"] == "shared_queue" and d["replicas"] == 3 and len(d["per_replica"]) == 3
        assert sum(r["requests"] for r in d["per_replica"] if r is not None) == 30
    # static batching behind a late-binding queue is refused in one line naming the flag
    assert (
        main(
            [
                *flags[:-6],
                "--policy",
                "static",
                "--step-time",
                "unit",
                "--replicas",
                "2",
                "--router",
                "shared_queue",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "--router" in err and "static batching" in err and len(err.strip().splitlines()) == 1
