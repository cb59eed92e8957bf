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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

_STORE: dict[str, dict[str, bytes]] = {}
_NOTES: dict[str, Any] = {}
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


def recall(digest: str, folder: Path) -> bool:
    """Write the files remembered under `digest` into folder; False when there are none."""
    files = _STORE.get(digest)
    if files is None:
        return False
    for name, data in files.items():
        path = Path(folder) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
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


@contextmanager
def fresh() -> Iterator[None]:
    """Inside: nothing remembered, so every draw is real. After: what was remembered before is
    back, and what was drawn inside is forgotten."""
    store, notes = dict(_STORE), dict(_NOTES)
    forget()
    try:
        yield
    finally:
        forget()
        _STORE.update(store)
        _NOTES.update(notes)
