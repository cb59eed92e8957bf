"""Threads: posts separated by lines '---', attachments written as Markdown images, and the
'k/n' numbering. Nothing here is particular to X; any platform whose draft is a thread uses it.
"""

from __future__ import annotations

import re

from engine.platforms.rules import Violation

# A post separator in a thread's draft, and a Markdown image (an attachment, not text).
_SEPARATOR = "---"
_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]*)\)")
# "k/n" as the first or the last thing in a post: "1/7 …", "(1/7) …", "1/7: …", "… 7/7."
_MARKER_AT_START = re.compile(r"^\s*\(?(\d{1,3})/(\d{1,3})\)?[.:]?(?=\s|$)")
_MARKER_AT_END = re.compile(r"(?:^|\s)\(?(\d{1,3})/(\d{1,3})\)?[.:]?\s*$")


def split_thread(markdown: str) -> list[str]:
    """The posts of a thread's draft: separated by lines that are exactly '---'.

    Blank lines around each post are dropped; a document with no text at all has no posts. An
    empty post between two separators is kept, so that the check can name it.
    """
    lines = markdown.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    posts: list[list[str]] = [[]]
    for line in lines:
        if line == _SEPARATOR:
            posts.append([])
        else:
            posts[-1].append(line)
    stripped = ["\n".join(_strip_blank_lines(p)) for p in posts]
    return [] if not any(stripped) else stripped


def _strip_blank_lines(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def post_text(post: str) -> str:
    """The text X counts: the post without its Markdown image references (they are attachments)."""
    return "\n".join(_strip_blank_lines([_IMAGE.sub("", line).rstrip() for line in post.split("\n")]))


def images_in(post: str) -> int:
    """How many images a post attaches, written as Markdown images in the draft."""
    return len(_IMAGE.findall(post))


def image_files(post: str) -> list[str]:
    """The files a post's Markdown images point at, in order."""
    return _IMAGE.findall(post)


def missing_attachments(
    posts: list[str], draft: str, available: set[str], *, thread: bool
) -> list[Violation]:
    """An image a post attaches that is not in the day's folder cannot be posted: one violation
    per such image, naming the post (None for a single post)."""
    return [
        Violation(
            draft,
            k if thread else None,
            "images",
            f"attaches {target or '(nothing)'}, which is not in the folder",
        )
        for k, post in enumerate(posts, start=1)
        for target in image_files(post)
        if target not in available
    ]


def label(k: int, total: int) -> str:
    """What the build puts in front of post k of ``total``: 'k/n ', the marker numbering reads;
    nothing in front of a post alone, which is a post, not a thread ("1/1" reads as a slip)."""
    return f"{k}/{total} " if total > 1 else ""


def is_empty(length: int, images: int) -> bool:
    """A post of nothing: no text and no image. A post of images alone is a post (X, Bluesky,
    Mastodon and Threads take media without text)."""
    return length == 0 and not images


def numbering(post: str) -> tuple[int, int] | None:
    """The post's 'k/n' marker, looked for at its start, then at its end; None if it has none."""
    match = _MARKER_AT_START.search(post) or _MARKER_AT_END.search(post)
    return (int(match.group(1)), int(match.group(2))) if match else None


def numbering_problem(post: str, k: int, total: int) -> str | None:
    """What is wrong with post k of ``total``'s 'k/n' marker, or None (a single post needs none):
    a reader who lands on one post of a thread must see where it stands."""
    if total <= 1:
        return None
    marker = numbering(post)
    if marker is None:
        return f"no '{k}/{total}' marker at the start or end of the post"
    if marker != (k, total):
        return f"numbered {marker[0]}/{marker[1]}, expected {k}/{total}"
    return None


def label_spans(text: str) -> list[tuple[int, int]]:
    """Where each post's 'k/n' marker stands in a thread's whole draft, as (start, end) offsets
    into it: the numbering, which is no figure and must not be read as one."""
    spans: list[tuple[int, int]] = []
    offset = 0
    for chunk in re.split(r"^---\n", text, flags=re.M):
        for pattern in (_MARKER_AT_START, _MARKER_AT_END):
            match = pattern.search(chunk)
            if match:
                spans.append((offset + match.start(1), offset + match.end(2)))
        offset += len(chunk) + len("---\n")
    return spans
