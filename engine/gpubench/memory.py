"""How many requests of each context really fit once the weights are loaded.

The calculator divides free bytes by a request's cache; this asks the device. For each context it
allocates one request's K and V cache at a time (plain device allocations through torch's caching
allocator, never managed memory) until the device says no, counts, frees everything, and moves on.
The count comes out a little under the calculator's where the allocator rounds or the driver
keeps some memory back, which is the point of measuring it.

On a CPU, allocating until the allocator fails would only make the machine swap, so a fixed
``budget_bytes`` plays the device's free memory there: deterministic, quick, and it exercises the
same loop (tests also inject an allocator that runs out, to prove the out-of-memory path).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from engine.gpubench.device import release
from engine.measured import MemoryFit

Allocate = Callable[[int], object]


def calculated_max_requests(free_bytes: int, context: int, kv_bytes_per_token: int) -> int:
    """The KV-cache formula on the same inputs: floor(free / (context × bytes per token)).

    Deliberately the contiguous (lab) formula rather than engine.kvcache's paged one: the probe
    allocates one contiguous buffer per request, so this is the figure it should reproduce.
    """
    return free_bytes // (context * kv_bytes_per_token)


def _allocator(device: torch.device) -> Allocate:
    def allocate(nbytes: int) -> torch.Tensor:
        return torch.empty(nbytes, dtype=torch.uint8, device=device)

    return allocate


def probe_max_requests(
    request_bytes: int,
    device: torch.device,
    *,
    budget_bytes: int | None,
    allocate: Allocate | None = None,
    limit: int = 1_000_000,
) -> int:
    """Allocate ``request_bytes`` blocks until the device runs out (or ``budget_bytes`` would be
    exceeded); return how many were held. Always frees what it took, also on failure."""
    if budget_bytes is None and device.type != "cuda" and allocate is None:
        raise ValueError("a memory budget is required off CUDA: allocating until failure would swap")
    allocate = allocate or _allocator(device)
    held: list[object] = []
    try:
        while len(held) < limit:
            if budget_bytes is not None and (len(held) + 1) * request_bytes > budget_bytes:
                break
            try:
                held.append(allocate(request_bytes))
            except torch.OutOfMemoryError:
                break
        return len(held)
    finally:
        held.clear()
        release(device)


def measure_fits(
    contexts: list[int],
    kv_bytes_per_token: int,
    free_after_weights: int,
    device: torch.device,
    *,
    budget_bytes: int | None,
    allocate: Allocate | None = None,
    on_context: Callable[[int], None] | None = None,
) -> list[MemoryFit]:
    """One MemoryFit per context: measured by allocation, calculated by the formula."""
    fits = []
    for context in contexts:
        request_bytes = context * kv_bytes_per_token
        measured = probe_max_requests(request_bytes, device, budget_bytes=budget_bytes, allocate=allocate)
        calculated = calculated_max_requests(free_after_weights, context, kv_bytes_per_token)
        fits.append(
            MemoryFit(context=context, max_requests_measured=measured, max_requests_calculated=calculated)
        )
        if on_context:
            on_context(context)
    return fits
