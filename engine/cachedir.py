"""Where the engine keeps what it can make again (drawings, compiled templates): the XDG cache
folder's ``sixty-days-engine``, never the repository or out/.

``$XDG_CACHE_HOME`` when it is set to an absolute path (the XDG base-directory rules ignore a
relative one), else ``~/.cache``; with neither, no cache (NoCacheFolder). Deleting the folder
only makes the next build slower.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import platform
import re
import shutil
import stat
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import numpy as np

import engine

NAME = "sixty-days-engine"
KEEP_VERSIONS = 3  # a cache's files of code digests kept: this code's, and two others still in use


class NoCacheFolder(OSError):
    """There is no folder to keep a cache in: XDG_CACHE_HOME is unset (or relative) and there is
    no home folder, or a relative one (a container's unnamed user without HOME). Every cache takes
    it as a folder it cannot use: the build goes on without one, and nothing is written where the
    person did not say (a relative folder would be under whatever folder the build ran in)."""


def root() -> Path:
    """The engine's cache folder, where it is the person's own (``ours``); NoCacheFolder where it
    is not."""
    folder = location()
    ours(folder)
    return folder


def ours(folder: Path) -> None:
    """Refuse (NoCacheFolder) a cache folder that is a link, or that someone else owns or may
    write in: what a cache holds is trusted (compiled templates are code a build runs, kept
    drawings are copied into out/ as they are), so a cache under a shared XDG_CACHE_HOME (/tmp)
    that another user made, or opened to every user, is no cache, as ssh refuses a key file others
    can write. A folder not made yet is made by the build, as the person's, with their umask."""
    try:
        seen = folder.lstat()
    except FileNotFoundError:
        return
    except OSError as err:
        raise NoCacheFolder(f"the engine's cache folder {folder} cannot be read ({err.strerror})") from None
    if stat.S_ISLNK(seen.st_mode) or not stat.S_ISDIR(seen.st_mode):
        raise NoCacheFolder(f"the engine's cache folder {folder} is a link or not a folder: not used")
    if hasattr(os, "getuid") and seen.st_uid != os.getuid():
        raise NoCacheFolder(f"the engine's cache folder {folder} belongs to another user: not used")
    if seen.st_mode & stat.S_IWOTH:  # by any user (a group's write is the umask 002 of many systems)
        raise NoCacheFolder(f"the engine's cache folder {folder} may be written by anyone: not used")


def location() -> Path:
    """Where the engine's cache folder is (see the module's docstring), whoever's it is."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if base and Path(base).is_absolute():
        return Path(base) / NAME
    try:
        home = Path.home()
    except RuntimeError:  # no HOME, and the user has no entry in the password database
        home = Path()
    if not home.is_absolute():
        raise NoCacheFolder(
            "no folder for the engine's cache: set XDG_CACHE_HOME or HOME to an absolute path"
        )
    return home / ".cache" / NAME


ENGINE = Path(engine.__file__).resolve().parent


def empty() -> Path | None:
    """Remove the engine's whole cache folder (every cache in it makes again what it needs, to
    the same bytes), never through a link; the folder, or None where there is none."""
    try:
        folder = location()
    except NoCacheFolder:
        return None
    if folder.is_symlink():
        folder.unlink()
        return folder
    try:
        ours(folder)
    except NoCacheFolder:
        return None  # someone else's: not the engine's to empty
    shutil.rmtree(folder, ignore_errors=True)
    return folder


def forget_old(keep: Path, ours: re.Pattern[str], versions: int = KEEP_VERSIONS) -> None:
    """Delete the files beside ``keep`` named as ``ours`` (a cache's digest-named files, never
    another), but ``keep`` and the ``versions`` − 1 others used last, by their modification
    time (each cache touches its file as it uses it): two checkouts, or a branch and main,
    sharing one cache folder each find their own, and the folder stays bounded."""
    others = []
    with contextlib.suppress(FileNotFoundError, NotADirectoryError), os.scandir(keep.parent) as entries:
        for entry in entries:
            if ours.fullmatch(entry.name) and entry.name != keep.name:
                with contextlib.suppress(OSError):
                    others.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.name, entry.path))
    for *_, path in sorted(others, reverse=True)[max(versions - 1, 0) :]:
        with contextlib.suppress(OSError):
            os.unlink(path)


def forget_all(folder: Path, ours: re.Pattern[str]) -> None:
    """Delete every file in ``folder`` named as ``ours`` (`make clean-cache`): none through a
    linked folder, and a folder that cannot be listed only keeps its files."""
    with contextlib.suppress(OSError):
        if not folder.is_symlink():
            forget_old(folder / "\0", ours, versions=0)  # kept: a name no file can have


def touch(path: Path) -> None:
    """Mark a cache's file used now (its modification time, what forget_old keeps by), never
    through a link; a file that cannot be touched is only forgotten sooner."""
    if os.utime in os.supports_follow_symlinks:
        with contextlib.suppress(OSError):
            os.utime(path, follow_symlinks=False)


def code_digest(files: Iterable[Path], libraries: Iterable[str]) -> str:
    """A digest of the engine's files named (read as they are: the code a cache's entries were
    made by, not an input), of the versions of the libraries named, by distribution name, and of
    the machine (machine())."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(
            path.resolve().relative_to(ENGINE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0"
        )
    for name in libraries:
        digest.update(f"{name}=={metadata.version(name)}\0".encode())
    digest.update(machine().encode())
    return digest.hexdigest()


@functools.cache
def machine() -> str:
    """What a cached result depends on besides the code and the libraries' versions: the
    interpreter, the processor's architecture, the C library (its maths functions), and the SIMD
    extensions numpy found on this processor (its loops take the widest there is, and a sum taken
    eight lanes at a time can round differently from one taken four at a time). So a cache folder
    two machines share (a home folder on a network disk) keeps each machine's results apart, and
    a cached build gives the bytes a cold build gives here."""
    simd = np.show_config(mode="dicts").get("SIMD Extensions", {})
    interpreter = [platform.python_implementation(), platform.python_version()]
    return json.dumps([interpreter, platform.machine(), platform.libc_ver(), simd], sort_keys=True)
