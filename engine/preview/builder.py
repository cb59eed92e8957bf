"""The preview's builds, on one background thread, drafts before images.

A day's drafts cost its numbers and its templates, about a second; its images (charts, the
carousel) cost several more, matplotlib's import first. So each requested day is built in two
steps: its drafts are rendered in memory and served at once (State.drafted: out/ is not touched,
and a draft the person edited in out/ is shown as they left it), then the whole build runs as
``python -m engine build`` does it and lands in out/ (State.built). Every day's drafts come
before any day's images, and a change saved meanwhile has its drafts rendered before the images
still waiting.

Any error in either step (a mistake in the spec, a post over a platform's limit, a bug) is one
line on the page and in the terminal; the day's last good build stays in out/, and the thread
goes on to the next request.
"""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from engine import pipeline
from engine.errors import UserError
from engine.limits import (
    MAX_DRAFT_BYTES,
    MAX_RESULTS_BYTES,
    present,
    read_json_object,
    read_text_limited,
)
from engine.outdir import report_lines
from engine.outdir.manifest import read_manifest_quiet, sha256
from engine.pipeline import ChecksFailed, build
from engine.preview.state import State
from engine.render import review
from engine.render.review import RESULTS
from engine.sections import SpecLocation
from engine.spec import load_spec

Drafts = Callable[[Path, Path], dict[str, bytes]]  # (spec, out) → files relative to out/
Build = Callable[[Path, Path], None]  # (spec, out): the whole build into out/


def render_drafts(spec_path: Path, out: Path) -> dict[str, bytes]:
    """The day's fresh drafts and its review page rendered with them, by path relative to out/;
    nothing is written. A draft in out/ that is not the engine's last render (the person edited
    it) is left out, and the page shows their version, as the build will keep it. The page shows
    the images of the day's last build (they are redrawn next), as that build recorded them."""
    spec = load_spec(spec_path)
    results = pipeline.compute(spec, SpecLocation(spec_path=spec_path))
    drafts = pipeline.render_drafts(results)
    folder = pipeline.day_folder_name(spec.day)
    day_dir = out / folder
    recorded = read_manifest_quiet(day_dir)
    files: dict[str, bytes] = {}
    shown = dict(drafts)
    for name, text in drafts.items():
        kept = day_dir / name
        # read as the build reads it, never through a link (one is refused, in one line)
        edited = (
            read_text_limited(kept, MAX_DRAFT_BYTES, "draft", follow_symlinks=False)
            if present(kept)
            else None
        )
        if edited is not None and recorded.get(name) != sha256(kept):
            shown[name] = edited
        else:
            files[f"{folder}/{name}"] = text.encode("utf-8")
    results.update(_last_images(day_dir))
    files[f"{folder}/index.html"] = review.render_day_page(day_dir, results, shown).encode("utf-8")
    return files


def _last_images(day_dir: Path) -> dict[str, Any]:
    """The charts and carousel the day's last build recorded in its results.json; none when it
    has none or cannot be read (the page then lists the images it finds)."""
    last = read_json_object(day_dir / RESULTS, MAX_RESULTS_BYTES, "results") or {}
    return {key: last[key] for key in ("charts", "carousel") if key in last}


def build_into_out(spec: Path, out: Path) -> None:
    """The whole build, as ``python -m engine build`` does it, with its report in the terminal."""
    report = build(spec, out)
    print(f"rebuilt Day {report.day} → {report.folder}/", flush=True)
    if report.commit is not None:
        for line in report_lines(report.commit):
            print(f"  {line}", flush=True)
    for warning in report.warnings:
        print(f"  warning: {warning}", flush=True)


def error_line(spec: Path, exc: Exception) -> str:
    """One line for a failed step; an unexpected error's traceback goes to the terminal only."""
    if isinstance(exc, UserError):
        return exc.line()
    if isinstance(exc, ChecksFailed):
        return f"{spec}: " + "; ".join(exc.violations)
    traceback.print_exception(exc, file=sys.stderr)
    return f"{spec}: the build stopped on an internal error ({type(exc).__name__}: {exc}); see the terminal"


class Builder:
    """A queue of days to rebuild and the thread that works through it (run)."""

    def __init__(
        self,
        out: Path,
        state: State,
        *,
        drafts: Drafts = render_drafts,
        build: Build = build_into_out,
        describe: Callable[[Path, Exception], str] = error_line,
    ) -> None:
        self.out, self.state = out, state
        self._drafts, self._build, self._describe = drafts, build, describe
        self._changed = threading.Condition()
        self._to_draft: list[Path] = []
        self._to_build: list[Path] = []
        self._stopping = False

    def request(self, specs: Iterable[Path]) -> None:
        """Rebuild these days (again, if they are already waiting or being built)."""
        with self._changed:
            for spec in specs:
                if spec not in self._to_draft:
                    self._to_draft.append(spec)
            if self._to_draft and not self.state.snapshot().busy:
                self.state.working("rebuilding…")  # on the page at once, before the first step starts
            self._changed.notify()

    def stop(self) -> None:
        """Stop after the step under way (a build is never cut off halfway)."""
        with self._changed:
            self._stopping = True
            self._changed.notify()

    def run(self, start_after: threading.Event | None = None) -> None:
        """Work through the queue until stop(); ``start_after``: wait for the watcher first, so a
        change saved during the first build is not missed."""
        if start_after is not None:
            start_after.wait(timeout=10)
        while True:
            with self._changed:
                while not self._stopping and not (self._to_draft or self._to_build):
                    self.state.working("")
                    self._changed.wait()
                if self._stopping:
                    return
                drafting = bool(self._to_draft)
                spec = (self._to_draft if drafting else self._to_build).pop(0)
            if drafting:
                self._draft(spec)
            else:
                self._whole(spec)

    def _draft(self, spec: Path) -> None:
        self.state.working(f"rebuilding {spec.name}: drafts…")
        try:
            files = self._drafts(spec, self.out)
        except Exception as exc:  # any error: shown, and the thread goes on
            self._failed(spec, exc)
            with self._changed:
                if spec in self._to_build:
                    self._to_build.remove(spec)  # its whole build would stop at the same place
            return
        self.state.drafted(spec, files)
        with self._changed:
            if spec not in self._to_build:
                self._to_build.append(spec)

    def _whole(self, spec: Path) -> None:
        self.state.working(f"rebuilding {spec.name}: images…")
        try:
            self._build(spec, self.out)
        except Exception as exc:  # any error: shown, and the thread goes on
            self._failed(spec, exc)
            return
        self.state.built(spec, None)

    def _failed(self, spec: Path, exc: Exception) -> None:
        try:
            line = self._describe(spec, exc)
        except Exception:  # describing it must not be what stops the previews
            line = f"{spec}: {type(exc).__name__}: {exc}"
        print(f"build failed, the last good build stays: {line}", file=sys.stderr, flush=True)
        self.state.built(spec, line)
