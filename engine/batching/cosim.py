"""Replicas run side by side, for routers that look at the replicas' state.

`least_outstanding` sends each request, as it arrives, to the replica with the fewest requests
outstanding at that moment (sent to it and not yet finished; ties to the lowest index). What a
replica has finished by a given time depends only on the requests it was sent before then, so
the replicas are paged engines (engine.batching.paged) run step by step together: each runs up
to the arrival, pauses before its first step that begins at or after it, the router counts, the
chosen replica takes the request, and all resume. Exact, and one pass over the requests.

Paged and continuous batching only (continuous as paged with unlimited blocks, as the timed
simulator runs it); they need a step-time model, since arrivals are compared in seconds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.errors import UserError
from engine.workload import Workload


def least_outstanding(
    workload: Workload, policy: Any, slots: int, step_time: Any, replicas: int
) -> tuple[np.ndarray, list[Any]]:
    """(replica of every request, each replica's PolicyResult or None)."""
    from engine.batching.clock import clock_for
    from engine.batching.continuous import ContinuousPolicy
    from engine.batching.metrics import measure
    from engine.batching.paged import PagedPolicy, _Simulation, check_fits

    if step_time is None:
        raise UserError(
            "the least_outstanding router compares arrival times: give a step-time model", field="step_time"
        )
    engine = PagedPolicy() if isinstance(policy, ContinuousPolicy) else policy
    if type(engine) is not PagedPolicy:
        raise UserError(
            f"the least_outstanding router runs paged and continuous batching, not {policy.name}",
            field="router",
        )
    cap = engine.max_num_seqs or slots
    prompt, output, arrival = workload.prompt_tokens, workload.output_tokens, workload.arrival_time
    check_fits(engine, prompt, output, cap)
    empty_i, empty_f = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    sims, loops = [], []
    for _ in range(replicas):
        sim = _Simulation(empty_i, empty_i, empty_i, cap, engine, (step_time, empty_f))
        sim.free_slots = list(range(cap))
        sim.open = True
        sims.append(sim)
        loops.append(sim.steps())
    started = [False] * replicas
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
            started[j] = paused[j] = True
        outstanding = sent - np.array([sim.completed for sim in sims])
        j = int(np.argmin(outstanding))
        sims[j].add_request(int(prompt[k]), int(output[k]), a)
        sent[j] += 1
        replica_of[k] = j
        mine[j].append(k)
    results: list[Any] = []
    for j, sim in enumerate(sims):
        sim.open, sim.checkpoint = False, None
        for _ in loops[j]:
            raise AssertionError("a closed run never pauses")
        if not mine[j]:
            results.append(None)
            continue
        schedule = sim.schedule()
        served = np.asarray(mine[j])
        clock = clock_for(schedule, step_time)
        eligible = clock.step_of(arrival[served])
        block_size, kv_info = policy.kv_blocks if policy.kv_blocks is not None else (None, None)
        results.append(
            measure(
                policy.name,
                schedule,
                output[served],
                eligible,
                arrival[served],
                clock,
                block_size=block_size,
                kv_info=kv_info,
                step_time=step_time.describe(),
            )
        )
    return replica_of, results
