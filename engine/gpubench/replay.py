"""Static vs continuous batching, run on the real model with the day's workload.

The rules are the lab's (and the simulator's), so the step counts match it exactly; only the
seconds are the device's:

- every request is waiting at t = 0, in arrival order; a request of n output tokens needs n decode
  steps, one token each. Its prompt's last token is its first step's input, so a one-token prompt
  (the default) costs no forward pass of its own: it rides in a decode step, as vLLM fuses
  prefill into its steps, and the lab counts no prefill cost. A longer prompt's other tokens are
  prefilled into the slot first, one forward pass per request, under both policies;
- static: consecutive groups of ``slots`` requests; a group runs as many steps as its longest
  request, and its finished requests stay in the batch as padding (as a padded ``generate`` does);
- continuous (iteration-level, after Orca and vLLM): before every step, free slots are filled
  from the queue (FIFO); finished requests leave after the step.

The running requests are kept in slots ``0 … n-1``: when one leaves and no request waits, the last
running request's cache is moved into its slot. So a step is always one decode over a prefix of
the cache, a view rather than a gather. The host knows every length in advance (output lengths
come from the trace, there is no end-of-sequence token), so the loop never waits for the device
until the end: tokens and positions live on the device and are updated there.

On CUDA each step shape (running requests, attention length) is captured once in a CUDA graph,
as the step-time measurement does, so a step costs what the GPU needs rather than what Python
needs to launch a few thousand kernels. Captures happen in a first, untimed pass of the whole
policy (each after an idempotent warm-up step on a side stream, as torch requires); the timed pass
replays them, all from one shared memory pool. If a capture fails, the policy's remaining steps
run eagerly and a note says so (the runner then times the other policy eagerly too).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import torch

from engine.gpubench.device import cuda_graph, graph_pool, graphs_supported, synchronize
from engine.gpubench.model import Decoder, KVCache

# Attention reads the cache up to the longest running request, rounded up to this many positions:
# a few distinct shapes instead of one per step.
ATTN_ROUND = 64


@dataclass(frozen=True)
class PolicyRun:
    wall_seconds: float
    steps: int
    tokens: int
    tokens_per_second: float
    utilisation: float  # tokens / (steps × slots): the lab's "GPU busy"
    note: str | None = None  # why CUDA graphs were not used, when they were asked for


class _Slots:
    """The device-side state of the running requests: next token and length per slot, and the
    step that advances them (replayed from a CUDA graph per shape when graphs are on)."""

    def __init__(
        self,
        model: Decoder,
        cache: KVCache,
        requests: int,
        prompt_tokens: int,
        seed: int,
        *,
        cuda_graphs: bool,
    ):
        self.model, self.cache = model, cache
        device = model.device
        self.tokens = torch.zeros(cache.slots, dtype=torch.long, device=device)
        self.positions = torch.zeros(cache.slots, dtype=torch.long, device=device)
        self.lengths = [0] * cache.slots  # the same lengths, on the host, for attention sizes
        self.prompts = request_prompts(requests, prompt_tokens, model.shape.vocab_size, seed).to(device)
        self.graphs: dict[tuple[int, int], Callable[[], object]] | None = None
        self.note: str | None = None
        if cuda_graphs and graphs_supported(device):
            self.graphs, self.pool = {}, graph_pool()

    def admit(self, slot: int, request: int) -> None:
        """Put a request in ``slot``: prefill all but its prompt's last token, which becomes the
        slot's next decode input at position ``len(prompt) - 1``."""
        prompt = self.prompts[request]
        if len(prompt) > 1:
            self.model.prefill(self.cache, slot, prompt[:-1])
        self.tokens[slot] = prompt[-1]
        self.positions[slot] = len(prompt) - 1
        self.lengths[slot] = len(prompt) - 1

    def _decode(self, n: int, attn_len: int) -> torch.Tensor:
        """Decode slots 0 … n-1 from the static token and position buffers. Harmless to repeat:
        it writes the same K and V at the same positions, so it is the graphs' warm-up."""
        return self.model.decode(self.cache, self.tokens[:n], self.positions[:n], attn_len)

    def _advance(self, n: int, attn_len: int) -> None:
        """Device work only: decode slots 0 … n-1, keep the greedy tokens, move positions on."""
        self.tokens[:n] = self._decode(n, attn_len).argmax(dim=-1)
        self.positions[:n] += 1

    def _capture(self, n: int, attn_len: int) -> Callable[[], object]:
        """The step for this shape as a CUDA graph, warmed up (idempotently) on a side stream."""
        return cuda_graph(
            lambda: self._advance(n, attn_len),
            warmup=1,
            warmup_step=lambda: self._decode(n, attn_len),
            pool=self.pool,
        )

    def _try_capture(self, n: int, attn_len: int) -> Callable[[], object] | None:
        """Capture and keep this shape's step; on failure drop every graph, note why, and return
        None (outside the except block, so its traceback no longer holds the failed capture)."""
        try:
            replay = self._capture(n, attn_len)
        except RuntimeError as err:  # an optimisation only: the eager step is the same
            # Out of memory included: dropping every graph gives their pool back, and an eager
            # step needs no more than one graph's worth.
            why = "out of memory" if isinstance(err, torch.OutOfMemoryError) else str(err).splitlines()[0]
            self.note = (
                f"batching: CUDA graph capture failed ({why}) after "
                f"{len(self.graphs or ())} step shapes; eager steps"
            )
            replay = None
        if replay is None:
            self.graphs = None
        elif self.graphs is not None:
            self.graphs[(n, attn_len)] = replay
        return replay

    def step(self, n: int) -> None:
        """One decode step for slots ``0 … n-1``: every one of them emits a token."""
        longest = max(self.lengths[:n]) + 1
        attn_len = min(-(-longest // ATTN_ROUND) * ATTN_ROUND, self.cache.max_context)
        if self.graphs is None:
            self._advance(n, attn_len)
        else:
            replay = self.graphs.get((n, attn_len)) or self._try_capture(n, attn_len)
            if replay is None:  # capture failed: this step and the rest run eagerly
                synchronize(self.model.device)
                return self.step(n)
            replay()
        for b in range(n):
            self.lengths[b] += 1

    def move(self, src: int, dst: int) -> None:
        self.cache.move(src, dst, self.lengths[src])
        self.tokens[dst] = self.tokens[src]
        self.positions[dst] = self.positions[src]
        self.lengths[dst] = self.lengths[src]


def request_prompts(requests: int, prompt_tokens: int, vocab_size: int, seed: int) -> torch.Tensor:
    """One random prompt per request (``[requests, prompt_tokens]``, on the CPU), seeded: no two
    requests share a cache by accident, and a test can replay any request alone."""
    generator = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randint(0, vocab_size, (requests, prompt_tokens), generator=generator)


def cache_context(lengths: list[int], prompt_tokens: int) -> int:
    """Positions a slot needs: the prompt but its last token, plus one per step of the longest
    request (the padding of a static group never runs longer than that)."""
    return prompt_tokens - 1 + max(lengths)


Done = Callable[[int], None] | None


def _static_pass(state: _Slots, lengths: list[int], on_done: Done) -> int:
    slots, steps = state.cache.slots, 0
    for first in range(0, len(lengths), slots):
        group = lengths[first : first + slots]
        for slot in range(len(group)):
            state.admit(slot, first + slot)
        for _ in range(max(group)):
            state.step(len(group))
            steps += 1
        if on_done:
            on_done(len(group))
    return steps


def _continuous_pass(state: _Slots, lengths: list[int], on_done: Done) -> int:
    slots, steps = state.cache.slots, 0
    waiting = deque(enumerate(lengths))
    remaining: list[int] = []  # output tokens still to emit, per running slot 0 … n-1
    while waiting or remaining:
        while len(remaining) < slots and waiting:
            request, length = waiting.popleft()
            state.admit(len(remaining), request)
            remaining.append(length)
        state.step(len(remaining))
        steps += 1
        remaining = [r - 1 for r in remaining]
        done = [slot for slot, r in enumerate(remaining) if r == 0]
        for slot in reversed(done):  # highest first, so the last running slot is never finished
            last = len(remaining) - 1
            if slot != last:
                state.move(last, slot)
                remaining[slot] = remaining[last]
            remaining.pop()
        if on_done and done:
            on_done(len(done))
    return steps


def _run(
    policy: Callable[[_Slots, list[int], Done], int],
    model: Decoder,
    cache: KVCache,
    lengths: list[int],
    *,
    prompt_tokens: int,
    seed: int,
    on_done: Done,
    cuda_graphs: bool,
    warm_pass: bool | None,
) -> PolicyRun:
    """An untimed first pass when graphs are captured (or ``warm_pass`` asks), then the timed one."""
    state = _Slots(model, cache, len(lengths), prompt_tokens, seed, cuda_graphs=cuda_graphs)
    device = model.device
    if warm_pass is None:
        warm_pass = state.graphs is not None
    if warm_pass:  # nothing to reset after it: admitting a request sets all its slot's state
        policy(state, lengths, on_done)
    synchronize(device)
    start = time.perf_counter()
    steps = policy(state, lengths, on_done)
    synchronize(device)
    wall = time.perf_counter() - start
    tokens, slots = sum(lengths), cache.slots
    return PolicyRun(wall, steps, tokens, tokens / wall, tokens / (steps * slots), state.note)


@torch.inference_mode()
def run_static(
    model: Decoder,
    cache: KVCache,
    lengths: list[int],
    *,
    prompt_tokens: int,
    seed: int = 0,
    on_done: Done = None,
    cuda_graphs: bool = False,
    warm_pass: bool | None = None,
) -> PolicyRun:
    """Static batching: groups of ``slots`` in arrival order, each run to its longest request."""
    return _run(
        _static_pass,
        model,
        cache,
        lengths,
        prompt_tokens=prompt_tokens,
        seed=seed,
        on_done=on_done,
        cuda_graphs=cuda_graphs,
        warm_pass=warm_pass,
    )


@torch.inference_mode()
def run_continuous(
    model: Decoder,
    cache: KVCache,
    lengths: list[int],
    *,
    prompt_tokens: int,
    seed: int = 0,
    on_done: Done = None,
    cuda_graphs: bool = False,
    warm_pass: bool | None = None,
) -> PolicyRun:
    """Continuous batching: free slots refilled from the queue before every step."""
    return _run(
        _continuous_pass,
        model,
        cache,
        lengths,
        prompt_tokens=prompt_tokens,
        seed=seed,
        on_done=on_done,
        cuda_graphs=cuda_graphs,
        warm_pass=warm_pass,
    )


def scale_lengths(lengths: list[int], scale: float) -> list[int]:
    """Shorter outputs for a quicker run: each length × scale, rounded, at least 1. The mix of
    short and long requests, and so roughly the multiple, survives the scaling."""
    return [max(1, round(n * scale)) for n in lengths]
