"""Batching policies by name: a toy policy registered from the tests alone is simulated, accepted
by the spec and the simulate flags, and drawn in its own colour; an unknown name is refused
everywhere; the paged scheduler's waiting queue is a replaceable object."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from engine import batching
from engine.batching import registry
from engine.batching.paged import UNGATED_SYNC_RULES
from engine.batching.queues import ShortestFirstQueue
from engine.errors import UserError
from engine.workload import Workload

from helpers import dump_yaml, load_yaml, toy_policy


@pytest.fixture
def toy():
    with toy_policy() as kind:
        yield kind


def test_a_toy_policy_registered_here_runs_everywhere(toy):
    output = np.array([3, 1, 4, 1, 5])
    w = Workload.of(output)
    r = batching.simulate(w, registry.build("one_at_a_time", batching.PolicySettings()), slots=4)
    assert r.steps == int(output.sum())  # back to back: one token per step, never two
    assert r.schedule.finish.tolist() == np.cumsum(output).tolist()
    # the spec's and the CLI's choices, the charts' colour and order derive from the registry
    from engine.charts.style import policy_colour, policy_order
    from engine.commands.simulate import _policy_names
    from engine.experiments.batching import BatchingSection

    section = BatchingSection.model_validate(
        {"slots": 2, "workload": {"trace": "x.csv"}, "policies": ["static", "one_at_a_time"]}
    )
    assert section.policies == ["static", "one_at_a_time"]
    assert _policy_names("one_at_a_time,static") == ["one_at_a_time", "static"]
    assert policy_colour("one_at_a_time") == "#123456"
    assert policy_order()[-1] == "one_at_a_time"
    with pytest.raises(ValueError, match="registered twice: by helpers and by test_batching_registry"):
        registry.register(toy)


def test_unknown_policy_is_refused_everywhere():
    @dataclass(frozen=True)
    class Stray(batching.ContinuousPolicy):
        name = "stray"

    w = Workload.of(np.array([2, 2]))
    with pytest.raises(UserError, match="unknown policy 'stray'"):
        batching.simulate(w, Stray(), slots=1)
    with pytest.raises(UserError, match="unknown policy 'stray'"):
        registry.build("stray", batching.PolicySettings())
    from engine.charts.policy_comparison import ordered_policies
    from engine.charts.style import policy_colour
    from engine.commands.simulate import _policy_names
    from engine.experiments.batching import BatchingSection

    with pytest.raises(UserError) as err:
        _policy_names("static,stray")
    assert err.value.field == "--policy"
    with pytest.raises(UserError):
        policy_colour("stray")
    with pytest.raises(UserError):
        ordered_policies({"policies": {"stray": {}}})
    with pytest.raises(ValueError, match="must be one of 'static', 'continuous'"):
        BatchingSection.model_validate({"slots": 2, "workload": {"trace": "x.csv"}, "policies": ["stray"]})


def test_builtin_names_and_settings():
    assert registry.names()[:3] == ("static", "continuous", "paged")
    settings = batching.PolicySettings(max_wait=2.0, num_blocks=64, block_size=8, max_num_seqs=4)
    static, paged = registry.build("static", settings), registry.build("paged", settings)
    assert static == batching.StaticPolicy(max_wait=2.0)
    assert paged == batching.PagedPolicy(num_blocks=64, block_size=8, max_num_seqs=4)


def test_shortest_first_queue_reorders_admission():
    """One slot, everyone waiting at step 0: shortest output first, ties in arrival order (by
    hand: outputs 5, 2, 4, 2 run as requests 1, 3, 2, 0)."""
    output = np.array([5, 2, 4, 2])
    w = Workload.of(output)
    fcfs = batching.simulate(w, batching.PagedPolicy(**UNGATED_SYNC_RULES), slots=1)
    sjf = batching.simulate(w, batching.PagedPolicy(**UNGATED_SYNC_RULES, queue=ShortestFirstQueue), slots=1)
    assert fcfs.schedule.finish.tolist() == [5, 7, 11, 13]
    assert sjf.schedule.finish.tolist() == [13, 2, 8, 4]


def test_the_kv_blocks_chart_takes_any_policy_that_keeps_blocks(days_copy):
    """The chart asks the registry, not for the name 'paged': prefill-first and a toy block-keeping
    policy registered here qualify; a day with no block-keeping policy is refused, naming them."""

    from engine.spec import load_spec

    path = days_copy / "day37.yaml"
    original = path.read_text()

    def spec_with(policies):
        data = load_yaml(original)
        data["batching"].update(policies=policies, paged={"num_blocks": 4096})
        data["charts"].append("kv_blocks")
        path.write_text(dump_yaml(data, sort_keys=False))
        return path

    assert load_spec(spec_with(["static", "prefill_first"])).charts[-1] == "kv_blocks"
    with pytest.raises(UserError) as err:
        load_spec(spec_with(["static", "continuous"]))
    assert err.value.line().endswith(
        "chart 'kv_blocks' needs a policy that keeps KV blocks ('paged', 'prefill_first')"
    )
    registry.register(
        registry.PolicyKind(
            "blocky",
            registry.find("paged").build,
            "blocky",
            "Paged.",
            "#654321",
            registry.find("paged").example,
            needs_blocks=True,
        )
    )
    try:
        assert load_spec(spec_with(["continuous", "blocky"])).batching.policies == ["continuous", "blocky"]
    finally:
        registry.unregister("blocky")


def test_a_policy_with_its_own_step_rule_is_never_run_as_plain_continuous(toy):
    """The toy changes continuous batching's step rule and brings no timed one: with unit steps
    it runs its own rule (every request alone: as many steps as tokens), and where only the
    plain rule could run (a batch-dependent clock, replicas) it is refused by name, never
    replaced by plain continuous batching."""
    from engine.batching.cosim import paged_engine
    from engine.batching.steptime import MeasuredStepTime, UnitStepTime

    output = np.array([3, 1, 4, 1, 5])
    w = Workload.of(output, arrival_time=[0.0, 0.01, 0.02, 0.03, 0.04])  # arrivals: the timed path
    policy = registry.build("one_at_a_time", batching.PolicySettings())
    unit = batching.simulate(w, policy, slots=4, step_time=UnitStepTime(0.02))
    assert unit.steps == int(output.sum())
    timed = MeasuredStepTime(intercept=0.008, per_token=5e-5, per_context_token=3e-9)
    with pytest.raises(UserError) as err:
        batching.simulate(w, policy, slots=4, step_time=timed)
    assert err.value.field == "policy" and "'one_at_a_time'" in err.value.message
    assert "unit steps" in err.value.message
    with pytest.raises(UserError, match="'one_at_a_time' changes continuous batching's step rule"):
        paged_engine(policy, "round_robin")


def test_every_registered_policy_schedules_its_own_example_as_worked_by_hand(toy):
    """The built-in policies and the tests' toy (one request at a time), alike."""
    from helpers import assert_policy_schedules_its_example

    assert {"static", "continuous", "paged", "prefill_first", toy.name} <= set(registry.names())
    for kind in registry.POLICIES.all():
        assert_policy_schedules_its_example(kind)
