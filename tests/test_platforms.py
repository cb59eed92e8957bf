"""Platform rules against independent truth: twitter-text's official conformance vectors, the
Unicode emoji list, and counts worked out by hand from ../shared/reference/platform-rules.md."""

from __future__ import annotations

import importlib.resources
import importlib.util
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.cli import main
from engine.errors import UserError
from engine.platforms import (
    Count,
    Violation,
    check_alt_text,
    check_linkedin,
    check_x_thread,
    split_thread,
    utf16_length,
    x_post_valid,
    x_weighted_length,
)
from engine.platforms.day_dir import alt_text_platforms, check_day_dir
from engine.platforms.linkedin import feed_position, hook

from helpers import load_yaml

VECTORS = Path(__file__).parent / "data" / "twitter-text" / "validate-v3.yml"
_TESTS = load_yaml(VECTORS.read_text(encoding="utf-8"))["tests"]
CONFORMANCE = [
    pytest.param(case["text"], case["expected"], id=f"{section[:8]}: {case['description'][:70]}")
    for section in ("WeightedTweetsWithDiscountedEmojiCounterTest", "UnicodeDirectionalMarkerCounterTest")
    for case in _TESTS[section]
]

FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"  # 👨‍👩‍👧‍👦, 7 code points


# --- X: the official vectors ---------------------------------------------------------------------


def test_all_vectors_are_present():
    assert len(CONFORMANCE) == 23


@pytest.mark.parametrize("text,expected", CONFORMANCE)
def test_conformance_weighted_length(text, expected):
    assert x_weighted_length(text) == expected["weightedLength"]


@pytest.mark.parametrize("text,expected", CONFORMANCE)
def test_conformance_validity(text, expected):
    assert x_post_valid(text) is expected["valid"]


@pytest.mark.parametrize("text,expected", CONFORMANCE)
def test_vectors_survived_transcription(text, expected):
    # displayRangeEnd is the text's UTF-16 length minus one: a dropped ZWJ or mark shows here.
    assert utf16_length(text) - 1 == expected["displayRangeEnd"]


# --- X: emoji ------------------------------------------------------------------------------------


def _unicode_emoji_list() -> list[tuple[str, str]]:
    """Every qualified line of the emoji-test.txt bundled with twitter-text-parser (Unicode,
    Emoji 12.0). Unqualified forms (a bare ©, 🕵‍♂ without its FE0F) are text to the official
    library, and tests/test_x_official.py checks each of them against its answer."""
    library = importlib.util.find_spec("twitter_text")  # found, not imported (engine.platforms._twitter_text)
    assert library is not None and library.submodule_search_locations
    path = Path(library.submodule_search_locations[0]) / "regexp" / "emoji-test.txt"
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#") and "; unqualified" not in line:
            code_points, rest = line.split(";", 1)
            text = "".join(chr(int(c, 16)) for c in code_points.split())
            entries.append((text, rest.split("#", 1)[1].strip()))
    return entries


def test_every_listed_emoji_counts_two():
    entries = _unicode_emoji_list()
    assert len(entries) > 3400
    wrong = [(name, x_weighted_length(e)) for e, name in entries if x_weighted_length(e) != 2]
    assert wrong == []
    # ... and in running text, where a neighbour must not be swallowed.
    wrong = [name for e, name in entries if x_weighted_length(f"a{e}b") != 4]
    assert wrong == []


NEWER_EMOJI = {  # sequences added after the library's 2019 table; each is one emoji, weight 2
    "heart on fire (13.1)": "\u2764\ufe0f\u200d\U0001f525",
    "face exhaling (13.1)": "\U0001f62e\u200d\U0001f4a8",
    "black cat (13.0)": "\U0001f408\u200d\u2b1b",
    "polar bear (13.0)": "\U0001f43b\u200d\u2744\ufe0f",
    "transgender flag (13.0)": "\U0001f3f3\ufe0f\u200d\u26a7\ufe0f",
    "kiss, two skin tones (13.1)": "\U0001f9d1\U0001f3fb\u200d\u2764\ufe0f\u200d\U0001f48b\u200d\U0001f9d1\U0001f3fc",
    "handshake, two skin tones (14.0)": "\U0001faf1\U0001f3fb\u200d\U0001faf2\U0001f3ff",
    "pregnant man, medium skin tone (14.0)": "\U0001fac3\U0001f3fd",
    "phoenix (15.1)": "\U0001f426\u200d\U0001f525",
    "lime (15.1)": "\U0001f34b\u200d\U0001f7e9",
    "broken chain (15.1)": "\u26d3\ufe0f\u200d\U0001f4a5",
    "head shaking horizontally (15.1)": "\U0001f642\u200d\u2194\ufe0f",
    "person walking facing right, dark skin tone (15.1)": "\U0001f6b6\U0001f3ff\u200d\u27a1\ufe0f",
    "family: adult, adult, child (15.1)": "\U0001f9d1\u200d\U0001f9d1\u200d\U0001f9d2",
    "melting face (14.0, one code point)": "\U0001fae0",
}


@pytest.mark.parametrize("emoji", NEWER_EMOJI.values(), ids=NEWER_EMOJI.keys())
def test_newer_emoji_count_two(emoji):
    assert x_weighted_length(emoji) == 2
    assert x_weighted_length(f"Day 37 {emoji} done") == 14


@pytest.mark.parametrize(
    "text,weight",
    [
        (FAMILY, 2),  # ZWJ family
        ("\U0001f44d\U0001f3fd", 2),  # skin tone
        ("\U0001f1ee\U0001f1f3\U0001f1ef\U0001f1f5", 4),  # two flags
        ("\U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f", 2),  # Scotland
        ("1\ufe0f\u20e3 #\ufe0f\u20e3", 5),  # keycaps
        ("\u2764\ufe0f", 2),  # emoji presentation selector
    ],
)
def test_emoji_sequences(text, weight):
    assert x_weighted_length(text) == weight


# --- X: characters people actually type ----------------------------------------------------------


@pytest.mark.parametrize(
    "char,weight",
    [
        ("\u00d7", 1),
        ("\u2013", 1),
        ("\u2014", 1),
        ("\u2019", 1),
        ("\u00b0", 1),  # × – — ’ °
        ("\u2022", 2),
        ("\u2026", 2),
        ("\u2192", 2),
        ("\u2212", 2),
        ("\u20b9", 2),  # • … → − ₹
        ("\u20ac", 2),
        ("\u202f", 2),  # € narrow nbsp
        ("a", 1),
        ("\u00e9", 1),
        ("\u0416", 1),
        ("\u05d0", 1),
        ("\u0915", 1),  # Latin, Cyrillic, Hebrew, Devanagari
        ("\u65e5", 2),
        ("\ud55c", 2),
        ("\u3042", 2),
        ("\u3002", 2),  # CJK, Hangul, kana, 。
    ],
)
def test_character_weights(char, weight):
    assert x_weighted_length(char) == weight


def test_numbers_as_posts_format_them():
    assert x_weighted_length("5\u00d7 the throughput") == 17  # 17 characters, × weighs 1
    assert x_weighted_length("64 \u2192 16 requests") == 16 + 1  # → weighs 2
    assert x_weighted_length("\u22128.2%") == 5 + 1  # − (U+2212) weighs 2
    assert x_weighted_length("8,192\u202ftokens") == 12 + 1  # narrow no-break space weighs 2


def test_cjk_sentence():
    assert x_weighted_length("日本語のテキスト") == 16
    assert x_post_valid("日" * 140) and not x_post_valid("日" * 141)


@pytest.mark.parametrize(
    "text,weight",
    [
        ("see https://example.com/a/very/long/path/that/goes/on/and/on?q=1", 4 + 23),
        ("Code: github.com/anurag629/system-design-60-days", 6 + 23),
        ("http://a.co http://b.co", 23 + 1 + 23),
        ("ftp://example.com", 17),  # not a scheme X links (conformance: invalid url): plain text
    ],
)
def test_urls_count_23(text, weight):
    assert x_weighted_length(text) == weight


def test_nfc_before_counting():
    assert x_weighted_length("e\u0301") == 1
    assert x_weighted_length("Ame\u0301lie") == x_weighted_length("Amélie") == 6
    assert x_weighted_length("line\r\nbreak") == 10


@pytest.mark.parametrize("bad", ["\ufffe", "\ufeff", "\uffff"])
def test_invalid_characters_make_a_post_invalid(bad):
    text = f"short {bad}post"
    assert 0 < x_weighted_length(text) <= 280
    assert not x_post_valid(text)
    _, violations = check_x_thread([text])
    assert [v.rule for v in violations] == ["characters"]
    assert f"U+{ord(bad):04X}" in violations[0].detail


def test_length_boundaries():
    assert not x_post_valid("")
    assert x_post_valid("a" * 280) and not x_post_valid("a" * 281)
    assert x_post_valid("\U0001f637" * 140) and not x_post_valid("\U0001f637" * 141)
    assert x_post_valid(FAMILY * 140)


_PLAIN = st.text(st.sampled_from(list("abcXYZ019 ,;!?-\u00d7\u2013\u65e5\u3042\u2192\u20ac")), max_size=60)
_EMOJI = st.sampled_from(list(NEWER_EMOJI.values()) + [FAMILY, "\U0001f44d\U0001f3fd", "\U0001f637"])


@given(_PLAIN, _EMOJI, _PLAIN)
def test_an_emoji_between_spaces_adds_exactly_two(before, emoji, after):
    assert x_weighted_length(f"{before} {emoji} {after}") == x_weighted_length(
        before
    ) + 4 + x_weighted_length(after)


@given(st.text(st.characters(codec="ascii", exclude_characters=".:/@#$"), max_size=300))
def test_ascii_without_urls_counts_each_character(text):
    assert x_weighted_length(text) == len(text.replace("\r\n", "\n"))


# --- X: threads ----------------------------------------------------------------------------------


def test_split_thread():
    markdown = "\n\n1/3 First\n\nstill first\n\n---\n2/3 Second\n---\n\n3/3 Third\n\n"
    assert split_thread(markdown) == ["1/3 First\n\nstill first", "2/3 Second", "3/3 Third"]


def test_split_thread_only_on_exact_separator():
    assert split_thread("a\n----\nb\n --- \nc\n---x") == ["a\n----\nb\n --- \nc\n---x"]
    assert split_thread("a\r\n---\r\nb\r\n") == ["a", "b"]
    assert split_thread("\n  \n") == []
    assert split_thread("a\n---\n\n---\nb") == ["a", "", "b"]


def _thread(*bodies: str) -> list[str]:
    return [f"{k}/{len(bodies)} {body}" for k, body in enumerate(bodies, start=1)]


def test_good_thread_passes_with_counts():
    counts, violations = check_x_thread(_thread("hook", "middle", "end"))
    assert violations == []
    assert counts[1] == [Count("length", len("2/3 middle"), 280, True)]


def test_over_long_post_is_named():
    posts = _thread("hook", "\u65e5" * 139, "end")
    counts, violations = check_x_thread(posts)
    assert counts[1][0] == Count("length", 4 + 278, 280, False)
    assert violations == [Violation("x-thread.md", 2, "length", "282/280 as X counts it, 2 over")]
    assert str(violations[0]).startswith("x-thread.md post 2: length: 282/280")


def test_numbering():
    assert check_x_thread(["only post, no number needed"])[1] == []
    ok = ["(1/3) start", "2/3: middle", "the end 3/3."]
    assert check_x_thread(ok)[1] == []
    _, violations = check_x_thread(["1/3 a", "3/3 b", "2/3 c"])
    assert [(v.post, v.detail) for v in violations] == [
        (2, "numbered 3/3, expected 2/3"),
        (3, "numbered 2/3, expected 3/3"),
    ]
    _, violations = check_x_thread(["1/2 a", "b, open 24/7 and 50/50 odds here"])
    assert [(v.post, v.rule) for v in violations] == [(2, "numbering")]
    _, violations = check_x_thread(["1/3 a", "2/3 b"])
    assert [v.detail for v in violations] == ["numbered 1/3, expected 1/2", "numbered 2/3, expected 2/2"]


def test_images_per_post():
    post = "1/1 five charts " + " ".join(f"![c{i}](c{i}.png)" for i in range(5))
    counts, violations = check_x_thread([post])
    assert counts[0] == [Count("length", len("1/1 five charts"), 280, True), Count("images", 5, 4, False)]
    assert [v.rule for v in violations] == ["images"]
    assert check_x_thread(["a", "b"], images_per_post={1: 4, 2: 0})[0][0][1] == Count("images", 4, 4, True)
    assert [v.post for v in check_x_thread(["1/2 a", "2/2 b"], images_per_post={2: 5})[1]] == [2]


def test_empty_posts_and_threads():
    assert check_x_thread([])[1] == [Violation("x-thread.md", None, "posts", "the thread has no posts")]
    _, violations = check_x_thread(["1/2 a", ""])
    assert ("length", "the post is empty") in [(v.rule, v.detail) for v in violations]


def test_a_post_of_images_alone_is_a_post_on_every_thread_platform():
    """Every registered thread platform (X, Bluesky, Mastodon, Threads) takes a post with media
    and no text, so a one-post thread of a chart alone (which carries no '1/1' label) passes; a
    post of nothing does not."""
    from engine.platforms.registry import platforms

    threads = [p for p in platforms() if p.thread]
    assert {p.name for p in threads} >= {"x", "bluesky", "mastodon", "threads"}
    for platform in threads:
        counts, violations = platform.check_draft("![the chart](chart.png)\n")
        assert violations == [], platform.name
        assert counts[0][0] == Count("length", 0, counts[0][0].limit, True), platform.name
        _, violations = platform.check_draft("1/2 a\n---\n\n")
        assert (2, "the post is empty") in [(v.post, v.detail) for v in violations], platform.name


# --- LinkedIn ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,units",
    [
        ("abc", 3),
        ("\u65e5\u672c", 2),
        ("\U0001f600", 2),
        (FAMILY, 11),
        ("\U0001d401\U0001d428\U0001d425\U0001d41d", 8),  # 𝐁𝐨𝐥𝐝: mathematical bold, 2 each
        ("\u00e9", 1),
        ("e\u0301", 2),
    ],
)
def test_utf16_length(text, units):
    assert utf16_length(text) == units


def _linkedin(
    hook_text: str = "A short hook.", body: str = "Body.", tags: str = "#SystemDesign #LLM #Inference"
) -> str:
    return f"{hook_text}\n\n{body}\n\n{tags}\n"


def test_good_linkedin_post():
    counts, violations = check_linkedin(_linkedin())
    assert violations == []
    assert [c.name for c in counts] == ["length", "hook", "hashtags"]
    assert counts[2] == Count("hashtags", 3, 5, True)


def test_linkedin_length_in_utf16_units():
    tags = "\n\n#a1 #b2 #c3"
    fits = "\U0001f600" * 1493 + "x" + tags  # 2986 + 1 + 13
    assert utf16_length(fits) == 3000
    assert check_linkedin(fits, fold=10_000)[1] == []
    bold = "\U0001d401" * 1500 + tags
    counts, violations = check_linkedin(bold, fold=10_000)
    assert counts[0] == Count("length", 3000 + len(tags), 3000, False)
    assert [v.rule for v in violations] == ["length"]


def test_fold_counts_characters():
    assert check_linkedin(_linkedin("x" * 210))[1] == []
    _, violations = check_linkedin(_linkedin("x" * 211))
    assert [v.rule for v in violations] == ["fold"]
    assert "211" in violations[0].detail


def test_fold_counts_line_breaks_as_whole_lines():
    three_short_lines = "one\ntwo\nthree"
    assert feed_position(three_short_lines) == 70 + 70 + 5
    four_short_lines = "one\ntwo\nthree\nfour"
    assert feed_position(four_short_lines) == 214  # 18 characters, yet past the fold
    assert [v.rule for v in check_linkedin(_linkedin(four_short_lines))[1]] == ["fold"]
    assert feed_position("y" * 71 + "\nz") == 141  # a wrapped line uses two lines


def test_hook_is_the_first_paragraph():
    assert hook("\n\nFirst line\nsecond line\n \nBody") == "First line\nsecond line"
    text = "No blank line anywhere " * 20
    assert [v.rule for v in check_linkedin(text + "\n\n#a #b #c")[1]] == ["fold"]


@pytest.mark.parametrize(
    "tags,ok",
    [
        ("#One #Two", False),
        ("#One #Two #Three", True),
        ("#A #B #C #D #E", True),
        ("#A #B #C #D #E #F", False),
        ("#100DaysOfCode #LLM #Inference", True),
        ("", False),
    ],
)
def test_hashtag_count(tags, ok):
    counts, violations = check_linkedin(_linkedin(tags=tags))
    assert counts[2].ok is ok
    assert ([v.rule for v in violations] == []) is ok


def test_hashtags_belong_at_the_end():
    body = "We use #Kafka here. C# and https://example.com/#anchor and issue #1 are not hashtags."
    _, violations = check_linkedin(_linkedin(body=body))
    assert [v.detail.split(" before")[0] for v in violations] == ["#Kafka"]
    _, violations = check_linkedin(_linkedin(tags="#A #B #C trailing words"))
    assert [v.rule for v in violations] == ["hashtags", "hashtags"]


# --- Alt text ------------------------------------------------------------------------------------


def test_alt_text_limits():
    assert check_alt_text("x" * 1000, platform="x") == []
    assert [v.detail for v in check_alt_text("x" * 1001, platform="x")] == [
        "1001/1000 characters on x, 1 over"
    ]
    assert check_alt_text("x" * 250, platform="linkedin") == []
    assert len(check_alt_text("x" * 251, platform="linkedin")) == 1
    assert check_alt_text("x" * 251, platform="linkedin", limit=300) == []
    assert len(check_alt_text("\U0001f600" * 126, platform="linkedin")) == 1  # 252 UTF-16 units


@pytest.mark.parametrize("text", ["", "   \n"])
def test_alt_text_must_say_something(text):
    assert [v.rule for v in check_alt_text(text, platform="x")] == ["alt text"]


def test_alt_text_unknown_platform():
    with pytest.raises(ValueError):
        check_alt_text("a chart", platform="myspace")


def test_alt_text_platform_from_file_name():
    assert alt_text_platforms("latency.x") == ("x",)
    assert alt_text_platforms("kv-linkedin") == ("linkedin",)
    assert alt_text_platforms("throughput") == ("x", "linkedin")
    assert alt_text_platforms("max_batch") == ("x", "linkedin")


# --- A built day folder and the CLI --------------------------------------------------------------


def _write_day(
    folder: Path, *, second_post: str = "2/2 Second post \U0001f469\U0001f3fd\u200d\U0001f4bb"
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "linkedin.md").write_text(_linkedin(), encoding="utf-8")
    (folder / "x-thread.md").write_text(f"1/2 Hook\n\n---\n\n{second_post}\n", encoding="utf-8")
    (folder / "kv.png").write_bytes(b"\x89PNG")
    (folder / "kv.alt.txt").write_text(
        "Bar chart: 64 requests fit at 2,048 tokens, 16 at 8,192.", encoding="utf-8"
    )
    return folder


def test_check_day_dir_passes(tmp_path):
    report = check_day_dir(_write_day(tmp_path / "day37"))
    assert report.violations == [] and report.ok
    assert list(report.counts) == [
        "linkedin.md",
        "x-thread.md post 1/2",
        "x-thread.md post 2/2",
        "kv.alt.txt",
    ]
    assert report.counts["x-thread.md post 2/2"] == [Count("length", len("2/2 Second post ") + 2, 280, True)]
    assert [c.limit for c in report.counts["kv.alt.txt"]] == [1000, 250]


def test_check_day_dir_finds_every_problem(tmp_path):
    day = _write_day(tmp_path / "day37", second_post="2/2 " + "x" * 300)
    (day / "latency.png").write_bytes(b"\x89PNG")
    (day / "big.linkedin.alt.txt").write_text("y" * 251, encoding="utf-8")
    report = check_day_dir(day)
    assert [str(v).split(":")[0] for v in report.violations] == [
        "x-thread.md post 2",
        "big.linkedin.alt.txt",
        "latency.png",
    ]


def test_check_day_dir_missing_drafts_and_folder(tmp_path):
    report = check_day_dir(tmp_path)
    assert [(v.draft, v.rule) for v in report.violations] == [
        ("linkedin.md", "missing"),
        ("x-thread.md", "missing"),
    ]
    with pytest.raises(UserError):
        check_day_dir(tmp_path / "nope")


def test_check_day_dir_rejects_non_utf8(tmp_path):
    day = _write_day(tmp_path / "day37")
    (day / "linkedin.md").write_bytes(b"caf\xe9")
    with pytest.raises(UserError, match="UTF-8"):
        check_day_dir(day)


def test_cli_exit_codes(tmp_path, capsys):
    good = _write_day(tmp_path / "good")
    assert main(["check", str(good)]) == 0
    out = capsys.readouterr().out
    assert "x-thread.md post 2/2: 18/280 ok" in out
    assert "linkedin.md: 52/3000 ok · hook 13/210 ok · hashtags 3/5 ok" in out

    bad = _write_day(tmp_path / "bad", second_post="2/2 " + "\u2192" * 139)
    assert main(["check", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "x-thread.md post 2/2: 282/280 FAIL" in out
    assert "FAIL x-thread.md post 2: length: 282/280" in out

    assert main(["check", str(tmp_path / "missing")]) == 2
    assert "no such folder" in capsys.readouterr().err


# --- How the library is imported -----------------------------------------------------------------


def test_the_library_is_imported_in_parts_and_leaves_nothing_behind():
    """What the count needs is taken without the package's __init__ (whose emoji module needs
    pkg_resources, gone from setuptools 82 on, and compiles an expression of every emoji), and
    no twitter_text module is left in sys.modules for other code to find half imported."""
    from engine.platforms import _twitter_text

    before = set(sys.modules)
    parts = _twitter_text._import_parts()
    assert set(sys.modules) == before
    assert sorted(parts) == sorted(_twitter_text._PARTS) and "regexp.emoji" not in parts
    assert not [name for name in sys.modules if name.split(".")[0] == "twitter_text"]
    if importlib.util.find_spec("pkg_resources") is None:
        assert "pkg_resources" not in sys.modules


def test_importing_the_parts_leaves_an_imported_library_in_place(monkeypatch):
    """Code that imported twitter_text before the engine keeps its package: the stand-in the
    parts are imported under is taken out again, and the package put back."""
    from engine.platforms import _twitter_text

    spec = importlib.util.find_spec("twitter_text")
    assert spec is not None
    published = importlib.util.module_from_spec(spec)  # as a package that had been imported
    monkeypatch.setitem(sys.modules, "twitter_text", published)
    before = set(sys.modules)
    parts = _twitter_text._import_parts()
    assert sys.modules["twitter_text"] is published and set(sys.modules) == before
    assert parts["config"].config["version3"] == _twitter_text.V3


def test_check_takes_one_draft_file(tmp_path, capsys):
    from engine.cli import main as cli

    (tmp_path / "linkedin.md").write_text("short hook\n\nbody\n\n#A #B #C\n")
    (tmp_path / "x-thread.md").write_text("1/1 " + "word " * 70 + "\n")  # 354 > 280
    assert cli(["check", str(tmp_path / "linkedin.md")]) == 0
    out = capsys.readouterr().out
    assert "linkedin.md" in out and "x-thread.md" not in out
    assert cli(["check", str(tmp_path / "x-thread.md")]) == 1
    assert "FAIL x-thread.md post 1" in capsys.readouterr().out


def test_check_refuses_a_file_that_is_not_a_draft(tmp_path, capsys):
    from engine.cli import main as cli

    spec = tmp_path / "day37.yaml"
    spec.write_text("day: 37\n")
    assert cli(["check", str(spec)]) == 2
    assert capsys.readouterr().err.startswith(f"{spec}: not a draft")


def test_every_registered_platform_counts_its_own_example_as_worked_by_hand():
    from engine.platforms.registry import PLATFORMS

    from helpers import assert_platform_counts_its_example

    assert len(PLATFORMS.all()) >= 5  # the built-in five, found by discovery
    for platform in PLATFORMS.all():
        assert_platform_counts_its_example(platform)
