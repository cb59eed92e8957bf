"""The decoding requests' blocks counted in aggregate, against a per-request count."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.batching.blocks import DecodeBlocks, ceil_div
from engine.batching.distinct import distinct

from helpers import examples


@settings(max_examples=examples(60, 1000), deadline=None)
@given(
    bs=st.integers(1, 9),
    offsets=st.lists(st.integers(-60, 40), max_size=7),
    after=st.integers(0, 70),
    limit=st.integers(0, 60),
    before=st.one_of(st.none(), st.integers(0, 200)),
)
def test_aggregate_matches_each_request(bs, offsets, after, limit, before):
    offsets = [a for a in offsets if a + after - 1 >= 1]  # decoding: reads ≥ 1 token at after − 1
    blocks = DecodeBlocks(bs)
    for a in offsets:
        blocks.add(a)

    def held(s: int) -> int:  # each request holds ceil(reads / bs)
        return sum(ceil_div(a + s, bs) for a in offsets)

    for s in range(after, after + 3 * bs):
        assert blocks.held(s) == held(s)
        assert blocks.taking(s) == sum(1 for a in offsets if (a + s - 1) % bs == 0)
    first = next((s for s in range(after, after + 1000) if held(s) > limit), None)
    found = blocks.first_over(after, limit, before)
    if before is not None and first is not None and first >= before:
        assert found is None or found == first
    else:
        assert found == first
    for a in offsets:
        blocks.remove(a)
    assert blocks.count == 0 and blocks.q_sum == 0 and not any(blocks.hist)


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.integers(-(2**62), 2**62) | st.integers(-3, 3), max_size=40))
def test_distinct_is_numpys_unique(values):
    array = np.asarray(values, dtype=np.int64)
    mine, numpys = distinct(array), np.unique(array)
    assert mine.dtype == numpys.dtype and mine.tolist() == numpys.tolist()


def test_new_block_steps_counted_in_chunks_of_any_size(monkeypatch):
    """A finished schedule's blocks at every step: the two exact ways agree, with the new-block
    steps listed seven at a time as with all of them at once."""
    from engine.batching import PagedPolicy, blocks, simulate
    from engine.workload import Workload

    rng = np.random.default_rng(2)
    w = Workload.of(rng.integers(1, 200, 300), prompt_tokens=rng.integers(1, 300, 300))
    r = simulate(w, PagedPolicy(num_blocks=200, block_size=8, max_num_seqs=16), slots=16)
    steps = np.arange(r.steps)
    residues = blocks.blocks_at(r.schedule, 8, steps, "residues")
    assert r.preemptions > 0 and residues.max() > 100  # the pool runs short
    assert np.array_equal(blocks.blocks_at(r.schedule, 8, steps, "crossings"), residues)
    monkeypatch.setattr(blocks, "CROSSINGS_PER_CHUNK", 7)
    assert np.array_equal(blocks.blocks_at(r.schedule, 8, steps, "crossings"), residues)
