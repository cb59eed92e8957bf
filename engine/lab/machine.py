"""Provenance: the machine a lab ran on, as a reader of the post would want it named.

Read from /proc and the standard library only (no psutil): the CPU model, how many logical
cores, how much memory, the OS and kernel, the Python version. The hostname is left out on
purpose: it names a person's laptop, not its hardware.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
from pathlib import Path


def cpu_model() -> str:
    """'AMD EPYC 7B13', 'Apple M2', … or the platform's processor string."""
    try:
        # The kernel's own file (its size reads as 0, no cap applies), not a person's input.
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in {"model name", "Model", "Hardware"} and value.strip():
                return " ".join(value.split())
    except OSError:
        pass
    if platform.system() == "Darwin":
        try:
            out = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"],
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            ).stdout.strip()
            if out:
                return out
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine() or "unknown CPU"


def memory_bytes() -> int:
    """Physical memory in bytes (0 when the platform will not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def slug(text: str) -> str:
    """'AMD EPYC 7B13, 2 cores' → 'amd-epyc-7b13-2-cores': a file name for the measurement."""
    found = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return found[:80].strip("-") or "machine"


def describe(name: str | None = None) -> dict[str, object]:
    """The provenance block of a measurement. ``name`` is what the posts call the machine
    ("my laptop"); by default the CPU model and its core count."""
    cpu = cpu_model()
    cores = os.cpu_count() or 0
    label = name or f"{cpu}, {cores} cores"
    return {
        "name": label,
        "slug": slug(label),
        "cpu": cpu,
        "cores": cores,
        "memory_bytes": memory_bytes(),
        "os": platform.system(),
        "kernel": platform.release(),
        "arch": platform.machine(),
        "python": platform.python_version(),
    }
