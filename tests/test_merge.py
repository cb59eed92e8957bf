"""The three-way merge: diff3's identities, and edits in different places both kept.

Expected results are built by hand from the edits (replace line i, replace line j), not by
calling a second merge.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.outdir.merge import END, MIDDLE, START, describe, three_way

TEXT = st.text(alphabet="ab \n%.,0123456789", max_size=60)


@settings(max_examples=60, deadline=None)
@given(base=TEXT, other=TEXT)
def test_a_side_that_did_not_change_takes_the_other(base, other):
    assert three_way(base, base, other).text == other  # no edit: the new render, exactly
    assert three_way(base, other, base).text == other  # no new numbers: their edit, exactly
    both = three_way(base, other, other)
    assert both.clean and both.text == other  # the same change on both sides is no conflict


@settings(max_examples=60, deadline=None)
@given(n=st.integers(3, 12), data=st.data())
def test_edits_to_different_lines_are_both_kept(n, data):
    i = data.draw(st.integers(0, n - 1))
    j = data.draw(st.integers(0, n - 1).filter(lambda k: k != i))
    lines = [f"line {k} says {k * 7}%\n" for k in range(n)]
    theirs, new, expected = list(lines), list(lines), list(lines)
    theirs[i] = expected[i] = "my own sentence\n"
    new[j] = expected[j] = f"line {j} says {j * 7 + 1}%\n"
    merged = three_way("".join(lines), "".join(theirs), "".join(new))
    assert merged.clean and merged.text == "".join(expected)


def test_words_in_one_line_merge_when_they_do_not_overlap():
    base = "Continuous batching kept the GPU 72.3% busy, static only 14.3%.\n"
    theirs = "Continuous batching kept my GPU 72.3% busy, while static managed only 14.3%.\n"
    new = "Continuous batching kept the GPU 74.1% busy, static only 15.0%.\n"
    merged = three_way(base, theirs, new)
    assert merged.clean
    assert merged.text == "Continuous batching kept my GPU 74.1% busy, while static managed only 15.0%.\n"


def test_the_same_words_changed_twice_is_a_conflict_with_standard_markers():
    base = "intro\nbusy 72.3%\noutro\n"
    merged = three_way(base, "intro\nbusy about three quarters\noutro\n", "intro\nbusy 74.1%\noutro\n")
    assert not merged.clean
    assert merged.text == (f"intro\n{START}\nbusy about three quarters\n{MIDDLE}\nbusy 74.1%\n{END}\noutro\n")
    assert START.startswith("<<<<<<< ") and MIDDLE == "=======" and END.startswith(">>>>>>> ")
    assert merged.conflicts == [(2, 6)] and describe(merged.conflicts) == "line 2-6"
    assert describe([(2, 6), (9, 12)]) == "lines 2-6, 9-12"


def test_a_last_line_without_newline_still_gets_its_own_marker_line():
    merged = three_way("a\nb", "a\nmine", "a\nnew")
    assert merged.text == f"a\n{START}\nmine\n{MIDDLE}\nnew\n{END}\n"


def test_a_settled_conflict_takes_the_new_numbers_on_lines_the_person_left_alone():
    """Settled for the person (they answered the conflict), a conflicting stretch is settled line
    by line: their reworded line stays theirs, the line beside it they never touched takes the
    new number (merge3 puts both in one conflicting stretch)."""
    base = (
        "intro\n2,048-token chats: 64 requests fit (1.00 GiB each)\n8,192-token chats: 16 requests fit\nend\n"
    )
    theirs = (
        "intro\nAt 2,048 tokens, 56 requests fit, each 1.00 GiB\n8,192-token chats: 16 requests fit\nend\n"
    )
    new = (
        "intro\n2,048-token chats: 56 requests fit (1.00 GiB each)\n8,192-token chats: 14 requests fit\nend\n"
    )
    assert three_way(base, theirs, new).conflicts  # unsettled: a conflict, as before
    settled = three_way(base, theirs, new, theirs_win=True)
    assert settled.clean and settled.text == (
        "intro\nAt 2,048 tokens, 56 requests fit, each 1.00 GiB\n8,192-token chats: 14 requests fit\nend\n"
    )
