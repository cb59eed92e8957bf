"""LinkedIn rules: 3,000 UTF-16 units, a hook above the fold, 3–5 hashtags at the end.

LinkedIn does not publish how it counts; UTF-16 code units are the safe reading (the web
composer is JavaScript, whose string length is UTF-16), so an emoji or a 𝐛𝐨𝐥𝐝 letter costs 2.

The fold: the feed shows about 210 characters, about three lines, then "…see more". A line break
ends its line, so the rest of that line is spent too. We model the feed as ``FOLD_LINES`` lines
of ``fold / FOLD_LINES`` units each; the hook (everything before the first blank line) has to
end inside that box.
"""

from __future__ import annotations

import math
import re

from engine.platforms.registry import Example, Platform, register_platform
from engine.platforms.rules import Count, Violation

MAX_LENGTH = 3000
FOLD = 210
FOLD_LINES = 3
HASHTAGS = (3, 5)

# A hashtag: '#' then word characters with at least one letter (#100DaysOfCode yes, #1 no), not
# inside a word or a URL (C#, page#top, example.com/#top).
_HASHTAG = re.compile(r"(?<![\w#&/])#(?=\w*[^\W\d_])\w+")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def utf16_length(text: str) -> int:
    """Length in UTF-16 code units: what LinkedIn's 3,000 limit is counted in."""
    return len(text.encode("utf-16-le")) // 2


def _lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def hook(text: str) -> str:
    """The opening paragraph: the text before the first blank line (leading blank lines skipped)."""
    body = "\n".join(_lines(text)).lstrip("\n \t")
    return _BLANK_LINE.split(body, maxsplit=1)[0].rstrip()


def feed_position(text: str, fold: int = FOLD) -> int:
    """Where ``text`` ends in the collapsed feed, in characters, counting each line break as the
    rest of its line: a 10-character line followed by a break uses a whole line of fold/3."""
    width = max(1, fold // FOLD_LINES)
    lines = _lines(text)
    used = sum(max(1, math.ceil(utf16_length(line) / width)) * width for line in lines[:-1])
    return used + utf16_length(lines[-1])


def fold_index(text: str, fold: int = FOLD) -> int:
    """How many characters of ``text`` the collapsed feed shows before "…see more".

    The feed position only grows as text is added, so the cut is found by bisection.
    """
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if feed_position(text[:mid], fold) <= fold:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _closing_paragraph(text: str) -> tuple[str, str]:
    """(everything before the last paragraph, the last paragraph)."""
    body = "\n".join(_lines(text)).rstrip()
    separators = list(_BLANK_LINE.finditer(body))
    if not separators:
        return "", body.strip()
    cut = separators[-1]
    return body[: cut.start()], body[cut.end() :].strip()


def trailing_hashtags(text: str) -> list[str]:
    """The hashtags of the closing paragraph, when that paragraph is nothing but hashtags."""
    words = _closing_paragraph(text)[1].split()
    return words if words and all(_HASHTAG.fullmatch(w) for w in words) else []


def check_linkedin(
    text: str,
    *,
    draft: str = "linkedin.md",
    fold: int = FOLD,
    limit: int = MAX_LENGTH,
    hashtags: tuple[int, int] = HASHTAGS,
) -> tuple[list[Count], list[Violation]]:
    """The post's counts (length, hook, hashtags) and every broken rule."""
    violations: list[Violation] = []

    def fail(rule: str, detail: str) -> None:
        violations.append(Violation(draft, None, rule, detail))

    length = utf16_length(text)
    if not text.strip():
        fail("length", "the post is empty")
    elif length > limit:
        fail("length", f"{length}/{limit} UTF-16 units, {length - limit} over")

    opening = hook(text)
    position = feed_position(opening, fold)
    if position > fold:
        fail(
            "fold",
            f"the hook (text before the first blank line) ends at {position}, "
            f"past the fold at {fold}; shorten it or break it earlier",
        )

    low, high = hashtags
    tags = trailing_hashtags(text)
    if not low <= len(tags) <= high:
        fail("hashtags", f"{len(tags)} hashtags in the closing paragraph, want {low}–{high}")
    body = _closing_paragraph(text)[0] if tags else text
    stray = [m.group() for m in _HASHTAG.finditer(body)]
    if stray:
        fail("hashtags", f"{', '.join(stray)} before the end; hashtags belong in the closing paragraph")

    counts = [
        Count("length", length, limit, bool(text.strip()) and length <= limit),
        Count("hook", position, fold, position <= fold),
        Count("hashtags", len(tags), high, low <= len(tags) <= high and not stray),
    ]
    return counts, violations


LINKEDIN = register_platform(
    Platform(
        required=True,
        name="linkedin",
        title="LinkedIn",
        draft="linkedin.md",
        thread=False,
        check=lambda text, draft: check_linkedin(text, draft=draft),
        # Undocumented (quoted anywhere from 120 to 1,000): 250 is the safe reading.
        alt_limit=250,
        # The feed gives a portrait image the most room on a phone (4:5, 1080 x 1350).
        image_size="linkedin_portrait",
        alt_tags=("linkedin", "li"),
        example=Example(
            # 33 + two line breaks + 13 + 1 + 4 + 1 + 7 UTF-16 units
            "Day 1: a queue in front of a GPU.\n\n#systemdesign #gpu #queues",
            (61,),
        ),
        fold_at=fold_index,
        order=10,
    )
)
