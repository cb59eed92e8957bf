"""Mastodon rules: 500 characters a post, every link 23, a mention only its ``@user``, 4 images.

The limits, with where they are stated (mastodon.social and a default server; a server may
raise them, none is assumed to):

- 500 characters: ``StatusLengthValidator::MAX_CHARS = 500``
  (https://github.com/mastodon/mastodon, app/validators/status_length_validator.rb), counted
  as grapheme clusters (``each_grapheme_cluster.size`` there), after two rewrites:
  every URL becomes ``URL_PLACEHOLDER``, 23 characters whatever its length, and a mention
  ``@user@domain`` becomes ``@user``. https://docs.joinmastodon.org/user/posting/ says the same
  for readers: "all links count as 23 characters", and a remote mention counts only the
  username. The URLs the validator rewrites are those its twitter-text extractor finds with a
  scheme (``extract_url_without_protocol: false``): a bare ``github.com/owner/repo`` counts as
  written. Where a URL and a mention overlap, the earlier one is kept (its
  ``remove_overlapping_entities``).
- 4 media attachments a post: the instance's ``configuration.statuses.max_media_attachments``
  (https://docs.joinmastodon.org/entities/Instance/, 4 on a default server).
- Image descriptions up to 1,500 characters: ``MediaAttachment::MAX_DESCRIPTION_LENGTH``
  (app/models/media_attachment.rb), also the instance's
  ``configuration.media_attachments.description_limit``.
"""

from __future__ import annotations

import re

from engine.platforms.counted_thread import ThreadRules, check_counted_thread
from engine.platforms.graphemes import grapheme_length
from engine.platforms.reflow import PostLimits
from engine.platforms.registry import Example, Platform, register_platform
from engine.platforms.rules import Count, Violation
from engine.platforms.urls import extract_urls

MAX_CHARS = 500
URL_LENGTH = 23
MAX_IMAGES_PER_POST = 4
MAX_ALT_TEXT = 1500

_URL_PLACEHOLDER = "x" * URL_LENGTH
_SCHEME = re.compile(r"https?://", re.IGNORECASE)
# A mention as Mastodon's Account::MENTION_RE reads one: '@', a username (word characters with
# single '.' or '-' runs inside), then optionally '@' and a domain; not after '=', '/' or a word
# character (an e-mail address or a URL's path is no mention).
_MENTION = re.compile(
    r"(?<![=/\w])@(?P<user>[a-z0-9_]+(?:[.-]+[a-z0-9_]+)*)(?:@\w+(?:[.-]+\w+)*)?",
    re.IGNORECASE,
)


def countable_text(text: str) -> str:
    """The post as Mastodon counts it: each URL 23 'x's, each mention ``@user`` alone."""
    entities: list[tuple[int, int, str]] = [
        (start, end, _URL_PLACEHOLDER) for start, end in extract_urls(text) if _SCHEME.match(text, start)
    ]
    entities += [(m.start(), m.end(), "@" + m.group("user")) for m in _MENTION.finditer(text)]
    kept: list[tuple[int, int, str]] = []
    for entity in sorted(entities):
        if not kept or entity[0] >= kept[-1][1]:
            kept.append(entity)
    pieces, at = [], 0
    for start, end, replacement in kept:
        pieces += [text[at:start], replacement]
        at = end
    return "".join([*pieces, text[at:]])


def mastodon_length(text: str) -> int:
    """Mastodon's count of a post, the number compared with 500."""
    return grapheme_length(countable_text(text))


RULES = ThreadRules(
    platform="Mastodon",
    length=mastodon_length,
    limit=MAX_CHARS,
    unit="characters",
    images=MAX_IMAGES_PER_POST,
)


def check_mastodon_thread(
    posts: list[str], *, draft: str = "mastodon.md"
) -> tuple[list[list[Count]], list[Violation]]:
    """Each post's counts and every broken rule (engine.platforms.counted_thread)."""
    return check_counted_thread(posts, RULES, draft=draft)


MASTODON = register_platform(
    Platform(
        name="mastodon",
        title="Mastodon thread",
        draft="mastodon.md",
        thread=True,
        check=lambda posts, draft: check_mastodon_thread(posts, draft=draft),
        alt_limit=MAX_ALT_TEXT,
        image_size="x",  # it attaches the X thread's images, drawn 16:9
        alt_tags=("mastodon",),
        example=Example(
            # "Day 1: the lab " 15, a link 23, " by " 4, a remote mention as its user part, 7
            "Day 1: the lab https://github.com/anurag629/system-design-60-days by @anurag@mastodon.social",
            (49,),
        ),
        order=40,
        post_limits=PostLimits(mastodon_length, MAX_CHARS, MAX_IMAGES_PER_POST),
        reflow_from="x",
    )
)
