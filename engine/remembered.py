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
  computed is ever read. The files of the KEEP_VERSIONS digests used last are kept (two
  checkouts, or a branch and main, sharing one cache each find their own); older ones are
  deleted when another is opened, so the cache holds at most KEEP_VERSIONS × MAX_BYTES a kind
  (engine.cachedir.forget_old).
- A process reads its file once: later look-ups reuse what it read and wrote, unless the file
  is no longer the one it left (another build appended to it, or it was replaced), when it is
  read again.
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
    """Every module and data file of the engine, in a fixed order. Its folders are listed with
    os.scandir, bytecode folders left out: every look-up of a memory lists them (to see whether
    the engine changed), and pathlib's rglob made a path of every file there, compiled ones too."""
    found: list[Path] = []
    folders = [cachedir.ENGINE]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        folders.append(Path(entry.path))
                elif entry.name.endswith((".py", ".yaml")) and entry.is_file():
                    found.append(Path(entry.path))
    return sorted(found)


# code_digest's answers, by what it read: the machine, each file's path, identity, size and times
_DIGESTS: dict[tuple[str, tuple[tuple[str, int, int, int, int], ...]], str] = {}


def code_digest(files: list[Path] | None = None) -> str:
    """A digest of the engine's files and of the library versions it computes with. Worked out
    once a process for the same files, unchanged (their size, identity and times the same):
    hashing every source costs more than a look-up it keys."""
    files = sources() if files is None else files
    stats = tuple((str(p), (s := p.stat()).st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns) for p in files)
    seen = (cachedir.machine(), stats)
    if seen not in _DIGESTS:
        _DIGESTS[seen] = cachedir.code_digest(files, LIBRARIES)
    return _DIGESTS[seen]


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
        # what this process last read and wrote: the file, its identity and size then, its results
        self._seen: tuple[Path, tuple[int, int, int] | None, dict[str, dict[str, Any]]] | None = None

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
            with contextlib.suppress(FileNotFoundError):
                found = path.lstat()
                if found.st_nlink > 1 or found.st_size > MAX_BYTES:
                    path.unlink()  # another name for someone's file, or too big: start afresh
            seen, now = self._seen, _identity(path)
            if seen is not None and seen[0] == path and seen[1] == now:
                return _Remembered(path, self.valid, now, results=seen[2], closed=self._note)
            self._seen = None
            cachedir.forget_old(path, _OURS)
            if now is not None:  # used now: kept over older versions (its identity holds no times)
                cachedir.touch(path)
            return _Remembered(path, self.valid, now, closed=self._note)
        except (OSError, UserError):
            self._seen = None
            return ResultStore(None)

    def _note(self, store: _Remembered) -> None:
        """What a closed store leaves for the next look-up to reuse: its results, if the file is
        still what it read and wrote (no other build appended in between), else nothing."""
        self._seen = None
        if store.path is not None and store.whole:
            with contextlib.suppress(OSError):
                if _identity(store.path) == store.known:
                    self._seen = (store.path, store.known, store.results)

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
                    if kind.is_dir(follow_symlinks=False):  # one it cannot list: the others still go
                        cachedir.forget_all(Path(kind.path), _OURS)
    cachedir.forget_all(top.parent / "sweeps", _OURS)  # where sweep points were kept before kinds
    return top


def _identity(path: Path) -> tuple[int, int, int] | None:
    """Which file is at ``path`` and how long it is (None: there is none): another build
    appends, a fresh start replaces; either changes this."""
    try:
        return _mark(path.lstat())
    except FileNotFoundError:
        return None


def _mark(found: os.stat_result) -> tuple[int, int, int]:
    return found.st_dev, found.st_ino, found.st_size


class _Remembered(ResultStore):
    """A store whose file is the cache's: a result that cannot be written to it is kept in memory
    only (the build goes on), never an error. ``results``: what this process read of the file
    before, unchanged since (the file is not read again); ``closed``: told when it closes.

    ``known`` is the file's identity (_identity; None: there was none) as it was opened, then as
    each of this store's own lines left it. ``whole``: ``results`` hold all of the file, until a
    line another build appended is found in between (the file is then not as ``known`` says
    before one of ours): the next look-up reads the file again rather than miss that line."""

    def __init__(
        self,
        path: Path,
        valid: Callable[[dict[str, Any]], bool],
        known: tuple[int, int, int] | None,
        results: dict[str, dict[str, Any]] | None = None,
        closed: Callable[[_Remembered], None] | None = None,
    ) -> None:
        if results is None:
            super().__init__(path, valid=valid)
        else:
            super().__init__(None, valid=valid)
            self.path, self.results = path, results
        self.known = known
        self.whole = True
        self._closed = closed

    def add(self, key: str, point: dict[str, Any], metrics: dict[str, Any]) -> None:
        try:
            if self._file_identity() != self.known:
                self.whole = False  # another build's line came first: not all of it is here
            super().add(key, point, metrics)
            self.known = self._file_identity()
        except (OSError, UserError):
            self.results[key] = metrics
            self.path = None  # stop trying to write; the rest of the run stays in memory
            self.close()

    def _file_identity(self) -> tuple[int, int, int] | None:
        if self._file is None:
            return None if self.path is None else _identity(self.path)
        return _mark(os.fstat(self._file.fileno()))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            super().close()
        self._file = None
        if self._closed is not None:
            self._closed(self)
