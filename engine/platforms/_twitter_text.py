"""Import ``twitter-text-parser`` despite its ``pkg_resources`` import.

twitter-text-parser 3.0.0 reads its bundled ``emoji-test.txt`` with
``pkg_resources.resource_string`` (in ``twitter_text/regexp/emoji.py``). setuptools ≥ 82 no
longer ships ``pkg_resources``, so a plain ``import twitter_text`` fails. Rather than pin an old
setuptools, this module lends the library the one function it calls, built on
``importlib.resources``, for the duration of the import only:

- only when no real ``pkg_resources`` can be imported (a real one is always preferred);
- the stand-in exposes ``resource_string`` and nothing else, so any other use fails loudly;
- it is removed from ``sys.modules`` again once the library is loaded, so no other code can
  mistake it for the real thing.

Everything the rest of engine.platforms needs from the library is re-exported here, so this is
the one place that knows about the work-around.
"""
from __future__ import annotations

import importlib
import importlib.resources
import re
import sys
import types
from collections.abc import Iterator


def _resource_string(module_name: str, resource: str) -> bytes:
    """``pkg_resources.resource_string``: the bytes of a file that sits beside a module."""
    module = sys.modules.get(module_name) or importlib.import_module(module_name)
    is_package = getattr(module, "__path__", None) is not None
    anchor = module_name if is_package else module_name.rpartition(".")[0]
    return importlib.resources.files(anchor).joinpath(resource).read_bytes()


def _import_twitter_text() -> types.ModuleType:
    try:
        importlib.import_module("pkg_resources")
    except ImportError:
        pass
    else:
        return importlib.import_module("twitter_text")
    stand_in = types.ModuleType("pkg_resources", "stand-in: resource_string only (engine.platforms)")
    stand_in.resource_string = _resource_string  # type: ignore[attr-defined]
    sys.modules["pkg_resources"] = stand_in
    try:
        return importlib.import_module("twitter_text")
    finally:
        if sys.modules.get("pkg_resources") is stand_in:
            del sys.modules["pkg_resources"]


twitter_text = _import_twitter_text()

from twitter_text.config import config as _config  # noqa: E402
from twitter_text.extract_urls import extract_urls_with_indices  # noqa: E402
from twitter_text.parse_tweet import parse_tweet  # noqa: E402
from twitter_text.regexp.emoji import emoji as library_emoji  # noqa: E402
from twitter_text.regexp.extract_url import extract_url  # noqa: E402
from twitter_text.regexp.invalid_chars import invalid_chars  # noqa: E402
from twitter_text.regexp.invalid_url_without_protocol_preceding_chars import (  # noqa: E402
    invalid_url_without_protocol_preceding_chars,
)
from twitter_text.regexp.valid_ascii_domain import valid_ascii_domain  # noqa: E402
from twitter_text.regexp.valid_cctld import valid_cctld  # noqa: E402
from twitter_text.regexp.valid_gtld import valid_gtld  # noqa: E402
from twitter_text.regexp.valid_punycode import valid_punycode  # noqa: E402
from twitter_text.regexp.valid_tco_url import valid_tco_url  # noqa: E402

#: The v3 configuration (280, scale 100, default weight 200, URLs 23, emoji parsing on).
V3 = _config["version3"]

_DEFAULT_PROTOCOL = "https://"
_MAX_URL_LENGTH = 4096
_MAX_TCO_SLUG_LENGTH = 40
_MAX_DOMAIN_LABEL_LENGTH = 63


def _utf16_length(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _js_domain_ok(domain: str) -> bool:
    """twitter-text JS's ``idna.toAscii`` test: each label, Punycode-encoded without nameprep,
    is 1..63 characters. The Python port asks Python's ``idna`` codec instead, which refuses
    mixed-script labels ("בn") that the official library, and X, accept as a domain; a link
    missed is a post counted short by up to 22."""
    if domain.startswith("xn--") and not valid_ascii_domain.fullmatch(domain):
        return False
    for label in domain.split("."):
        try:
            encoded = label if label.isascii() else "xn--" + label.encode("punycode").decode("ascii")
        except UnicodeError:
            return False
        if not 1 <= len(encoded) <= _MAX_DOMAIN_LABEL_LENGTH:
            return False
    return True


# Every URL's domain ends in "." and a top-level domain (the library's valid_domain), and a URL
# holds no whitespace. Where no such marker follows a position within its run of non-space
# characters, no URL can start there, and the library's expression is not tried: on text like
# "a.a.a.a…" with no TLD it backtracks for seconds per thousand characters.
_TLD_MARKER = re.compile(r"\.(?:" + valid_gtld.pattern + "|" + valid_cctld.pattern + "|"
                         + valid_punycode.pattern + ")", extract_url.flags)
_SPACE = re.compile(r"\s")


def _url_matches(text: str) -> Iterator[re.Match[str]]:
    """``extract_url.finditer(text)``, the same matches in the same order, trying the
    expression only at positions from which a URL could start (see _TLD_MARKER)."""
    markers = [m.start() for m in _TLD_MARKER.finditer(text)]
    if not markers:
        return
    spaces = [m.start() for m in _SPACE.finditer(text)]
    pos, k, w = 0, 0, 0
    n = len(text)
    while pos < n:
        while k < len(markers) and markers[k] < pos:
            k += 1
        if k == len(markers):
            return
        while w < len(spaces) and spaces[w] <= pos:
            w += 1
        if w < len(spaces) and spaces[w] < markers[k]:
            pos = spaces[w]  # a space before the next marker: no URL starts before that space
            continue
        match = extract_url.match(text, pos)
        if match is None:
            pos += 1
            continue
        yield match
        pos = match.end() if match.end() > pos else pos + 1


def extract_urls(text: str) -> list[tuple[int, int]]:
    """(start, end) code point indices of each URL, as twitter-text 3.1.0 (JavaScript) finds
    them: the Python port's expressions and steps, with the official library's domain test
    and length rule (UTF-16 length of protocol and URL at most 4,096)."""
    if "." not in text:
        return []
    found: list[tuple[int, int]] = []
    for match in _url_matches(text):
        _, before, url, protocol, domain, _, path, _ = match.groups()
        end = match.end()
        start = end - len(url)
        if not _js_domain_ok(domain) or _utf16_length(protocol or _DEFAULT_PROTOCOL) + _utf16_length(url) > _MAX_URL_LENGTH:
            continue
        if protocol is None:
            if invalid_url_without_protocol_preceding_chars.match(before):
                continue
            last: list[int] | None = None
            for ascii_match in valid_ascii_domain.finditer(domain):
                last = [start + ascii_match.start(), start + ascii_match.end()]
                found.append((last[0], last[1]))
            if last is None:
                continue
            if path:
                found[-1] = (last[0], end)
        else:
            tco = valid_tco_url.search(url)
            if tco:
                slug = tco.group(1)
                if slug and len(slug) > _MAX_TCO_SLUG_LENGTH:
                    continue
                end = start + len(tco.group(0))
            found.append((start, end))
    return found


__all__ = ["V3", "extract_urls", "extract_urls_with_indices", "invalid_chars", "library_emoji", "parse_tweet"]
