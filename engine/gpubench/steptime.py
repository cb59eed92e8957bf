"""Decode step time against batch size and context, and the HBM bandwidth it achieves.

A decode step reads every weight once and, for each request, its whole K and V cache; it does
little arithmetic per byte, so it is memory-bound and its time barely grows with the batch until
the cache reads rival the weights. The honest figure is therefore bandwidth:

    bytes moved   = weights read by a step + batch × context × KV bytes per token
    achieved B/s  = bytes moved / step time,   share of peak = achieved / the catalog's HBM peak

Bytes moved counts what a step must read, not what the kernels happen to touch (a lower bound),
as gpt-fast's "memory bandwidth utilisation" does. Timing is synchronised, the warm-up steps are
excluded, and the figure is the median of the repeats. On CUDA each (batch, context) step is
captured once in a CUDA graph and replayed, so the figure is the GPU's time rather than Python's
kernel launches (gpt-fast gets the same from torch.compile, which also fuses the small kernels;
this model has no compiler, so its per-kernel cost stays in the figure); if capture fails, the
step runs eagerly and a note says so. A point whose cache does not fit the budget is skipped, and
one that runs out of device memory anyway is dropped with a note rather than ending the run.

A prefill pass is the other regime: one prompt of T tokens is T tokens' worth of arithmetic per
weight read, so it is compute-bound once T is in the hundreds. A few prompt lengths are timed
the same way (graph-replayed on CUDA), so a step-time model fitted to the file sees both the
bandwidth and the arithmetic it must price (engine.batching.calibrated).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from engine.gpubench.device import cuda_graph, graphs_supported, release, synchronize
from engine.gpubench.model import Decoder, KVCache


@dataclass(frozen=True)
class StepPoint:
    batch: int
    context: int
    seconds: float
    bytes_moved: int
    achieved_bytes_per_s: float


@dataclass(frozen=True)
class PrefillPoint:
    tokens: int
    seconds: float


# Prompt lengths timed for prefill: from where a pass is still memory-bound to well past where it
# is compute-bound, capped at the day's longest context.
PREFILL_TOKENS = (128, 512, 2048, 8192)


def prefill_lengths(contexts: list[int], cap: int | None = None) -> list[int]:
    """The prompt lengths to time: PREFILL_TOKENS up to the longest context and ``cap`` (at least
    one length, so even a tiny day has a point)."""
    longest = min(max(contexts), cap) if cap else max(contexts)
    return [t for t in PREFILL_TOKENS if t <= longest] or [min(PREFILL_TOKENS[0], longest)]


def batch_sizes(slots: int) -> list[int]:
    """1, 2, 4, … below ``slots``, then ``slots`` itself: the shape of the curve at a few points."""
    sizes, b = [], 1
    while b < slots:
        sizes.append(b)
        b *= 2
    return sizes + [slots]


def median_seconds(step: Callable[[], object], device: torch.device, *, warmup: int, repeats: int) -> float:
    """Median wall time of one step, each timed between two synchronisations, warm-up excluded."""
    for _ in range(warmup):
        step()
    times = []
    for _ in range(repeats):
        synchronize(device)
        start = time.perf_counter()
        step()
        synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bytes_moved(decode_weight_bytes: int, kv_bytes_per_token: int, batch: int, context: int) -> int:
    """What one decode step must read: every weight once (the batch shares them) and, for each
    of ``batch`` requests, its K and V for all ``context`` positions."""
    return decode_weight_bytes + batch * context * kv_bytes_per_token


def fitting_batches(
    slots: int, context: int, kv_bytes_per_token: int, kv_budget_bytes: int
) -> tuple[list[int], list[int]]:
    """The batch sizes whose cache at ``context`` fits in ``kv_budget_bytes``, and the rest."""
    sizes = batch_sizes(slots)
    fits = [b for b in sizes if b * context * kv_bytes_per_token <= kv_budget_bytes]
    return fits, [b for b in sizes if b not in fits]


def _graphed_seconds(
    step: Callable[[], object],
    device: torch.device,
    graphs: bool,
    warmup: int,
    repeats: int,
    notes: list[str],
    fallback_note: str,
) -> tuple[float, bool]:
    """The median seconds of ``step``, replayed from a CUDA graph of its own when ``graphs``
    (its private pool goes with it when this returns, before the next capture); and whether
    graphs still work. Capture is an optimisation and eager steps are still correct, so a failed
    capture appends ``fallback_note`` (its ``{}`` filled with the reason) and times eagerly.
    Out of memory is raised for the caller, which drops the point."""
    run: Callable[[], object] = step
    if graphs:
        try:
            run = cuda_graph(step, warmup=2)
        except torch.OutOfMemoryError:
            raise
        except RuntimeError as err:
            graphs = False
            notes.append(fallback_note.format(f"CUDA graph capture failed ({str(err).splitlines()[0]})"))
            synchronize(device)
    return median_seconds(run, device, warmup=warmup, repeats=repeats), graphs


def _oom_note(context: int, batch: int) -> str:
    return (
        f"context {context}: batch {batch} ran out of device memory, not timed "
        "(nor any larger batch at this context)"
    )


def _time_context(
    model: Decoder,
    context: int,
    batches: list[int],
    *,
    graphs: bool,
    warmup: int,
    repeats: int,
    notes: list[str],
    on_point: Callable[[], None] | None,
) -> tuple[list[float], bool]:
    """Seconds per step for the first batches at one context (all of them unless the device runs
    out of memory at one: then it and the larger ones are left out, with a note); and whether
    graphs still work afterwards.

    One cache for the largest batch, the smaller ones decode a prefix of its slots. On CUDA each
    batch's step is captured once, timed by replaying it, and dropped before the next capture,
    each into a private pool of its own that goes with it: as one graph lives at a time, a shared
    pool saves nothing, and torch 2.11 asserts when a graph is captured into a pool whose
    previous graph was freed (seen on an H200: every later step fell back to eager launches).
    Everything allocated here (cache, graphs) is freed when this returns."""
    device = model.device
    generator = torch.Generator(device="cpu").manual_seed(context)
    cache = None
    while cache is None and batches:
        try:
            cache = model.new_cache(max(batches), context)
        except torch.OutOfMemoryError:
            notes.append(_oom_note(context, max(batches)))
            batches = batches[:-1]
        if cache is None:
            release(device)  # outside the except block, whose traceback holds the partial cache
    if cache is None:
        return [], graphs
    tokens = torch.randint(0, model.shape.vocab_size, (max(batches),), generator=generator).to(device)
    positions = torch.full((max(batches),), context - 1, device=device, dtype=torch.long)
    seconds = []
    for batch in batches:
        # Static inputs: views of tokens and positions, whose addresses never change. Repeating
        # the step rewrites the same K and V at the same positions, so the warm-up steps change
        # nothing a timed step reads.
        def step(b: int = batch) -> torch.Tensor:
            return model.decode(cache, tokens[:b], positions[:b], attn_len=context)

        try:
            secs, graphs = _graphed_seconds(
                step,
                device,
                graphs,
                warmup,
                repeats,
                notes,
                f"step time: {{}}; eager steps from context {context}, batch {batch}",
            )
            seconds.append(secs)
        except torch.OutOfMemoryError:
            notes.append(_oom_note(context, batch))
            break
        if on_point:
            on_point()
    return seconds, graphs


def measure_step_times(
    model: Decoder,
    contexts: list[int],
    slots: int,
    kv_budget_bytes: int,
    *,
    warmup: int,
    repeats: int,
    use_cuda_graphs: bool = True,
    on_point: Callable[[], None] | None = None,
) -> tuple[list[StepPoint], list[str]]:
    """Step time for every batch in ``batch_sizes(slots)`` and every context whose cache for that
    batch fits in ``kv_budget_bytes``. Returns the points and any notes (skips, eager fallback).
    CUDA graphs are used only where ``graphs_supported`` says so (never on the CPU)."""
    device = model.device
    kv_per_token = model.shape.kv_bytes_per_token(model.dtype.itemsize)
    graphs = use_cuda_graphs and graphs_supported(device)
    points: list[StepPoint] = []
    notes: list[str] = []
    for context in contexts:
        fitting, skipped = fitting_batches(slots, context, kv_per_token, kv_budget_bytes)
        if skipped:
            notes.append(
                f"context {context}: batch {', '.join(map(str, skipped))} does not fit in memory, not timed"
            )
        if not fitting:
            continue
        seconds, graphs = _time_context(
            model,
            context,
            fitting,
            graphs=graphs,
            warmup=warmup,
            repeats=repeats,
            notes=notes,
            on_point=on_point,
        )
        release(device)
        for batch, secs in zip(fitting, seconds):
            moved = bytes_moved(model.decode_weight_bytes, kv_per_token, batch, context)
            points.append(StepPoint(batch, context, secs, moved, moved / secs))
    return points, notes


def share_of_peak_at_slots(
    points: list[StepPoint], slots: int, peak_bytes_per_s: float | None
) -> float | None:
    """Median over contexts of achieved / peak at batch = slots (None without a peak or points)."""
    at_slots = [p.achieved_bytes_per_s for p in points if p.batch == slots]
    if peak_bytes_per_s is None or not at_slots:
        return None
    return statistics.median(at_slots) / peak_bytes_per_s


def measure_prefill_times(
    model: Decoder,
    lengths: list[int],
    kv_budget_bytes: int,
    *,
    warmup: int,
    repeats: int,
    use_cuda_graphs: bool = True,
    on_point: Callable[[], None] | None = None,
) -> tuple[list[PrefillPoint], list[str]]:
    """Seconds for one prefill pass of each prompt length whose cache fits the budget, into one
    slot. Repeating a pass rewrites the same positions with the same K and V, so warm-up passes
    change nothing a timed one reads. Graph capture, when it fails, falls back to eager passes
    with a note; a length that runs out of memory is dropped with a note, as are longer ones."""
    device = model.device
    kv_per_token = model.shape.kv_bytes_per_token(model.dtype.itemsize)
    graphs = use_cuda_graphs and graphs_supported(device)
    notes: list[str] = []
    fitting = [t for t in lengths if t * kv_per_token <= kv_budget_bytes]
    if len(fitting) < len(lengths):
        skipped = ", ".join(str(t) for t in lengths if t not in fitting)
        notes.append(f"prefill: prompts of {skipped} tokens do not fit in memory, not timed")
    points: list[PrefillPoint] = []
    if not fitting:
        return points, notes
    generator = torch.Generator(device="cpu").manual_seed(max(fitting))
    try:
        cache = model.new_cache(1, max(fitting))
        prompt = torch.randint(0, model.shape.vocab_size, (max(fitting),), generator=generator).to(device)
    except torch.OutOfMemoryError:
        release(device)
        notes.append("prefill: the cache for the longest prompt ran out of device memory, not timed")
        return points, notes
    for tokens in fitting:

        def step(n: int = tokens, into: KVCache = cache) -> torch.Tensor:
            return model.prefill(into, 0, prompt[:n])

        try:
            secs, graphs = _graphed_seconds(
                step,
                device,
                graphs,
                warmup,
                repeats,
                notes,
                f"prefill: {{}}; eager passes from {tokens} tokens",
            )
            points.append(PrefillPoint(tokens, secs))
        except torch.OutOfMemoryError:
            notes.append(f"prefill: {tokens} tokens ran out of device memory, not timed (nor longer)")
            break
        if on_point:
            on_point()
    del cache
    release(device)
    return points, notes
