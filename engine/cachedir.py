"""Where the engine keeps what it can make again (drawings, compiled templates): the XDG cache
folder's ``sixty-days-engine``, never the repository or out/.

``$XDG_CACHE_HOME`` when it is set to an absolute path (the XDG base-directory rules ignore a
relative one), else ``~/.cache``; with neither, no cache (NoCacheFolder). Deleting the folder
only makes the next build slower.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import engine

NAME = "sixty-days-engine"


class NoCacheFolder(OSError):
    """There is no folder to keep a cache in: XDG_CACHE_HOME is unset (or relative) and there is
    no home folder, or a relative one (a container's unnamed user without HOME). Every cache takes
    it as a folder it cannot use: the build goes on without one, and nothing is written where the
    person did not say (a relative folder would be under whatever folder the build ran in)."""


def root() -> Path:
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


def code_digest(files: Iterable[Path], libraries: Iterable[str]) -> str:
    """A digest of the engine's files named (read as they are: the code a cache's entries were
    made by, not an input) and of the versions of the libraries named, by distribution name."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(
            path.resolve().relative_to(ENGINE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0"
        )
    for name in libraries:
        digest.update(f"{name}=={metadata.version(name)}\0".encode())
    return digest.hexdigest()
