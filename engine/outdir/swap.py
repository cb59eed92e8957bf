"""Putting a finished day folder in place so that a build killed at any moment loses nothing.

The finished staging folder is renamed ``.<day>.ready`` and exchanged with the day's folder in one
atomic step (Linux renameat2 RENAME_EXCHANGE), so out/<day> is at every instant a complete
folder, old or new; where the file system cannot exchange, two renames through ``.<day>.old``.
The previous folder is deleted only when every file in it is accounted for in the new one (same
bytes, the engine's own unedited file, or consumed and recorded in the new manifest); otherwise
it is kept, visibly, as ``<day>.kept-N``. The next build (recover, under the day's lock) undoes or
finishes a swap that was cut short and removes unfinished staging folders.
"""

from __future__ import annotations

import ctypes
import errno
import os
import shutil
from pathlib import Path

from engine.outdir import manifest as mf


def pause(point: str) -> None:
    """A named moment of a commit ('staging', 'staged', 'ready', 'old-moved', 'swapped'), where
    a kill must still leave a whole folder. It does nothing: it is the fault-injection seam, which
    a crash test replaces (``engine.outdir.swap.pause = …`` in a forked child) to stop there and be killed."""


def _old(target: Path) -> Path:
    return target.with_name(f".{target.name}.old")


def staging_path(target: Path) -> Path:
    return target.with_name(f".{target.name}.staging")


def _ready(target: Path) -> Path:
    """A finished staging folder waiting to be exchanged with the day's folder."""
    return target.with_name(f".{target.name}.ready")


def recover(target: Path) -> list[str]:
    """Finish or undo a swap cut short by a killed build; drop its staging folders.

    Called with the day's lock held, so no other build is using them.
    """
    notes: list[str] = []

    def check(previous: Path) -> None:
        kept = drop_old(previous, target)
        if kept is not None:
            notes.append(f"an interrupted build left files not in {target.name}: kept in {kept}")

    for leftover in sorted(target.parent.glob(f".{target.name}.staging*")):
        shutil.rmtree(leftover, ignore_errors=True)  # a build that never finished staging
    old = _old(target)
    if old.is_dir() and not old.is_symlink():  # a link planted there is not our folder
        if not target.exists():
            os.replace(old, target)  # killed between the two renames: the old folder comes back
            notes.append(f"restored {target.name} from a build that was stopped mid-swap")
        else:
            check(old)
    ready = _ready(target)
    if ready.is_dir() and not ready.is_symlink():
        ours, theirs = mf.build_number(ready), mf.build_number(target)
        if not target.exists():
            os.replace(ready, target)  # complete, and nothing else is there
        elif ours is not None and theirs is not None and ours > theirs:
            shutil.rmtree(ready, ignore_errors=True)  # never swapped in: the day is as it was
        else:
            check(ready)  # swapped: this is the previous folder
    return notes


def swap(stage: Path, target: Path) -> Path | None:
    """Put stage in target's place; return where the old folder now is.

    One atomic exchange of the two names where the file system has it (Linux renameat2), so
    out/<day> is at every instant a complete folder, old or new; elsewhere two renames, and a
    build killed between them is undone by the next one (recover).
    """
    if not target.exists():
        os.replace(stage, target)
        return None
    ready = _ready(target)
    os.replace(stage, ready)
    pause("ready")
    if _exchange(ready, target):
        old = ready  # the ready name now holds the previous folder
    else:
        old = _old(target)
        os.replace(target, old)
        pause("old-moved")
        try:
            os.replace(ready, target)
        except BaseException:
            if old.is_dir() and not target.exists():
                os.replace(old, target)
            raise
    pause("swapped")
    return old


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (renameat2 RENAME_EXCHANGE); False where that is unsupported."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


# ---- the old folder goes only when nothing in it would be lost -------------------------------


def unaccounted(old: Path, new: Path) -> list[str]:
    """Paths in the old folder whose bytes are in neither the new folder nor the engine's record.

    A file is accounted for when it is the engine's own unedited file (old manifest), when the
    new folder holds it byte for byte at the same place, or when the new manifest records it as
    consumed (a draft merged with new numbers, an edited chart set aside beside the fresh one).
    """
    ours = mf.read_manifest_quiet(old)
    consumed = mf.consumed(new)
    missing: list[str] = []

    def walk(folder: Path, rel: str) -> None:
        for entry in sorted(folder.iterdir()):
            path = f"{rel}{entry.name}"
            if not rel and (entry.name in mf.INTERNAL or entry.name in mf.DERIVED):
                continue
            there = new / path
            if entry.is_symlink():
                if not (there.is_symlink() and os.readlink(there) == os.readlink(entry)):
                    missing.append(path)
            elif entry.is_dir():
                if there.is_symlink() or (there.exists() and not there.is_dir()):
                    missing.append(path)  # something else in its place
                else:  # there, or gone with the engine's files it held (a carousel no longer drawn)
                    walk(entry, path + "/")
            else:
                if not there.is_symlink() and _same_file(entry, there):
                    continue
                if not entry.is_file():  # a person's FIFO, socket or device: carried as itself, never read
                    missing.append(path)
                    continue
                digest = mf.sha256(entry)
                if ours.get(path) == digest or consumed.get(path) == digest:
                    continue
                if mf.is_new_render(path) and ours.get(path.replace(".new.", ".", 1)) == digest:
                    continue
                missing.append(path)

    walk(old, "")
    return missing


def _same_file(a: Path, b: Path) -> bool:
    try:
        if os.path.samefile(a, b):
            return True
    except OSError:
        return False
    if not (a.is_file() and b.is_file()):  # the same FIFO or device is the same inode, above
        return False
    return a.stat().st_size == b.stat().st_size and mf.sha256(a) == mf.sha256(b)


def drop_old(old: Path, target: Path) -> Path | None:
    """Delete the previous folder if nothing in it would be lost; else keep it, visibly named."""
    if not old.is_dir():
        return None
    if not unaccounted(old, target):
        shutil.rmtree(old, ignore_errors=True)
        return None
    n = 1
    while (keep := target.with_name(f"{target.name}.kept-{n}")).exists():
        n += 1
    os.replace(old, keep)
    return keep
