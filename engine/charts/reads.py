"""What a drawing read of a day's results: the part of results its cached bytes are keyed on.

Why: a chart reads one or two sections of a day's results, and a build whose measurement, inputs
or other sections differ would otherwise draw every chart again for the same picture. A drawing
is handed a ``Reads`` view; the keys it looked up are kept on disk beside the drawings
(engine.charts.drawcache) under the drawing's identity, so the next build, in any process,
keys the drawing on the values under those keys alone (``part``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from engine.charts import drawcache


class Reads(Mapping[str, Any]):
    """A read-only view of a results dict that notes which top-level keys a drawing looked up
    (a key looked for and absent counts too); iterating or sizing it reads every key.

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

    def read(self) -> list[str] | None:
        """The keys looked up, sorted, or None when the drawing looked at the whole mapping."""
        return None if self.read_all else sorted(self.keys_read)


def _record(function: str) -> str | None:
    return drawcache.key("reads", function)


def part(function: str, results: Mapping[str, Any]) -> Any:
    """The part of ``results`` that ``function`` read when it last drew: the values under the
    keys it looked up and the keys it found absent, or all of results if it has not drawn yet
    (with this code), or looked at everything.

    Sound as a key because a drawing is deterministic and reads its results only through
    ``Reads``: given the same values under the keys it read last time, it looks up the same keys
    in the same order, sees the same values, and draws the same bytes. The keys themselves are in
    the part, so bytes kept under one set of keys never answer a lookup made with another."""
    read = drawcache.load_as(_record(function), _keys)
    if read is None:
        return ["all", dict(results)]
    present = {k: results[k] for k in read if k in results}
    return ["read", present, [k for k in read if k not in results]]


def _keys(entry: drawcache.Entry) -> list[str]:
    """The keys a drawing read, as ``noted`` kept them (TypeError: a note of another shape)."""
    if not isinstance(entry.note, list) or not all(isinstance(k, str) for k in entry.note):
        raise TypeError("not a list of keys")
    return entry.note


def noted(function: str, reads: Reads) -> None:
    """Keep what ``function`` read in the drawing it just made (for ``part``)."""
    record = _record(function)
    if record is not None:
        drawcache.save(record, drawcache.Entry({}, reads.read()))
