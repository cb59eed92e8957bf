"""Byte units, said once: GiB and MiB are binary (2**30, 2**20 bytes), as the lab and vLLM count.

How a byte count is printed in GiB is engine.numbers' (``gib``), with every other number.
"""

from __future__ import annotations

GIB = 1 << 30
MIB = 1 << 20


def gib_bytes(gib: float) -> int:
    """A size a person wrote in GiB, as whole bytes: the nearest, so 54.93 GiB (a vLLM log line)
    is the byte count vLLM meant, not one byte short of it."""
    return int(round(gib * GIB))
