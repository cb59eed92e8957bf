"""Graphemes: what a reader sees as one character, as Unicode's UAX #29 segments text.

Bluesky and Mastodon both count a post in extended grapheme clusters (Bluesky's lexicon says
``maxGraphemes``; Mastodon's StatusLengthValidator walks ``each_grapheme_cluster``), so an emoji
built of several code points joined by ZWJ, a flag of two regional indicators, or a letter with
combining accents is one. The segmentation is the ``regex`` library's ``\\X``, which follows the
Unicode data it ships, rather than a hand-kept list of joining rules.
"""

from __future__ import annotations

import regex

_GRAPHEME = regex.compile(r"\X")
# Emoji by Unicode's own property (UTS #51 Extended_Pictographic), plus what makes an emoji of
# a plain character: the regional indicators that pair into flags, the keycap mark (#️⃣ is '#',
# VS16 and U+20E3) and the emoji-presentation selector VS16. Used where a platform counts emoji
# differently from other characters.
_EMOJI = regex.compile(r"[\p{Extended_Pictographic}\p{Regional_Indicator}\u20e3\ufe0f]")


def graphemes(text: str) -> list[str]:
    """The text's extended grapheme clusters, in order."""
    return _GRAPHEME.findall(text)


def grapheme_length(text: str) -> int:
    """How many graphemes the text has."""
    return len(_GRAPHEME.findall(text))


def is_emoji(grapheme: str) -> bool:
    """Whether a grapheme is (or holds) an emoji."""
    return _EMOJI.search(grapheme) is not None
