"""The platform registry: one ``Platform`` object per place a day is posted.

A platform says, once: its name, the draft file it reads (``linkedin.md``), whether that draft
is a single post or a thread of posts separated by ``---`` lines (threads are numbered k/n by
the build), how a post is counted and checked, the size its images are drawn at, its alt-text
limit and the words in an alt-text file's name that mean "for this platform". The build, the
``check`` command, the day-folder check and the review page loop over this registry, so a new
platform is one module in engine/platforms that calls :func:`register_platform`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from engine.platforms.rules import Count, Violation
from engine.platforms.thread import missing_attachments, split_thread
from engine.registry import Registry

if TYPE_CHECKING:
    from engine.platforms.reflow import PostLimits

# (a post's text, its draft's file name) -> (its counts, the rules it breaks)
CheckFn = Callable[[str, str], "tuple[list[Count], list[Violation]]"]
# (the posts of a thread, its draft's file name) -> (counts per post, the rules it breaks)
ThreadCheckFn = Callable[[list[str], str], "tuple[list[list[Count]], list[Violation]]"]


@dataclass(frozen=True)
class Example:
    """A draft as the build writes it for the platform, and the length its rules give each of
    its posts, worked out by hand by whoever registers the platform: the independent truth the
    shared tests hold every registered platform's count to (tests/test_platforms.py)."""

    draft: str
    lengths: tuple[int, ...]


@dataclass(frozen=True)
class Platform:
    name: str  # 'x', 'linkedin': results['checks'] keys, chart sizes' platform
    title: str  # how the review page names it
    draft: str  # the draft's file name in out/dayNN/, rendered from <draft>.j2
    thread: bool  # posts separated by '---' lines and numbered k/n, or one post
    check: CheckFn | ThreadCheckFn  # a ThreadCheckFn when ``thread``, else a CheckFn
    alt_limit: int  # the longest alt text it takes, in UTF-16 units
    image_size: str  # the style.SIZES key its images are drawn at
    alt_tags: tuple[str, ...]  # parts of an alt-text file's name that mean this platform
    example: Example  # a sample draft and its posts' lengths, worked by hand
    # Where a feed folds a single post ("…see more"), as a character index; None: no fold.
    fold_at: Callable[[str], int] | None = None
    order: int = 100  # where drafts are listed (check output, review page)
    # Every day posts here, so a day without this draft is incomplete: the build wants its
    # template, ``check`` reports the draft missing, the review page shows its empty column. An
    # optional platform's draft is checked where it exists and skipped where it does not.
    required: bool = False
    # A thread's posts are cut to fit these before numbering (engine.platforms.reflow), so its
    # template may be plain paragraphs; None: posts are only what the '---' lines make.
    post_limits: PostLimits | None = None
    # A thread platform whose day has no template of its own re-flows this platform's rendered
    # text (before numbering) under its own ``post_limits``: one thread template feeds several
    # platforms. None: the platform needs a template of its own.
    reflow_from: str | None = None

    def posts(self, text: str) -> list[str]:
        """The draft's posts: a thread split on its '---' lines, or the single post."""
        if not self.thread:
            return [text]

        return split_thread(text)

    def check_draft(
        self, text: str, draft: str | None = None, *, available: set[str] | None = None
    ) -> tuple[list[list[Count]], list[Violation]]:
        """Counts per post and every broken rule, for the draft's whole text. With ``available``
        (the file names in the day's folder), every image a post attaches must be one of them."""
        name = draft or self.draft
        check = cast(Any, self.check)  # a ThreadCheckFn when ``thread``, else a CheckFn
        per_post: list[list[Count]]
        violations: list[Violation]
        if self.thread:
            per_post, violations = check(self.posts(text), name)
        else:
            counts, violations = check(text, name)
            per_post = [counts]
        if available is not None:
            violations = [
                *violations,
                *missing_attachments(self.posts(text), name, available, thread=self.thread),
            ]
        return per_post, violations


# Every platform, discovered in engine/platforms (engine.registry says how).
PLATFORMS: Registry[Platform] = Registry(
    "platform", "engine.platforms", name_of=lambda p: p.name, order_of=lambda p: p.order
)


def register_platform(platform: Platform) -> Platform:
    """Register a platform (a name another module took is refused); returns it, so a module
    can keep a handle."""
    return PLATFORMS.add(platform)


def unregister_platform(name: str) -> None:
    """Remove a registration (for tests that register a toy platform)."""
    PLATFORMS.remove(name)


def platforms() -> list[Platform]:
    """Every registered platform, in draft order."""
    return PLATFORMS.all()


def get(name: str) -> Platform:
    try:
        return PLATFORMS.get(name)
    except KeyError as err:
        raise ValueError(err.args[0]) from None


def required() -> list[Platform]:
    """The platforms every day's folder must have a draft for."""
    return [p for p in platforms() if p.required]


def by_draft(file_name: str) -> Platform | None:
    """The platform whose draft this file is, or None."""
    return next((p for p in platforms() if p.draft == file_name), None)


def strictest_alt_limit() -> int:
    """The alt-text length every platform accepts: one generated text serves them all."""
    return min(p.alt_limit for p in platforms())
