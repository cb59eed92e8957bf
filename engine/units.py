"""Byte units, said once: GiB and MiB are binary (2**30, 2**20 bytes), as the lab and vLLM count.

One formatter prints a byte count in GiB for every place that shows one (posts, charts, the
review page, the kv command), so a figure reads the same wherever it appears.
"""

from __future__ import annotations

GIB = 1 << 30
MIB = 1 << 20


def format_gib(num_bytes: float, digits: int = 2, *, grouping: bool = False) -> str:
    """1073741824 → '1.00 GiB'; ``grouping`` adds thousands separators ('1,536.00 GiB')."""
    comma = "," if grouping else ""
    return f"{num_bytes / GIB:{comma}.{digits}f} GiB"


def gib_bytes(gib: float) -> int:
    """A size a person wrote in GiB, as whole bytes: the nearest, so 54.93 GiB (a vLLM log line)
    is the byte count vLLM meant, not one byte short of it."""
    return int(round(gib * GIB))
