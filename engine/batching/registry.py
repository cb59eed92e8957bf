"""Batching policies by name: each policy is registered once, and every list of names derives
from here (the spec's and the simulate command's choices, the charts' colours and order).

A registration says what the policy is called, how to build it from the settings a day spec or
the simulate flags give (PolicySettings, the same for both), what it does in one sentence, and
how it looks on a chart. An unknown name is an error everywhere (`kind` raises a UserError), so
a typo never runs as some other policy. A new policy is one module and one `register` call; a
test can register a toy policy from its own file.

This module imports nothing heavy: the spec validates names against it, and the builders import
the simulator only when called.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.errors import UserError


@dataclass(frozen=True)
class PolicySettings:
    """What any policy may be built from; each builder reads the fields it needs.

    max_wait: static batching's wait for a partial group, seconds. num_blocks … chunked_prefill:
    the paged scheduler's KV pool and limits (num_blocks None: unlimited; vLLM's num_gpu_blocks).
    reserve_full_prompt … allow_empty_prompt: the paged scheduler's vLLM rules, as vLLM 0.33.0
    ships them by default (engine.batching.paged.PagedPolicy says what each does)."""

    max_wait: float | None = None
    num_blocks: int | None = None
    block_size: int = 16
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    chunked_prefill: bool = False
    reserve_full_prompt: bool = True
    async_scheduling: bool = True
    null_block: bool = True
    allow_empty_prompt: bool = False


@dataclass(frozen=True)
class PolicyKind:
    """One registered policy.

    title: how charts and tables name it; summary: what it does, one sentence (help, README);
    colour: an Okabe–Ito palette name (engine.charts.style) or a hex colour; needs_blocks: it
    keeps KV blocks, so it needs a KV pool (the spec's `paged` section, or --num-blocks /
    --model and --gpu) and the kv_blocks chart can draw its usage."""

    name: str
    build: Callable[[PolicySettings], Any]
    title: str
    summary: str
    colour: str
    needs_blocks: bool = False


_KINDS: dict[str, PolicyKind] = {}


def register(kind: PolicyKind) -> PolicyKind:
    """Add a policy; a name already taken is refused (two policies would answer to it)."""
    if kind.name in _KINDS:
        raise ValueError(f"a batching policy named {kind.name!r} is already registered")
    _KINDS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    """Remove a policy (tests that register a toy one clean up after themselves)."""
    _KINDS.pop(name, None)


def names() -> tuple[str, ...]:
    """Every registered policy, in registration order: the order of every chart and table."""
    return tuple(_KINDS)


def find(name: str) -> PolicyKind | None:
    return _KINDS.get(name)


def kind(name: str, field: str = "policy") -> PolicyKind:
    """The policy of that name, or one clear error naming the choices."""
    found = _KINDS.get(name)
    if found is None:
        raise UserError(f"unknown policy {name!r}; choose from {', '.join(names())}", field=field)
    return found


def build(name: str, settings: PolicySettings) -> Any:
    return kind(name).build(settings)


# ---- the built-in policies ----------------------------------------------------------------------


def _static(s: PolicySettings) -> Any:
    from engine.batching.static import StaticPolicy

    return StaticPolicy(max_wait=s.max_wait)


def _continuous(s: PolicySettings) -> Any:
    from engine.batching.continuous import ContinuousPolicy

    return ContinuousPolicy()


def _block_settings(s: PolicySettings) -> dict[str, Any]:
    """What the KV-block policies (paged, prefill-first) take from the settings."""
    return dict(
        num_blocks=s.num_blocks,
        block_size=s.block_size,
        max_num_seqs=s.max_num_seqs,
        max_num_batched_tokens=s.max_num_batched_tokens,
        chunked_prefill=s.chunked_prefill,
    )


def _paged(s: PolicySettings) -> Any:
    from engine.batching.paged import PagedPolicy

    return PagedPolicy(
        **_block_settings(s),
        reserve_full_prompt=s.reserve_full_prompt,
        async_scheduling=s.async_scheduling,
        null_block=s.null_block,
        allow_empty_prompt=s.allow_empty_prompt,
    )


register(
    PolicyKind(
        "static",
        _static,
        "static batching",
        "Groups of `slots` requests in arrival order; a group holds every slot until its longest "
        "member ends, finished members padding the batch.",
        colour="vermillion",
    )
)
register(
    PolicyKind(
        "continuous",
        _continuous,
        "continuous batching",
        "Orca's iteration-level batching: a slot freed by a finished request is refilled at the "
        "next step, first come first served.",
        colour="blue",
    )
)


def _prefill_first(s: PolicySettings) -> Any:
    from engine.batching.prefill_first import PrefillFirstPolicy

    return PrefillFirstPolicy(**_block_settings(s))


register(
    PolicyKind(
        "paged",
        _paged,
        "paged (vLLM-style)",
        "vLLM V1's scheduler: continuous batching bounded by KV blocks, running requests first, "
        "prefills mixed into decode steps (chunked if asked), newest preempted by recompute.",
        colour="green",
        needs_blocks=True,
    )
)
register(
    PolicyKind(
        "prefill_first",
        _prefill_first,
        "prefill-first (vLLM V0)",
        "vLLM V0's scheduler: the same KV pool and limits, but a step either prefills newly admitted "
        "requests or decodes the running ones, never both; decodes pause while prompts go in.",
        colour="orange",
        needs_blocks=True,
    )
)
