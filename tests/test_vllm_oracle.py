"""The paged policy schedules as vLLM 0.33.0's own scheduler does, step for step.

tests/vllm_oracle/record.py ran the real vLLM V1 Scheduler and AsyncScheduler on 200 random
small workloads and the lab trace, under vLLM's shipped defaults and with each of its two
settings turned off, and wrote what each step scheduled (tokens per request, preemptions,
finishes) to tests/data/vllm_oracle_<setting>.json.gz. Here each workload is replayed through
`paged` with the flags of that setting and the same three tables are rebuilt from its Schedule
(with arrays, held to the step-by-step reading steps_of writes out); the first step that
differs fails the test, naming the trace, the setting and the step.

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
    """The recording, each trace's three tables (record.events) as arrays of rows."""
    with gzip.open(DATA / f"vllm_oracle_{setting}.json.gz", "rt") as handle:
        document = json.load(handle)
    for trace in document["traces"]:
        trace["events"] = tuple(
            np.asarray(trace.pop(name), dtype=np.int64).reshape(-1, width)
            for name, width in (("scheduled", 3), ("preempted", 2), ("finished", 2))
        )
    return document


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


Events = tuple[np.ndarray, np.ndarray, np.ndarray]


def recorded_events(steps: list[list]) -> Events:
    """A recording's steps as three sorted tables: (step, request, tokens) for every request
    scheduled, (step, request) for every preemption and every finish. Two runs scheduled the
    same, step for step, exactly when their tables are equal (an empty step is in neither)."""
    scheduled, preempted, finished = [], [], []
    for t, (tokens, pre, fin) in enumerate(steps):
        scheduled.extend((t, r, n) for r, n in tokens)
        preempted.extend((t, r) for r in pre)
        finished.extend((t, r) for r in fin)
    return _sorted(scheduled, 3), _sorted(preempted, 2), _sorted(finished, 2)


def schedule_events(schedule: Schedule) -> Events:
    """steps_of's three lists as recorded_events' tables, computed with arrays: the same rules
    (chunks at their steps, a token per decode step, a stay ending before its finish preempted
    there, the last token sampled at finish − 1), without a Python loop over steps."""
    chunks = schedule.chunk_tokens > 0
    chunk_step = schedule.chunk_step[chunks]
    chunk_request = schedule.request[schedule.chunk_stay[chunks]]
    decodes = schedule.end - schedule.decode_start
    decode_request = np.repeat(schedule.request, decodes)
    first = np.repeat(schedule.decode_start - np.cumsum(decodes) + decodes, decodes)
    decode_step = first + np.arange(len(decode_request))
    steps = np.concatenate([chunk_step, decode_step]).astype(np.int64)
    requests = np.concatenate([chunk_request, decode_request]).astype(np.int64)
    counts = np.concatenate([schedule.chunk_tokens[chunks], np.ones(len(decode_request), np.int64)])
    pairs, where = np.unique(np.stack([steps, requests], axis=1), axis=0, return_inverse=True)
    tokens = np.bincount(where.ravel(), weights=counts, minlength=len(pairs)).astype(np.int64)
    scheduled = np.concatenate([pairs, tokens[:, None]], axis=1) if len(pairs) else np.zeros((0, 3), np.int64)
    late = np.zeros(len(schedule.request), bool)
    if schedule.late_preempted is not None:
        late[schedule.late_preempted] = True
    cut = (schedule.end != schedule.finish[schedule.request]) | late
    preempted = np.stack([schedule.end[cut], schedule.request[cut]], axis=1)
    finished = np.stack([schedule.finish - 1, np.arange(len(schedule.finish))], axis=1)
    return scheduled, _sorted(preempted.tolist(), 2), _sorted(finished.tolist(), 2)


def _sorted(rows: list, width: int) -> np.ndarray:
    table = np.asarray(rows, dtype=np.int64).reshape(-1, width)
    return table[np.lexsort(table.T[::-1])] if len(table) else table


def same_events(a: Events, b: Events) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b))


def first_difference(expected: Events, got: Events) -> str | None:
    """The first step at which the two runs' tables differ, said as both runs' step."""

    if same_events(expected, got):
        return None

    def at(events: Events, t: int) -> list[list]:
        return [table[table[:, 0] == t, 1:].tolist() for table in events]

    steps = np.unique(np.concatenate([table[:, 0] for table in (*expected, *got)]))
    for t in steps.tolist():
        want, have = at(expected, t), at(got, t)
        if want != have:
            return (
                f"step {t}: vLLM scheduled {want[0]}, preempted {sum(want[1], [])}, finished "
                f"{sum(want[2], [])}; paged scheduled {have[0]}, preempted {sum(have[1], [])}, "
                f"finished {sum(have[2], [])}"
            )
    return None


def check(setting: str, **rules) -> None:
    """Every trace replayed and its tables compared; the first step that differs is named."""
    document = recording(setting)
    for trace in document["traces"]:
        schedule = replay(trace, policy_for(trace, document, **rules))
        found = first_difference(trace["events"], schedule_events(schedule))
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
        found = first_difference(trace["events"], schedule_events(replay(trace, policy)))
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


def test_the_tables_and_the_step_lists_are_one_reading() -> None:
    """The fast comparison (schedule_events) reads a schedule as steps_of does, on the recorded
    traces, and a schedule that differs from its recording in one step differs in the tables."""
    document = recording("shipped")
    for trace in document["traces"][:24]:
        schedule = replay(trace, policy_for(trace, document))
        assert same_events(recorded_events(steps_of(schedule)), schedule_events(schedule)), trace["name"]
    trace = document["traces"][-1]
    schedule = replay(trace, policy_for(trace, document))
    step = int(schedule.finish[0]) - 1
    schedule.finish[0] += 1  # the first request finishes a step late
    found = first_difference(trace["events"], schedule_events(schedule))
    assert found is not None and found.startswith(f"step {step}: ")


@pytest.mark.parametrize(
    ("paged", "says"),
    [
        ({}, "vLLM 0.33.0 V1 scheduler as shipped (async scheduling, full-prompt admission gate)"),
        ({"async_scheduling": False}, "vLLM 0.33.0 V1 scheduler with synchronous scheduling"),
    ],
)
def test_the_post_names_the_vllm_scheduler_a_paged_run_reproduces(days_copy, tmp_path, paged, says):
    """The LinkedIn post's where-from line names, for each paged policy the day runs, the vLLM
    scheduler its rules are, from the spec's flags; results.json says the same per policy."""
    from engine.pipeline import build

    from helpers import dump_yaml, lean_spec, load_yaml, unlinked

    day37 = days_copy / "day37.yaml"
    data = load_yaml(unlinked(lean_spec(day37.read_text())))
    data["batching"].update(
        policies=["static", "continuous", "paged"],
        paged={"num_blocks": 4096, "allow_empty_prompt": True, **paged},
    )  # the lab has no prompts
    day37.write_text(dump_yaml(data, sort_keys=False))
    build(day37, tmp_path)
    results = json.loads((tmp_path / "day37" / "results.json").read_text())["batching"]
    assert results["scheduler"] == {
        "paged": results["policies"]["paged"]["kv_blocks"]["scheduler"]["reproduces"]
    }
    assert results["scheduler"]["paged"].startswith(says)
    (where,) = [
        line
        for line in (tmp_path / "day37" / "linkedin.md").read_text().splitlines()
        if line.startswith("Where the numbers come from")
    ]
    assert f"the batching figures are simulated, paged by the rules of the {says}" in where
