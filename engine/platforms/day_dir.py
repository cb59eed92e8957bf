"""Check a built day folder (out/dayNN) the way the build does: every draft, every alt text.

Reads the draft of each platform the day posts to (linkedin.md and x-thread.md always; an
optional platform's, bluesky.md, where it is there) and every ``<image>.alt.txt``;
an image (``*.png``, ``*.jpg``, ``*.gif``) with no alt text beside it is a violation too, since
the image would go out undescribed. A carousel PDF and a GIF are held to their platforms' file
limits (media.py).

Which platform an alt text is for comes from its name: a part that is one of a platform's
``alt_tags`` means that platform (``latency.x.alt.txt``, ``kv-linkedin.alt.txt``); a name with
none is held to the limit of every platform the day posts to, since such a chart may be posted
on any of them.

Every number in an edited draft is traced too (engine.audit): a number that traces to nothing
is a finding (``numbers``), reported beside the rules but no rule broken, since a person may
mean it; ``check --strict`` fails on one. A draft is counted as it is posted, each accepted
number (``{=74.1%}``) written plain.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from engine import audit
from engine.errors import UserError
from engine.limits import MAX_DRAFT_BYTES, present, read_text_limited
from engine.platforms import media
from engine.platforms.alt_text import alt_text_count, check_alt_text
from engine.platforms.posting import in_folder
from engine.platforms.registry import Platform, required
from engine.platforms.rules import Count, Violation

ALT_SUFFIX = audit.ALT_SUFFIX
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif")


@dataclass(frozen=True)
class Report:
    """Counts per draft (in reading order: LinkedIn, X posts, alt texts), every violation, and
    every number in an edited draft that traces to nothing."""

    counts: dict[str, list[Count]] = field(default_factory=dict)
    violations: list[Violation] = field(default_factory=list)
    numbers: list[audit.Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations


def _read(path: Path) -> str:
    return read_text_limited(path, MAX_DRAFT_BYTES, "draft", follow_symlinks=False)


def alt_text_platforms(name: str, among: list[Platform] | None = None) -> tuple[str, ...]:
    """The platforms an alt text file is for, from the parts of its name, out of ``among`` (the
    platforms the day posts to; default: the required ones); the most lenient limit first."""
    every = sorted(required() if among is None else among, key=lambda p: -p.alt_limit)
    parts = set(re.split(r"[._\-]", name.lower()))
    return tuple(p.name for p in every if parts & set(p.alt_tags)) or tuple(p.name for p in every)


def check_day_dir(path: Path) -> Report:
    """Check every draft in a day's output folder; a missing folder is the user's mistake."""
    path = Path(path)
    if not path.is_dir():
        raise UserError("no such folder; build the day first (make dayNN)", file=path)
    counts: dict[str, list[Count]] = {}
    violations: list[Violation] = []

    posted = in_folder(path)  # the required platforms, and each optional one with its draft
    drafts = {p.draft: _read(path / p.draft) for p in posted if present(path / p.draft)}
    for platform in posted:
        if platform.draft not in drafts:
            if platform.required:
                violations.append(
                    Violation(platform.draft, None, "missing", f"no {platform.draft} in {path}")
                )
            continue
        files = {p.name for p in path.iterdir() if p.is_file()}
        per_post, found = platform.check_draft(audit.strip_accepted(drafts[platform.draft]), available=files)
        if platform.thread:
            for k, post_counts in enumerate(per_post, start=1):
                counts[f"{platform.draft} post {k}/{len(per_post)}"] = post_counts
        else:
            counts[platform.draft] = per_post[0]
        violations += found

    for alt in sorted(path.glob(f"*{ALT_SUFFIX}")):
        text = audit.strip_accepted(_read(alt))
        counts[alt.name] = []
        for name in alt_text_platforms(alt.name[: -len(ALT_SUFFIX)], posted):
            counts[alt.name].append(alt_text_count(text, platform=name))
            violations += check_alt_text(text, platform=name, draft=alt.name)

    for image in sorted(p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES):
        if not (path / f"{image.stem}{ALT_SUFFIX}").is_file():
            violations.append(
                Violation(image.name, None, "alt text", f"no {image.stem}{ALT_SUFFIX} beside it")
            )

    media_counts, media_violations = media.check_folder(path)  # the carousel PDF, GIFs: file limits
    counts.update(media_counts)
    violations += media_violations
    return Report(counts=counts, violations=_unique(violations), numbers=audit.folder_findings(path, drafts))


def _unique(violations: list[Violation]) -> list[Violation]:
    """Drop repeats (an empty alt text held to two platforms is one problem, not two)."""
    return list(dict.fromkeys(violations))
