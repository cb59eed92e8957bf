"""Results a build computes, remembered between builds: a warm build simulates nothing it has
simulated before.

A build is a pure function of its spec, so it keeps no results file of the person's; but a
sweep's points, or a queue of 300,000 requests, cost seconds or tenths each time, and a rebuild
with nothing changed should cost none. Each kind of result (a ``Memory``) is kept in the engine's
cache folder (engine.cachedir, beside the drawings, never under out/), in one results file
(engine.sweep.store) per version of the code:

- A result's key holds everything it depends on but the code (a sweep point's settings, the
  workload's fingerprint and every measured file's hash; a queue's arguments). The file is named
  after a digest of every source and data file of the engine and the numeric library's version
  (``code_digest``), so an edit anywhere in the engine is a new file, and nothing other code
  computed is ever read. Files of other digests are deleted when a new one is started.
- A damaged or cut line is that result computed again (the store's own rule); a file past
  MAX_BYTES is started afresh, so the cache is bounded.
- Whatever goes wrong with the cache folder (unwritable, full, a FIFO or a link planted where
  the file goes, a linked folder, a hard link to someone's file), the build computes everything
  as it would without it, writes nothing through a link and deletes only the digest-named files
  it made: the cache can make a build faster, never fail it or change its bytes (results are
  JSON both ways, and floats round-trip exactly).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine import cachedir
from engine.errors import UserError
from engine.sweep.store import ResultStore

MAX_BYTES = 64 * 2**20  # about 200,000 sweep points' lines
SUFFIX = ".jsonl"
LIBRARIES = ("numpy",)
FOLDER = "remembered"
_OURS = re.compile(r"[0-9a-f]{64}" + re.escape(SUFFIX))  # the only names this module deletes

# The code this process runs is the code on disk when it loaded it (the engine's modules are
# imported at discovery, with this one). A process whose engine files changed after that (a long
# `serve` while the engine is edited) remembers nothing: its results are those of neither the
# old files' digest nor the new ones'. Only the moment is noted here, so that starting the engine
# reads no file for a cache that a day with nothing to remember never opens.
LOADED_NS = time.time_ns()


def sources() -> list[Path]:
    """Every module and data file of the engine, in a fixed order."""
    return sorted(p for p in cachedir.ENGINE.rglob("*") if p.suffix in (".py", ".yaml") and p.is_file())


def code_digest(files: list[Path] | None = None) -> str:
    """A digest of the engine's files and of the library versions it computes with."""
    return cachedir.code_digest(sources() if files is None else files, LIBRARIES)


def _changed_since_loaded(path: Path) -> bool:
    """Whether the file changed after this process loaded the engine: its change time counts as
    well as its modification time, which a copy or an unpacked archive may set back."""
    found = path.stat()
    return max(found.st_mtime_ns, found.st_ctime_ns) > LOADED_NS


def key(*parts: Any) -> str:
    """A result's key from JSON-ready parts: the same parts give the same key in any process."""
    return json.dumps(parts, sort_keys=True, separators=(",", ":"))


def as_json(value: Any) -> Any:
    """``value`` as the cache gives it back (lists, not tuples; plain floats; keys in sorted
    order, as the store writes them): a result computed now and one read back are the same
    objects, in the same order, to whatever renders them."""
    return json.loads(json.dumps(value, sort_keys=True))


class Memory:
    """One kind of result, kept in ``<cache>/remembered/<name>/<code digest>.jsonl``; ``valid``
    says whether a stored value has the shape this kind writes (a line of another shape is that
    result computed again)."""

    def __init__(self, name: str, valid: Callable[[dict[str, Any]], bool]) -> None:
        self.name = name
        self.valid = valid

    def folder(self) -> Path:
        return cachedir.root() / FOLDER / self.name

    def store(self) -> ResultStore:
        """The store of this kind's results: the remembered file, or none (compute everything)
        when the cache folder cannot hold one or the engine's files changed under this process."""
        try:
            files = sources()
            folder = self.folder()
            if any(_changed_since_loaded(path) for path in files) or any(
                part.is_symlink() for part in (folder, folder.parent, folder.parent.parent)
            ):
                return ResultStore(None)  # stale code, or a linked folder (not the engine's to prune)
            path = folder / f"{code_digest(files)}{SUFFIX}"
            _forget_others(path)
            with contextlib.suppress(FileNotFoundError):
                found = path.lstat()
                if found.st_nlink > 1 or found.st_size > MAX_BYTES:
                    path.unlink()  # another name for someone's file, or too big: start afresh
            return _Remembered(path, valid=self.valid)
        except (OSError, UserError):
            return ResultStore(None)

    def recall(self, what: str, compute: Callable[[], Any], point: dict[str, Any]) -> Any:
        """The result keyed by ``what`` and ``point`` (JSON-ready arguments): read back, or
        ``compute()``d and kept. Either way it comes back as JSON types (as_json)."""
        store = self.store()
        try:
            name = key(what, point)
            if name in store:
                kept = store.get(name)
                if kept.get("sha256") == _checksum(kept.get("value")):
                    return kept["value"]
            value = as_json(compute())
            try:  # a value JSON cannot hold exactly (NaN, infinities) is not kept: never read back
                sealed = {"sha256": _checksum(value), "value": value}
            except ValueError:
                return value
            store.add(name, {"what": what, **point}, sealed)
            return value
        finally:
            store.close()


def _checksum(value: Any) -> str:
    """A digest of a kept value's JSON: a line edited or mangled into another well-formed value
    (of the right outer shape, the wrong content) is computed again, never handed to the code
    that reads it, as the drawing cache checks its entries."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def clear() -> Path | None:
    """Delete every remembered file of every kind (`make clean-cache`); returns the folder, or
    None where there is no cache folder."""
    try:
        top = cachedir.root() / FOLDER
    except cachedir.NoCacheFolder:
        return None
    with contextlib.suppress(OSError):
        if not top.is_symlink():
            with os.scandir(top) as kinds:
                for kind in kinds:
                    if kind.is_dir(follow_symlinks=False):
                        with contextlib.suppress(OSError):  # one it cannot list: the others still go
                            _forget_others(Path(kind.path) / "none")
    earlier = top.parent / "sweeps"  # where sweep points were kept before there were kinds
    with contextlib.suppress(OSError):
        if not earlier.is_symlink():
            _forget_others(earlier / "none")
    return top


def _forget_others(keep: Path) -> None:
    """Delete the files of other code digests (nothing will read them again)."""
    with contextlib.suppress(FileNotFoundError, NotADirectoryError), os.scandir(keep.parent) as entries:
        for entry in entries:
            if _OURS.fullmatch(entry.name) and entry.name != keep.name:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


class _Remembered(ResultStore):
    """A store whose file is the cache's: a result that cannot be written to it is kept in memory
    only (the build goes on), never an error."""

    def add(self, key: str, point: dict[str, Any], metrics: dict[str, Any]) -> None:
        try:
            super().add(key, point, metrics)
        except (OSError, UserError):
            self.results[key] = metrics
            self.path = None  # stop trying to write; the rest of the run stays in memory
            self.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            super().close()
        self._file = None
