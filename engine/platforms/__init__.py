"""Platform rules as code: what X and LinkedIn accept, checked before anything is pasted.

One module per idea: ``registry`` (the ``Platform`` objects everything else loops over),
``x`` (twitter-text v3 weighted length), ``thread`` (posts, attachments and k/n numbering),
``emoji`` (emoji sequences by shape), ``linkedin`` (UTF-16 length, fold, hashtags),
``alt_text``, ``day_dir`` (a whole out/dayNN folder), ``rules`` (the Count and Violation they
return). The facts behind the limits are in ../shared/reference/platform-rules.md.
"""

from engine.platforms.alt_text import alt_text_count, check_alt_text
from engine.platforms.day_dir import Report, check_day_dir
from engine.platforms.linkedin import check_linkedin, utf16_length
from engine.platforms.registry import Platform, platforms, register_platform
from engine.platforms.rules import Count, Violation
from engine.platforms.thread import split_thread
from engine.platforms.x import check_x_thread, x_post_valid, x_weighted_length

__all__ = [
    "Count",
    "Platform",
    "Report",
    "Violation",
    "alt_text_count",
    "check_alt_text",
    "check_day_dir",
    "check_linkedin",
    "check_x_thread",
    "platforms",
    "register_platform",
    "split_thread",
    "utf16_length",
    "x_post_valid",
    "x_weighted_length",
]
