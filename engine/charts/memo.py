"""Files drawn earlier in this process, by the numbers they were drawn from.

Why: the carousel and the animation take seconds to draw, and one process often builds the same
day more than once (``make all`` with days that link back, the watch loop, the test suite).
Drawing is deterministic (same numbers, same bytes), so the bytes drawn for one key are the
bytes any later draw with that key would write. Memory only, never on disk: a new process, or
new code, always draws afresh. ``forget`` empties it; ``fresh`` empties it for a while (the
determinism tests draw twice, each time for real, and leave what others drew in place).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from engine.outdir import atomic

_STORE: dict[str, dict[str, bytes]] = {}
_NOTES: dict[str, Any] = {}
# What each drawing function read of its results the last time it drew (None: all of them).
_READS: dict[str, frozenset[str] | None] = {}
# A long `serve` session draws new numbers on every save: keep the latest drawings only, so the
# store stays a few tens of megabytes however long it runs (the oldest is dropped first).
MAX_DRAWINGS = 64


def key(kind: str, *parts: Any) -> str:
    """A digest of everything a drawing reads: JSON with sorted keys, so dict order is no input."""
    text = json.dumps([kind, *parts], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def exact_key(kind: str, *parts: Any) -> str | None:
    """Like ``key``, but None when a part is not plain JSON: ``str`` of a large numpy array is
    abbreviated with '...', so two different arrays could share a key."""

    def refuse(value: Any) -> Any:
        raise TypeError(type(value).__name__)

    try:
        text = json.dumps([kind, *parts], sort_keys=True, ensure_ascii=False, default=refuse)
    except (TypeError, ValueError):
        return None
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Reads(Mapping[str, Any]):
    """A read-only view of a results dict that notes which top-level keys a drawing looked up
    (a key looked for and absent counts too); iterating or sizing it reads every key.

    Why: a chart reads one or two sections of a day's results, and a build whose measurement,
    inputs or other sections differ would otherwise draw every chart again for the same picture.
    A Mapping, not a dict subclass: no C-level shortcut (json, ``dict.update``) can read a value
    without passing through here, so nothing the drawing saw goes unnoted."""

    def __init__(self, data: Mapping[str, Any]):
        self._data = data
        self.keys_read: set[str] = set()
        self.read_all = False

    def __getitem__(self, key: str) -> Any:
        self.keys_read.add(key)
        return self._data[key]

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.keys_read.add(key)
        else:
            self.read_all = True
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        self.read_all = True
        return iter(self._data)

    def __len__(self) -> int:
        self.read_all = True
        return len(self._data)

    def read(self) -> frozenset[str] | None:
        """The keys looked up, or None when the drawing looked at the whole mapping."""
        return None if self.read_all else frozenset(self.keys_read)


def read_part(function: str, results: Mapping[str, Any]) -> Any:
    """The part of ``results`` that ``function`` read when it last drew: the values under the
    keys it looked up and the keys it found absent, or all of results if it has not drawn yet in
    this process, or looked at everything.

    Sound as a key because a drawing is deterministic and reads its results only through
    ``Reads``: given the same values under the keys it read last time, it looks up the same keys
    in the same order, sees the same values, and draws the same bytes. The keys themselves are in
    the part, so bytes remembered under one set of keys never answer a lookup made with another."""
    read = _READS.get(function)
    if read is None:
        return ["all", dict(results)]
    present = {k: results[k] for k in sorted(read) if k in results}
    return ["read", present, sorted(k for k in read if k not in results)]


def read_key(kind: str, function: str, results: Mapping[str, Any]) -> str | None:
    """``exact_key`` of what ``function`` reads of ``results`` (read_part)."""
    return exact_key(kind, function, read_part(function, results))


def noted_reads(function: str, reads: Reads) -> None:
    """Remember what ``function`` read in the drawing it just made (for ``read_key``)."""
    _READS[function] = reads.read()


def recall(digest: str, folder: Path) -> bool:
    """Write the files remembered under `digest` into folder; False when there are none."""
    files = _STORE.get(digest)
    if files is None:
        return False
    for name, data in files.items():
        atomic.write_bytes(Path(folder) / name, data, what="chart", root=Path(folder), durable=False)
    return True


def remember(digest: str, folder: Path, names: list[str]) -> None:
    """Keep the bytes of folder/<name> for each name (relative paths) under `digest`."""
    _STORE.pop(digest, None)
    _STORE[digest] = {name: (Path(folder) / name).read_bytes() for name in names}
    while len(_STORE) > MAX_DRAWINGS:
        oldest = next(iter(_STORE))
        del _STORE[oldest]
        _NOTES.pop(oldest, None)


def note(digest: str, value: Any) -> None:
    """Keep a small value beside the files of `digest` (what the drawing returned besides bytes)."""
    _NOTES[digest] = value


def noted(digest: str) -> Any:
    return _NOTES.get(digest)


def forget() -> None:
    _STORE.clear()
    _NOTES.clear()
    _READS.clear()


@contextmanager
def fresh() -> Iterator[None]:
    """Inside: nothing remembered, so every draw is real. After: what was remembered before is
    back, and what was drawn inside is forgotten."""
    store, notes, reads = dict(_STORE), dict(_NOTES), dict(_READS)
    forget()
    try:
        yield
    finally:
        forget()
        _STORE.update(store)
        _NOTES.update(notes)
        _READS.update(reads)
