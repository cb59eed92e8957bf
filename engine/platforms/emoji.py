"""Which runs of text X counts as one emoji (weight 2), as the official twitter-text does, plus
one class it does not know yet.

The official library (twitter-text 3.1.0, JavaScript) finds emoji with the regular expression of
twemoji-parser 11.0.2, over UTF-16 code units. That expression is stored verbatim in
``engine/data/twemoji-parser-11.0.2.regex`` (MIT, Copyright Twitter Inc.; see the README there)
and runs here over the same UTF-16 units, so Python's ``re``, a backtracking engine with the same
leftmost-first alternation as JavaScript's, matches exactly the same runs. Counting anything the
official expression does not match as one emoji would count lower than the official library,
and a post this check passes could then be refused by X.

The one exception, with a published source: *standard* emoji sequences newer than twemoji 11
(Emoji 12.0 onward: 🧑‍🤝‍🧑, ❤️‍🔥, 🐦‍🔥, 🫱🏻‍🫲🏿 …). X's own documentation says "All emojis count
as 2 characters, regardless of complexity" and shows ZWJ and skin-tone sequences counting 2
(https://docs.x.com/fundamentals/counting-characters), and X's clients use current twemoji. The
list of standard sequences is the Unicode RGI list as the ``emoji`` package ships it (fully and
minimally qualified entries of two or more code points); only those that twemoji 11 does not
match whole are added. Nothing else (regional-indicator pairs that are not flags, ZWJ between
arbitrary symbols, skin tones on bases that take none, FE0F after text) is shortened.
"""

from __future__ import annotations

import importlib.resources
import re
from functools import lru_cache

TWEMOJI_REGEX_FILE = "twemoji-parser-11.0.2.regex"


def utf16_units(text: str) -> str:
    """The text as one Python character per UTF-16 code unit (astral code points become their
    two surrogates), the string the official JavaScript library works on."""
    if text.isascii() or max(text) < "\U00010000":
        return text
    data = text.encode("utf-16-le", "surrogatepass")
    return "".join(map(chr, memoryview(data).cast("H")))


@lru_cache(maxsize=1)
def twemoji() -> re.Pattern[str]:
    """The official library's emoji expression, over UTF-16 units."""
    source = (  # the engine's packaged data, not an input
        importlib.resources.files("engine").joinpath("data", TWEMOJI_REGEX_FILE).read_text(encoding="ascii")
    )
    return re.compile(source.strip())


@lru_cache(maxsize=1)
def newer_standard_sequences() -> tuple[str, ...]:
    """Standard (RGI) emoji sequences of two or more code points that twemoji 11 does not
    match whole, longest first, each as UTF-16 units. The emoji package is imported here: its
    import reads a table of every emoji (20 ms), which a build needs only for an X draft with
    text outside ASCII."""
    import emoji as emoji_data

    qualified = {emoji_data.STATUS["fully_qualified"], emoji_data.STATUS["minimally_qualified"]}
    pattern = twemoji()
    found = set()
    for text, info in emoji_data.EMOJI_DATA.items():
        if len(text) < 2 or info.get("status") not in qualified:
            continue
        units = utf16_units(text)
        if not pattern.fullmatch(units):
            found.add(units)
    return tuple(sorted(found, key=lambda s: (-len(s), s)))


@lru_cache(maxsize=1)
def newer_pattern() -> re.Pattern[str]:
    """The newer standard sequences as one expression, longest first (over UTF-16 units)."""
    return re.compile("|".join(re.escape(s) for s in newer_standard_sequences()))
