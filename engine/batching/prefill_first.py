"""Prefill-first scheduling, as vLLM's V0 scheduler runs it (no chunked prefill).

A step either prefills or decodes, never both. At every step the scheduler first tries to admit
waiting requests, in queue order, while a slot (max_num_seqs, counting the running), the token
budget (max_num_batched_tokens, all of it for prompts: decodes pause) and the KV blocks for the
whole prompt allow; the first that does not fit stops the queue. If it admitted anyone, the step
runs those prefills only: every running request pauses for the step (its cache neither read nor
grown), and each prefill emits its request's first token at the step's end. Otherwise the step
decodes every running request, taking a block at each block boundary and preempting the newest
by recompute when none is free, exactly as the mixed-batch scheduler does (engine.batching.paged).
The paged loop (engine.batching.paged._Simulation.steps) runs both policies: the same rules,
written once there, with admission taken first for this one.

Against vLLM V1's mixed batches (the `paged` policy) a new arrival waits less for its first
token, and everyone already decoding waits one step per prefill step: the trade the two
schedulers make, and why the issue's Vidur comparison differed.

In the schedule a pause is a stay boundary: a paused request's stay ends at the prefill step and
a new one, in the same slot, begins there, prefilling nothing (a chunk of 0 tokens that keeps its
blocks counted) and decoding from the next step, so every consumer of a Schedule (clock, blocks,
metrics, charts) reads it without knowing about pauses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.batching.paged import PagedPolicy
from engine.batching.registry import PolicyExample, PolicyKind, PolicySettings, register
from engine.errors import UserError


@dataclass(frozen=True)
class PrefillFirstPolicy(PagedPolicy):
    """The paged scheduler's pool and limits, with vLLM V0's prefill-first rule. V0 had none
    of V1's later rules: no full-prompt gate (it never chunks), no step scheduled ahead, no null
    block; empty prompts it refuses on its own (check_prompts)."""

    reserve_full_prompt: bool = False
    async_scheduling: bool = False
    null_block: bool = False
    allow_empty_prompt: bool = True
    name = "prefill_first"
    admits_first = True  # the paged loop runs its rules in V0's order (paged._Simulation.steps)

    def check(self, prompt: np.ndarray, output: np.ndarray, cap: int) -> None:
        super().check(prompt, output, cap)
        check_prompts(prompt)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.chunked_prefill:
            raise UserError(
                "prefill-first scheduling does not chunk prompts; use the paged policy for chunked prefill",
                field="chunked_prefill",
            )
        if self.async_scheduling:
            raise UserError(
                "prefill-first scheduling is vLLM V0's, which never scheduled a step ahead; "
                "use the paged policy for async scheduling",
                field="async_scheduling",
            )


def check_prompts(prompt: np.ndarray) -> None:
    """Refuse a request without a prompt: this scheduler admits requests by their prefill."""
    if len(prompt) and int(np.min(prompt)) < 1:
        worst = int(np.argmin(prompt))
        raise UserError(
            f"request {worst} has no prompt; prefill-first scheduling admits requests by "
            "their prefill, so every request needs at least one prompt token",
            field="prompt_tokens",
        )


register(
    PolicyKind(
        "prefill_first",
        lambda s: PrefillFirstPolicy(**s.block_settings()),
        "prefill-first (vLLM V0)",
        "vLLM V0's scheduler: the same KV pool and limits, but a step either prefills newly admitted "
        "requests or decodes the running ones, never both; decodes pause while prompts go in.",
        colour="orange",
        # Step 0 prefills the first two (each prefill emits a token; the 1-token request ends);
        # step 1 prefills the third alone, the decodes waiting; steps 2 and 3 decode
        example=PolicyExample((3, 1, 2), (1, 1, 1), slots=2, steps=4, settings=PolicySettings(num_blocks=64)),
        needs_blocks=True,
        order=40,
    )
)
