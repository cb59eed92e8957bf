"""Which files are the lab, and one hash over them: the test for "the lab changed since".

The lab is the folder holding its script. Hidden files (a scratch file the lab writes while
it runs), caches and compiled bytecode are not the lab; everything else is, by path and bytes.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from engine.errors import UserError
from engine.limits import iter_bytes_limited

MAX_FILES = 500
MAX_BYTES = 64 * 2**20  # a lab folder is code and small data, not a data set
_SKIP_DIRS = {"__pycache__", ".git", ".pytest_cache", ".mypy_cache"}


def lab_dir(spec_dir: Path, script: str) -> Path:
    """The folder holding the script: ``days/`` + ``day01.lab/lab.py`` → ``days/day01.lab``."""
    return (spec_dir / script).parent


def lab_files(folder: Path) -> list[Path]:
    """The lab's files, sorted by their path inside the folder."""
    found = []
    for path in sorted(folder.rglob("*")):
        inside = path.relative_to(folder).parts
        if any(part.startswith(".") or part in _SKIP_DIRS for part in inside):
            continue
        if path.suffix in {".pyc", ".pyo"} or not path.is_file():
            continue
        found.append(path)
    if len(found) > MAX_FILES:
        raise ValueError(f"{folder} holds {len(found)} files; a lab folder may hold {MAX_FILES}")
    return found


def content_hash(folder: Path) -> str:
    """sha256 over each file's relative path and bytes, in sorted order: renaming, adding,
    removing or editing any file changes it; the clock and file times do not.

    The folder's total is checked against MAX_BYTES from the files' sizes before any is read,
    and each file is hashed a chunk at a time, so a 7 GiB file is refused unread."""
    files = lab_files(folder)
    sizes = [path.stat().st_size for path in files]
    if sum(sizes) > MAX_BYTES:
        raise ValueError(f"{folder} holds over {MAX_BYTES // 2**20} MiB; keep data out of the lab folder")
    digest = hashlib.sha256()
    for path, size in zip(files, sizes, strict=True):
        name = path.relative_to(folder).as_posix().encode()
        digest.update(len(name).to_bytes(8, "big") + name)
        digest.update(size.to_bytes(8, "big"))
        try:  # within the size just read: a file that grows meanwhile is refused, not hashed
            for chunk in iter_bytes_limited(path, size, "lab"):
                digest.update(chunk)
        except UserError as err:
            raise ValueError(err.line()) from None
    return digest.hexdigest()
