"""The committed copies of the reference material are the reference material."""

from __future__ import annotations

import pytest

from helpers import LAB_TRACE, REFERENCE


def test_the_lab_trace_in_days_is_the_references():
    original = REFERENCE / "day37-lab-workload.csv"
    if not original.exists():
        pytest.skip(f"{REFERENCE} is not beside this checkout")
    assert LAB_TRACE.read_bytes() == original.read_bytes()


def test_the_lab_trace_has_the_labs_summary():
    # day37-lab.md: 200 requests, 182 short, 18 long, 13,280 tokens, longest 661.
    lengths = [int(x) for x in LAB_TRACE.read_text().split()[1:]]
    assert len(lengths) == 200 and sum(lengths) == 13_280 and max(lengths) == 661
    assert sum(n <= 40 for n in lengths) == 182 and sum(n >= 400 for n in lengths) == 18
