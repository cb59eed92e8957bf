"""One build of a day at a time: an advisory lock on a file beside the day's folder.

Two builds of one day (two terminals, `serve` and a manual build) would otherwise both swap the
folder and the second could move away the first one's fresh render with an edit in it. flock is
released by the kernel when the process dies, so a killed build never leaves the day locked.
"""

from __future__ import annotations

import fcntl
import os
import sys
from pathlib import Path


class DayLock:
    """Held from the moment a build starts staging until its folder is in place."""

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> DayLock:
        told = False
        while True:
            # Not a read: the descriptor holds the lock (never read), so it is opened here.
            # O_NOFOLLOW: a link planted at the lock's name must not create or open a file elsewhere.
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not told:
                    print(f"waiting for another build of {self.path.name[1:-5]} …", file=sys.stderr)
                    told = True
                fcntl.flock(fd, fcntl.LOCK_EX)
            # The holder before us removes the file as it lets go (so out/ keeps no lock files);
            # a lock taken on a removed file guards nothing: open the path again.
            try:
                if os.stat(self.path).st_ino == os.fstat(fd).st_ino:
                    self._fd = fd
                    return self
            except FileNotFoundError:
                pass
            os.close(fd)

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.unlink(self.path)  # still locked: nobody can have taken this file meanwhile
            except OSError:
                pass
            os.close(self._fd)  # closing the descriptor drops the lock
            self._fd = None

    @property
    def held(self) -> bool:
        return self._fd is not None


def for_folder(target: Path) -> DayLock:
    """out/day37 → the lock out/.day37.lock."""
    return DayLock(target.with_name(f".{target.name}.lock"))
