"""X (Twitter) rules: weighted length per twitter-text v3, and what makes a thread postable.

The count is the official twitter-text 3.1.0 (JavaScript) ``parseTweet``, ported step for step:
NFC first; each URL costs 23 whatever its length; each emoji the official expression finds
costs 2; every other code point costs 1 inside the configured ranges (Latin, Cyrillic, Hebrew,
Arabic, Devanagari …, U+2000–200D, U+2010–201F, U+2032–2037) and 2 outside them (CJK, `→`, `−`,
U+202F, astral code points …). U+FFFE, U+FEFF and U+FFFF make a post invalid. The walk is over
UTF-16 code units, as the official library's, so an emoji or a URL starting inside a run the
library has already counted is never counted twice.

tests/data/twitter-text/official-vectors.json holds thousands of random posts from the hard
classes with the official library's answer; the counter equals it on every one, except the one
class engine.platforms.emoji justifies with X's documentation (standard emoji newer than the
library's table count 2).
"""

from __future__ import annotations

import re
import unicodedata

from engine.platforms._twitter_text import V3, invalid_chars
from engine.platforms.emoji import newer_pattern, twemoji, utf16_units
from engine.platforms.reflow import PostLimits
from engine.platforms.registry import Example, Platform, register_platform
from engine.platforms.rules import Count, Violation
from engine.platforms.thread import images_in, is_empty, numbering_problem, post_text
from engine.platforms.urls import extract_urls

MAX_WEIGHTED_LENGTH: int = V3["max_weighted_tweet_length"]  # 280
MAX_IMAGES_PER_POST = 4

_SCALE: int = V3["scale"]
_URL_WEIGHT: int = V3["transformed_url_length"] * _SCALE
_EMOJI_WEIGHT: int = V3["default_weight"]
_DEFAULT_WEIGHT: int = V3["default_weight"]
_RANGES: tuple[tuple[int, int, int], ...] = tuple((r["start"], r["end"], r["weight"]) for r in V3["ranges"])


def _normalise(text: str) -> str:
    """What X counts: NFC, with CRLF and CR as a single line break."""
    return re.sub(r"\r\n|\r", "\n", unicodedata.normalize("NFC", text))


def _ascii_weight() -> int | None:
    """The one weight every ASCII unit has in the configured ranges (None if they differ)."""
    weights = {_unit_weight(unit) for unit in range(128)}
    return weights.pop() if len(weights) == 1 else None


def _unit_weight(unit: int) -> int:
    for start, end, weight in _RANGES:
        if start <= unit <= end:
            return weight
    return _DEFAULT_WEIGHT


_ASCII_WEIGHT = _ascii_weight()
# A URL's host ends in a dot and a top-level domain, which starts with a letter (punycode's
# xn-- too): ASCII text without a dot before a letter holds none, and the finder is not run.
_MAY_HOLD_URL = re.compile(r"\.[A-Za-z]")


def x_weighted_length(text: str, *, newer_emoji: bool = True) -> int:
    """X's count of a post, the number compared with 280.

    ``newer_emoji=False`` counts exactly as the official library (standard emoji newer than its
    table fall apart into their pieces); the tests compare both forms with its vectors.
    """
    text = _normalise(text)
    units = utf16_units(text)
    if len(units) != len(text):  # code point → UTF-16 index, for the URL finder's answers
        offsets = [0]
        for char in text:
            offsets.append(offsets[-1] + (2 if ord(char) > 0xFFFF else 1))
    else:
        offsets = None
    ascii_only = units.isascii()
    url_end = {}
    if not ascii_only or _MAY_HOLD_URL.search(text):
        for start, end in extract_urls(text):
            if offsets is not None:
                start, end = offsets[start], offsets[end]
            url_end[start] = end
    if ascii_only and _ASCII_WEIGHT is not None:
        # No emoji is all ASCII, and every ASCII unit weighs the same: outside the URLs, which
        # do not overlap, the walk below would add that weight once a unit.
        covered = sum(end - start for start, end in url_end.items())
        return (len(url_end) * _URL_WEIGHT + (len(units) - covered) * _ASCII_WEIGHT) // _SCALE
    emoji_end = {m.start(): m.end() for m in twemoji().finditer(units)}
    newer = newer_pattern() if newer_emoji and not ascii_only else None
    total, i, n = 0, 0, len(units)
    while i < n:
        if i in url_end:
            total, i = total + _URL_WEIGHT, url_end[i]
            continue
        end = emoji_end.get(i, i)
        if newer is not None and (match := newer.match(units, i)) and match.end() > end:
            end = match.end()  # a standard emoji newer than the official table: one emoji
        if end > i:
            total, i = total + _EMOJI_WEIGHT, end
        else:
            unit = ord(units[i])
            if 0xD800 <= unit <= 0xDBFF and i + 1 < n and 0xDC00 <= ord(units[i + 1]) <= 0xDFFF:
                i += 1  # as the official library: a surrogate pair weighs as its low half (2)
                unit = ord(units[i])
            total, i = total + _unit_weight(unit), i + 1
    return total // _SCALE


def invalid_characters(text: str) -> list[str]:
    """The characters X refuses (U+FFFE, U+FEFF, U+FFFF), as 'U+FEFF', in order of appearance."""
    return [f"U+{ord(m.group()):04X}" for m in invalid_chars.finditer(_normalise(text))]


def x_post_valid(text: str) -> bool:
    """Whether X accepts the text as one post: 1..280 weighted and no invalid character."""
    return 0 < x_weighted_length(text) <= MAX_WEIGHTED_LENGTH and not invalid_characters(text)


def check_x_thread(
    posts: list[str],
    *,
    draft: str = "x-thread.md",
    images_per_post: dict[int, int] | None = None,
) -> tuple[list[list[Count]], list[Violation]]:
    """Each post's counts, and every broken rule, for a thread given as its posts.

    Rules: each post weighs 1..280 as X counts it (Markdown image references are attachments and
    not counted), holds no invalid character, carries its 'k/n' marker (k its position, n the
    number of posts; not needed for a single post), and attaches at most 4 images. Images are
    counted from the Markdown unless ``images_per_post`` (1-based post → images) says otherwise.
    """
    if not posts:
        return [], [Violation(draft, None, "posts", "the thread has no posts")]
    total = len(posts)
    counts: list[list[Count]] = []
    violations: list[Violation] = []
    for k, post in enumerate(posts, start=1):
        text = post_text(post)
        length = x_weighted_length(text)
        bad_chars = invalid_characters(text)
        images = (images_per_post or {}).get(k, images_in(post))
        fits = not is_empty(length, images) and length <= MAX_WEIGHTED_LENGTH and not bad_chars
        post_counts = [Count("length", length, MAX_WEIGHTED_LENGTH, fits)]
        if images or images_per_post is not None:
            post_counts.append(Count("images", images, MAX_IMAGES_PER_POST, images <= MAX_IMAGES_PER_POST))
        counts.append(post_counts)

        def fail(rule: str, detail: str, post: int = k) -> None:
            violations.append(Violation(draft, post, rule, detail))

        if is_empty(length, images):
            fail("length", "the post is empty")
        elif length > MAX_WEIGHTED_LENGTH:
            fail(
                "length",
                f"{length}/{MAX_WEIGHTED_LENGTH} as X counts it, {length - MAX_WEIGHTED_LENGTH} over",
            )
        if bad_chars:
            fail("characters", f"X rejects {', '.join(dict.fromkeys(bad_chars))} in a post")
        if images > MAX_IMAGES_PER_POST:
            fail("images", f"{images} images, X allows {MAX_IMAGES_PER_POST} per post")
        problem = numbering_problem(text, k, total)
        if problem is not None:
            fail("numbering", problem)
    return counts, violations


X = register_platform(
    Platform(
        required=True,
        name="x",
        title="X thread",
        draft="x-thread.md",
        thread=True,
        check=lambda posts, draft: check_x_thread(posts, draft=draft),
        alt_limit=1000,  # X's documented limit for an image description
        image_size="x",
        alt_tags=("x", "twitter"),
        example=Example(
            # 4 + 33 weighted characters; then 4 + 9, and the link counts as 23 whatever its length
            "1/2 Day 1: a queue in front of a GPU.\n---\n2/2 The lab: https://github.com/anurag629/system-design-60-days",
            (37, 36),
        ),
        order=20,
        post_limits=PostLimits(x_weighted_length, MAX_WEIGHTED_LENGTH, MAX_IMAGES_PER_POST),
    )
)
