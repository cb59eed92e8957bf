"""Where the engine keeps what it can make again (drawings, compiled templates): the XDG cache
folder's ``sixty-days-engine``, never the repository or out/.

``$XDG_CACHE_HOME`` when it is set to an absolute path (the XDG base-directory rules ignore a
relative one), else ``~/.cache``. Deleting the folder only makes the next build slower.
"""

from __future__ import annotations

import os
from pathlib import Path

NAME = "sixty-days-engine"


def root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME", "")
    home = Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache"
    return home / NAME
