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

#: Extended_Pictographic (emoji-data.txt), as code point ranges: kept for the tests and for
#: anyone asking whether a code point is pictographic; counting does not use it.
PICTOGRAPHIC_RANGES: tuple[tuple[int, int], ...] = (
    (0x00A9, 0x00A9),
    (0x00AE, 0x00AE),
    (0x203C, 0x203C),
    (0x2049, 0x2049),
    (0x2122, 0x2122),
    (0x2139, 0x2139),
    (0x2194, 0x2199),
    (0x21A9, 0x21AA),
    (0x231A, 0x231B),
    (0x2328, 0x2328),
    (0x2388, 0x2388),
    (0x23CF, 0x23CF),
    (0x23E9, 0x23F3),
    (0x23F8, 0x23FA),
    (0x24C2, 0x24C2),
    (0x25AA, 0x25AB),
    (0x25B6, 0x25B6),
    (0x25C0, 0x25C0),
    (0x25FB, 0x25FE),
    (0x2600, 0x2605),
    (0x2607, 0x2612),
    (0x2614, 0x2685),
    (0x2690, 0x2705),
    (0x2708, 0x2712),
    (0x2714, 0x2714),
    (0x2716, 0x2716),
    (0x271D, 0x271D),
    (0x2721, 0x2721),
    (0x2728, 0x2728),
    (0x2733, 0x2734),
    (0x2744, 0x2744),
    (0x2747, 0x2747),
    (0x274C, 0x274C),
    (0x274E, 0x274E),
    (0x2753, 0x2755),
    (0x2757, 0x2757),
    (0x2763, 0x2767),
    (0x2795, 0x2797),
    (0x27A1, 0x27A1),
    (0x27B0, 0x27B0),
    (0x27BF, 0x27BF),
    (0x2934, 0x2935),
    (0x2B05, 0x2B07),
    (0x2B1B, 0x2B1C),
    (0x2B50, 0x2B50),
    (0x2B55, 0x2B55),
    (0x3030, 0x3030),
    (0x303D, 0x303D),
    (0x3297, 0x3297),
    (0x3299, 0x3299),
    (0x1F000, 0x1F0FF),
    (0x1F10D, 0x1F10F),
    (0x1F12F, 0x1F12F),
    (0x1F16C, 0x1F171),
    (0x1F17E, 0x1F17F),
    (0x1F18E, 0x1F18E),
    (0x1F191, 0x1F19A),
    (0x1F1AD, 0x1F1E5),
    (0x1F201, 0x1F20F),
    (0x1F21A, 0x1F21A),
    (0x1F22F, 0x1F22F),
    (0x1F232, 0x1F23A),
    (0x1F23C, 0x1F23F),
    (0x1F249, 0x1F3FA),
    (0x1F400, 0x1F53D),
    (0x1F546, 0x1F64F),
    (0x1F680, 0x1F6FF),
    (0x1F774, 0x1F77F),
    (0x1F7D5, 0x1F7FF),
    (0x1F80C, 0x1F80F),
    (0x1F848, 0x1F84F),
    (0x1F85A, 0x1F85F),
    (0x1F888, 0x1F88F),
    (0x1F8AE, 0x1F8FF),
    (0x1F90C, 0x1F93A),
    (0x1F93C, 0x1F945),
    (0x1F947, 0x1FAFF),
    (0x1FC00, 0x1FFFD),
)

TWEMOJI_REGEX_FILE = "twemoji-parser-11.0.2.regex"


def is_pictographic(char: str) -> bool:
    """Whether one code point has the Extended_Pictographic property (per the ranges above)."""
    code = ord(char)
    return any(a <= code <= b for a, b in PICTOGRAPHIC_RANGES)


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
    source = (
        importlib.resources.files("engine").joinpath("data", TWEMOJI_REGEX_FILE).read_text(encoding="ascii")
    )
    return re.compile(source.strip())


@lru_cache(maxsize=1)
def newer_standard_sequences() -> tuple[str, ...]:
    """Standard (RGI) emoji sequences of two or more code points that twemoji 11 does not
    match whole, longest first, each as UTF-16 units."""
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
