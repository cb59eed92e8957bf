"""Threads (Meta) rules: 500 characters a post, an emoji counted as its UTF-8 bytes, 5 links.

The limits, with where they are stated:

- "Text posts are limited to 500 characters" and "Emojis are counted as the number of UTF-8
  bytes": Threads API, Posts, Limitations
  (https://developers.facebook.com/docs/threads/posts). Meta does not say how other
  characters count; the count here takes the larger of the plausible readings, so a post that
  passes here is not refused there: a grapheme holding an emoji counts its UTF-8 bytes (😀 4,
  a family of four joined by ZWJ 25), any other grapheme its UTF-16 units (1 for every letter
  in the Basic Multilingual Plane, 2 for an astral one such as 𝐛). A link counts as written:
  Meta documents no shortening.
- At most 5 links a post: "Threads posts containing more than 5 links will fail to post"
  (Threads API, Text Attachments, https://developers.facebook.com/docs/threads/create-posts/text-attachments;
  every unique URL in the text counts, bare ``www.facebook.com`` included).

Chosen, not found stated by Meta (so set on the strict side):

- Images a post: a Threads post with several images is a carousel; Meta's posts page has said
  10 children and, later, 20. The smaller, 10, is used.
- Alt text: Meta's accessibility page (https://developers.facebook.com/docs/threads/posts/accessibility)
  gives the ``alt_text`` parameter and no length. Posting services built on the API state
  1,000 characters (e.g. https://repliz-docs.pages.dev/tutorial/spesification/threads); 1,000
  is used, counted in UTF-16 units as every alt text is (engine.platforms.alt_text).
"""

from __future__ import annotations

from engine.platforms.counted_thread import ThreadRules, check_counted_thread
from engine.platforms.graphemes import graphemes, is_emoji
from engine.platforms.linkedin import utf16_length
from engine.platforms.reflow import PostLimits
from engine.platforms.registry import Example, Platform, register_platform
from engine.platforms.rules import Count, Violation
from engine.platforms.urls import extract_urls

MAX_CHARS = 500
MAX_LINKS = 5
MAX_IMAGES_PER_POST = 10
MAX_ALT_TEXT = 1000


def threads_length(text: str) -> int:
    """Threads' count of a post, read strictly: an emoji's UTF-8 bytes, else UTF-16 units."""
    return sum(len(g.encode("utf-8")) if is_emoji(g) else utf16_length(g) for g in graphemes(text))


def links(text: str) -> list[str]:
    """The distinct links in a post, in order of first appearance."""
    return list(dict.fromkeys(text[start:end] for start, end in extract_urls(text)))


def _link_cap(text: str) -> list[tuple[str, str]]:
    found = links(text)
    if len(found) > MAX_LINKS:
        return [("links", f"{len(found)} links, Threads allows {MAX_LINKS} per post")]
    return []


RULES = ThreadRules(
    platform="Threads",
    length=threads_length,
    limit=MAX_CHARS,
    unit="characters",
    images=MAX_IMAGES_PER_POST,
    extra=_link_cap,
)


def check_threads_thread(
    posts: list[str], *, draft: str = "threads.md"
) -> tuple[list[list[Count]], list[Violation]]:
    """Each post's counts and every broken rule (engine.platforms.counted_thread)."""
    return check_counted_thread(posts, RULES, draft=draft)


THREADS = register_platform(
    Platform(
        name="threads",
        title="Threads",
        draft="threads.md",
        thread=True,
        check=lambda posts, draft: check_threads_thread(posts, draft=draft),
        alt_limit=MAX_ALT_TEXT,
        image_size="x",  # it attaches the X thread's images, drawn 16:9
        # No tag: "threads" is a word a chart's name may hold (threads_per_core), and a tag would
        # then exempt that chart's alt text from every other platform's limit. Its alt texts are
        # held to every limit of the day's platforms, Threads' among them.
        alt_tags=(),
        example=Example(
            # "Day 1 " 6, the emoji as its 4 UTF-8 bytes, a space, and the link as written (19)
            "Day 1 \U0001f600 https://example.com",
            (30,),
        ),
        order=50,
        post_limits=PostLimits(threads_length, MAX_CHARS, MAX_IMAGES_PER_POST),
        reflow_from="x",
    )
)
