"""What the preview shows, shared by the builder thread and the request threads.

``version`` counts the moments new content became available (a day's drafts, a day's finished
build, a failed one); an open page reloads when it changes, so it changes only when there is
something new to see. ``busy`` says what is being rebuilt right now; pages show it without a
reload. ``overlay`` holds a day's fresh drafts (and its review page rendered with them) between
the drafts being ready and the whole build being in out/: out/ itself changes only when a build
commits, so the preview never writes a half-built day there.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Snapshot:
    version: int
    busy: str
    errors: list[str]


@dataclass
class State:
    version: int = 0
    busy: str = ""
    errors: dict[Path, str] = field(default_factory=dict)
    overlay: dict[Path, dict[str, bytes]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def built(self, spec: Path, error: str | None) -> None:
        """A day's whole build finished (error None) or failed: out/ holds its last good build."""
        with self.lock:
            self.overlay.pop(spec, None)
            if error is None:
                self.errors.pop(spec, None)
            else:
                self.errors[spec] = error
            self.version += 1

    def drafted(self, spec: Path, files: dict[str, bytes]) -> None:
        """A day's drafts are rendered: serve them (paths relative to out/) until its build lands."""
        with self.lock:
            self.overlay[spec] = dict(files)
            self.errors.pop(spec, None)
            self.version += 1

    def working(self, busy: str) -> None:
        """What is being rebuilt now ("" when nothing is); not new content, so no new version."""
        with self.lock:
            self.busy = busy

    def snapshot(self) -> Snapshot:
        with self.lock:
            return Snapshot(self.version, self.busy, list(self.errors.values()))

    def overlaid(self, relative: str) -> bytes | None:
        """A fresh draft or page not yet in out/, by its path relative to out/."""
        with self.lock:
            for files in self.overlay.values():
                if relative in files:
                    return files[relative]
        return None

    def overlaid_names(self) -> list[str]:
        with self.lock:
            return [name for files in self.overlay.values() for name in files]
