"""Platform rules as code: what X, LinkedIn, Bluesky, Mastodon and Threads accept, checked
before anything is pasted.

One module per idea: ``registry`` (the ``Platform`` objects everything else loops over),
``posting`` (which of them a day posts to), ``x`` (twitter-text v3 weighted length),
``linkedin`` (UTF-16 length, fold, hashtags), ``bluesky``, ``mastodon`` and ``threads`` (the
opt-in thread platforms, each with its own count), ``counted_thread`` (the thread rules those
three share), ``graphemes`` (Unicode grapheme clusters), ``thread`` (posts, attachments and k/n
numbering), ``reflow`` (threads cut into posts that fit), ``emoji`` (emoji sequences by shape),
``alt_text``, ``media`` (the carousel's and the GIF's file limits), ``day_dir`` (a whole out/dayNN
folder), ``rules`` (the Count and Violation they return), ``urls`` (where a post's URLs are,
remembered between builds). The facts behind X's and LinkedIn's
limits are in ../shared/reference/platform-rules.md; the newer platforms cite theirs in their
modules.

``day_dir`` is imported by its own name, not from here: it reads the number audit
(engine.audit), which reads the platforms below it.
"""

from engine.platforms.alt_text import alt_text_count, check_alt_text
from engine.platforms.linkedin import check_linkedin, utf16_length
from engine.platforms.registry import Platform, platforms, register_platform
from engine.platforms.rules import Count, Violation
from engine.platforms.thread import split_thread
from engine.platforms.x import check_x_thread, x_post_valid, x_weighted_length

__all__ = [
    "Count",
    "Platform",
    "Violation",
    "alt_text_count",
    "check_alt_text",
    "check_linkedin",
    "check_x_thread",
    "platforms",
    "register_platform",
    "split_thread",
    "utf16_length",
    "x_post_valid",
    "x_weighted_length",
]
