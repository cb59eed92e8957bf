"""Static batching: fixed groups that release their slots together.

Requests are taken in arrival order, `slots` at a time. A group launches when the engine is free
(the previous group has finished) and its members have arrived; with `max_wait`, it launches
anyway once its oldest member has waited that long, taking only those who have arrived. Every
slot of the group is held until its longest member ends: the head-of-line blocking the lab
measures (5,797 steps for its 200 requests on 16 slots, where continuous batching needs 1,148).

What a static step costs (the step-time models price it; steps and utilisation do not change):
a finished member is not dropped from the batch, it stays in as padding until the group's
longest member ends, as a padded HF ``generate`` does and as the torch benchmark
(engine.gpubench.replay) runs it. So, for a group of n members (n = slots, or fewer for a
partial group) that launches at step s and runs L steps:

- every decode step of the group computes the whole group: batch = n. The one exception is the
  group's first step when members have prompts: those members prefill in it (their prompt
  tokens are charged as prefill) and decode from the next step, so that step's batch is the
  members without a prompt;
- every member's KV reads keep growing while it pads, as the benchmark's padded members keep
  decoding at the next position: member i reads prompt_i + 1 + (k − pf_i) tokens at group step
  k ≥ pf_i (pf_i = 1 with a prompt, else 0), whether or not its own output has ended.

A group's seconds are then its first step plus a run of L − 1 steps of fixed batch n, summed in
closed form (group_seconds). A finished request's latency still ends with its own last token.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.batching.registry import PolicyExample, PolicyKind, register
from engine.batching.schedule import Groups, Schedule, prefill_steps, single_stays
from engine.batching.steptime import StepTime, run_seconds, step_seconds


@dataclass(frozen=True)
class StaticPolicy:
    """max_wait: seconds the oldest request of a partial group waits before it launches anyway;
    None waits for a full group (the last group is whatever remains)."""

    max_wait: float | None = None
    name = "static"
    kv_blocks = None  # no KV pool: a group reserves its slots

    def __post_init__(self) -> None:
        if self.max_wait is not None and not self.max_wait >= 0:
            raise ValueError("max_wait must be ≥ 0 seconds")

    def schedule(
        self,
        eligible: np.ndarray,
        prompt: np.ndarray,
        output: np.ndarray,
        slots: int,
        deadline: np.ndarray | None = None,
    ) -> Schedule:
        return schedule_static(eligible, prompt, output, slots, deadline)

    def schedule_timed(
        self, arrival: np.ndarray, prompt: np.ndarray, output: np.ndarray, slots: int, step_time: StepTime
    ) -> Schedule:
        return schedule_static_timed(arrival, prompt, output, slots, self.max_wait, step_time)


def schedule_static(
    eligible: np.ndarray,
    prompt: np.ndarray,
    output: np.ndarray,
    slots: int,
    deadline: np.ndarray | None = None,
) -> Schedule:
    """Form the groups and time them, in steps.

    eligible: first step each request may join (non-decreasing); deadline: the step at which a
    request heading a partial group has waited max_wait (None: groups wait until full).
    """
    service = output  # the prefill step emits the first token: a request holds `output` steps
    if deadline is None:
        first, start, longest = _full_groups(eligible, service, slots)
    else:
        first, start, longest = _groups_with_deadline(eligible, service, slots, deadline)
    return _schedule_of_groups(first, start, longest, prompt, output, slots)


def schedule_static_timed(
    arrival: np.ndarray,
    prompt: np.ndarray,
    output: np.ndarray,
    slots: int,
    max_wait: float | None,
    step_time: StepTime,
) -> Schedule:
    """Static batching with arrivals in seconds and a step time that depends on the batch.

    The same rules, with a clock kept group by group: a group's seconds follow from what its
    steps run, the engine idles at the model's idle step time until the next group is ready, and
    a group launches at the first step that begins once it is ready.
    """
    service = output  # the prefill step emits the first token: a request holds `output` steps
    idle = step_time.idle_seconds
    tolerance = 1e-9 * idle
    n = len(arrival)
    firsts: list[int] = []
    starts: list[int] = []
    longests: list[int] = []
    i, free_step, free_time = 0, 0, 0.0
    while i < n:
        ready = float(arrival[min(i + slots, n) - 1])
        if max_wait is not None:
            ready = max(min(ready, float(arrival[i]) + max_wait), float(arrival[i]))
        waited = 0 if ready <= free_time + tolerance else int(np.ceil((ready - tolerance - free_time) / idle))
        launch, launch_time = free_step + waited, free_time + waited * idle
        stop = min(int(np.searchsorted(arrival, launch_time + tolerance, side="right")), i + slots)
        members = slice(i, stop)
        longest = int(service[members].max())
        firsts.append(i)
        starts.append(launch)
        longests.append(longest)
        free_step = launch + longest
        free_time = launch_time + group_seconds(step_time, prompt[members], longest)
        i = stop
    first, start, longest_arr = (np.asarray(x, dtype=np.int64) for x in (firsts, starts, longests))
    return _schedule_of_groups(first, start, longest_arr, prompt, output, slots)


def group_seconds(step_time: StepTime, prompt: np.ndarray, steps: int) -> float:
    """Seconds one group (its members' prompts) runs, `steps` steps from its launch.

    The whole group is in every decode step and a finished member pads on, its KV reads still
    growing (see the module docstring), so after the first step, which holds the prefills, the
    batch is fixed and its reads grow by one per member per step: one closed form. Who ends
    when does not enter; only the group's length does.
    """
    if steps <= 0:
        return 0.0
    pf = prefill_steps(prompt)
    members = len(prompt)
    without_prompt = int(np.count_nonzero(pf == 0))
    prompts = int(prompt.sum())
    # Step 0: members without a prompt decode (reading 1 token each), the others prefill.
    if prompts == 0:
        return run_seconds(step_time, members, members, steps)
    first = step_seconds(step_time, without_prompt, without_prompt, prompts)
    # From step 1 on every member decodes; member i reads prompt_i + 1 + (1 − pf_i) at step 1.
    reads = int((prompt + 1 + (1 - pf)).sum())
    return first + run_seconds(step_time, members, reads, steps - 1)


def _schedule_of_groups(
    first: np.ndarray,
    start: np.ndarray,
    longest: np.ndarray,
    prompt: np.ndarray,
    output: np.ndarray,
    slots: int,
) -> Schedule:
    n = len(output)
    size = np.diff(np.append(first, n))
    member_group = np.repeat(np.arange(len(first)), size)
    return single_stays(
        slots,
        np.arange(n, dtype=np.int64) - first[member_group],
        start[member_group],
        prefill_steps(prompt),
        prompt,
        output,
        groups=Groups(
            first_request=first,
            size=size,
            start=start,
            end=start + longest,
            longest=longest,
            member_group=member_group,
        ),
    )


def _full_groups(
    eligible: np.ndarray, service: np.ndarray, slots: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Consecutive groups of `slots`, timed without a Python loop.

    Group g is ready when its last member has arrived and starts at
    max(ready_g, end of group g−1). Unrolled, that recursion is a max-plus scan:
    start_g = P_g + max_{j ≤ g}(ready_j − P_j), with P_g the summed lengths of the groups before g.
    """
    first = np.arange(0, len(eligible), slots, dtype=np.int64)
    last = np.minimum(first + slots, len(eligible)) - 1
    longest = np.maximum.reduceat(service, first)
    before = np.concatenate(([0], np.cumsum(longest)[:-1]))
    start = before + np.maximum.accumulate(eligible[last] - before)
    return first, start, longest


def _groups_with_deadline(
    eligible: np.ndarray, service: np.ndarray, slots: int, deadline: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Partial groups allowed: one iteration per group (not per token).

    When the engine frees, a group forms at the head of the queue. It launches once `slots`
    requests have arrived or the head's deadline has passed, whichever is first (never before
    the engine is free), and takes everyone who has arrived by then, at most `slots`.
    """
    n = len(eligible)
    firsts: list[int] = []
    starts: list[int] = []
    longests: list[int] = []
    i, free_at = 0, 0
    while i < n:
        full_at = int(eligible[min(i + slots, n) - 1])
        launch = max(free_at, min(int(deadline[i]), full_at), int(eligible[i]))
        arrived = int(np.searchsorted(eligible, launch, side="right"))
        stop = min(arrived, i + slots)
        longest = int(service[i:stop].max())
        firsts.append(i)
        starts.append(launch)
        longests.append(longest)
        free_at = launch + longest
        i = stop
    return (
        np.asarray(firsts, dtype=np.int64),
        np.asarray(starts, dtype=np.int64),
        np.asarray(longests, dtype=np.int64),
    )


register(
    PolicyKind(
        "static",
        lambda s: StaticPolicy(max_wait=s.max_wait),
        "static batching",
        "Groups of `slots` requests in arrival order; a group holds every slot until its longest "
        "member ends, finished members padding the batch.",
        colour="vermillion",
        # Groups of two in arrival order: [3, 1] holds both slots 3 steps, then [2] 2 steps
        example=PolicyExample((3, 1, 2), (1, 1, 1), slots=2, steps=5),
        order=10,
    )
)
