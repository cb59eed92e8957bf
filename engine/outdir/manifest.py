"""A day folder's record of what the engine wrote, and of the renders the person last saw.

``.manifest.json`` holds the hash of every file the engine wrote (``files``), the person's files
a build consumed (``consumed``: a draft merged with new numbers, an edited chart set aside), the
build's number (``build``, which tells the newer of two folders after a crash) and, for each draft
whose edit conflicted with new numbers, the file that holds the merge with its markers and the
render the conflict was against (``conflicts``: see conflicts_left).
``.base.json`` holds the text of each render as the person last saw it: the next merge's base.
``.audit.json`` holds each draft's fresh render and the render before it, for engine.audit.
"""

from __future__ import annotations

from pathlib import Path

from engine.errors import UserError
from engine.limits import (
    MAX_DAY_FILE_BYTES,
    MAX_RECORD_BYTES,
    read_json_limited,
    read_json_object,
    sha256_limited,
)

MANIFEST = ".manifest.json"
BASE = ".base.json"  # the render of each text file the person last saw: the next merge's base
CHANGES = ".changes.json"  # what this build changed (engine.outdir.changes), for the review page
# Each draft's fresh render and the one the person saw before it (engine.audit.record): what the
# number audit traces an edited draft against; written by the build after the folder is in place.
AUDIT = ".audit.json"
INTERNAL = frozenset({MANIFEST, BASE, CHANGES, AUDIT})
# Views rebuilt from the other files (``make review`` rewrites them in place): never a person's
# edit to protect, so they are always replaced and left out of the manifest.
DERIVED = frozenset({"index.html"})
MERGEABLE = (".md", ".txt")  # text a person edits on purpose: merged, not set aside


def sha256(path: Path) -> str:
    """A file of the day folder, hashed a chunk at a time (a person's video is not read whole)."""
    return sha256_limited(path, MAX_DAY_FILE_BYTES, "day folder")


def read_manifest(folder: Path) -> dict[str, str]:
    """The engine's files and their hashes; an unreadable manifest stops the build (one line)."""
    path = folder / MANIFEST
    if not path.is_file() and not path.is_symlink():
        return {}
    advice = (
        "so the build cannot tell your edits from its own files; restore it, or delete it to "
        "have every file there kept as yours"
    )
    try:
        data = read_json_limited(path, MAX_RECORD_BYTES, "manifest", follow_symlinks=False)
    except UserError as err:
        raise UserError(f"unreadable ({err.message}), {advice}", file=path, field=err.field) from None
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise UserError(f"unreadable ('files' is not a table of hashes), {advice}", file=path)
    return {str(k): v for k, v in files.items()}


def read_manifest_quiet(folder: Path) -> dict[str, str]:
    try:
        return read_manifest(folder)
    except UserError:
        return {}


def consumed(folder: Path) -> dict[str, str]:
    found = field(folder, "consumed")
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def field(folder: Path, key: str) -> object:
    data = read_json_object(folder / MANIFEST, MAX_RECORD_BYTES, "manifest")
    return data.get(key) if data is not None else None


def build_number(folder: Path) -> int | None:
    """Which build made this folder (1, 2, …): tells the newer of two folders after a crash."""
    number = field(folder, "build")
    return number if isinstance(number, int) and not isinstance(number, bool) else None


def conflicts_left(folder: Path) -> dict[str, tuple[str, str]]:
    """Drafts whose edit conflicted with the new numbers at the last build: name → (the file the
    merge with conflict markers went to, the render the conflict was against). Once that file is
    gone, the person has answered the conflict in their draft (or moved the resolved merge over
    it), which then answers to that render: the next merge's base. Unreadable: none."""
    found = field(folder, "conflicts")
    if not isinstance(found, dict):
        return {}
    return {
        str(name): (entry["merge"], entry["against"])
        for name, entry in found.items()
        if isinstance(entry, dict)
        and isinstance(entry.get("merge"), str)
        and isinstance(entry.get("against"), str)
    }


def read_base(folder: Path) -> dict[str, str]:
    """The renders the person last saw; none (no merge, their edit kept whole) if unreadable."""
    data = read_json_object(folder / BASE, MAX_RECORD_BYTES, "base") or {}
    return {str(k): v for k, v in data.items() if isinstance(v, str)}


def is_new_render(name: str) -> bool:
    return ".new." in name or name.endswith(".new")
