"""What a lab may not touch: a manifest of the project's own trees, taken before and after a run.

A lab writes scratch files in its own folder (hidden ones: engine.lab.labfiles) and in the
system's temporary folder. A lab that edits a spec, a template or the engine itself while it
runs, even by accident (a relative path from the wrong folder, a clean-up that removes too
much), would change what the next build posts; so its run fails loudly and its measurement is
not kept. Sizes, modification times and kinds are compared, not bytes: a touch counts, and a
tree of thousands of files is listed in milliseconds. ``__pycache__`` is skipped (Python writes
bytecode there when the lab imports labkit), and so is the lab's own folder (its files are
hashed by labfiles). The change time is compared too: a program can set a file's modification
time back (os.utime) after editing it in place, but not its change time, which every write and
every utime moves.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

from engine import cachedir
from engine.errors import UserError
from engine.limits import resolves_inside

ENGINE_DIR = Path(__file__).resolve().parents[1]
PROJECT_DIR = ENGINE_DIR.parent
MAX_ENTRIES = 200_000  # more than any project's files (its virtual environment left out)
MAX_NAMED = 5  # changes one error names
# Never the lab's to change, and too big or too busy to list: the virtual environment, git's
# own folder, and the tools' caches; and bytecode, which Python writes when the lab imports.
_SKIP = {"__pycache__", ".venv", ".git", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis"}

Entry = tuple[str, int, int, int] | tuple[str, str] | tuple[str]


def watched(spec_dir: Path) -> list[Path]:
    """The trees a lab must leave as they were: the project (days/, templates/, engine/, out/,
    tests/ and the files beside them), the spec's folder where it is elsewhere, and the engine's
    cache folder (compiled templates there are code a later build runs)."""
    roots = [PROJECT_DIR, Path(spec_dir)]
    try:
        roots.append(cachedir.location())
    except cachedir.NoCacheFolder:
        pass
    inside = [r for r in roots if r.is_dir()]
    return [r for r in inside if not any(r != o and resolves_inside(r, o) for o in inside)]


def snapshot(roots: Iterable[Path], skip: Iterable[Path] = ()) -> dict[str, Entry]:
    """Every entry below ``roots`` (not following links), but ``skip`` and ``__pycache__``: a
    file as (size, mtime, ctime), a link as its target, a folder by its presence (its own mtime
    moves when Python writes bytecode in it)."""
    skipped = {os.path.realpath(p) for p in skip}
    found: dict[str, Entry] = {}
    for root in roots:
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(
                d for d in dirs if d not in _SKIP and os.path.realpath(os.path.join(folder, d)) not in skipped
            )
            for name in [*dirs, *sorted(files)]:
                path = os.path.join(folder, name)
                try:
                    info = os.lstat(path)
                except FileNotFoundError:
                    continue
                if stat.S_ISLNK(info.st_mode):
                    found[path] = ("link", os.readlink(path))
                elif stat.S_ISDIR(info.st_mode):
                    found[path] = ("dir",)
                else:
                    found[path] = ("file", info.st_size, info.st_mtime_ns, info.st_ctime_ns)
                if len(found) > MAX_ENTRIES:
                    raise UserError(
                        f"holds over {MAX_ENTRIES:,} files; too many to watch while a lab runs", file=root
                    )
    return found


def changes(before: dict[str, Entry], after: dict[str, Entry]) -> list[str]:
    """What differs, one phrase per path, sorted: 'removed X', 'added X', 'changed X'."""
    found = [f"removed {p}" for p in before if p not in after]
    found += [f"added {p}" for p in after if p not in before]
    found += [f"changed {p}" for p in before if p in after and before[p] != after[p]]
    return sorted(found, key=lambda s: s.split(" ", 1)[1])


def check(before: dict[str, Entry], after: dict[str, Entry], *, file: Path, field: str) -> None:
    """A UserError naming what the run changed outside the lab's folder, if anything."""
    found = changes(before, after)
    if not found:
        return
    named = "; ".join(found[:MAX_NAMED]) + (
        f"; and {len(found) - MAX_NAMED} more" if len(found) > MAX_NAMED else ""
    )
    # What it left in the engine's cache (a compiled template is code a build runs) is not kept.
    touched = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    emptied = _touched_cache(touched) and cachedir.empty() is not None
    raise UserError(
        f"the lab changed files outside its own folder while it ran ({named}); a lab writes only "
        "in its folder (hidden names) or the system's temporary folder; no file written"
        + ("; the engine's cache, which it changed, was emptied" if emptied else ""),
        file=file,
        field=field,
    )


def _touched_cache(paths: set[str]) -> bool:
    """Whether any of ``paths`` is in the engine's cache folder."""
    try:
        cache = cachedir.location()
    except cachedir.NoCacheFolder:
        return False
    return any(Path(p).is_relative_to(cache) for p in paths)
