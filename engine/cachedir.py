"""Where the engine keeps what it can make again (drawings, compiled templates): the XDG cache
folder's ``sixty-days-engine``, never the repository or out/.

``$XDG_CACHE_HOME`` when it is set to an absolute path (the XDG base-directory rules ignore a
relative one), else ``~/.cache``. Deleting the folder only makes the next build slower.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

import engine

NAME = "sixty-days-engine"


def root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME", "")
    home = Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache"
    return home / NAME


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
