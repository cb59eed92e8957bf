"""Bluesky, Mastodon and Threads: each count against hand-worked cases and the platforms'
published rules, a day that opts in to all five platforms, and a day that does not.

Expected counts are worked out by hand from the rules each module's docstring cites (Bluesky's
lexicon and app, Mastodon's StatusLengthValidator, Meta's Threads API pages), and grapheme
counts are held to the Unicode emoji list of the ``emoji`` package, a library that does not
segment text at all: each fully-qualified emoji it lists is one grapheme.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import emoji
import pytest

from engine import pipeline
from engine.cli import main
from engine.errors import UserError
from engine.platforms import registry
from engine.platforms.bluesky import bluesky_length, check_bluesky_thread, short_url, shown_text
from engine.platforms.day_dir import check_day_dir
from engine.platforms.graphemes import grapheme_length
from engine.platforms.mastodon import check_mastodon_thread, countable_text, mastodon_length
from engine.platforms.posting import posted
from engine.platforms.reflow import reflow
from engine.platforms.thread import label, post_text, split_thread
from engine.platforms.threads import check_threads_thread, threads_length
from engine.spec import load_spec

from helpers import REPO

FAMILY = (
    "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"  # 👨‍👩‍👧‍👦: 7 code points, 25 UTF-8 bytes
)
FLAG = "\U0001f1f8\U0001f1ea"  # 🇸🇪: two regional indicators
WAVE_TONE = "\U0001f44b\U0001f3fd"  # 👋🏽: a hand and a skin tone
KEYCAP = "#\ufe0f\u20e3"  # #️⃣
E_ACUTE = "e\u0301"  # e and a combining acute accent
BOLD_B = "\U0001d41b"  # 𝐛, one astral letter
URL_100 = "https://example.com/" + "a" * 80
FIVE = ["linkedin", "x", "bluesky", "mastodon", "threads"]


def fully_qualified_emoji() -> list[str]:
    return [e for e, data in emoji.EMOJI_DATA.items() if data["status"] == emoji.STATUS["fully_qualified"]]


# ---- graphemes ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,expected",
    [
        ("", 0),
        ("abc", 3),
        (FAMILY, 1),
        (FLAG, 1),
        (WAVE_TONE, 1),
        (KEYCAP, 1),
        (E_ACUTE, 1),
        ("\r\n", 1),  # CR LF is one cluster (UAX #29 GB3)
        (f"Hi {WAVE_TONE} caf{E_ACUTE}", 9),  # H i ␠ 👋🏽 ␠ c a f é
        (FAMILY * 3 + FLAG * 2, 5),
    ],
)
def test_grapheme_length_hand_worked(text, expected):
    assert grapheme_length(text) == expected


def test_every_listed_emoji_is_one_grapheme():
    listed = fully_qualified_emoji()
    assert len(listed) > 3000  # the list is there, not an empty table
    assert [e for e in listed if grapheme_length(e) != 1] == []


# ---- Bluesky ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url,shown",
    [
        ("https://example.com", "example.com"),
        ("https://example.com/", "example.com"),  # a bare '/' path is dropped
        ("http://example.com/docs", "example.com/docs"),
        ("https://a.com/abcdefghijklmn", "a.com/abcdefghijklmn"),  # a 15-character path stays
        ("https://a.com/abcdefghijklmno", "a.com/abcdefghijkl..."),  # 16: first 13, then '...'
        # social-app's own repository: path '/bluesky-social/social-app', 26 characters.
        ("https://github.com/bluesky-social/social-app", "github.com/bluesky-soci..."),
        ("https://a.com/?q=1#top", "a.com?q=1#top"),  # query and fragment follow the path
        ("https://EXAMPLE.com:443/x", "example.com/x"),  # host lower-cased, default port dropped
        ("https://example.com:8080/x", "example.com:8080/x"),
        ("https://b\u00fccher.de/", "xn--bcher-kva.de"),  # an IDN host in its ASCII form
        ("https://a.com/\u00e9", "a.com/%C3%A9"),  # non-ASCII path percent-encoded
        ("http://[::1]:8080/x", "[::1]:8080/x"),
        ("ftp://example.com/file", "ftp://example.com/file"),  # not http(s): left as written
    ],
)
def test_short_url_as_the_app_prints_it(url, shown):
    assert short_url(url) == shown


def test_a_long_link_counts_as_its_short_form():
    # 100 characters of URL show as 'example.com' (11) + '/aaaaaaaaaaaa' (13) + '...' (3).
    assert len(URL_100) == 100
    assert bluesky_length(URL_100) == 27
    assert bluesky_length(f"read {URL_100} now") == 5 + 27 + 4


def test_link_detection_leaves_sentence_punctuation_outside():
    assert shown_text("see https://example.com/docs.") == "see example.com/docs."
    assert shown_text("(https://example.com/a)") == "(example.com/a)"
    # A ')' the link opened is the link's: Wikipedia's disambiguation pages.
    assert (
        shown_text("https://en.wikipedia.org/wiki/Fish_(disambiguation)")
        == "en.wikipedia.org/wiki/Fish_(d..."
    )
    # Only at a line's start or after a space or '(': inside a word it is no link.
    assert shown_text("xhttps://example.com/abcdefghijklmnopq") == "xhttps://example.com/abcdefghijklmnopq"
    # A link without a scheme has no URL to shorten and counts as written.
    repo = "github.com/anurag629/system-design-60-days"
    assert bluesky_length(repo) == 11 + 10 + 21  # "github.com/", "anurag629/", "system-design-60-days"


def test_bluesky_post_limits():
    counts, violations = check_bluesky_thread(["a" * 300])
    assert [(c.name, c.value, c.limit, c.ok) for c in counts[0]] == [("length", 300, 300, True)]
    assert violations == []
    _, violations = check_bluesky_thread(["a" * 301])
    assert [str(v) for v in violations] == [
        "bluesky.md post 1: length: 301/300 graphemes as Bluesky counts them, 1 over"
    ]
    # 300 family emoji are 300 graphemes: within the grapheme limit. Bytes: 120 families are
    # 3,000 UTF-8 bytes exactly; 121 are 3,025, over the record's 3,000.
    assert check_bluesky_thread([FAMILY * 120])[1] == []
    _, violations = check_bluesky_thread([FAMILY * 121])
    assert [(v.rule, v.detail) for v in violations] == [("bytes", "3025/3000 UTF-8 bytes, 25 over")]


def test_bluesky_thread_rules():
    five = "\n".join(f"![chart {i}](c{i}.png)" for i in range(5))
    counts, violations = check_bluesky_thread([f"1/2 five images\n{five}", "2/3 numbered wrong"])
    assert [c.name for c in counts[0]] == ["length", "images"]
    assert (counts[0][1].value, counts[0][1].limit, counts[0][1].ok) == (5, 4, False)
    assert [str(v) for v in violations] == [
        "bluesky.md post 1: images: 5 images, Bluesky allows 4 per post",
        "bluesky.md post 2: numbering: numbered 2/3, expected 2/2",
    ]
    assert [v.rule for v in check_bluesky_thread(["1/2 one", ""])[1]] == ["length", "numbering"]
    assert [v.rule for v in check_bluesky_thread([])[1]] == ["posts"]


# ---- Mastodon -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,expected",
    [
        (URL_100, 23),  # every URL 23, whatever its length
        ("https://example.com", 23),  # a short one too: 19 characters count 23
        ("@alice@example.social", 6),  # a remote mention counts as '@alice'
        ("hi @alice@example.social!", 10),  # 'hi @alice!'
        ("@alice", 6),  # a local mention as written
        ("@alice.b@example.social", 8),  # '@alice.b'
        ("bob@example.com", 15),  # an e-mail address is no mention and no URL
        ("https://mastodon.social/@Gargron", 23),  # a mention inside a URL is the URL's
        ("github.com/x", 12),  # no scheme: Mastodon's validator counts it as written
        (FAMILY, 1),
        (f"{FLAG} caf{E_ACUTE}", 6),
    ],
)
def test_mastodon_length_hand_worked(text, expected):
    assert mastodon_length(text) == expected


def test_mastodon_rewrites_only_urls_and_mentions():
    assert countable_text(f"see {URL_100} and @alice@example.social.") == "see " + "x" * 23 + " and @alice."


def test_mastodon_post_limits():
    assert check_mastodon_thread(["a" * 500])[1] == []
    _, violations = check_mastodon_thread(["a" * 501])
    assert [str(v) for v in violations] == [
        "mastodon.md post 1: length: 501/500 characters as Mastodon counts them, 1 over"
    ]
    # 477 characters and a 100-character URL: 477 + 23 = 500, within the limit.
    assert check_mastodon_thread(["a" * 476 + " " + URL_100])[0][0][0].value == 500
    five = "\n".join(f"![chart {i}](c{i}.png)" for i in range(5))
    assert [v.rule for v in check_mastodon_thread([f"five\n{five}"])[1]] == ["images"]


# ---- Threads ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,expected",
    [
        ("a" * 10, 10),
        ("\U0001f600", 4),  # 😀: an emoji counts its UTF-8 bytes
        (FAMILY, 25),  # four 4-byte people and three 3-byte ZWJs
        (FLAG, 8),
        (KEYCAP, 7),  # '#' 1, VS16 3, U+20E3 3
        ("\u00e9", 1),  # é precomposed: one UTF-16 unit
        (E_ACUTE, 2),  # e and its accent: two
        (BOLD_B, 2),  # an astral letter: a surrogate pair
        (URL_100, 100),  # a link as written
    ],
)
def test_threads_length_hand_worked(text, expected):
    assert threads_length(text) == expected


def test_threads_post_limits():
    assert check_threads_thread(["a" * 500])[1] == []
    _, violations = check_threads_thread(["a" * 501])
    assert [str(v) for v in violations] == [
        "threads.md post 1: length: 501/500 characters as Threads counts them, 1 over"
    ]
    five = " ".join(f"https://example.com/{i}" for i in range(5))
    assert check_threads_thread([five])[1] == []
    _, violations = check_threads_thread([five + " https://example.com/5"])
    assert [str(v) for v in violations] == ["threads.md post 1: links: 6 links, Threads allows 5 per post"]
    # The same link twice is one link.
    assert check_threads_thread([five + " https://example.com/0"])[1] == []


# ---- the registry -------------------------------------------------------------------------------


def test_the_new_platforms_are_registered_and_optional():
    assert [p.name for p in registry.platforms()] == FIVE
    assert [p.name for p in registry.required()] == ["linkedin", "x"]
    for name, draft in [("bluesky", "bluesky.md"), ("mastodon", "mastodon.md"), ("threads", "threads.md")]:
        platform = registry.get(name)
        assert (platform.draft, platform.thread, platform.required, platform.reflow_from) == (
            draft,
            True,
            False,
            "x",
        )
    assert [registry.get(n).alt_limit for n in ("bluesky", "mastodon", "threads")] == [2000, 1500, 1000]
    # One generated alt text still serves every platform: LinkedIn's 250 is the strictest.
    assert registry.strictest_alt_limit() == 250
    assert [p.name for p in posted(None)] == ["linkedin", "x"]
    assert [p.name for p in posted(["linkedin", "x", "threads"])] == ["linkedin", "x", "threads"]


# ---- the spec's platforms: ----------------------------------------------------------------------


def with_platforms(days: Path, line: str) -> Path:
    spec = days / "day37.yaml"
    spec.write_text(spec.read_text(encoding="utf-8") + line, encoding="utf-8")
    return spec


@pytest.mark.parametrize(
    "line,message",
    [
        (
            "platforms: [linkedin, x, bsky]\n",
            r"day37.yaml: platforms.2: must be one of 'linkedin', 'x', 'bluesky', 'mastodon' or 'threads', got 'bsky'",
        ),
        (
            "platforms: [bluesky]\n",
            r"day37.yaml: platforms: every day posts to linkedin and x: list them too \(platforms: \[linkedin, x, bluesky\]\)",
        ),
        ("platforms: [linkedin, x, x]\n", r"day37.yaml: platforms: 'x' is listed twice"),
        ("platforms: []\n", r"day37.yaml: platforms: "),
    ],
)
def test_a_bad_platforms_list_is_one_line_naming_the_field(days_copy, line, message):
    spec = with_platforms(days_copy, line)
    with pytest.raises(UserError, match=message):
        load_spec(spec)


def test_the_platforms_key_left_out_keeps_the_spec_record(built_out):
    results = json.loads((built_out / "day37" / "results.json").read_text(encoding="utf-8"))
    assert "platforms" not in results["inputs"]
    assert set(results["checks"]) == {"linkedin", "x", "media", "violations"}


# ---- a day that opts in -------------------------------------------------------------------------


def test_a_day_that_opts_in_builds_and_passes_all_five(days_copy, tmp_path, capsys):
    spec = with_platforms(days_copy, f"platforms: [{', '.join(FIVE)}]\n")
    report = pipeline.build(spec, tmp_path / "out")
    folder = report.folder
    drafts = {p.name: folder / p.draft for p in registry.platforms()}
    assert all(path.is_file() for path in drafts.values())

    # Each draft passes its own platform's rules, counted here by its own counter.
    for name, limit, count in [
        ("bluesky", 300, bluesky_length),
        ("mastodon", 500, mastodon_length),
        ("threads", 500, threads_length),
    ]:
        platform = registry.get(name)
        text = drafts[name].read_text(encoding="utf-8")
        posts = split_thread(text)
        assert platform.check_draft(text)[1] == []
        assert all(0 < count(post_text(p)) <= limit for p in posts)
        assert [p.split(" ", 1)[0] for p in posts] == [f"{k}/{len(posts)}" for k in range(1, len(posts) + 1)]
        # The X thread's words, re-flowed: none lost, added or moved; its images go along.
        x_posts = split_thread(drafts["x"].read_text(encoding="utf-8"))
        assert words_of(posts) == words_of(x_posts)
        assert re.findall(r"!\[[^\]]*\]\([^)]*\)", text) == re.findall(
            r"!\[[^\]]*\]\([^)]*\)", drafts["x"].read_text(encoding="utf-8")
        )

    # The build recorded each one's counts, and the folder check agrees and names each post.
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    assert set(results["checks"]) == {*FIVE, "media", "violations"}
    assert results["checks"]["violations"] == []
    assert results["inputs"]["platforms"] == FIVE
    folder_report = check_day_dir(folder)
    assert folder_report.ok
    for draft in ("bluesky.md", "mastodon.md", "threads.md"):
        assert any(key.startswith(f"{draft} post 1/") for key in folder_report.counts)
    # Each chart's alt text is held to every platform the day posts to, most lenient first.
    assert [c.limit for c in folder_report.counts["scoreboard.alt.txt"]] == [2000, 1500, 1000, 1000, 250]
    assert main(["check", str(folder)]) == 0
    assert "bluesky.md post 1/" in capsys.readouterr().out

    # The review page has a column for each, with its counts, copy buttons and image markers.
    page = (folder / "index.html").read_text(encoding="utf-8")
    for name in FIVE:
        assert f'<section id="{name}" class="{name}">' in page
    for name in ("bluesky", "mastodon", "threads"):
        column = page.split(f'<section id="{name}"', 1)[1].split("</section>", 1)[0]
        posts = split_thread(drafts[name].read_text(encoding="utf-8"))
        assert column.count(f'data-kind="{name}"') == len(posts)
        assert column.count('class="count ok" data-name="length"') == len(posts)
        assert 'src="scoreboard.png"' in column and "Attach to this post" in column


def words_of(posts: list[str]) -> list[str]:
    """A thread's words, its 'k/n' labels left out."""
    return [w for p in posts for w in re.sub(r"^\d+/\d+ ", "", p).split()]


def test_an_existing_days_check_is_unchanged(built_out):
    report = check_day_dir(built_out / "day37")
    assert report.ok
    assert not [key for key in report.counts if key.startswith(("bluesky", "mastodon", "threads"))]
    assert [c.name for c in report.counts["scoreboard.alt.txt"]] == ["alt text (x)", "alt text (linkedin)"]
    assert not any((built_out / "day37" / d).exists() for d in ("bluesky.md", "mastodon.md", "threads.md"))


# ---- one thread template, several platforms ------------------------------------------------------

# Ten paragraphs of 134 characters, told apart by their last word (a template types no digit):
# X (280 with its label) takes two a post, Bluesky (300) two, Mastodon and Threads (500) three.
NAMES = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"]
PARAGRAPH = "Every slot a finished request frees goes to the next waiting one, so the batch stays full and the GPU does useful work: {{ title }}"
THREAD = "\n\n".join(f"{PARAGRAPH}, {name}." for name in NAMES) + "\n"


def templates_for(tmp_path: Path, thread: str = THREAD) -> Path:
    root = tmp_path / "templates"
    (root / "day09").mkdir(parents=True)
    shutil.copy(REPO / "templates" / "_macros.j2", root / "_macros.j2")
    (root / "day09" / "linkedin.md.j2").write_text("{{ title }}\n\n#One #Two #Three\n")
    (root / "day09" / "x-thread.md.j2").write_text(thread)
    return root


def results_for(platform_names: list[str] | None) -> dict:
    inputs: dict = {"charts": []}
    if platform_names is not None:
        inputs["platforms"] = platform_names
    return {
        "day": 9,
        "title": "Batches",
        "series": {"name": "60 days of system design", "length": 60},
        "repository": "github.com/you/batches",
        "hashtags": ["One", "Two", "Three"],
        "inputs": inputs,
    }


def test_one_thread_template_feeds_every_thread_platform(tmp_path):
    root = templates_for(tmp_path)
    drafts = pipeline.render_drafts(results_for(FIVE), root)
    assert set(drafts) == {"linkedin.md", "x-thread.md", "bluesky.md", "mastodon.md", "threads.md"}
    threads = {name: split_thread(text) for name, text in drafts.items() if name != "linkedin.md"}
    # Each paragraph is whole in one post: X fits two a post, the 500-character platforms three.
    assert len(threads["x-thread.md"]) == 5
    assert len(threads["mastodon.md"]) == len(threads["threads.md"]) == 4
    for name, posts in threads.items():
        assert words_of(posts) == words_of(threads["x-thread.md"]), name
    for post in threads["mastodon.md"]:
        assert mastodon_length(post) <= 500
    # The same text, numbered afresh for each: what reflow makes of it under Bluesky's limits.
    rendered = "\n\n".join(f"{PARAGRAPH.replace('{{ title }}', 'Batches')}, {name}." for name in NAMES)
    expected = reflow(rendered, registry.get("bluesky").post_limits)
    assert len(expected) == 5
    assert threads["bluesky.md"] == [label(k, 5) + p for k, p in enumerate(expected, start=1)]


def test_a_template_of_its_own_wins_and_a_day_that_lists_nothing_gets_nothing_new(tmp_path):
    root = templates_for(tmp_path)
    (root / "day09" / "bluesky.md.j2").write_text("Only for Bluesky: {{ title }}\n")
    drafts = pipeline.render_drafts(results_for(["linkedin", "x", "bluesky"]), root)
    assert drafts["bluesky.md"] == "Only for Bluesky: Batches\n"  # one post: no "1/1"
    assert "mastodon.md" not in drafts
    (root / "day09" / "bluesky.md.j2").unlink()
    assert set(pipeline.render_drafts(results_for(None), root)) == {"linkedin.md", "x-thread.md"}


def test_a_reflowed_draft_that_breaks_its_rules_stops_the_build(tmp_path):
    # A bare link of 311 characters: X counts any link as 23, so one post; Bluesky counts a link
    # without a scheme as written, so the link goes to a post of its own, and since a word is
    # never cut, that post is over the limit ('2/2 ' and 311: 315) and the check says so.
    link = "github.com/" + "a" * 300
    root = templates_for(tmp_path, thread=f"Code: {link}\n")
    drafts = pipeline.render_drafts(results_for(["linkedin", "x", "bluesky"]), root)
    assert drafts["x-thread.md"] == f"Code: {link}\n"
    assert drafts["bluesky.md"] == f"1/2 Code:\n---\n2/2 {link}\n"
    with pytest.raises(pipeline.ChecksFailed) as failed:
        pipeline.check_drafts(drafts, [])
    assert failed.value.violations == [
        "bluesky.md post 2: length: 315/300 graphemes as Bluesky counts them, 15 over"
    ]


def test_a_listed_platform_with_nothing_to_render_is_one_line(tmp_path):
    registry.register_platform(
        registry.Platform(
            name="toy_single",
            title="Toy",
            draft="toy.md",
            thread=False,
            check=lambda text, draft: ([], []),
            alt_limit=1000,
            image_size="x",
            alt_tags=("toy",),
            example=registry.Example("a post that counts nothing", ()),
        )
    )
    try:
        with pytest.raises(UserError, match=r"no template for toy.md: the day posts to toy_single"):
            pipeline.render_drafts(results_for(["linkedin", "x", "toy_single"]), templates_for(tmp_path))
    finally:
        registry.unregister_platform("toy_single")
