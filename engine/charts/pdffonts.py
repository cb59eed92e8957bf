"""Fonts embedded in a PDF without the tables only a text-layout engine reads.

A PDF places every glyph itself: the page's content says which glyph goes where, so a viewer
never reads a font's OpenType layout tables (GSUB, GPOS, GDEF) or its math layout table (MATH).
matplotlib embeds a subset of each font it used through fontTools, which keeps those tables and
prunes them to the glyphs used, and that pruning is most of what embedding costs: with DejaVu
Sans, about 0.05 s of each font's 0.08 s on these machines. A carousel embeds up to four
(regular and bold, and a second subset of either whose text uses a ligature such as "fi"), so
leaving the tables out closes a carousel up to a quarter of a second sooner, with a smaller
file and the same pages on screen.

The subsetter takes its list of tables to drop from a class-level default that matplotlib does
not expose, so the list is widened only while a PDF is written, under a lock: two threads
writing at once cannot leave the widened list behind.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

LAYOUT_TABLES = ("GSUB", "GPOS", "GDEF", "MATH")

_lock = threading.Lock()


@contextmanager
def without_layout_tables() -> Iterator[None]:
    """Fonts embedded inside the block carry no LAYOUT_TABLES."""
    from fontTools.subset import Options

    with _lock:
        default = Options._drop_tables_default
        Options._drop_tables_default = [*default, *LAYOUT_TABLES]
        try:
            yield
        finally:
            Options._drop_tables_default = default
