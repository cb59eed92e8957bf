"""Drawings kept on disk, by exactly what they were drawn from, so a rebuild copies bytes.

Why: drawing is most of what a build costs (a warm rebuild of Day 37 spent four fifths of its
time drawing the same charts, animation and carousel pages from the same numbers), and drawing is
deterministic: the same inputs, the same code and the same libraries give the same bytes. An
entry's key is a digest of all three (``key``): the inputs the caller names, the source of
engine/charts/ with engine/numbers.py, engine/units.py and engine/quotable.py (``code_digest``), and the pinned
versions of the libraries that draw (LIBRARIES). Any edit to a chart's code, or an upgrade, is a
new key: nothing old is ever answered for it.

Where: ``$XDG_CACHE_HOME/sixty-days-engine/drawings`` (``~/.cache/…`` when XDG_CACHE_HOME is
unset or not absolute, as the XDG base-directory specification says), never under out/: the
cache is the machine's, not the person's, and emptying it (``make clean-cache``, ``clear``)
loses nothing but time. ``FOLDER`` overrides it (the tests point it at a temporary folder).

Plain files, not a database library: an entry is one file (a JSON header line naming its parts,
then their bytes), written to a temporary name and renamed into place, so a reader sees a whole
entry or none. The header holds a SHA-256 of the key and the parts: an entry cut short, altered,
or copied under another key fails it and is dropped and drawn again, never copied out; one whose
note a caller cannot read (``load_as``) is dropped too, and ``recall`` writes only the files its
caller names, inside the caller's folder. The folder is the person's own (engine.cachedir.ours)
and never a link. Reading one costs an open and a read,
with nothing imported but the standard library, and no lock: two builds storing the same key
store the same bytes.

Bounded: at most MAX_BYTES in all. After each store the least recently used entries go first
(a hit refreshes an entry's time), so the drawings of the days being worked on stay.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from engine import cachedir
from engine.errors import UserError
from engine.limits import load_json, present, read_bytes_limited
from engine.outdir import atomic

# The libraries whose output is the drawings' bytes, by distribution name (their versions are
# pinned in pyproject.toml, and each is part of every key).
LIBRARIES = ("matplotlib", "numpy", "fonttools", "pillow")
# A Day 37 build keeps about 2 MiB here (its charts, the GIF, five pages, the PDF and its fonts):
# the bound holds over a hundred builds.
MAX_BYTES = 256 * 2**20
SUFFIX = ".entry"
FOLDER: Path | None = None  # None: the standard location (see the module's docstring)

_CHARTS = Path(__file__).resolve().parent
# The code that draws: every chart module, the number and unit formatting they print with, and
# what a declared chart picks its figures and tables with.
_SOURCES = (
    *sorted(_CHARTS.glob("*.py")),
    *(_CHARTS.parent / f"{name}.py" for name in ("numbers", "units", "quotable")),
)


def folder() -> Path:
    """Where the entries are: FOLDER, else the XDG cache folder's ``sixty-days-engine/drawings``."""
    if FOLDER is not None:
        return Path(FOLDER)
    where = cachedir.root() / "drawings"
    if where.is_symlink():  # entries written, and trimmed, through a link: not the engine's folder
        raise cachedir.NoCacheFolder(f"{where} is a link: not used")
    return where


@functools.cache
def code_digest() -> str:
    """A digest of the code that draws and the versions of the libraries it draws with."""
    return cachedir.code_digest(_SOURCES, LIBRARIES)


def key(kind: str, *parts: Any) -> str | None:
    """The key of a drawing of ``kind`` from ``parts`` (JSON with sorted keys, so dict order is no
    input), with the code and libraries; None when a part is not plain JSON (``str`` of a large
    numpy array is abbreviated with '...', so two different arrays could share a key)."""

    def refuse(value: Any) -> Any:
        raise TypeError(type(value).__name__)

    try:
        text = json.dumps([code_digest(), kind, *parts], sort_keys=True, ensure_ascii=False, default=refuse)
    except (TypeError, ValueError):
        return None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Entry:
    """What one key holds: named byte strings (files, or a drawing's pixels) and a small JSON note
    (what the drawing returned besides bytes)."""

    parts: Mapping[str, bytes]
    note: Any = None


def _digest(key: str, names: list[list[Any]], note: Any, payload: bytes) -> str:
    head = json.dumps([key, names, note], sort_keys=True, ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(head + b"\0" + payload).hexdigest()


def _path(digest: str) -> Path:
    return folder() / f"{digest}{SUFFIX}"


def load(digest: str) -> Entry | None:
    """The entry under ``digest``, or None: absent, or damaged (then it is deleted)."""
    try:
        path = _path(digest)
    except cachedir.NoCacheFolder:
        return None
    if not present(path):
        return None
    try:
        data = read_bytes_limited(path, MAX_BYTES, "drawing cache", follow_symlinks=False)
        line, payload = data.split(b"\n", 1)
        header = load_json(line, path, "drawing cache")
        names, note, sha = header["parts"], header["note"], header["sha256"]
        sizes = [int(size) for _, size in names]
        if sum(sizes) != len(payload) or _digest(digest, names, note, payload) != sha:
            raise ValueError("damaged")
    except (UserError, ValueError, KeyError, TypeError):
        _drop(path)
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # used now: the last to be evicted
    parts, offset = {}, 0
    for (name, _), size in zip(names, sizes):
        parts[str(name)] = payload[offset : offset + size]
        offset += size
    return Entry(parts, note)


def save(digest: str, entry: Entry) -> None:
    """Store ``entry`` under ``digest`` whole or not at all (a temporary file renamed into place),
    then trim the folder to MAX_BYTES. A cache that cannot be written is only a slower build."""
    names = [[name, len(data)] for name, data in entry.parts.items()]
    payload = b"".join(entry.parts.values())
    header = {"parts": names, "note": entry.note, "sha256": _digest(digest, names, entry.note, payload)}
    line = json.dumps(header, sort_keys=True, ensure_ascii=False).encode("utf-8")
    try:
        where = folder()
        where.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=where, prefix=".tmp-", suffix=SUFFIX)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(line + b"\n" + payload)
            os.replace(temp, _path(digest))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
    except OSError:
        return
    trim(MAX_BYTES)


T = TypeVar("T")


def load_as(digest: str | None, read: Callable[[Entry], T]) -> T | None:
    """What ``read`` makes of the entry under ``digest``, or None: no entry, or one ``read``
    cannot read (a lookup, type or value error: a note or part of a shape this code never
    stored, though its checksum holds), which is dropped like a damaged one."""
    entry = load(digest) if digest is not None else None
    if digest is None or entry is None:
        return None
    try:
        return read(entry)
    except (LookupError, TypeError, ValueError, AttributeError):
        with contextlib.suppress(cachedir.NoCacheFolder):
            _drop(_path(digest))
        return None


def _drop(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def trim(limit: int) -> None:
    """Delete the least recently used entries until the folder holds at most ``limit`` bytes."""
    try:
        found = [
            e for e in os.scandir(folder()) if e.name.endswith(SUFFIX) and e.is_file(follow_symlinks=False)
        ]
    except OSError:
        return
    stats = []
    for item in found:
        with contextlib.suppress(OSError):
            stat = item.stat()
            stats.append((stat.st_mtime_ns, item.path, stat.st_size))
    total = sum(size for _, _, size in stats)
    for _, path, size in sorted(stats):
        if total <= limit:
            break
        with contextlib.suppress(OSError):
            os.unlink(path)
        total -= size


def recall(digest: str | None, out_dir: Path, names: list[str]) -> Any:
    """Write the files kept under ``digest`` into out_dir, those ``names`` (relative paths, as
    ``keep`` stored them) and no other, and return the entry's note (``{}`` when it has none);
    None when there is no such entry (or no key), or it holds other files."""

    def asked_for(entry: Entry) -> Entry:
        if sorted(entry.parts) != sorted(names):
            raise ValueError("not the files asked for")
        return entry

    entry = load_as(digest, asked_for)
    if entry is None:
        return None
    for name in names:
        path = Path(out_dir) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic.write_bytes(path, entry.parts[name], what="drawing", root=Path(out_dir), durable=False)
    return {} if entry.note is None else entry.note


def keep(digest: str | None, out_dir: Path, names: list[str], note: Any = None) -> None:
    """Store the bytes of out_dir/<name> for each name (relative paths) under ``digest``."""
    if digest is not None:
        drawn = {name: read_bytes_limited(Path(out_dir) / name, MAX_BYTES, "drawing") for name in names}
        save(digest, Entry(drawn, note))


def clear() -> Path | None:
    """Empty the cache (``make clean-cache``): every entry and any temporary file left behind.
    Returns the folder, or None where there is no cache folder."""
    try:
        where = folder()
    except cachedir.NoCacheFolder:
        return None
    with contextlib.suppress(OSError):
        for item in os.scandir(where):
            if item.name.endswith(SUFFIX):
                with contextlib.suppress(OSError):
                    os.unlink(item.path)
    return where


@contextlib.contextmanager
def fresh() -> Iterator[Path]:
    """Inside: an empty cache of its own, so every drawing is drawn for real. After: the cache
    before is back, and what was drawn inside is gone."""
    global FOLDER
    before = FOLDER
    with tempfile.TemporaryDirectory(prefix="drawings-") as temp:
        FOLDER = Path(temp)
        try:
            yield FOLDER
        finally:
            FOLDER = before
