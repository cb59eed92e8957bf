"""Writing a JSON document atomically: a temporary file in the same folder, flushed to disk,
then renamed over the target. A reader (or a run killed half-way) sees the old file or the new
one, never half of one; a failed write leaves the old file as it was."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from engine.errors import UserError


def write_json(doc: Any, path: Path, *, what: str, ensure_ascii: bool = True) -> Path:
    """Write ``doc`` to ``path`` (sorted keys, indented); an OS error is one line naming it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise UserError(f"cannot write the {what}: {err.strerror or err}", file=path) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(doc, out, indent=2, sort_keys=True, ensure_ascii=ensure_ascii)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise UserError(f"cannot write the {what}: {err.strerror or err}", file=path) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
