"""The rules a thread shares on every platform that counts a post one way and caps it: each post
holds 1 to ``limit`` by the platform's own count (Markdown image lines are attachments, not
text), carries its 'k/n' marker, and attaches no more images than the platform takes.

A platform module supplies its count, its limits and any rule of its own (Bluesky's byte cap);
the wording of each failure is the same on every platform, so a reader of ``check`` learns it
once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from engine.platforms.rules import Count, Violation
from engine.platforms.thread import images_in, is_empty, numbering_problem, post_text

# (a post's text, images stripped) -> (rule, detail) for each extra rule it breaks
ExtraRule = Callable[[str], "list[tuple[str, str]]"]


@dataclass(frozen=True)
class ThreadRules:
    """One platform's limits on a thread's posts."""

    platform: str  # how failures name it: "Bluesky"
    length: Callable[[str], int]  # the platform's count of a post's text
    limit: int  # the most that count may be
    unit: str  # what the count counts, for messages: "graphemes"
    images: int  # the most images one post may attach
    extra: ExtraRule | None = None  # rules of the platform's own, on the post's text


def check_counted_thread(
    posts: list[str], rules: ThreadRules, *, draft: str
) -> tuple[list[list[Count]], list[Violation]]:
    """Each post's counts, and every broken rule, for a thread given as its posts."""
    if not posts:
        return [], [Violation(draft, None, "posts", "the thread has no posts")]
    total = len(posts)
    counts: list[list[Count]] = []
    violations: list[Violation] = []
    for k, post in enumerate(posts, start=1):
        text = post_text(post)
        length = rules.length(text)
        images = images_in(post)
        extra = rules.extra(text) if rules.extra is not None else []
        fits = not is_empty(length, images) and length <= rules.limit and not extra
        post_counts = [Count("length", length, rules.limit, fits)]
        if images:
            post_counts.append(Count("images", images, rules.images, images <= rules.images))
        counts.append(post_counts)

        def fail(rule: str, detail: str, post: int = k) -> None:
            violations.append(Violation(draft, post, rule, detail))

        if is_empty(length, images):
            fail("length", "the post is empty")
        elif length > rules.limit:
            fail(
                "length",
                f"{length}/{rules.limit} {rules.unit} as {rules.platform} counts them, "
                f"{length - rules.limit} over",
            )
        for rule, detail in extra:
            fail(rule, detail)
        if images > rules.images:
            fail("images", f"{images} images, {rules.platform} allows {rules.images} per post")
        problem = numbering_problem(text, k, total)
        if problem is not None:
            fail("numbering", problem)
    return counts, violations
