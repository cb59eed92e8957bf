"""Every file the engine writes goes through here: a temporary file in the target's folder, then
one rename over the target. A reader (or a run killed half-way) sees the old file or the new one,
never half of one; a failed write leaves the old file as it was.

Why refuse rather than write through: a day someone else wrote, or a folder someone else set up,
may hold a symbolic link where the engine writes (``out/index.html → ~/.bashrc``), a device
(``--trace /dev/full``), a FIFO, or a folder where a file belongs. Writing through any of them
reaches outside the project, blocks, or destroys what is there. So the target must be absent or a
regular file, and every folder from ``root`` down to it must be a real folder, not a link. The
folders are opened one by one with ``O_NOFOLLOW`` and the file is created and renamed relative to
the last one, so a link swapped in while the engine checks cannot redirect the write either.

``root`` is the folder the engine owns (``out/``); its own parents are the person's choice and
are followed as named. Without ``root`` only the target itself is checked.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from engine.errors import UserError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


_REASONS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
}


def reason(err: OSError) -> str:
    """An OSError as the words a person reads."""
    return _REASONS.get(err.errno or 0, err.strerror or str(err))


def _failed(what: str, path: Path, field: str | None, err: OSError) -> UserError:
    return UserError(f"cannot write the {what}: {reason(err)}", file=path, field=field)


def refusal(mode: int, what: str) -> str:
    """Why a path of this mode is refused where the engine writes ``what``."""
    if stat.S_ISLNK(mode):
        return (
            f"is a symbolic link where {what}; the engine never writes through one (remove it and run again)"
        )
    if stat.S_ISDIR(mode):
        return f"is a folder where {what} (move it away and run again)"
    if stat.S_ISREG(mode):
        return f"is a file where {what} (move it away and run again)"
    return (
        f"is not a regular file (a device, pipe or socket) where {what}; the engine writes only plain files"
    )


def _kind(mode: int) -> str | None:
    """Why a path with this mode cannot be written as a file, or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "is a symbolic link; the engine never writes through one (remove it and run again)"
    if stat.S_ISDIR(mode):
        return "is a folder where the engine writes a file (move it away and run again)"
    return "is not a regular file (a device, pipe or socket); the engine writes only plain files"


def _refuse(reason: str, path: Path, field: str | None) -> UserError:
    return UserError(reason, file=path, field=field)


def _open_folder(folder: Path, root: Path | None, field: str | None, *, make: bool = True) -> int | None:
    """A descriptor of ``folder``, reached from ``root`` without following a link below it;
    missing folders are made (or, without ``make``, None is returned: nothing is there yet)."""
    if root is None:
        if not make and not folder.is_dir():
            return None
        folder.mkdir(parents=True, exist_ok=True)
        return os.open(folder, _DIR_FLAGS)
    try:
        parts = folder.relative_to(root).parts
    except ValueError:
        raise ValueError(f"{folder} is not inside {root}") from None
    try:
        info = os.lstat(root)
    except FileNotFoundError:
        if not make:
            return None
        root.mkdir(parents=True, exist_ok=True)
        info = os.lstat(root)
    if not stat.S_ISDIR(info.st_mode):
        raise _refuse(_kind(info.st_mode) or "is a file, not a folder", root, field)
    fd = os.open(root, _DIR_FLAGS | _NOFOLLOW)
    where = root
    try:
        for part in parts:
            where = where / part
            try:
                info = os.stat(part, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                if not make:
                    os.close(fd)
                    return None
                os.mkdir(part, dir_fd=fd)
                info = os.stat(part, dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISDIR(info.st_mode):
                raise _refuse(_kind(info.st_mode) or "is a file, not a folder", where, field)
            child = os.open(part, _DIR_FLAGS | _NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_in(fd: int, path: Path, *, existing: str | None, field: str | None) -> bool:
    """Refuse a target that is not a regular file (or, given ``existing``, one that is); return
    whether a file is there."""
    try:
        info = os.stat(path.name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    reason = _kind(info.st_mode)
    if reason is not None:
        raise _refuse(reason, path, field)
    if existing is not None:
        raise _refuse(existing, path, field)
    return True


def check_target(
    path: Path | str,
    *,
    what: str,
    root: Path | None = None,
    existing: str | None = None,
    field: str | None = None,
) -> bool:
    """What a write to ``path`` would refuse, refused now (before minutes of work): a link, device,
    FIFO or folder at the target or, below ``root``, at a folder on the way; with ``existing``, a
    regular file too (the message says how to overwrite it). True when a regular file is there."""
    path = Path(path)
    try:
        fd = _open_folder(path.parent, root, field, make=False)
    except OSError as err:
        raise _failed(what, path, field, err) from None
    if fd is None:
        return False  # its folder is not there yet: nothing to refuse
    try:
        return _check_in(fd, path, existing=existing, field=field)
    finally:
        os.close(fd)


@contextmanager
def replacing(
    path: Path | str,
    *,
    what: str,
    root: Path | None = None,
    binary: bool = False,
    newline: str | None = None,
    durable: bool = True,
    existing: str | None = None,
    field: str | None = None,
) -> Iterator[IO[Any]]:
    """A file to write ``path``'s new content into; on leaving the block it replaces ``path``
    (flushed to disk first when ``durable``). An exception inside leaves the old file as it was.
    An OS error is one line naming the file."""
    path = Path(path)
    tmp = f".{path.name}.{secrets.token_hex(4)}.tmp"
    try:
        fd = _open_folder(path.parent, root, field)
    except OSError as err:
        raise _failed(what, path, field, err) from None
    assert fd is not None  # made when missing
    created = False
    try:
        _check_in(fd, path, existing=existing, field=field)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        out_fd = os.open(tmp, flags, 0o666, dir_fd=fd)
        created = True
        mode = "wb" if binary else "w"
        encoding = None if binary else "utf-8"
        with os.fdopen(out_fd, mode, encoding=encoding, newline=None if binary else newline) as out:
            yield out
            out.flush()
            if durable:
                os.fsync(out.fileno())
        _check_in(fd, path, existing=existing, field=field)  # nothing swapped in meanwhile
        os.replace(tmp, path.name, src_dir_fd=fd, dst_dir_fd=fd)
        created = False
    except OSError as err:
        raise _failed(what, path, field, err) from None
    finally:
        if created:
            try:
                os.unlink(tmp, dir_fd=fd)
            except OSError:
                pass
        os.close(fd)


def write_bytes(path: Path | str, data: bytes, *, what: str, **options: Any) -> Path:
    """``data`` as the whole of ``path`` (options as ``replacing``)."""
    with replacing(path, what=what, binary=True, **options) as out:
        out.write(data)
    return Path(path)


def write_text(path: Path | str, text: str, *, what: str, **options: Any) -> Path:
    """``text`` as UTF-8, the whole of ``path`` (options as ``replacing``)."""
    with replacing(path, what=what, **options) as out:
        out.write(text)
    return Path(path)


def write_json(doc: Any, path: Path | str, *, what: str, ensure_ascii: bool = True, **options: Any) -> Path:
    """``doc`` to ``path`` (sorted keys, indented)."""
    with replacing(path, what=what, **options) as out:
        json.dump(doc, out, indent=2, sort_keys=True, ensure_ascii=ensure_ascii)
        out.write("\n")
    return Path(path)
