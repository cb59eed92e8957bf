"""The device under test: which one, what it is called, how much memory it has, its HBM peak.

Everything that differs between CUDA and CPU is here, so the other modules stay device-agnostic.
"""

from __future__ import annotations

import gc
import os
import platform
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from engine import catalog
from engine.errors import UserError


@dataclass(frozen=True)
class DeviceInfo:
    kind: str  # "cuda" or "cpu"
    name: str  # "NVIDIA H100 80GB HBM3", "AMD EPYC 7B13"
    slug: str  # the measurement file's stem: "nvidia-h100-80gb-hbm3", "cpu-amd-epyc-7b13"
    memory_bytes: int  # the card's memory, or the machine's RAM


def resolve_device(choice: str | None, *, spec_file: str | Path | None = None) -> torch.device:
    """``cuda`` or ``cpu``; None means CUDA when torch can see a GPU, else the CPU."""
    if choice is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if choice == "cuda" and not torch.cuda.is_available():
        build = f"torch {torch.__version__}" + ("" if torch.version.cuda else ", a CPU-only build")
        raise UserError(
            f"CUDA is not available on this machine ({build}); use --device cpu",
            file=spec_file,
            field="--device",
        )
    if choice not in ("cuda", "cpu"):
        raise UserError(f"unknown device {choice!r}: cuda or cpu", file=spec_file, field="--device")
    return torch.device(choice)


def slugify(text: str) -> str:
    """Lower case, runs of anything but letters and digits → one '-': a stable file name."""
    text = re.sub(r"\((r|tm|c)\)", "", text, flags=re.IGNORECASE)
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _cpu_name() -> str:
    """The processor's marketing name where Linux tells it, else what platform knows."""
    try:
        # The kernel's own file (its size reads as 0, no cap applies), not a person's input.
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _ram_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def describe(device: torch.device) -> DeviceInfo:
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        return DeviceInfo("cuda", props.name, slugify(props.name), int(props.total_memory))
    name = _cpu_name()
    slug = slugify(name)
    return DeviceInfo("cpu", name, slug if slug.startswith("cpu-") else f"cpu-{slug}", _ram_bytes())


def synchronize(device: torch.device) -> None:
    """Wait for the device to finish its queued work: timing without this times the launches."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def release(device: torch.device) -> None:
    """Give freed tensors back, so the next phase starts from the memory the weights leave.

    On CUDA: a collection first (a tensor caught in a reference cycle holds its device memory
    until one), then the caching allocator's free blocks go back to the driver, whose count of
    free memory sizes the caches (free_bytes) and bounds the next phase.

    On the CPU, nothing: there is no device cache to empty, a tensor's memory goes back when its
    last reference does (the bench's phases leave no cycle holding a cache: tested), the caches
    are sized by the run's memory budget, never by what is free, and Python's collector still
    runs on its own. A full collection here cost 0.2-0.35 s a call in a loaded process, 16 calls
    a bench run, and bought nothing any number reads."""
    if device.type == "cuda":
        gc.collect()
        torch.cuda.empty_cache()


def graphs_supported(device: torch.device) -> bool:
    """Whether steps on ``device`` can be captured in CUDA graphs: only on CUDA. Every capture in
    the benchmark goes through this check, so the CPU path never touches ``torch.cuda``."""
    return device.type == "cuda"


def graph_pool() -> object:
    """A memory pool that graphs which never run at the same time can share (see cuda_graph)."""
    return torch.cuda.graph_pool_handle()


_SIDE_STREAMS: dict[int, torch.cuda.Stream] = {}


def _side_stream() -> torch.cuda.Stream:
    """One warm-up stream per device for the whole run, not a new one per capture: cuBLAS keeps
    a workspace (up to 32 MiB) for every stream it has run on, for as long as the process lives,
    and torch hands out up to 32 different pooled streams."""
    index = torch.cuda.current_device()
    if index not in _SIDE_STREAMS:
        _SIDE_STREAMS[index] = torch.cuda.Stream()
    return _SIDE_STREAMS[index]


def cuda_graph(
    step: Callable[[], object],
    *,
    warmup: int = 0,
    warmup_step: Callable[[], object] | None = None,
    pool: object | None = None,
) -> Callable[[], object]:
    """Capture ``step`` in a CUDA graph and return its replay.

    ``step`` must read only tensors whose addresses stay fixed (its static inputs) and never read
    a value back to the host; what it allocates comes from the graph's pool and is reused by
    every replay. Capturing runs nothing: the first replay is the first run.

    As torch requires, the work is first run ``warmup`` times on a side stream (lazy
    initialisation such as cuBLAS handles and workspaces must not happen during capture).
    ``warmup_step`` runs there instead of ``step`` where ``step`` changes state that matters:
    it must launch the same kernels and be harmless to repeat.

    Graphs may share ``pool`` when they never run at the same time and none reads what another
    left in the pool (each step's intermediates die within the step, its results go to the
    static buffers): one pool's worth of memory instead of one per graph. Out of memory during
    capture is raised as torch.OutOfMemoryError, which callers should not mistake for a capture
    that torch cannot do.
    """
    if warmup:
        side = _side_stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(warmup):
                (warmup_step or step)()
        torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, pool=pool):  # type: ignore[arg-type]  # a graph_pool() handle
        step()
    return graph.replay


def free_bytes(device: torch.device) -> int | None:
    """What the driver says is free on the card now; None on the CPU (the runner uses a budget)."""
    if device.type != "cuda":
        return None
    release(device)
    return int(torch.cuda.mem_get_info(device)[0])


# Words in a CUDA device name that say nothing about which catalog GPU it is.
_NOISE = re.compile(r"^(nvidia|geforce|tesla|amd|instinct|hbm\w*|sxm\d*|gpu)$")


def catalog_candidates(device_name: str) -> list[str]:
    """Catalog names to try for a CUDA device name, most specific first.

    'NVIDIA H100 80GB HBM3' → ['h100-80gb', 'h100'];  'NVIDIA A100-SXM4-80GB' → ['a100-80gb', 'a100'];
    'NVIDIA H200' → ['h200']. A variant word (pcie, nvl) is kept: an H100 PCIe is not an SXM H100.
    """
    words = [w for w in slugify(device_name).split("-") if w and not _NOISE.match(w)]
    out: list[str] = []
    for candidate in ("-".join(words), "-".join(w for w in words if not re.fullmatch(r"\d+gb", w))):
        if candidate and candidate not in out:
            out.append(candidate)
    return out


def catalog_peak(device_name: str) -> tuple[float | None, str | None]:
    """The catalog's HBM bandwidth for this device (bytes/s), or None and a note saying why not."""
    # The catalog matches aliases too, so the CUDA name itself is tried first.
    for name in [device_name, *catalog_candidates(device_name)]:
        try:
            gpu = catalog.load_gpu(name)
        except (UserError, LookupError, FileNotFoundError, ValueError):
            continue
        return float(gpu.hbm_bandwidth_bytes_per_s), None
    return None, (
        f"no catalog GPU matches {device_name!r} (tried "
        f"{', '.join(catalog_candidates(device_name)) or 'nothing'}): "
        "share of HBM peak not computed"
    )
