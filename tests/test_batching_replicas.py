"""Replicas behind a router: each replica is one engine on the requests it was sent."""
from __future__ import annotations

import json

import numpy as np
import pytest

from engine.batching import ContinuousPolicy, PagedPolicy, UnitStepTime, simulate
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
    policy, step = PagedPolicy(num_blocks=200, block_size=4), UnitStepTime(0.05)
    one = simulate_replicas(w, policy, slots=4, step_time=step, replicas=1)
    alone = simulate(w, policy, slots=4, step_time=step)
    assert one.makespan_seconds == alone.makespan_seconds
    assert np.array_equal(one.latency_seconds["e2e"], alone.latency.seconds["e2e"])
    three = simulate_replicas(w, policy, slots=4, step_time=step, replicas=3, router="random", seed=5)
    for j, r in enumerate(three.replicas):
        mine = np.flatnonzero(three.replica_of == j)
        part = Workload.of(w.output_tokens[mine], w.prompt_tokens[mine], w.arrival_time[mine])
        assert np.array_equal(three.latency_seconds["ttft"][mine],
                              simulate(part, policy, slots=4, step_time=step).latency.seconds["ttft"])
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
    code = main(["simulate", "--requests", "40", "--output-tokens", "uniform:5:20", "--arrival-rate", "10",
                 "--slots", "4", "--policy", "continuous", "--replicas", "2", "--json"])
    assert code == 0
    d = json.loads(capsys.readouterr().out)["policies"]["continuous"]
    assert d["replicas"] == 2 and d["requests"] == 40 and len(d["per_replica"]) == 2
    assert sum(r["requests"] for r in d["per_replica"]) == 40
    assert main(["simulate", "--requests", "4", "--output-tokens", "5", "--slots", "1",
                 "--replicas", "0"]) == 2
    assert "--replicas" in capsys.readouterr().err
