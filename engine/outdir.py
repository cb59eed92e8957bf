"""Writing a day's folder in out/ without ever losing a person's edits.

A build renders everything into a staging folder first; nothing in out/ changes until the whole
build (numbers, drafts, charts, platform checks) has succeeded. Then the staging folder replaces
the day's folder in two renames.

The manifest (``.manifest.json``) records the hash of every file the engine wrote. A file in
out/ whose bytes no longer match its manifest hash was edited by hand: the rebuild keeps it
and writes the fresh render beside it as ``<name>.new<suffix>`` unless ``force`` is set. Files
the engine never wrote (a person's notes) are carried over untouched.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

MANIFEST = ".manifest.json"
# Views rebuilt from the other files (``make review`` rewrites them in place): never a person's
# edit to protect, so they are always replaced and left out of the manifest.
DERIVED = frozenset({"index.html"})


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class Staging:
    """A private folder beside the target, on the same file system so renames are atomic."""

    target: Path
    path: Path

    @classmethod
    def create(cls, target: Path) -> Staging:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.staging-", dir=target.parent))
        tmp.chmod(0o755)  # mkdtemp makes it private; the day folder is an ordinary one
        return cls(target=target, path=tmp)

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


@dataclass
class CommitReport:
    written: list[Path] = field(default_factory=list)
    kept_edits: list[tuple[Path, Path]] = field(default_factory=list)  # (kept, new render beside)


def _read_manifest(folder: Path) -> dict[str, str]:
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
        return {str(k): str(v) for k, v in data.get("files", {}).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def new_name(name: str) -> str:
    """'linkedin.md' → 'linkedin.new.md'; 'scoreboard.alt.txt' → 'scoreboard.alt.new.txt'."""
    stem, dot, suffix = name.rpartition(".")
    return f"{stem}.new.{suffix}" if dot else f"{name}.new"


def _is_new_render(name: str) -> bool:
    return ".new." in name or name.endswith(".new")


def commit(staging: Staging, *, force: bool = False) -> CommitReport:
    """Move a finished staging folder into place, keeping hand edits (see module docstring)."""
    target, stage = staging.target, staging.path
    report = CommitReport()
    rendered = {
        p.name: sha256(p) for p in sorted(stage.iterdir()) if p.is_file() and p.name not in DERIVED
    }
    previous = _read_manifest(target) if target.is_dir() else {}

    if target.is_dir():
        for old in sorted(target.iterdir()):
            if not old.is_file() or old.name in DERIVED or old.name == MANIFEST:
                continue
            if _is_new_render(old.name):
                continue  # a '.new' render is stale once a fresh build exists: made again below
            current = sha256(old)
            ours = previous.get(old.name) == current  # still exactly what the engine wrote
            if old.name not in rendered:
                if not ours:
                    shutil.copy2(old, stage / old.name)  # a person's own file: carried over
                continue
            if not ours and not force and current != rendered[old.name]:
                os.replace(stage / old.name, stage / new_name(old.name))
                shutil.copy2(old, stage / old.name)
                report.kept_edits.append((target / old.name, target / new_name(old.name)))

    manifest = {"files": rendered}
    (stage / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    _swap(stage, target)
    report.written = [target / name for name in sorted(rendered)]
    return report


def _swap(stage: Path, target: Path) -> None:
    """Replace target by stage: two renames, so out/ never holds a half-written day."""
    old = target.with_name(f".{target.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if target.exists():
        os.replace(target, old)
    os.replace(stage, target)
    shutil.rmtree(old, ignore_errors=True)
