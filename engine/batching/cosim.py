"""Replicas run side by side, for routers that look at the replicas' state.

`least_outstanding` sends each request, as it arrives, to the replica with the fewest requests
outstanding at that moment (sent to it and not yet finished; ties to the lowest index). What a
replica has finished by a given time depends only on the requests it was sent before then, so
the replicas are paged engines (engine.batching.paged) run step by step together: each runs up
to the arrival, pauses before its first step that begins at or after it, the router counts, the
chosen replica takes the request, and all resume. Exact, and one pass over the requests.
(`shared_queue`, engine.batching.shared, runs the same engines side by side another way.)

Paged, prefill-first and continuous batching (continuous as paged with unlimited blocks, as the
timed simulator runs it); they need a step-time model, since arrivals are compared in seconds.
Static batching is refused (see `paged_engine`): behind a shared queue it would never start a
group, and its simulator plans whole groups rather than pausing step by step for a router.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from engine.batching.continuous import ContinuousPolicy, refuse_changed_rule
from engine.batching.metrics import measure
from engine.batching.paged import UNGATED_SYNC_RULES, PagedPolicy
from engine.errors import UserError
from engine.workload import Workload


def paged_engine(policy: Any, router: str) -> Any:
    """The paged-loop policy a replica runs for `policy`, or one line saying why there is none."""
    if isinstance(policy, ContinuousPolicy):
        refuse_changed_rule(policy, "replicas")
        return PagedPolicy(**UNGATED_SYNC_RULES)
    if isinstance(policy, PagedPolicy):  # paged and prefill-first (each brings its loop)
        return policy
    if policy.name == "static" and router == "shared_queue":
        raise UserError(
            "static batching cannot sit behind one shared queue: a replica takes a request only "
            "when its scheduler admits it, and static batching admits nobody until a whole group "
            "has arrived at that replica; use round_robin or random",
            field="router",
        )
    if policy.name == "static":
        raise UserError(
            f"the {router} router runs the replicas side by side, step by step, which static "
            "batching's group-at-a-time simulator does not do; use round_robin or random",
            field="router",
        )
    raise UserError(
        f"the {router} router runs paged, prefill_first and continuous batching, not {policy.name}",
        field="router",
    )


def side_by_side(
    workload: Workload,
    policy: Any,
    slots: int,
    step_time: Any,
    replicas: int,
    router: str,
    compares: str,
    loop_class: Callable[[type], type] = lambda loop: loop,
) -> list[Any]:
    """The replicas a side-by-side router runs: one paged loop each (of the class
    ``loop_class`` makes of the policy's loop), empty and open for requests, once the workload
    has passed the policy's checks. ``compares`` says what the router needs a step-time model
    for."""
    if step_time is None:
        raise UserError(f"the {router} router {compares}: give a step-time model", field="step_time")
    engine = paged_engine(policy, router)
    cap = engine.max_num_seqs or slots
    engine.check(workload.prompt_tokens, workload.output_tokens, cap)
    loop = loop_class(engine.simulation())
    empty_i, empty_f = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    sims = []
    for _ in range(replicas):
        sim = loop(empty_i, empty_i, empty_i, cap, engine, (step_time, empty_f))
        sim.free_slots = list(range(cap))
        sim.open = True
        sims.append(sim)
    return sims


def least_outstanding(
    workload: Workload, policy: Any, slots: int, step_time: Any, replicas: int
) -> tuple[np.ndarray, list[Any]]:
    """(replica of every request, each replica's PolicyResult or None)."""
    sims = side_by_side(
        workload, policy, slots, step_time, replicas, "least_outstanding", "compares arrival times"
    )
    prompt, output, arrival = workload.prompt_tokens, workload.output_tokens, workload.arrival_time
    loops = [sim.steps() for sim in sims]
    paused = [False] * replicas
    sent = np.zeros(replicas, dtype=np.int64)
    replica_of = np.empty(workload.n, dtype=np.int64)
    mine: list[list[int]] = [[] for _ in range(replicas)]
    for k in range(workload.n):
        a = float(arrival[k])
        for j, sim in enumerate(sims):
            if paused[j] and sim.now + sim.tolerance >= a:
                continue  # already paused at or past this moment
            sim.checkpoint = a
            next(loops[j])  # runs up to the first step that begins at or after a
            paused[j] = True
        outstanding = sent - np.array([sim.completed for sim in sims])
        j = int(np.argmin(outstanding))
        sims[j].add_request(int(prompt[k]), int(output[k]), a)
        sent[j] += 1
        replica_of[k] = j
        mine[j].append(k)
    for j, sim in enumerate(sims):
        sim.open, sim.checkpoint = False, None
        for _ in loops[j]:
            raise AssertionError("a closed run never pauses")
    return replica_of, measure_replicas(workload, policy, step_time, [sim.schedule() for sim in sims], mine)


def measure_replicas(
    workload: Workload, policy: Any, step_time: Any, schedules: list[Any], mine: list[list[int]]
) -> list[Any]:
    """Each replica's PolicyResult (None for one that served nobody): its schedule, in its own
    request order, measured against the arrivals of the requests it served."""
    output, arrival = workload.output_tokens, workload.arrival_time
    results: list[Any] = []
    for schedule, served_list in zip(schedules, mine):
        if not served_list:
            results.append(None)
            continue
        served = np.asarray(served_list)
        block_size, kv_info = policy.kv_blocks if policy.kv_blocks is not None else (None, None)
        results.append(
            measure(
                policy.name,
                schedule,
                output[served],
                arrival[served],
                None,
                step_time,
                block_size=block_size,
                kv_info=kv_info,
            )
        )
    return results
