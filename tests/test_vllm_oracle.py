"""The paged policy schedules as vLLM 0.33.0's own scheduler does, step for step.

tests/vllm_oracle/record.py ran the real vLLM V1 Scheduler and AsyncScheduler on 200 random
small workloads and the lab trace, under vLLM's shipped defaults and with each of its two
settings turned off, and wrote what each step scheduled (tokens per request, preemptions,
finishes) to tests/data/vllm_oracle_<setting>.json.gz. Here each workload is replayed through
`paged` with the flags of that setting and the same three lists are rebuilt from its Schedule;
the first step that differs fails the test, naming the trace, the setting and the step.

vLLM itself is not imported: the traces are the independent truth.
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from engine.batching import PagedPolicy, schedule_paged
from engine.batching.schedule import Schedule

DATA = Path(__file__).parent / "data"
SETTINGS = ("shipped", "gate_off", "sync", "gate_off_sync")


@cache
def recording(setting: str) -> dict:
    with gzip.open(DATA / f"vllm_oracle_{setting}.json.gz", "rt") as handle:
        return json.load(handle)


def policy_for(trace: dict, document: dict, **rules) -> PagedPolicy:
    """The paged policy of one recorded run: its limits, and the recording's settings."""
    flags = dict(
        reserve_full_prompt=document["scheduler_reserve_full_isl"],
        async_scheduling=document["async_scheduling"],
    )
    flags.update(rules)
    return PagedPolicy(
        num_blocks=trace["num_gpu_blocks"],
        block_size=trace["block_size"],
        max_num_seqs=trace["max_num_seqs"],
        max_num_batched_tokens=trace["max_num_batched_tokens"],
        chunked_prefill=trace["chunked_prefill"],
        **flags,
    )


def replay(trace: dict, policy: PagedPolicy) -> Schedule:
    requests = np.asarray(trace["requests"], dtype=np.int64).reshape(-1, 3)
    eligible, prompt, output = requests[:, 0], requests[:, 1], requests[:, 2]
    return schedule_paged(eligible, prompt, output, policy.max_num_seqs or 1, policy)


def steps_of(schedule: Schedule) -> list[list]:
    """Per step what the recording holds: [[request, tokens scheduled]…], preempted, finished.

    Scheduled tokens: each prefill chunk at its step, and one token per decode step of a stay,
    [decode_start, end). A stay that ends before its request's finish was preempted at its end;
    a request's last token is sampled at finish − 1."""
    tokens: dict[int, dict[int, int]] = {}

    def add(step: int, request: int, count: int) -> None:
        row = tokens.setdefault(step, {})
        row[request] = row.get(request, 0) + count

    for stay, step, count in zip(schedule.chunk_stay, schedule.chunk_step, schedule.chunk_tokens):
        if count:
            add(int(step), int(schedule.request[stay]), int(count))
    preempted: dict[int, list[int]] = {}
    late = set() if schedule.late_preempted is None else set(schedule.late_preempted.tolist())
    for k in range(len(schedule.request)):
        r = int(schedule.request[k])
        for step in range(int(schedule.decode_start[k]), int(schedule.end[k])):
            add(step, r, 1)
        if int(schedule.end[k]) != int(schedule.finish[r]) or k in late:
            # async scheduling: a request that sampled its last token still holds its seat in
            # the next step and can be the newest, preempted there; vLLM lists it
            preempted.setdefault(int(schedule.end[k]), []).append(r)
    finished: dict[int, list[int]] = {}
    for r, step in enumerate(schedule.finish.tolist()):
        finished.setdefault(step - 1, []).append(r)
    last = max([*tokens, *preempted, *finished], default=-1)
    return [
        [
            sorted([r, n] for r, n in tokens.get(t, {}).items()),
            sorted(preempted.get(t, [])),
            sorted(finished.get(t, [])),
        ]
        for t in range(last + 1)
    ]


def first_difference(expected: list[list], got: list[list]) -> str | None:
    for t in range(max(len(expected), len(got))):
        want = expected[t] if t < len(expected) else [[], [], []]
        have = got[t] if t < len(got) else [[], [], []]
        if want != have:
            return (
                f"step {t}: vLLM scheduled {want[0]}, preempted {want[1]}, finished {want[2]}; "
                f"paged scheduled {have[0]}, preempted {have[1]}, finished {have[2]}"
            )
    return None


def check(setting: str, **rules) -> None:
    document = recording(setting)
    for trace in document["traces"]:
        schedule = replay(trace, policy_for(trace, document, **rules))
        found = first_difference(trace["steps"], steps_of(schedule))
        if found is not None:
            pytest.fail(f"trace {trace['name']}, setting {setting} (vLLM {document['vllm']}): {found}")


@pytest.mark.parametrize("setting", SETTINGS)
def test_paged_replays_vllm(setting: str) -> None:
    check(setting)


def test_the_old_rules_are_vllm_without_its_null_block() -> None:
    """The rules before vLLM's null block was counted: num_blocks usable blocks, one fewer than
    vLLM's num_gpu_blocks; with the gate off and synchronous scheduling, the same steps."""
    document = recording("gate_off_sync")
    for trace in document["traces"]:
        policy = policy_for(
            {**trace, "num_gpu_blocks": trace["num_gpu_blocks"] - 1}, document, null_block=False
        )
        found = first_difference(trace["steps"], steps_of(replay(trace, policy)))
        assert found is None, f"trace {trace['name']}, old rules: {found}"


def test_the_recordings_say_what_they_are() -> None:
    """Each file is the setting its name says, from vLLM 0.33.0, with the lab trace in it."""
    for setting in SETTINGS:
        document = recording(setting)
        assert document["vllm"] == "0.33.0"
        assert document["setting"] == setting
        assert document["scheduler_reserve_full_isl"] == ("gate_off" not in setting)
        assert document["async_scheduling"] == ("sync" not in setting)
        names = [trace["name"] for trace in document["traces"]]
        assert sum(name.startswith("random-") for name in names) == 200
        assert any(name.startswith("day37-") for name in names)


def test_a_run_says_which_vllm_it_reproduces():
    """results.json's kv_blocks.scheduler: the version and the rules, from the policy's flags."""
    from engine.batching.paged import UNGATED_SYNC_RULES

    shipped = PagedPolicy(num_blocks=10)
    _, info = shipped.kv_blocks
    assert info["usable_blocks"] == 9 and info["num_blocks"] == 10
    assert info["scheduler"]["reproduces"].startswith("vLLM 0.33.0 V1 scheduler as shipped")
    assert info["scheduler"]["async_scheduling"] and info["scheduler"]["reserve_full_prompt"]
    old = PagedPolicy(num_blocks=10, **UNGATED_SYNC_RULES)
    assert old.usable_blocks == 10
    assert "before the full-prompt admission gate" in old.reproduces
    sync = PagedPolicy(num_blocks=10, async_scheduling=False)
    assert "synchronous scheduling" in sync.reproduces and "gate off" not in sync.reproduces
