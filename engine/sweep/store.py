"""Resumable results: one JSON line per finished point, keyed by the point's hash.

Why JSON lines, appended and flushed per point: a sweep killed at any moment loses at most the
points in flight. The last line may be cut in half by the kill; reading skips a line that does
not parse, so that point is simply computed again. Lines whose key is not in the current grid
(an older grid, another simulator version) are ignored, not deleted: the file is the person's.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TextIO

from engine.errors import UserError

MAX_STORE_BYTES = 2 * 2**30  # a results file past 2 GiB is not one this sweep wrote


class ResultStore:
    """Finished points by key; ``add`` appends to the file (when there is one) as they finish."""

    def __init__(self, path: Path | None):
        self.path = Path(path) if path is not None else None
        self.results: dict[str, dict[str, Any]] = {}
        self._file: TextIO | None = None
        if self.path is not None and self.path.exists():
            self._load(self.path)

    def _load(self, path: Path) -> None:
        if path.stat().st_size > MAX_STORE_BYTES:
            raise UserError(
                f"larger than {MAX_STORE_BYTES // 2**30} GiB; not a sweep results file", file=path
            )
        with path.open(encoding="utf-8") as f:
            for line in f:
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut short by an interrupted run: recompute that point
                if (
                    isinstance(row, dict)
                    and isinstance(row.get("key"), str)
                    and isinstance(row.get("metrics"), dict)
                ):
                    self.results[row["key"]] = row["metrics"]

    def __contains__(self, key: str) -> bool:
        return key in self.results

    def get(self, key: str) -> dict[str, Any]:
        return self.results[key]

    def add(self, key: str, point: dict[str, Any], metrics: dict[str, Any]) -> None:
        self.results[key] = metrics
        if self.path is None:
            return
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            cut_short = self.path.exists() and _ends_mid_line(self.path)
            self._file = self.path.open("a", encoding="utf-8")
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


def _ends_mid_line(path: Path) -> bool:
    with path.open("rb") as f:
        f.seek(0, os.SEEK_END)
        if f.tell() == 0:
            return False
        f.seek(-1, os.SEEK_END)
        return f.read(1) != b"\n"
