"""Threads that split themselves (engine.platforms.reflow).

Hand-worked cases use ``len`` as the count and a tiny limit, so each expected post can be
counted on the fingers: every label below 10 posts, 'k/n ', is 4 characters. The properties
hold the splitter to X's own count (x_weighted_length, checked against the official
twitter-text library's vectors in test_x_official.py) and to X's thread check, and check that
no word is lost, added or moved.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import pipeline
from engine.platforms.reflow import PostLimits, reflow
from engine.platforms.thread import images_in, label, post_text, split_thread
from engine.platforms.x import MAX_IMAGES_PER_POST, MAX_WEIGHTED_LENGTH, X, check_x_thread, x_weighted_length
from engine.render import posts
from engine.render.context import template_context
from engine.sections import SpecLocation
from engine.spec import load_spec

from helpers import REPO, examples


def by_len(limit: int, images: int | None = None) -> PostLimits:
    return PostLimits(len, limit, images)


# ---- hand-worked cases --------------------------------------------------------------------------


def test_whole_paragraphs_are_packed_greedily():
    # "one two\n\nthree" is 14 characters, 18 with "1/3 ": fits 20; adding "\n\nfour five six"
    # makes 33. "four five six" is 17 with its label; adding "\n\nseven" makes 24.
    text = "one two\n\nthree\n\nfour five six\n\nseven\n"
    assert reflow(text, by_len(20)) == ["one two\n\nthree", "four five six", "seven"]


def test_a_thread_that_fits_is_one_post_to_the_exact_limit():
    text = "one two\n\nthree"  # 14 characters: a post alone carries no label
    assert reflow(text, by_len(14)) == ["one two\n\nthree"]
    # one short of it: two posts, "1/2 one two" (11) and "2/2 three" (9)
    assert reflow(text, by_len(13)) == ["one two", "three"]
    assert reflow(text, by_len(11)) == ["one two", "three"]
    assert reflow(text, by_len(10)) == ["one", "two", "three"]  # "1/3 one", "2/3 two", "3/3 three"


def test_a_segment_that_fits_is_kept_byte_for_byte():
    # Odd spacing inside a post that fits is the author's; the splitter does not touch it.
    text = "first  line   \n\n\nsecond\n---\nthird"
    assert reflow(text, by_len(280)) == ["first  line   \n\n\nsecond", "third"]


def test_dashes_are_hard_breaks_never_merged():
    # Each would fit with the other ("a\n\nb" is 8 with its label), but '---' says two posts.
    assert reflow("a\n---\nb\n", by_len(280)) == ["a", "b"]
    # An empty post between separators is dropped, as the numbering always did.
    assert reflow("a\n---\n\n---\nb\n", by_len(280)) == ["a", "b"]
    # Each segment is split on its own: "c" would fit after "bb" but starts after the break.
    assert reflow("aa\n\nbb\n---\nc\n", by_len(6)) == ["aa", "bb", "c"]


def test_a_long_paragraph_is_cut_between_sentences():
    # The paragraph is 20 characters, 24 with its label: over 17. Its sentences, 6 each, pack
    # two to a post ("Aa bb. Cc dd." is 13, 17 with the label).
    assert reflow("Aa bb. Cc dd. Ee ff.", by_len(17)) == ["Aa bb. Cc dd.", "Ee ff."]
    # Its pieces are posts of their own: the short paragraphs around it are not pulled into
    # them ("Ee ff.\n\nBye." would fit 17) so a post boundary stays a paragraph boundary.
    text = "Hi.\n\nAa bb. Cc dd. Ee ff.\n\nBye."
    assert reflow(text, by_len(17)) == ["Hi.", "Aa bb. Cc dd.", "Ee ff.", "Bye."]


def test_lines_of_a_paragraph_are_cut_like_sentences():
    # A list of lines has no full stops; each line is a unit, and a line break is kept inside
    # a post. "one line\ntwo line" is 17, 21 with the label.
    text = "one line\ntwo line\nred line"
    assert reflow(text, by_len(21)) == ["one line\ntwo line", "red line"]


def test_an_over_long_sentence_is_cut_between_words():
    # 31 characters. "alpha beta gamma" is 16, 20 with its label; " delta" would make 26.
    text = "alpha beta gamma delta epsilon."
    assert reflow(text, by_len(20)) == ["alpha beta gamma", "delta epsilon."]
    # The next sentence does not join the cut sentence's last piece.
    assert reflow(text + " Zeta.", by_len(20)) == ["alpha beta gamma", "delta epsilon.", "Zeta."]


def test_a_word_is_never_cut():
    # "abcdefghij" is 14 with its label: over 12, a post by itself, for the check to name.
    result = reflow("ab abcdefghij cd", by_len(12))
    assert result == ["ab", "abcdefghij", "cd"]
    assert len(label(2, 3) + result[1]) == 14


def test_an_image_stays_with_the_paragraph_before_it():
    # Images are attachments: "1/2 Para one is here." is 21 whether or not the image is there.
    text = "Para one is here.\n\n![chart](c.png)\n\nPara two."
    assert reflow(text, by_len(25)) == ["Para one is here.\n\n![chart](c.png)", "Para two."]


def test_an_image_goes_with_the_last_piece_of_a_cut_paragraph():
    # Without the rule the image would open a post and take "Bye." with it.
    text = "Aa bb. Cc dd. Ee ff.\n\n![c](c.png)\n\nBye."
    assert reflow(text, by_len(17)) == ["Aa bb. Cc dd.", "Ee ff.\n\n![c](c.png)", "Bye."]


def test_an_image_at_the_start_goes_with_the_words_after_it():
    text = "![c](c.png)\n\nFirst words.\n\nSecond words."
    assert reflow(text, by_len(20)) == ["![c](c.png)\n\nFirst words.", "Second words."]


def test_an_image_with_spaces_in_its_alt_text_is_never_cut():
    text = "Look. ![the lab's terminal output](terminal.png) More text here."
    # "1/3 Look." is 9 with the image left out; "2/3 More text" is 13.
    result = reflow(text, by_len(13))
    assert result[0] == "Look. ![the lab's terminal output](terminal.png)"
    assert [post_text(p) for p in result] == ["Look.", "More text", "here."]


def test_no_post_attaches_more_than_four_images():
    images = "\n".join(f"![{name}]({name}.png)" for name in "abcde")
    text = f"Look.\n\n{images}"
    result = reflow(text, by_len(280, images=4))
    assert result == [f"Look.\n\n{images.rsplit(chr(10), 1)[0]}", "![e](e.png)"]
    assert [images_in(p) for p in result] == [4, 1]
    # Without an image limit, the same text fits in one post.
    assert reflow(text, by_len(280)) == [text]


def test_the_label_width_follows_the_final_number_of_posts():
    # Each paragraph "ab cd" is 5 characters: with "k/9 " it is 9, and two paragraphs (12) never
    # fit 10. Nine paragraphs: nine posts.
    nine = "\n\n".join(["ab cd"] * 9)
    assert reflow(nine, by_len(10)) == ["ab cd"] * 9
    # Ten paragraphs look like ten posts, but "10/10 ab cd" is 11: the tenth is cut ("10/11 ab",
    # "11/11 cd", 8 each), and with eleven posts every label is 'k/11 ', so posts 1-9 are 10.
    ten = "\n\n".join(["ab cd"] * 10)
    result = reflow(ten, by_len(10))
    assert result == ["ab cd"] * 9 + ["ab", "cd"]
    numbered = split_thread(posts.number_thread(ten, by_len(10)))
    assert [len(p) for p in numbered] == [10] * 9 + [8, 8]
    assert numbered[9] == "10/11 ab"


def test_numbering_with_limits_prefixes_the_reflowed_posts():
    text = "one two\n\nthree\n\nfour five six\n\nseven\n"
    assert (
        posts.number_thread(text, by_len(20))
        == "1/3 one two\n\nthree\n---\n2/3 four five six\n---\n3/3 seven\n"
    )
    # Without limits, posts are only what '---' makes, as before.
    assert posts.number_thread(text) == "one two\n\nthree\n\nfour five six\n\nseven\n"  # one post


def test_x_counts_by_weight_not_characters():
    # 100 arrows weigh 200 on X (U+2192 is outside the ranges that weigh 1): two paragraphs of
    # them (400) need two posts, though by len they would fit one.
    text = "→" * 100 + "\n\n" + "→" * 100
    assert reflow(text, by_len(MAX_WEIGHTED_LENGTH)) == [text]
    assert reflow(text, X.post_limits) == ["→" * 100, "→" * 100]


# ---- properties, against X's count and check ----------------------------------------------------

# Words of every weight class X has: ASCII (1 each), accented Latin (1), CJK and arrows (2),
# emoji (2 per emoji), and URLs (23 whatever their length). Each is short, so every word fits
# a post by itself and the splitter can always succeed.
_ASCII = st.text("abcdefghijklmnopqrstuvwxyz,;:'", min_size=1, max_size=12)
_WIDE = st.sampled_from(["café", "naïve", "中文", "→", "日本語です", "🎉", "👩‍💻", "🇮🇳", "x²"])
_URL = st.sampled_from(["example.com", "https://github.com/anurag629/system-design-60-days", "t.co/x"])


def _sentence(words: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.builds(
        lambda ws, end: " ".join(ws) + end,
        st.lists(words, min_size=1, max_size=12),
        st.sampled_from([".", "!", "?", ":", ""]),
    )


def _paragraph(words: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    text = st.builds(
        lambda ss, sep: sep.join(ss),
        st.lists(_sentence(words), min_size=1, max_size=4),
        st.sampled_from([" ", "\n"]),
    )
    image = st.sampled_from(["![a chart](chart.png)", "![terminal](t.png)", "![x](x.png)"])
    return st.one_of(text, text, text, image)


def _thread(words: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    segment = st.lists(_paragraph(words), min_size=1, max_size=5).map("\n\n".join)
    return st.lists(segment, min_size=1, max_size=3).map(lambda segs: "\n---\n".join(segs) + "\n")


def _words(text: str) -> list[str]:
    return [w for line in text.split("\n") if line != "---" for w in line.split()]


def _assert_fits_x(text: str) -> None:
    result = reflow(text, X.post_limits)
    total = len(result)
    for k, post in enumerate(result, start=1):
        assert x_weighted_length(post_text(label(k, total) + post)) <= MAX_WEIGHTED_LENGTH, (k, post)
        assert images_in(post) <= MAX_IMAGES_PER_POST
    assert _words("\n".join(result)) == _words(text)
    numbered = posts.number_thread(text, X.post_limits)
    _, violations = check_x_thread(split_thread(numbered))
    assert violations == []
    assert _words(numbered) == [
        w for k in range(1, total + 1) for w in [f"{k}/{total}"][: total - 1] + _words(result[k - 1])
    ]  # each post behind its 'k/n', a post alone behind nothing


@settings(max_examples=examples(10, 400), deadline=None)
@given(_thread(_ASCII | _URL))
def test_every_post_fits_x_and_no_word_moves(text: str) -> None:
    _assert_fits_x(text)


@settings(max_examples=examples(15, 300), deadline=None)
@given(_thread(_ASCII | _ASCII | _WIDE | _URL))
def test_every_post_fits_x_by_weight(text: str) -> None:
    _assert_fits_x(text)


@settings(max_examples=examples(30, 600), deadline=None)
@given(_thread(_ASCII), st.integers(min_value=22, max_value=60))
def test_every_post_fits_a_small_limit(text: str, limit: int) -> None:
    # A word is at most 13 characters with its full stop, and a thread of at most 720 words
    # has a label of at most 8 ("999/999 "): every word fits 22, so no post may be over.
    result = reflow(text, by_len(limit, images=2))
    total = len(result)
    assert all(len(post_text(label(k, total) + p)) <= limit for k, p in enumerate(result, start=1))
    assert all(images_in(p) <= 2 for p in result)
    assert _words("\n".join(result)) == _words(text)
    segments = [s for s in split_thread(text) if s.strip()]
    assert total >= len(segments)


# ---- end to end ---------------------------------------------------------------------------------

PLAIN_THREAD = """\
{% import "_macros.j2" as m %}
{% for row in kv_cache.main.plan.contexts %}
With {{ row.context | thousands }}-token chats, the memory left for the cache holds \
{{ row.max_requests | thousands }} requests at once, on {{ kv_cache.main.gpu.name }} with \
{{ kv_cache.main.model.name }}. Every request keeps its keys and values for every token it has seen.

{% endfor %}
{{ m.day_line(day, series) }}. Code: {{ repository }}
"""


def test_a_template_of_plain_paragraphs_builds_a_numbered_thread_x_accepts(tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    shutil.copytree(REPO / "templates", templates)
    (templates / "day37" / "x-thread.md.j2").write_text(PLAIN_THREAD)

    spec_path = REPO / "days" / "day37.yaml"
    results = pipeline.compute(load_spec(spec_path), SpecLocation(spec_path=spec_path))
    rendered = posts.render(posts.environment(templates), "day37/x-thread.md.j2", template_context(results))
    assert "\n---\n" not in rendered and x_weighted_length(rendered) > MAX_WEIGHTED_LENGTH
    thread = pipeline.render_drafts(results, templates)["x-thread.md"]
    parts = split_thread(thread)
    assert len(parts) > 1
    counts, violations = check_x_thread(parts)
    assert violations == []
    assert all(c.ok for post in counts for c in post)
    # Each paragraph (one per context row) is whole in some post: none was cut.
    for paragraph in rendered.strip().split("\n\n"):
        assert any(paragraph in part for part in parts), paragraph
    assert _words(thread) == [
        w for k, part in enumerate(parts, start=1) for w in [f"{k}/{len(parts)}"] + _words(part)[1:]
    ]
    assert _words(rendered) == [w for part in parts for w in _words(part)[1:]]
