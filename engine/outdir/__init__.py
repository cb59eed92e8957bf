"""Writing a day's folder in out/ without ever losing a person's file.

A build renders everything into a staging folder first; nothing in out/ changes until the whole
build (numbers, drafts, charts, platform checks) has succeeded. Then engine.outdir.swap puts it in
place, under a per-day lock (engine.outdir.lock), crash-safe.

The manifest (engine.outdir.manifest) records the hash of every file the engine wrote. Only those
files, unedited, are the engine's to replace or drop. Everything else in the folder is the
person's and is carried into the new folder (hard links, so it costs nothing): any name, any
subfolder, a ``.new.md`` they edited.

An engine file the person edited:
- a draft or alt text (text): the new numbers are merged into it (engine.outdir.merge) with the render
  they last saw (``.base.json``) as the merge base; a conflict leaves their file as it is and
  writes the merge with conflict markers beside it as ``<name>.new<suffix>``. The person answers
  it in their file (or moves the resolved merge over it) and deletes that file: their file then
  answers to the render the conflict was against, and later merges start from there;
- anything else (results.json, a chart): the fresh file takes its place so the folder stays
  consistent, and their version is kept beside it as ``<name>.edited<suffix>``.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from engine.errors import UserError
from engine.limits import (
    MAX_DRAFT_BYTES,
    MAX_RESULTS_BYTES,
    load_json,
    present,
    read_bytes_limited,
    read_json_limited,
    read_text_limited,
    size_text,
)
from engine.outdir import atomic, changes, merge, swap
from engine.outdir import lock as day_lock
from engine.outdir.manifest import (
    BASE,
    CHANGES,
    DERIVED,
    INTERNAL,
    MANIFEST,
    MERGEABLE,
    conflicts_left,
    read_base,
    read_manifest,
    sha256,
)
from engine.outdir.manifest import build_number as _build_number
from engine.outdir.manifest import is_new_render as _is_new_render

MAX_MERGE_BYTES = 1_000_000  # a draft is a few kB; a larger file is kept, never merged

__all__ = [
    "BASE",
    "CHANGES",
    "DERIVED",
    "INTERNAL",
    "MANIFEST",
    "MERGEABLE",
    "CommitReport",
    "Staging",
    "check_edits_fit",
    "check_target",
    "commit",
    "new_name",
    "read_manifest",
    "report_lines",
    "sha256",
    "write_failed",
]


# ---- errors a person can fix: one line each -------------------------------------------------


def write_failed(exc: OSError, target: Path, *, after: str = "out/ was left as it was") -> UserError:
    """An OSError while writing a day, as the one line the person sees."""
    reason = atomic.reason(exc)
    where = exc.filename or target
    return UserError(f"cannot write: {reason}; {after}", file=where)


def check_target(target: Path) -> None:
    """A link at out/ or out/dayNN is refused, not followed: the swap renames the day's folder,
    which would replace the link with a folder (or leave ``.dayNN.ready`` behind), and writing
    through it reaches a folder outside the one the person named."""
    parent = target.parent
    if parent.is_symlink():
        raise UserError(
            "--out is a symbolic link; the engine writes only into a real folder (name the folder "
            "it points to instead)",
            file=parent,
        )
    if parent.exists() and not parent.is_dir():
        raise UserError("--out names a file, not a folder", file=parent)
    if target.is_symlink():
        raise UserError(
            "is a symbolic link; a day's folder must be a real folder (remove the link and build again)",
            file=target,
        )
    if target.exists() and not target.is_dir():
        raise UserError("is a file, not a day folder: move it away and build again", file=target)


def check_edits_fit(target: Path, read_back: list[str]) -> None:
    """A text the build reads back after the new folder is in place (an engine draft or alt text
    the person edited, or a file named in ``read_back``: a platform's draft they wrote by hand,
    any alt text) past the limit for a draft (engine.limits) is refused before the build does
    any work: found only then, it failed the build with out/ already changed. Their file, and
    out/, stay as they are."""
    if not target.is_dir():
        return
    names = {*read_manifest(target), *read_back}
    for name in sorted(names):
        path = target / name
        if not name.endswith(MERGEABLE) or path.is_symlink() or not path.is_file():
            continue
        size = path.stat().st_size
        if size > MAX_DRAFT_BYTES:
            raise UserError(
                f"your edit is {size:,} bytes, over the limit of {size_text(MAX_DRAFT_BYTES)} for a "
                "draft; shorten it or move it out of the folder (or build with --force to replace "
                "it), then build again: out/ was left as it was",
                file=path,
            )


# ---- staging ----------------------------------------------------------------------------------


@dataclass
class Staging:
    """A private folder beside the target, on the same file system so renames are atomic."""

    target: Path
    path: Path
    lock: day_lock.DayLock | None = None
    recovered: list[str] = field(default_factory=list)
    swapped: bool = False  # from then on self.path may hold the previous folder: never removed

    @classmethod
    def create(cls, target: Path) -> Staging:
        """Take the day's lock, repair what a killed build left, and make the staging folder."""
        target = Path(target)
        check_target(target)
        held = None
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            held = day_lock.for_folder(target).acquire()
            recovered = swap.recover(target)
            tmp = swap.staging_path(target)  # one name: the lock lets one build of the day at a time
            tmp.mkdir()
            swap.pause("staging")
        except OSError as exc:
            if held is not None:
                held.release()
            raise write_failed(exc, target) from exc
        except BaseException:
            if held is not None:
                held.release()
            raise
        return cls(target=target, path=tmp, lock=held, recovered=recovered)

    def discard(self) -> None:
        """The staging folder gone and the day's lock let go: the build is over, done or not."""
        self.clear()
        self.release()

    def clear(self) -> None:
        """The staging folder gone (never the previous folder a swap left there); the lock kept."""
        if not self.swapped:
            shutil.rmtree(self.path, ignore_errors=True)

    def release(self) -> None:
        """The day's lock let go: held by a committed build until what it writes into the day's
        folder after the swap (its audit record, its review page) is written, so a second build
        of the day cannot swap the folder out from under those writes."""
        if self.lock is not None:
            self.lock.release()


# ---- commit -----------------------------------------------------------------------------------


@dataclass
class CommitReport:
    written: list[Path] = field(default_factory=list)
    kept_edits: list[tuple[Path, Path]] = field(default_factory=list)  # (kept, new render beside)
    merged: list[Path] = field(default_factory=list)  # edited drafts that took the new numbers
    unchanged_edits: list[Path] = field(default_factory=list)  # edits the new render did not touch
    conflicts: list[tuple[Path, Path, str]] = field(default_factory=list)  # (kept, merge, where)
    set_aside: list[tuple[Path, Path]] = field(default_factory=list)  # (replaced, their copy)
    notes: list[str] = field(default_factory=list)
    changes: dict = field(default_factory=dict)

    def checked_edits(self) -> list[tuple[Path, Path]]:
        """Every draft of the person's now in the folder, for the platform rules."""
        return [
            *self.kept_edits,
            *((p, p) for p in [*self.merged, *self.unchanged_edits]),
            *((kept, new) for kept, new, _ in self.conflicts),
        ]


def report_lines(report: CommitReport) -> list[str]:
    """What the commit did with the person's files and what changed, for the terminal."""
    lines = list(report.notes)
    summary = changes.summary(report.changes)
    if summary:
        lines.append(summary)
    for path in report.merged:
        lines.append(f"merged the new numbers into your edit of {path.name}")
    for path in report.unchanged_edits:
        lines.append(f"kept your edit of {path.name}; nothing in it had new numbers")
    for kept, new, where in report.conflicts:
        lines.append(
            f"your edit of {kept.name} conflicts with the new numbers ({where} of {new.name}): "
            f"{kept.name} is as you left it, {new.name} holds the merge with conflict markers; "
            f"answer it in {kept.name} (or move {new.name} over it once resolved) and delete "
            f"{new.name}: the next build takes {kept.name} as it then is"
        )
    for replaced, aside in report.set_aside:
        lines.append(
            f"{replaced.name} was edited by hand; replaced by the fresh one so the folder agrees "
            f"with itself, your version kept as {aside.name}"
        )
    return lines


def new_name(name: str, tag: str = "new") -> str:
    """'linkedin.md' → 'linkedin.new.md'; 'scoreboard.alt.txt' → 'scoreboard.alt.new.txt'."""
    stem, dot, suffix = name.rpartition(".")
    return f"{stem}.{tag}.{suffix}" if dot else f"{name}.{tag}"


def _free_name(folder: Path, name: str, tag: str) -> str:
    """new_name, or new-2, new-3 … when a person's file already holds that name."""
    candidate, n = new_name(name, tag), 1
    while present(folder / candidate):
        n += 1
        candidate = new_name(name, f"{tag}-{n}")
    return candidate


def _write(path: Path, text: str) -> None:
    """A file of the staging folder (engine.outdir.atomic, below out/: no link on the way)."""
    atomic.write_text(path, text, what="day folder", root=path.parent, durable=False)


def _read_text(path: Path) -> str:
    """A person's edited draft (its size checked by the caller against MAX_MERGE_BYTES)."""
    data = read_bytes_limited(path, MAX_MERGE_BYTES, "draft")
    try:
        return _universal(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UserError(
            f"your edit is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start}), "
            "so the new numbers cannot be merged into it; save it as UTF-8, or build with --force "
            "to replace it",
            file=path,
        ) from exc


def _read_before(path: Path) -> str | None:
    """A draft as the person had it, for the review page's word diff, in any bytes; none for
    a file over the merge limit (no diff shown: it is kept whole regardless)."""
    if path.stat().st_size > MAX_MERGE_BYTES:
        return None
    return _universal(read_bytes_limited(path, MAX_MERGE_BYTES, "draft").decode("utf-8", errors="replace"))


def _universal(text: str) -> str:
    """Line ends as Python's text mode reads them: an edit saved with CRLF merges line by line."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _carry(src: Path, dest: Path) -> None:
    """A person's file or folder into the new folder: hard links where possible, else a copy."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    if src.is_symlink():
        os.symlink(os.readlink(src), dest)
    elif src.is_dir():
        dest.mkdir(exist_ok=True)
        shutil.copystat(src, dest)
        for child in sorted(src.iterdir()):
            _carry(child, dest / child.name)
    else:
        try:
            os.link(src, dest)
        except FileExistsError:
            raise
        except OSError:
            # A copy, a chunk at a time, of a regular file (links and folders are handled above).
            with src.open("rb") as data, dest.open("xb") as copy:  # "x": never over a file
                shutil.copyfileobj(data, copy)
            shutil.copystat(src, dest)


def _refuse_odd_kinds(target: Path, rendered: dict[str, str]) -> None:
    """A link, a folder, a device or a FIFO where the build puts one of its files: refused, with
    one line, before anything moves (carried into the new folder it would clash with the fresh
    file; replaced, it would be lost)."""
    for name in sorted(rendered):
        parts = name.split("/")
        where = target
        for depth, part in enumerate(parts, start=1):
            where = where / part
            try:
                mode = os.lstat(where).st_mode
            except FileNotFoundError:
                break
            if depth == len(parts) and not stat.S_ISREG(mode):
                raise UserError(atomic.refusal(mode, f"the build writes {name}"), file=where)
            if depth < len(parts) and not stat.S_ISDIR(mode):
                raise UserError(atomic.refusal(mode, f"the build writes the folder of {name}"), file=where)


def _walk(folder: Path) -> Iterator[Path]:
    """Every file and link below folder, and each empty folder as itself, in sorted order: a
    generated subfolder (a carousel's page previews) is answered for file by file."""
    for child in sorted(folder.iterdir()):
        if child.is_dir() and not child.is_symlink() and any(child.iterdir()):
            yield from _walk(child)
        else:
            yield child


def _same_json(a: Path, b: str) -> bool:
    """results.json only re-indented or re-ordered is not an edit."""
    try:
        return bool(read_json_limited(a, MAX_RESULTS_BYTES, "results") == load_json(b, a, "results"))
    except UserError:
        return False


def commit(staging: Staging, *, force: bool = False, keep_lock: bool = False) -> CommitReport:
    """Move a finished staging folder into place (see the module docstring); releases the lock,
    or with ``keep_lock`` leaves it to the caller (Staging.release), who writes into the folder
    yet; on a failure it is released either way."""
    try:
        report = _commit(staging, force=force)
    except OSError as exc:
        staging.discard()
        raise write_failed(exc, staging.target) from exc
    except BaseException:
        staging.discard()
        raise
    staging.clear()
    if not keep_lock:
        staging.release()
    return report


def _commit(staging: Staging, *, force: bool) -> CommitReport:
    target, stage = staging.target, staging.path
    report = CommitReport(notes=list(staging.recovered))
    rendered = {
        p.relative_to(stage).as_posix(): sha256(p)
        for p in _walk(stage)
        if p.is_file() and not p.is_symlink() and p.name not in DERIVED
    }
    exists = target.is_dir()
    if exists:
        _refuse_odd_kinds(target, rendered)
    previous = read_manifest(target) if exists else {}
    base = {
        name: read_text_limited(stage / name, MAX_RESULTS_BYTES, "staged")  # the build's own files
        for name in rendered
        if name.endswith((*MERGEABLE, ".json"))
    }
    plan = _Plan(
        target=target,
        stage=stage,
        rendered=rendered,
        report=report,
        old_base=read_base(target) if exists else {},
        base=base,
        conflicted=conflicts_left(target) if exists else {},
    )

    edited: list[tuple[str, Path, str]] = []
    for old in _walk(target) if exists else []:
        name = old.relative_to(target).as_posix()
        if name in INTERNAL or name in DERIVED:
            continue
        if old.is_symlink() or not old.is_file():
            _carry(old, stage / name)  # a person's folder (or link): theirs, as it is
            continue
        current = sha256(old)
        if name.endswith(".md") and name in rendered:
            before = _read_before(old)
            if before is not None:
                plan.before[name] = before
        ours = previous.get(name) == current or (
            _is_new_render(name) and previous.get(name.replace(".new.", ".", 1)) == current
        )
        if ours:
            continue  # the engine's own file: replaced by the fresh build, or gone with it
        if name not in rendered:
            _carry(old, stage / name)  # a person's own file, or an engine file they edited
        else:
            edited.append((name, old, current))
    # Their own files are in place first, so a name chosen below never lands on one of them.
    for name, old, current in edited:
        plan.edited(name, old, current, force=force)

    if exists:
        report.changes = changes.compare(plan.old_base.get(changes.RESULTS), stage, plan.before)
        report.changes.update(
            merged=[p.name for p in report.merged],
            conflicts=[[kept.name, new.name, where] for kept, new, where in report.conflicts],
            set_aside=[[replaced.name, aside.name] for replaced, aside in report.set_aside],
        )
        _write(stage / CHANGES, changes.dumps(report.changes))
    # build: counts the day's builds, so that after a crash the newer of two folders is known.
    manifest = {
        "files": {**rendered, **plan.extra},
        "consumed": plan.consumed,
        "build": (_build_number(target) or 0) + 1 if exists else 1,
        **({"conflicts": plan.conflicts} if plan.conflicts else {}),
    }
    _write(stage / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    _write(stage / BASE, json.dumps(base, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    swap.pause("staged")
    staging.swapped = True  # set first: a failed swap leaves a leftover, never a removed folder
    replaced = swap.swap(stage, target)
    try:
        kept = swap.drop_old(replaced, target) if replaced is not None else None
    except OSError:
        kept = None  # left where it is; the next build checks it again (recover)
    if kept is not None:
        report.notes.append(f"files changed while building; the folder as it was is kept in {kept}")
    report.written = [target / name for name in sorted(rendered)]
    return report


@dataclass
class _Plan:
    """What one commit does with the engine files a person edited."""

    target: Path
    stage: Path
    rendered: dict[str, str]
    report: CommitReport
    old_base: dict[str, str]  # the renders the person last saw, by name
    base: dict[str, str]  # the same for the next build: the fresh renders, unless noted
    conflicted: dict[str, tuple[str, str]]  # the last build's conflicts (manifest.conflicts_left)
    conflicts: dict[str, dict[str, str]] = field(default_factory=dict)  # this build's, recorded
    consumed: dict[str, str] = field(default_factory=dict)  # old files the new folder answers for
    extra: dict[str, str] = field(default_factory=dict)  # engine files beside renders (merges)
    before: dict[str, str] = field(default_factory=dict)  # drafts as the person had them

    def edited(self, name: str, old: Path, current: str, *, force: bool) -> None:
        """``name`` is the file's path below the day's folder (``carousel/page-01.png``)."""
        stage, target = self.stage, self.target
        base = self.old_base.get(name)
        answered = self.conflicted.get(name)
        if answered is not None and not os.path.lexists(target / answered[0]):
            base = answered[1]  # the merge file is gone: their file answers to that render now
        else:
            answered = None
        if (
            force
            or current == self.rendered[name]
            or (name.endswith(".json") and base is not None and _same_json(old, base))
        ):
            self.consumed[name] = current  # overwritten on request, identical, or only re-indented
            return
        if not name.endswith(MERGEABLE):
            aside = _free_name(stage, name, "edited")
            _carry(old, stage / aside)
            self.consumed[name] = current
            self.report.set_aside.append((target / name, target / aside))
            return
        too_big = old.stat().st_size > MAX_MERGE_BYTES
        if too_big:
            self.report.notes.append(
                f"{name} is over {MAX_MERGE_BYTES:,} bytes, too large to merge: kept as it is"
            )
        theirs = "" if too_big else _read_text(old)
        original = theirs
        if answered is not None and not too_big and name in self.old_base:
            # What the merge carried besides the conflict (a number changed in another
            # paragraph) is carried into their answer too, their words winning wherever they
            # touched the same ones: the person answered the conflict, not the whole merge.
            theirs = merge.three_way(self.old_base[name], theirs, answered[1], theirs_win=True).text
        if base is None or too_big:
            # No render on record to merge from (a file written before the engine's), or a file
            # no draft could be: keep it, and the fresh render beside it.
            beside = _free_name(stage, name, "new")
            os.replace(stage / name, stage / beside)
            _carry(old, stage / name)
            self.extra[beside] = self.rendered[name]
            if base is None:
                self.base.pop(name, None)
            else:
                self.base[name] = base  # their file still answers to the render they saw
            self.report.kept_edits.append((target / name, target / beside))
            return
        self._merge(name, old, current, theirs, base, original)

    def _merge(self, name: str, old: Path, current: str, theirs: str, base: str, original: str) -> None:
        """Merge fresh numbers into ``theirs`` (the person's file as it is, ``original``, or
        with an answered conflict's other changes carried in)."""
        stage, target = self.stage, self.target
        fresh = read_text_limited(stage / name, MAX_RESULTS_BYTES, "staged")
        result = merge.three_way(base, theirs, fresh)
        if result.clean:
            _write(stage / name, result.text)
            self.consumed[name] = current
            done = self.report.unchanged_edits if result.text == original else self.report.merged
            done.append(target / name)
            return
        beside = _free_name(stage, name, "new")
        _write(stage / beside, result.text)
        self.extra[beside] = sha256(stage / beside)
        os.unlink(stage / name)
        _carry(old, stage / name)
        self.base[name] = base  # their file still answers to the old base
        self.conflicts[name] = {"merge": beside, "against": fresh}
        where = merge.describe(result.conflicts)
        self.report.conflicts.append((target / name, target / beside, where))
