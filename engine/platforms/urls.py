"""Where the URLs are in a post, remembered between builds: a rebuild whose posts are those of
the last build never compiles twitter-text's URL expressions.

Why: X, Threads and Mastodon each count a URL at a fixed length, so every count looks for URLs,
with the library's expressions (engine.platforms._twitter_text). Compiling them costs a sixth of
a second, most of it their list of every top-level domain; finding the URLs in a day's posts
then costs a millisecond or two. A build with nothing changed counts the same few posts as the
last one, so the answers are kept, by a digest of each text, in one small file in the engine's
cache folder (engine.cachedir), and the expressions are compiled only for a text not seen before.

Only inside ``kept_between_builds()`` (engine.pipeline.build opens it for one build): anywhere
else, a count finds its URLs as it always did. The file is named after a digest of the code that
finds URLs, twitter-text-parser's version and the interpreter's (its Unicode tables), so spans
another version found are never read; the files of the few versions used last are kept (two
checkouts sharing one cache folder each find their own), older ones deleted. A kept answer is
used only if it is a list of spans that can be in the text (each inside it, in order, not
overlapping) and the file's checksum holds; anything else is found again. A linked folder is
neither read nor written through. The file holds at most MAX_TEXTS answers, this build's first;
a cache that cannot be read or written only makes the build slower.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import json
import re
from collections.abc import Iterator
from importlib import metadata
from itertools import islice
from pathlib import Path
from typing import Any

from engine import cachedir
from engine.errors import UserError
from engine.limits import MIB, load_json, read_bytes_limited
from engine.outdir import atomic
from engine.platforms import _twitter_text

MAX_TEXTS = 2000  # a day's build counts a handful of posts; every day of a series, a few hundred
MAX_BYTES = 1 * MIB
FOLDER = "urls"
_OURS = re.compile(r"[0-9a-f]{32}\.json")  # the only names this module deletes (code_digest's)

Spans = list[tuple[int, int]]


class _Kept:
    """The answers of one build: those read from the file, and those found or used now."""

    def __init__(self, path: Path | None, earlier: dict[str, Spans]) -> None:
        self.path = path
        self.earlier = earlier
        self.used: dict[str, Spans] = {}
        self.found_new = False

    def spans(self, text: str) -> Spans:
        name = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        spans = self.used.get(name)
        if spans is None:
            kept = self.earlier.get(name)
            if kept is not None and _fits(kept, len(text)):
                spans = kept
            else:
                spans = _twitter_text.extract_urls(text)
                self.found_new = True
            self.used[name] = spans
        return list(spans)

    def save(self) -> None:
        """Write the file again when this build found an answer it did not hold: this build's
        answers first, then the others it held, up to MAX_TEXTS."""
        if self.path is None or not self.found_new:
            return
        answers = {**self.used, **{n: s for n, s in self.earlier.items() if n not in self.used}}
        body = {name: [list(span) for span in spans] for name, spans in islice(answers.items(), MAX_TEXTS)}
        data = json.dumps({"sha256": _checksum(body), "spans": body}, sort_keys=True).encode("utf-8")
        if len(data) > MAX_BYTES:
            return
        with contextlib.suppress(OSError, UserError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic.write_bytes(self.path, data, what="URL spans", durable=False)


_KEPT: contextvars.ContextVar[_Kept | None] = contextvars.ContextVar("kept_urls", default=None)


def extract_urls(text: str) -> Spans:
    """(start, end) code point indices of each URL in ``text``, as twitter-text finds them
    (engine.platforms._twitter_text.extract_urls): remembered inside kept_between_builds()."""
    kept = _KEPT.get()
    return _twitter_text.extract_urls(text) if kept is None else kept.spans(text)


@contextlib.contextmanager
def kept_between_builds() -> Iterator[None]:
    """Inside: URLs found in a text the last builds counted are read back, and new ones kept."""
    kept = _open()
    token = _KEPT.set(kept)
    try:
        yield
    finally:
        _KEPT.reset(token)
        kept.save()


def _open() -> _Kept:
    try:
        path = cachedir.root() / FOLDER / f"{code_digest()}.json"
        if path.parent.is_symlink() or path.parent.parent.is_symlink():
            return _Kept(None, {})  # a linked folder: not the engine's to read or write through
    except (OSError, metadata.PackageNotFoundError):
        return _Kept(None, {})
    try:
        doc = load_json(
            read_bytes_limited(path, MAX_BYTES, "URL spans", follow_symlinks=False), path, "URL spans"
        )
        body = doc["spans"]
        if doc["sha256"] != _checksum(body):
            raise ValueError("damaged")
        earlier = {str(name): [_span(pair) for pair in spans] for name, spans in body.items()}
        cachedir.touch(path)  # used now: kept over the files of other code
    except (UserError, OSError, ValueError, KeyError, TypeError, AttributeError):
        earlier = {}  # absent, damaged or of another shape: found again, and written anew
    cachedir.forget_old(path, _OURS)  # other code's files, but the few used last (other checkouts')
    return _Kept(path, earlier)


def _span(pair: Any) -> tuple[int, int]:
    """A kept [start, end] as written: two integers (no float, bool or string read as one)."""
    if not (isinstance(pair, list) and len(pair) == 2 and all(type(end) is int for end in pair)):
        raise ValueError("not a span")
    return pair[0], pair[1]


def _fits(spans: Spans, length: int) -> bool:
    """Spans that can be a text's URLs: each inside the text, in order, none overlapping."""
    at = 0
    for start, end in spans:
        if not at <= start < end <= length:
            return False
        at = end
    return True


def _checksum(body: Any) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode("utf-8")).hexdigest()


@functools.cache
def code_digest() -> str:
    """The code that finds URLs (this module and the library's importer), the library's version
    and the interpreter's (engine.cachedir.code_digest, as the drawings' keys)."""
    files = (Path(__file__), Path(_twitter_text.__file__))
    return cachedir.code_digest(files, ("twitter-text-parser",))[:32]


def clear() -> Path | None:
    """Delete the kept URL spans (`make clean-cache`); the folder, or None where there is none."""
    try:
        folder = cachedir.root() / FOLDER
    except cachedir.NoCacheFolder:
        return None
    cachedir.forget_all(folder, _OURS)
    return folder
