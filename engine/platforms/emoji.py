"""Emoji sequences by their grammar, so emoji newer than a table still count once.

twitter-text v3 counts an emoji, however many code points it is built from, as weight 2. The
Python library finds emoji with a list from emoji-test.txt 12.0 (2019), so sequences added since
(❤️‍🔥, 🐦‍🔥, 🧑‍🧑‍🧒, 🫱🏻‍🫲🏿, a skin tone on 🫃 …) fall apart into their pieces and cost 4 to 11.

Instead of a newer list (which would age the same way), this module matches the *shape* of an
emoji sequence from UTS #51 (ED-17, emoji_sequence):

    keycap     [0-9#*] FE0F? 20E3
    flag       regional indicator × 2
    tag        1F3F4 tag-char+ E007F                       (England, Scotland, Wales)
    element    pictographic (skin-tone modifier | FE0F)?
    zwj        element (200D element)+

A *pictographic* code point is one with Unicode's Extended_Pictographic property; the ranges below
are that property from emoji-data.txt (stable since Unicode 11, which pre-assigned whole blocks
to future emoji). tests/test_platforms.py checks them against every emoji in the library's
emoji-test.txt.

Only sequences of two or more code points are matched here: a lone code point is left to the
library's own rule, so plain text (©, →, ×) keeps the weight twitter-text gives it.
"""
from __future__ import annotations

import re

#: Extended_Pictographic (emoji-data.txt), as code point ranges.
PICTOGRAPHIC_RANGES: tuple[tuple[int, int], ...] = (
    (0x00A9, 0x00A9), (0x00AE, 0x00AE), (0x203C, 0x203C), (0x2049, 0x2049),
    (0x2122, 0x2122), (0x2139, 0x2139), (0x2194, 0x2199), (0x21A9, 0x21AA),
    (0x231A, 0x231B), (0x2328, 0x2328), (0x2388, 0x2388), (0x23CF, 0x23CF),
    (0x23E9, 0x23F3), (0x23F8, 0x23FA), (0x24C2, 0x24C2), (0x25AA, 0x25AB),
    (0x25B6, 0x25B6), (0x25C0, 0x25C0), (0x25FB, 0x25FE), (0x2600, 0x2605),
    (0x2607, 0x2612), (0x2614, 0x2685), (0x2690, 0x2705), (0x2708, 0x2712),
    (0x2714, 0x2714), (0x2716, 0x2716), (0x271D, 0x271D), (0x2721, 0x2721),
    (0x2728, 0x2728), (0x2733, 0x2734), (0x2744, 0x2744), (0x2747, 0x2747),
    (0x274C, 0x274C), (0x274E, 0x274E), (0x2753, 0x2755), (0x2757, 0x2757),
    (0x2763, 0x2767), (0x2795, 0x2797), (0x27A1, 0x27A1), (0x27B0, 0x27B0),
    (0x27BF, 0x27BF), (0x2934, 0x2935), (0x2B05, 0x2B07), (0x2B1B, 0x2B1C),
    (0x2B50, 0x2B50), (0x2B55, 0x2B55), (0x3030, 0x3030), (0x303D, 0x303D),
    (0x3297, 0x3297), (0x3299, 0x3299),
    (0x1F000, 0x1F0FF), (0x1F10D, 0x1F10F), (0x1F12F, 0x1F12F), (0x1F16C, 0x1F171),
    (0x1F17E, 0x1F17F), (0x1F18E, 0x1F18E), (0x1F191, 0x1F19A), (0x1F1AD, 0x1F1E5),
    (0x1F201, 0x1F20F), (0x1F21A, 0x1F21A), (0x1F22F, 0x1F22F), (0x1F232, 0x1F23A),
    (0x1F23C, 0x1F23F), (0x1F249, 0x1F3FA), (0x1F400, 0x1F53D), (0x1F546, 0x1F64F),
    (0x1F680, 0x1F6FF), (0x1F774, 0x1F77F), (0x1F7D5, 0x1F7FF), (0x1F80C, 0x1F80F),
    (0x1F848, 0x1F84F), (0x1F85A, 0x1F85F), (0x1F888, 0x1F88F), (0x1F8AE, 0x1F8FF),
    (0x1F90C, 0x1F93A), (0x1F93C, 0x1F945), (0x1F947, 0x1FAFF), (0x1FC00, 0x1FFFD),
)


def _char_class(ranges: tuple[tuple[int, int], ...]) -> str:
    parts = (re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)
    return "[" + "".join(parts) + "]"


_PICT = _char_class(PICTOGRAPHIC_RANGES)
_MODIFIER = "[\U0001F3FB-\U0001F3FF]"
_VS16 = "\uFE0F"
_ZWJ = "\u200D"
_REGIONAL = "[\U0001F1E6-\U0001F1FF]"
_KEYCAP = f"[0-9#*]{_VS16}?\u20E3"
_FLAG = f"{_REGIONAL}{_REGIONAL}"
_TAG = "\U0001F3F4[\U000E0020-\U000E007E]+\U000E007F"
_ELEMENT = f"(?:{_PICT}(?:{_MODIFIER}|{_VS16})?|{_KEYCAP}|{_FLAG})"

#: One emoji made of two or more code points. Alternatives are tried in order, longest shapes
#: first, because Python's ``re`` takes the first alternative that matches.
EMOJI_SEQUENCE = re.compile(
    f"{_ELEMENT}(?:{_ZWJ}{_ELEMENT})+"
    f"|{_TAG}"
    f"|{_KEYCAP}"
    f"|{_FLAG}"
    f"|{_PICT}(?:{_MODIFIER}|{_VS16})"
)


def is_pictographic(char: str) -> bool:
    """Whether one code point has the Extended_Pictographic property (per the ranges above)."""
    code = ord(char)
    return any(a <= code <= b for a, b in PICTOGRAPHIC_RANGES)
