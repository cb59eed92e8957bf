"""The parts of ``twitter-text-parser`` the X count uses, imported without the package's own
``__init__``.

The count (engine.platforms.x) needs the library's v3 configuration and its URL and
invalid-character expressions, nothing else. The package's ``__init__`` also imports
``parse_tweet``, and with it ``twitter_text/regexp/emoji.py``, which

- reads its bundled ``emoji-test.txt`` with ``pkg_resources.resource_string``: setuptools ≥ 82
  no longer ships ``pkg_resources``, so a plain ``import twitter_text`` fails (twitter-text-parser
  3.0.0), and
- compiles an expression of every emoji in that file: a tenth of a second at every start of the
  engine, for a table engine.platforms.emoji keeps itself (the official twemoji expression).

So the package object is made without running its ``__init__``, the modules needed are
imported under it, and every ``twitter_text`` module is then taken out of ``sys.modules`` again:
code that imports the library later gets it whole and as published, and nothing here depends on
what the package's ``__init__`` would have done.

The URL expressions are compiled when a URL is first looked for, not when the engine starts: they
hold every top-level domain, several times over, and compiling them is a sixth of a second, where
the configuration and the invalid-character expression cost nothing. A build whose texts' URLs
are remembered (engine.platforms.urls) never compiles them.

Everything the rest of engine.platforms needs from the library is re-exported here, so this is
the one place that knows how it is imported.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import threading
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

# The library's modules the count reads, under the package ``twitter_text``: those read as the
# engine starts, and the URL expressions, read when a URL is first looked for.
_AT_START = ("config", "regexp.invalid_chars")
_URL_PARTS = (
    "regexp.extract_url",
    "regexp.invalid_url_without_protocol_preceding_chars",
    "regexp.valid_ascii_domain",
    "regexp.valid_cctld",
    "regexp.valid_gtld",
    "regexp.valid_punycode",
    "regexp.valid_tco_url",
)
_PARTS = _AT_START + _URL_PARTS


# Held while the stand-in package is in sys.modules: the URL expressions are imported on first
# use, possibly by two threads at once, and one's clean-up must not take out the other's modules.
_lock = threading.RLock()


def _import_parts(names: tuple[str, ...] = _PARTS) -> dict[str, types.ModuleType]:
    """Each of ``names``, imported under a ``twitter_text`` package whose ``__init__`` never ran."""
    with _lock:
        return _import_under_stand_in(names)


def _import_under_stand_in(names: tuple[str, ...]) -> dict[str, types.ModuleType]:
    spec = importlib.util.find_spec("twitter_text")
    if spec is None:
        raise ImportError("twitter-text-parser is not installed (pip install -e .)")
    before = set(sys.modules)
    published = sys.modules.get("twitter_text")  # the package as published, if code imported it
    sys.modules["twitter_text"] = importlib.util.module_from_spec(spec)
    try:
        return {name: importlib.import_module(f"twitter_text.{name}") for name in names}
    finally:
        for name in set(sys.modules) - before:
            if name.startswith("twitter_text."):
                del sys.modules[name]
        if published is None:
            del sys.modules["twitter_text"]
        else:
            sys.modules["twitter_text"] = published


_parts = _import_parts(_AT_START)
_config = _parts["config"].config
invalid_chars: re.Pattern[str] = _parts["regexp.invalid_chars"].invalid_chars

#: The v3 configuration (280, scale 100, default weight 200, URLs 23, emoji parsing on).
V3 = _config["version3"]


@dataclass(frozen=True)
class _Expressions:
    """The library's URL expressions, and the marker built from its top-level domains."""

    extract_url: re.Pattern[str]
    invalid_url_without_protocol_preceding_chars: re.Pattern[str]
    valid_ascii_domain: re.Pattern[str]
    valid_tco_url: re.Pattern[str]
    tld_marker: re.Pattern[str]


_compiled_once: _Expressions | None = None


def _expressions() -> _Expressions:
    """The URL expressions, compiled by the first caller (the others wait for it)."""
    global _compiled_once
    if _compiled_once is None:
        with _lock:
            if _compiled_once is None:
                _compiled_once = _compile_expressions()
    return _compiled_once


def _compile_expressions() -> _Expressions:
    parts = _import_parts(_URL_PARTS)

    def pattern(name: str) -> re.Pattern[str]:
        return _compiled(getattr(parts[f"regexp.{name}"], name))

    extract_url = pattern("extract_url")
    tlds = (pattern(name).pattern for name in ("valid_gtld", "valid_cctld", "valid_punycode"))
    return _Expressions(
        extract_url=extract_url,
        invalid_url_without_protocol_preceding_chars=pattern("invalid_url_without_protocol_preceding_chars"),
        valid_ascii_domain=pattern("valid_ascii_domain"),
        valid_tco_url=pattern("valid_tco_url"),
        # Every URL's domain ends in "." and a top-level domain (the library's valid_domain), and
        # a URL holds no whitespace. Where no such marker follows a position within its run of
        # non-space characters, no URL can start there, and the library's expression is not
        # tried: on text like "a.a.a.a…" with no TLD it backtracks for seconds per thousand
        # characters.
        tld_marker=re.compile(r"\.(?:" + "|".join(tlds) + ")", extract_url.flags),
    )


def _compiled(value: Any) -> re.Pattern[str]:
    """A module attribute that must be a compiled expression (another library version's might
    not be): checked, so a changed library fails where it is imported, naming it."""
    if not isinstance(value, re.Pattern):
        raise ImportError(
            f"twitter-text-parser: expected a compiled expression, found {type(value).__name__}"
        )
    return value


def __getattr__(name: str) -> re.Pattern[str]:
    """The URL expressions as module attributes (``extract_url`` …), compiled on first use."""
    if name in _Expressions.__dataclass_fields__:
        return getattr(_expressions(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def expressions_compiled() -> bool:
    """Whether this process has compiled the URL expressions yet."""
    return _compiled_once is not None


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
    if domain.startswith("xn--") and not _expressions().valid_ascii_domain.fullmatch(domain):
        return False
    for label in domain.split("."):
        try:
            encoded = label if label.isascii() else "xn--" + label.encode("punycode").decode("ascii")
        except UnicodeError:
            return False
        if not 1 <= len(encoded) <= _MAX_DOMAIN_LABEL_LENGTH:
            return False
    return True


_SPACE = re.compile(r"\s")


def _url_matches(text: str) -> Iterator[re.Match[str]]:
    """``extract_url.finditer(text)``, the same matches in the same order, trying the
    expression only at positions from which a URL could start (see _expressions' tld_marker)."""
    found = _expressions()
    markers = [m.start() for m in found.tld_marker.finditer(text)]
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
        match = found.extract_url.match(text, pos)
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
    expressions = _expressions()
    found: list[tuple[int, int]] = []
    for match in _url_matches(text):
        _, before, url, protocol, domain, _, path, _ = match.groups()
        end = match.end()
        start = end - len(url)
        if (
            not _js_domain_ok(domain)
            or _utf16_length(protocol or _DEFAULT_PROTOCOL) + _utf16_length(url) > _MAX_URL_LENGTH
        ):
            continue
        if protocol is None:
            if expressions.invalid_url_without_protocol_preceding_chars.match(before):
                continue
            last: list[int] | None = None
            for ascii_match in expressions.valid_ascii_domain.finditer(domain):
                last = [start + ascii_match.start(), start + ascii_match.end()]
                found.append((last[0], last[1]))
            if last is None:
                continue
            if path:
                found[-1] = (last[0], end)
        else:
            tco = expressions.valid_tco_url.search(url)
            if tco:
                slug = tco.group(1)
                if slug and len(slug) > _MAX_TCO_SLUG_LENGTH:
                    continue
                end = start + len(tco.group(0))
            found.append((start, end))
    return found


__all__ = ["V3", "extract_urls", "invalid_chars"]
