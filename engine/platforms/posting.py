"""Which platforms a day posts to.

Every day posts to the required platforms (LinkedIn, X); a day opts in to the others by listing
them in its spec (``platforms: [linkedin, x, bluesky]``), or by a template of the platform's
own in templates/dayNN/. A built folder says the same by its drafts: a required platform
always, an optional one where its draft is there. The build, the
folder check and the review page all ask here, so they never disagree about a day.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from engine.limits import present
from engine.platforms.registry import PLATFORMS, Platform, platforms


def known(name: str) -> str:
    """A registered platform's name; a ValueError listing the registered ones otherwise."""
    if name not in PLATFORMS:
        names = [repr(n) for n in PLATFORMS.names()]
        raise ValueError(f"must be one of {', '.join(names[:-1])} or {names[-1]}, got {name!r}")
    return name


def check_listed(names: Sequence[str]) -> None:
    """A spec's ``platforms:`` names each platform once and every required one: a list that
    leaves out LinkedIn reads as "not on LinkedIn", which no day can be."""
    twice = next((n for n in names if list(names).count(n) > 1), None)
    if twice is not None:
        raise ValueError(f"'{twice}' is listed twice")
    missing = [p.name for p in platforms() if p.required and p.name not in names]
    if missing:
        every = [p.name for p in platforms() if p.required or p.name in names]
        raise ValueError(
            f"every day posts to {' and '.join(missing)}: list {'it' if len(missing) == 1 else 'them'} "
            f"too (platforms: [{', '.join(every)}])"
        )


def posted(names: Sequence[str] | None) -> list[Platform]:
    """The platforms a day with this ``platforms:`` list posts to, in draft order; None (the
    key left out): the required ones."""
    return [p for p in platforms() if p.required or (names is not None and p.name in names)]


def in_folder(folder: Path) -> list[Platform]:
    """The platforms a built day's folder posts to: the required ones, and each optional one
    whose draft is in it."""
    return [p for p in platforms() if p.required or present(Path(folder) / p.draft)]


def in_drafts(drafts: Sequence[str]) -> list[Platform]:
    """The same, for a build's drafts by file name."""
    return [p for p in platforms() if p.required or p.draft in drafts]
