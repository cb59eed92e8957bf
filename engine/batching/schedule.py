"""What a policy decides, in steps, before any clock is attached.

Every policy (static, continuous, paged) produces the same shape: a list of *stays*, one per
time a request holds a slot (a paged request that is preempted and re-admitted has several),
plus the prefill work done in each step. Time, metrics and charts are computed from this one
shape, so the three policies cannot drift apart in how they are measured.

Steps are integers. Step k is the k-th decode iteration of the engine; a stay occupies the half-open
range [start, end). Inside a stay, steps [start, decode_start) are prefill and every step in
[decode_start, end) decodes. Every step in [emit_start, end) emits exactly one output token: the
step that completes a prefill emits the request's next token, as vLLM samples it from the
prefill's last position (emit_start = decode_start − 1), so a request with a prompt and n output
tokens decodes n − 1 steps; a stay without a prefill emits from its first decode step
(emit_start = decode_start).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np


def _ints(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class Groups:
    """Static batching's groups: consecutive requests that launch together and hold their
    slots until the longest of them ends. Arrays are per group except member_group."""

    first_request: np.ndarray
    size: np.ndarray
    start: np.ndarray
    end: np.ndarray  # start + longest: when the group releases its slots
    longest: np.ndarray
    member_group: np.ndarray  # per request: its group


@dataclass(frozen=True, eq=False)
class Schedule:
    """A policy's decisions. Stay arrays align; per-request arrays are indexed by request."""

    slots: int
    # one row per stay
    request: np.ndarray
    slot: np.ndarray
    start: np.ndarray  # first step in the slot
    decode_start: np.ndarray  # first step that emits a token (== end if it never decoded)
    end: np.ndarray  # first step after the stay (exclusive)
    context: np.ndarray  # KV tokens in cache when decoding starts: prompt + tokens already emitted
    emit_start: np.ndarray  # first step that emits a token (== end if it never emitted)
    # per request
    first_start: np.ndarray  # step the request first got a slot
    first_token: np.ndarray  # step that emitted its first output token
    finish: np.ndarray  # step after its last token
    # prefill work, one row per (stay, step) that processed prompt tokens
    chunk_stay: np.ndarray
    chunk_step: np.ndarray
    chunk_tokens: np.ndarray
    chunk_done: np.ndarray  # prompt tokens in cache after the chunk (cumulative within the stay)
    preemptions: int = 0
    # async scheduling only: stays preempted after their last token, while they still held their
    # seat (counted in preemptions; such a stay ends at its request's finish all the same)
    late_preempted: np.ndarray | None = None
    # static only: the group each stay belongs to and when the group released its slots
    groups: Groups | None = None

    @property
    def makespan(self) -> int:
        """Steps from the clock's start to the end of the last token (idle steps included)."""
        return int(self.finish.max())

    @property
    def emitted(self) -> np.ndarray:
        """Tokens emitted in each stay."""
        return self.end - self.emit_start

    def within(self, a: int, b: int) -> Schedule:
        """The stays that hold a slot at some step of [a, b) (start < b, end > a), with their
        prefill chunks: what a stay holds or runs lies inside its [start, end), so any count at
        a step of [a, b) is the same over these as over the whole schedule. Stay indices are
        renumbered (chunks, late preemptions, static members); per-request arrays and groups
        are the whole schedule's, shared, not copied."""
        held = (self.start < b) & (self.end > a)
        keep = np.flatnonzero(held)
        if len(keep) == len(held):
            return self
        chunk = np.flatnonzero(held[self.chunk_stay])
        late = self.late_preempted
        if late is not None:
            late = np.searchsorted(keep, late[held[late]])
        groups = self.groups
        if groups is not None:
            groups = replace(groups, member_group=groups.member_group[keep])
        return replace(
            self,
            request=self.request[keep],
            slot=self.slot[keep],
            start=self.start[keep],
            decode_start=self.decode_start[keep],
            end=self.end[keep],
            context=self.context[keep],
            emit_start=self.emit_start[keep],
            chunk_stay=np.searchsorted(keep, self.chunk_stay[chunk]),
            chunk_step=self.chunk_step[chunk],
            chunk_tokens=self.chunk_tokens[chunk],
            chunk_done=self.chunk_done[chunk],
            late_preempted=late,
            groups=groups,
        )


def single_stays(
    slots: int,
    slot: np.ndarray,
    start: np.ndarray,
    prefill_steps: np.ndarray,
    prompt: np.ndarray,
    output: np.ndarray,
    **kwargs: Any,
) -> Schedule:
    """The schedule of a policy without preemption: one stay per request, in request order.

    A request with a prompt spends `prefill_steps` (0 or 1) steps on it, the last of which emits
    its first token, then decodes one token per step; the prefill is recorded as one chunk
    holding the whole prompt. Either way a request emits from its start, one token per step, so
    it holds its slot for exactly `output` steps.
    """
    n = len(start)
    request = np.arange(n, dtype=np.int64)
    decode_start = start + prefill_steps
    end = start + output
    with_prompt = np.flatnonzero(prompt > 0)
    return Schedule(
        slots=slots,
        request=request,
        slot=_ints(slot),
        start=_ints(start),
        decode_start=decode_start,
        end=end,
        context=_ints(prompt),
        emit_start=_ints(start),
        first_start=_ints(start),
        first_token=_ints(start),
        finish=end,
        chunk_stay=with_prompt,
        chunk_step=start[with_prompt],
        chunk_tokens=prompt[with_prompt],
        chunk_done=prompt[with_prompt],
        **kwargs,
    )


def prefill_steps(prompt: np.ndarray) -> np.ndarray:
    """Steps a request's prefill occupies its slot without emitting a token.

    The rule, for every policy: a prompt is processed in one step of its own, which emits the
    first output token at its end (vLLM's convention: the token is sampled from the prefill's
    last position), and decoding follows from the next step; without a prompt there is no
    prefill step, which keeps the lab's no-prompt runs exactly as the lab counted them. Paged
    scheduling with chunked prefill instead spreads a prompt over as many steps as the token
    budget needs, the last chunk's step emitting the first token.
    """
    return (np.asarray(prompt) > 0).astype(np.int64)
