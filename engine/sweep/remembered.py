"""A day's sweep points, remembered between builds: a warm build of a sweep day simulates nothing.

A build is a pure function of its spec, so it keeps no results file of the person's; but a
sweep's points cost seconds each time, and a rebuild with nothing changed should cost none.
The points a build computes are kept in the engine's cache folder (engine.cachedir, beside the
drawings, never under out/), in one results file (engine.sweep.store) per version of the code:

- A point's key already holds everything its metrics depend on but the code (its settings,
  the workload's fingerprint, every measured file's hash: engine.sweep.execute.plan). The file
  is named after a digest of every source and data file of the engine and the numeric library's
  version (``code_digest``), so an edit anywhere in the simulator is a new file, and nothing a
  different simulator computed is ever read. Files of other digests are deleted when a new one
  is started.
- A damaged or cut line is that point computed again (the store's own rule); a file past
  MAX_BYTES is started afresh, so the cache is bounded.
- Whatever goes wrong with the cache folder (unwritable, full, a FIFO or a link planted where
  the file goes, a linked ``sweeps`` folder, a hard link to someone's file), the build computes
  every point as it would without it, writes nothing through a link and deletes only the
  digest-named files it made: the cache can make a build faster, never fail it or change its
  bytes (the metrics are JSON both ways, floats round-trip exactly, and rows are read back in
  evaluate's column order).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path
from typing import Any

from engine import cachedir
from engine.errors import UserError
from engine.sweep import adapter
from engine.sweep.store import ResultStore

MAX_BYTES = 64 * 2**20  # about 200,000 points' lines
SUFFIX = ".jsonl"
LIBRARIES = ("numpy",)
_OURS = re.compile(r"[0-9a-f]{64}" + re.escape(SUFFIX))  # the only names this module deletes


def folder() -> Path:
    return cachedir.root() / "sweeps"


def sources() -> list[Path]:
    """Every module and data file of the engine, in a fixed order."""
    return sorted(p for p in cachedir.ENGINE.rglob("*") if p.suffix in (".py", ".yaml") and p.is_file())


def code_digest(files: list[Path] | None = None) -> str:
    """A digest of the engine's files and of the library versions the simulator computes with."""
    return cachedir.code_digest(sources() if files is None else files, LIBRARIES)


# The code this process runs is the code on disk when it loaded it (the engine's modules are
# imported at discovery, with this one). A process whose engine files changed after that (a long
# `serve` while the engine is edited) remembers nothing: its results are those of neither the
# old files' digest nor the new ones'. Only the moment is noted here, so that starting the engine
# reads no file for a cache that a day without a sweep never opens.
LOADED_NS = time.time_ns()


def store() -> ResultStore:
    """The build's store of computed points: the remembered file, or none (compute everything)
    when the cache folder cannot hold one or the engine's files changed under this process."""
    try:
        files = sources()
        if any(path.stat().st_mtime_ns > LOADED_NS for path in files) or folder().is_symlink():
            return ResultStore(None)  # a linked folder: its target is not the engine's to prune
        path = folder() / f"{code_digest(files)}{SUFFIX}"
        _forget_others(path)
        with contextlib.suppress(FileNotFoundError):
            found = path.lstat()
            if found.st_nlink > 1 or found.st_size > MAX_BYTES:
                path.unlink()  # another name for someone's file, or too big: start afresh
        return _Remembered(path)
    except (OSError, UserError):
        return ResultStore(None)


def clear() -> Path:
    """Delete every remembered file (`make clean-cache`); returns the folder."""
    with contextlib.suppress(OSError):
        if not folder().is_symlink():
            _forget_others(folder() / "none")
    return folder()


def _forget_others(keep: Path) -> None:
    """Delete the files of other code digests (nothing will read them again)."""
    with contextlib.suppress(FileNotFoundError), os.scandir(keep.parent) as entries:
        for entry in entries:
            if _OURS.fullmatch(entry.name) and entry.name != keep.name:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


class _Remembered(ResultStore):
    """A store whose file is the cache's: a point that cannot be written to it is kept in memory
    only (the build goes on), never an error."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, valid=adapter.is_metrics)

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
