"""Fonts embedded in a PDF without the tables only a text-layout engine reads, each subset made
once and then kept in the drawing cache.

A PDF places every glyph itself: the page's content says which glyph goes where, so a viewer
never reads a font's OpenType layout tables (GSUB, GPOS, GDEF) or its math layout table (MATH).
matplotlib embeds a subset of each font it used through fontTools, which keeps those tables and
prunes them to the glyphs used, and that pruning is most of what embedding costs: with DejaVu
Sans, about 0.05 s of each font's 0.08 s on these machines. A carousel embeds up to four
(regular and bold, and a second subset of either whose text uses a ligature such as "fi"), so
leaving the tables out closes a carousel up to a quarter of a second sooner, with a smaller
file and the same pages on screen.

The subset of a font for a set of glyphs is the same bytes every time (same font file, same
glyphs, same code and libraries), and a carousel whose one page changed needs the same subsets
as before unless that page's words did: so each subset, with the map from the font's glyph
numbers to the subset's, is kept in engine.charts.drawcache under the font file's digest and
the glyphs, and the next PDF copies it instead of subsetting again.

The subsetter takes its list of tables to drop from a class-level default that matplotlib does
not expose, and matplotlib subsets through a module-level function, so both are replaced only
while a PDF is written, under a lock: two threads writing at once cannot leave either behind.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from engine.charts import drawcache

LAYOUT_TABLES = ("GSUB", "GPOS", "GDEF", "MATH")

_lock = threading.Lock()


@dataclass(frozen=True)
class KeptFont:
    """A subset font as the cache holds it: the bytes matplotlib would have saved it as."""

    data: bytes


@functools.cache
def _file_digest(path: str) -> str:
    # A font matplotlib found and drew with (the engine's packaged fonts), not an input.
    with open(path, "rb") as font:
        return hashlib.sha256(font.read()).hexdigest()


@contextlib.contextmanager
def without_layout_tables() -> Iterator[None]:
    """Fonts embedded inside the block carry no LAYOUT_TABLES; their subsets come from the
    drawing cache where it has them."""
    from fontTools.subset import Options
    from matplotlib.backends import _backend_pdf_ps as pdf_ps

    subset_of, as_file = pdf_ps.get_glyphs_subset, pdf_ps.font_as_file

    def kept_subset(fontfile: Any, glyphs: Any) -> Any:
        wanted = sorted(int(g) for g in glyphs)
        key = drawcache.key(
            "font-subset", _file_digest(str(fontfile)), int(getattr(fontfile, "face_index", 0)), wanted
        )
        kept = drawcache.load_as(key, lambda e: (e.parts["font"], {int(k): int(v) for k, v in e.note}))
        if kept is None:
            with subset_of(fontfile, glyphs) as made:
                data = as_file(made.font).getvalue()
                index_map = {int(k): int(v) for k, v in made.glyph_index_map.items()}
            if key is not None:
                drawcache.save(key, drawcache.Entry({"font": data}, sorted(index_map.items())))
        else:
            data, index_map = kept
        return contextlib.nullcontext(pdf_ps.SubsetResults(KeptFont(data), index_map))

    def kept_as_file(font: Any) -> io.BytesIO:
        return io.BytesIO(font.data) if isinstance(font, KeptFont) else as_file(font)

    with _lock:
        default = Options._drop_tables_default
        Options._drop_tables_default = [*default, *LAYOUT_TABLES]
        pdf_ps.get_glyphs_subset, pdf_ps.font_as_file = kept_subset, kept_as_file
        try:
            yield
        finally:
            Options._drop_tables_default = default
            pdf_ps.get_glyphs_subset, pdf_ps.font_as_file = subset_of, as_file
