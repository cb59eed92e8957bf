"""Check a built day folder (out/dayNN) the way the build does: every draft, every alt text.

Reads linkedin.md, x-thread.md and every ``<image>.alt.txt``; an image (``*.png``, ``*.jpg``)
with no alt text beside it is a violation too, since the image would go out undescribed.

Which platform an alt text is for comes from its name: a ``linkedin`` or ``li`` part means
LinkedIn, an ``x`` or ``twitter`` part means X (``latency.x.alt.txt``, ``kv-linkedin.alt.txt``);
a name with neither is held to both limits, since such a chart may be posted on either.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from engine.errors import UserError
from engine.platforms.alt_text import alt_text_count, check_alt_text
from engine.platforms.linkedin import check_linkedin
from engine.platforms.rules import Count, Violation
from engine.platforms.x import check_x_thread, split_thread

LINKEDIN_DRAFT = "linkedin.md"
X_DRAFT = "x-thread.md"
ALT_SUFFIX = ".alt.txt"
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")


@dataclass(frozen=True)
class Report:
    """Counts per draft (in reading order: LinkedIn, X posts, alt texts) and every violation."""

    counts: dict[str, list[Count]] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations


def _read(path: Path) -> str:
    from engine.limits import MAX_DRAFT_BYTES, read_text_limited

    return read_text_limited(path, MAX_DRAFT_BYTES, "draft")


def alt_text_platforms(name: str) -> tuple[str, ...]:
    """The platforms an alt text file is for, from the parts of its name."""
    parts = set(re.split(r"[._\-]", name.lower()))
    platforms = tuple(p for p, tags in (("x", {"x", "twitter"}), ("linkedin", {"linkedin", "li"})) if parts & tags)
    return platforms or ("x", "linkedin")


def check_day_dir(path: Path) -> Report:
    """Check every draft in a day's output folder; a missing folder is the user's mistake."""
    path = Path(path)
    if not path.is_dir():
        raise UserError("no such folder; build the day first (make dayNN)", file=path)
    counts: dict[str, list[Count]] = {}
    violations: list[Violation] = []

    linkedin = path / LINKEDIN_DRAFT
    if linkedin.is_file():
        counts[LINKEDIN_DRAFT], found = check_linkedin(_read(linkedin), draft=LINKEDIN_DRAFT)
        violations += found
    else:
        violations.append(Violation(LINKEDIN_DRAFT, None, "missing", f"no {LINKEDIN_DRAFT} in {path}"))

    thread = path / X_DRAFT
    if thread.is_file():
        posts = split_thread(_read(thread))
        files = {p.name for p in path.iterdir() if p.is_file()}
        per_post, found = check_x_thread(posts, draft=X_DRAFT, available=files)
        for k, post_counts in enumerate(per_post, start=1):
            counts[f"{X_DRAFT} post {k}/{len(posts)}"] = post_counts
        violations += found
    else:
        violations.append(Violation(X_DRAFT, None, "missing", f"no {X_DRAFT} in {path}"))

    for alt in sorted(path.glob(f"*{ALT_SUFFIX}")):
        text = _read(alt)
        counts[alt.name] = []
        for platform in alt_text_platforms(alt.name[: -len(ALT_SUFFIX)]):
            counts[alt.name].append(alt_text_count(text, platform=platform))
            violations += check_alt_text(text, platform=platform, draft=alt.name)

    for image in sorted(p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES):
        if not (path / f"{image.stem}{ALT_SUFFIX}").is_file():
            violations.append(Violation(image.name, None, "alt text", f"no {image.stem}{ALT_SUFFIX} beside it"))

    return Report(counts=counts, violations=_unique(violations))


def _unique(violations: list[Violation]) -> list[Violation]:
    """Drop repeats (an empty alt text held to two platforms is one problem, not two)."""
    return list(dict.fromkeys(violations))
