"""Resumable results: one JSON line per finished point, keyed by the point's hash.

Why JSON lines, appended and flushed per point: a sweep killed at any moment loses at most the
points in flight. The last line may be cut in half by the kill; reading skips a line that does
not parse, so that point is simply computed again. Lines whose key is not in the current grid
(an older grid, another simulator version) are ignored, not deleted: the file is the person's.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from engine.errors import UserError
from engine.limits import load_json, open_limited, present
from engine.outdir import atomic

MAX_STORE_BYTES = 2 * 2**30  # a results file past 2 GiB is not one this sweep wrote
MAX_LINE_BYTES = 1 * 2**20  # one point's line: its key, its point and its metrics, a few hundred bytes


class ResultStore:
    """Finished points by key; ``add`` appends to the file (when there is one) as they finish."""

    def __init__(self, path: Path | None, valid: Callable[[dict[str, Any]], bool] = lambda metrics: True):
        """``valid``: whether a line's metrics have the shape the sweep writes (the file is the
        person's, and a line edited by hand is that point computed again, never read)."""
        self.path = Path(path) if path is not None else None
        self.valid = valid
        self.results: dict[str, dict[str, Any]] = {}
        self._file: TextIO | None = None
        if self.path is not None and present(self.path):
            atomic.check_target(self.path, what="sweep results")  # a FIFO would block the read
            self._load(self.path)

    def _load(self, path: Path) -> None:
        with open_limited(path, MAX_STORE_BYTES, "sweep results") as f:
            while line := f.readline(MAX_LINE_BYTES + 1):
                if len(line) > MAX_LINE_BYTES:  # no point's line is this long: skip to the next
                    while line and not line.endswith(b"\n"):
                        line = f.readline(MAX_LINE_BYTES)
                    continue
                try:
                    row = load_json(line, path, "sweep results")
                except UserError:
                    continue  # cut short by an interrupted run, or mangled: recompute that point
                if (
                    isinstance(row, dict)
                    and isinstance(row.get("key"), str)
                    and isinstance(row.get("metrics"), dict)
                ):
                    if self.valid(row["metrics"]):  # the last line of a key is its result
                        self.results[row["key"]] = row["metrics"]
                    else:
                        self.results.pop(row["key"], None)

    def __contains__(self, key: str) -> bool:
        return key in self.results

    def get(self, key: str) -> dict[str, Any]:
        return self.results[key]

    def add(self, key: str, point: dict[str, Any], metrics: dict[str, Any]) -> None:
        self.results[key] = metrics
        if self.path is None:
            return
        if self._file is None:
            self._file = _open_append(self.path)
            cut_short = _ends_mid_line(self._file)
            if cut_short:
                self._file.write("\n")  # after a line cut short, start on a fresh one
        row = {"key": key, "point": point, "metrics": metrics}
        self._file.write(json.dumps(row, sort_keys=True) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _open_append(path: Path) -> TextIO:
    """The results file for appending: the one file the engine adds to rather than replaces, so
    it is opened with O_NOFOLLOW and must be a regular file (engine.outdir.atomic refuses the
    same: a link, a device, a FIFO, a folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.check_target(path, what="sweep results")  # a link, a device, a FIFO, a folder
    flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as err:
        raise UserError(f"cannot write the sweep results: {err.strerror or err}", file=path) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UserError("is not a regular file; the sweep appends only to a plain file", file=path)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "a+", encoding="utf-8")


def _ends_mid_line(f: TextIO) -> bool:
    size = os.fstat(f.fileno()).st_size
    if size == 0:
        return False
    return os.pread(f.fileno(), 1, size - 1) != b"\n"


def set_aside(path: Path) -> Path:
    """Move a results file out of the way for a fresh sweep, to ``<name>.old`` or, where that is
    taken, ``<name>.old-2``, ``-3``…: an earlier one set aside is never replaced. Only a plain
    file: a folder, a link, a device or a FIFO is one line, as ResultStore refuses them."""
    atomic.check_target(path, what="sweep results")
    for n in range(1, 1000):
        aside = path.with_name(path.name + (".old" if n == 1 else f".old-{n}"))
        if not present(aside):
            path.rename(aside)
            return aside
    raise UserError("has a thousand results files set aside beside it; delete some", file=path)
