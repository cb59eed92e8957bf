"""Batching policies by name: each policy is registered once, and every list of names derives
from here (the spec's and the simulate command's choices, the charts' colours and order).

A registration says what the policy is called, how to build it from the settings a day spec or
the simulate flags give (PolicySettings, the same for both), what it does in one sentence, and
how it looks on a chart. An unknown name is an error everywhere (`kind` raises a UserError), so
a typo never runs as some other policy. A new policy is one module in engine/batching that calls
`register` beside its code (engine.registry's rules); a test can register a toy policy from its
own file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from engine.errors import UserError
from engine.registry import Registry


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

    def block_settings(self) -> dict[str, Any]:
        """What the KV-block policies (paged, prefill-first) take from the settings."""
        return dict(
            num_blocks=self.num_blocks,
            block_size=self.block_size,
            max_num_seqs=self.max_num_seqs,
            max_num_batched_tokens=self.max_num_batched_tokens,
            chunked_prefill=self.chunked_prefill,
        )


@dataclass(frozen=True)
class PolicyExample:
    """A workload small enough to schedule by hand (every request arriving at step 0), the
    settings it runs under, and the steps the policy takes to finish it: worked out by whoever
    registers the policy, and held to the simulator by the shared tests
    (tests/test_batching_registry.py), for every registered policy alike."""

    output_tokens: tuple[int, ...]
    prompt_tokens: tuple[int, ...]
    slots: int
    steps: int
    settings: PolicySettings = PolicySettings()


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
    example: PolicyExample  # a hand-scheduled workload and its steps
    needs_blocks: bool = False
    order: int = 100  # where charts and tables list it; ties in name order


# Every policy, discovered in engine/batching (engine.registry says how).
POLICIES: Registry[PolicyKind] = Registry(
    "batching policy", "engine.batching", name_of=lambda k: k.name, order_of=lambda k: k.order
)


def register(kind: PolicyKind) -> PolicyKind:
    """Add a policy; a name another module took is refused (two policies would answer to it)."""
    return POLICIES.add(kind)


def unregister(name: str) -> None:
    """Remove a policy (tests that register a toy one clean up after themselves)."""
    POLICIES.remove(name)


def names() -> tuple[str, ...]:
    """Every registered policy, in listing order: the order of every chart and table."""
    return tuple(POLICIES.names())


def find(name: str) -> PolicyKind | None:
    return POLICIES.find(name)


def kind(name: str, field: str = "policy") -> PolicyKind:
    """The policy of that name, or one clear error naming the choices."""
    found = POLICIES.find(name)
    if found is None:
        raise UserError(f"unknown policy {name!r}; choose from {', '.join(names())}", field=field)
    return found


def build(name: str, settings: PolicySettings) -> Any:
    return kind(name).build(settings)
