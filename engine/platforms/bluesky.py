"""Bluesky rules: 300 graphemes a post, a link counted as the app shows it, 4 images a post.

The limits, with where they are stated:

- A post's text is at most 300 graphemes and 3,000 UTF-8 bytes: the record lexicon
  ``app.bsky.feed.post``, ``text: {maxGraphemes: 300, maxLength: 3000}``
  (https://github.com/bluesky-social/atproto/blob/main/lexicons/app/bsky/feed/post.json; a
  lexicon's ``maxLength`` is in UTF-8 bytes, https://atproto.com/specs/lexicon). Graphemes are
  UAX #29 extended grapheme clusters (engine.platforms.graphemes): an emoji ZWJ sequence is 1.
- At most 4 images a post: ``app.bsky.embed.images``, ``images: {maxLength: 4}``
  (lexicons/app/bsky/embed/images.json in the same repository).
- Alt text at most 2,000 characters: the app's ``MAX_ALT_TEXT = 2000``
  (https://github.com/bluesky-social/social-app, src/lib/constants.ts).

How a link counts. A draft writes a link as plain URL text. The Bluesky app finds links the way
``@atproto/api``'s ``detectFacets`` does (a word starting ``http://`` or ``https://`` after the
start of a line, a space or '('; one trailing ``. , ; : ! ?`` is the sentence's, and so is a
trailing ')' when the link holds no '('), and before it counts or posts the text it replaces each
such link by its short form (``shortenLinks`` with ``toShortUrl``, social-app
src/lib/strings/rich-text-manip.ts and src/lib/strings/url-helpers.ts): the host, then the path
with its query and fragment (a bare '/' path dropped), cut to its first 13 characters and '...'
when longer than 15. The record keeps that short text, with the full address in the link's
facet, so the short text is what the 300 holds. A link written without a scheme
(``github.com/owner/repo``) has no URL to shorten and counts as written. The short form is built
as a WHATWG URL prints it: host lower-cased, internationalised names in their ``xn--`` form, a
default port dropped, non-ASCII characters of the path, query and fragment percent-encoded.
"""

from __future__ import annotations

import re
from urllib.parse import quote, urlsplit

from engine.platforms.counted_thread import ThreadRules, check_counted_thread
from engine.platforms.graphemes import grapheme_length
from engine.platforms.reflow import PostLimits
from engine.platforms.registry import Example, Platform, register_platform
from engine.platforms.rules import Count, Violation

MAX_GRAPHEMES = 300
MAX_BYTES = 3000
MAX_IMAGES_PER_POST = 4
MAX_ALT_TEXT = 2000

# A link as the app detects one: http(s):// and every non-space after it, at a line's start or
# after a space or '('.
_LINK = re.compile(r"(?:^|(?<=[\s(]))https?://\S+", re.IGNORECASE | re.MULTILINE)
_SENTENCE_PUNCTUATION = ".,;:!?"
_DEFAULT_PORTS = {"http": 80, "https": 443}
# What a WHATWG URL leaves as it is in a path, query or fragment: printable ASCII (the rest is
# percent-encoded; a space cannot occur, a link ends at one).
_ASCII_PRINTABLE = "".join(chr(c) for c in range(0x21, 0x7F))
_SHORT_PATH, _SHORT_KEEP = 15, 13


def _link_end(url: str) -> str:
    """The link without the punctuation the app leaves to the sentence."""
    if url and url[-1] in _SENTENCE_PUNCTUATION:
        url = url[:-1]
    if url.endswith(")") and "(" not in url:
        url = url[:-1]
    return url


def short_url(url: str) -> str:
    """The text the app shows (and posts) for a link: host + path, long paths cut to 13 + '...'.
    A URL that does not parse stays as written, as in the app."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").encode("idna").decode("ascii")
        port = parts.port
    except (ValueError, UnicodeError):
        return url
    if parts.scheme.lower() not in _DEFAULT_PORTS or not host:
        return url
    if ":" in host:  # an IPv6 address, bracketed as a URL prints it
        host = f"[{host}]"
    if port is not None and port != _DEFAULT_PORTS[parts.scheme.lower()]:
        host = f"{host}:{port}"
    path = "" if parts.path in ("", "/") else parts.path
    path += f"?{parts.query}" if parts.query else ""
    path += f"#{parts.fragment}" if parts.fragment else ""
    path = quote(path, safe=_ASCII_PRINTABLE)
    if len(path) > _SHORT_PATH:
        return host + path[:_SHORT_KEEP] + "..."
    return host + path


def shown_text(text: str) -> str:
    """The post as the app counts it: every detected link replaced by its short form."""

    def shorten(match: re.Match[str]) -> str:
        url = _link_end(match.group())
        return short_url(url) + match.group()[len(url) :]

    return _LINK.sub(shorten, text)


def bluesky_length(text: str) -> int:
    """Bluesky's count of a post: graphemes of the text as shown, links shortened."""
    return grapheme_length(shown_text(text))


def _byte_cap(text: str) -> list[tuple[str, str]]:
    size = len(shown_text(text).encode("utf-8"))
    if size > MAX_BYTES:
        return [("bytes", f"{size}/{MAX_BYTES} UTF-8 bytes, {size - MAX_BYTES} over")]
    return []


RULES = ThreadRules(
    platform="Bluesky",
    length=bluesky_length,
    limit=MAX_GRAPHEMES,
    unit="graphemes",
    images=MAX_IMAGES_PER_POST,
    extra=_byte_cap,
)


def check_bluesky_thread(
    posts: list[str], *, draft: str = "bluesky.md"
) -> tuple[list[list[Count]], list[Violation]]:
    """Each post's counts and every broken rule (engine.platforms.counted_thread)."""
    return check_counted_thread(posts, RULES, draft=draft)


BLUESKY = register_platform(
    Platform(
        name="bluesky",
        title="Bluesky thread",
        draft="bluesky.md",
        thread=True,
        check=lambda posts, draft: check_bluesky_thread(posts, draft=draft),
        alt_limit=MAX_ALT_TEXT,
        image_size="x",  # it attaches the X thread's images, drawn 16:9
        alt_tags=("bluesky", "bsky"),
        example=Example(
            # "Day 1 " 6, the ZWJ emoji one grapheme, ": the lab " 10, and the link as the app
            # shortens it: the host (10), the path's first 13 characters and "..." (26)
            "Day 1 \U0001f469\u200d\U0001f4bb: the lab https://github.com/anurag629/system-design-60-days",
            (43,),
        ),
        order=30,
        post_limits=PostLimits(bluesky_length, MAX_GRAPHEMES, MAX_IMAGES_PER_POST),
        reflow_from="x",
    )
)
