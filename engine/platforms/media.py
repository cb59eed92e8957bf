"""Media files a post carries: a LinkedIn document (the carousel PDF) and an X animated GIF.

The limits, with where they are stated:

- LinkedIn document posts take a PDF (or PPT/PPTX/DOC/DOCX) of at most 100 MB and 300 pages.
  LinkedIn Marketing API, Documents API:
  https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/documents-api
  and, restated for posting tools, https://www.ayrshare.com/docs/media-guidelines/linkedin
  LinkedIn states no page size; a carousel is shown at its pages' aspect ratio, and 4:5 portrait
  (1080 × 1350, the feed's tallest image, ../shared/reference/platform-rules.md) fills the
  most of a phone. So every page must be 4:5 and all pages the same size: ours, not LinkedIn's.
- X animated GIFs: at most 15 MB (https://docs.x.com/x-api/media: "GIF: 15 MB"); resolution at
  most 1280 × 1080, at most 350 frames, and width × height × frames at most 300 million
  (https://developer.x.com/en/docs/x-api/v1/media/upload-media/uploading-media/media-best-practices,
  "Animated GIF"). X's help pages add that mobile apps take GIFs only up to 5 MB; the build keeps
  its GIF under that as a margin (``GIF_TARGET_BYTES``), and fails only past the hard limits.

Each check returns Violations naming the file, as the draft checks do; the build fails on any.
"""

from __future__ import annotations

import io
import math
import re
import warnings
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from engine.errors import UserError
from engine.limits import read_bytes_limited
from engine.platforms.rules import Count, Violation

MB = 1024 * 1024


@dataclass(frozen=True)
class DocumentRules:
    max_bytes: int = 100 * MB
    max_pages: int = 300
    aspect: Fraction = Fraction(4, 5)  # width / height of every page


@dataclass(frozen=True)
class GifRules:
    max_bytes: int = 15 * MB
    max_width: int = 1280
    max_height: int = 1080
    max_frames: int = 350
    max_pixels: int = 300_000_000  # width × height × frames


LINKEDIN_DOCUMENT = DocumentRules()
X_GIF = GifRules()
GIF_TARGET_BYTES = 5 * MB  # what X's mobile apps take: the size the build aims under
# A file is read (for its pages, or by Pillow) only up to this size, above both platforms'
# limits: a larger one is over them anyway, and its size is the violation reported.
MAX_MEDIA_BYTES = 128 * MB
# Pages of a PDF read for their sizes: ten times LinkedIn's limit. A file may hold millions of
# page boxes in 100 MB (18 bytes each); reading them all would take seconds and a gigabyte; past
# this the count is reported as a lower bound ("pages (at least)"), which fails the limit anyway.
MAX_PAGES_READ = 10 * LINKEDIN_DOCUMENT.max_pages


_MEDIABOX = re.compile(rb"/MediaBox\s*\[\s*([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s*\]")


def page_sizes(path: Path) -> list[tuple[float, float]]:
    """(width, height) in points of each page, read from the PDF's MediaBox entries.

    matplotlib writes one uncompressed MediaBox per page object, so a pattern finds them without
    a PDF library at build time (the tests read the same file with pypdf). A PDF that keeps its
    page objects compressed yields no sizes: the check then says it cannot read them. A file
    over MAX_MEDIA_BYTES is not read (its size is its violation); a MediaBox that is not four
    finite numbers is one line naming the file and the page. At most MAX_PAGES_READ + 1 pages
    are read: one more than that tells a count past it."""
    if Path(path).stat().st_size > MAX_MEDIA_BYTES:
        return []
    sizes: list[tuple[float, float]] = []
    for page, found in enumerate(_MEDIABOX.finditer(read_bytes_limited(path, MAX_MEDIA_BYTES, "PDF")), 1):
        if page > MAX_PAGES_READ + 1:
            break
        box = found.groups()
        try:
            x0, y0, x1, y1 = (float(v) for v in box)
        except ValueError:
            x0 = y0 = x1 = y1 = math.nan
        if not all(math.isfinite(v) for v in (x0, y0, x1, y1)):
            shown = b" ".join(box).decode("ascii", errors="replace")[:80]
            raise UserError(f"the MediaBox of page {page} is not four numbers: [{shown}]", file=path)
        sizes.append((x1 - x0, y1 - y0))
    return sizes


def check_folder(folder: Path) -> tuple[dict[str, list[Count]], list[Violation]]:
    """Every carousel PDF and GIF at the top of a day's folder, as `engine check` reads it."""
    counts: dict[str, list[Count]] = {}
    violations: list[Violation] = []
    for path in sorted(Path(folder).iterdir()):
        suffix = path.suffix.lower()
        if not path.is_file() or suffix not in (".pdf", ".gif"):
            continue
        found = gif_counts(path) if suffix == ".gif" else document_counts(path, page_sizes(path))
        counts[path.name], violations = found[0], violations + found[1]
    return counts, violations


def document_counts(
    path: Path, pages: list[tuple[float, float]], rules: DocumentRules | None = None
) -> tuple[list[Count], list[Violation]]:
    """A PDF against LinkedIn's document limits. `pages` are (width, height) in points, read
    from the file by the caller (the build reads what it wrote; the tests read it with pypdf)."""
    rules = rules or LINKEDIN_DOCUMENT
    name = Path(path).name
    size = Path(path).stat().st_size
    counts = [
        Count("document bytes", size, rules.max_bytes, size <= rules.max_bytes),
        Count(
            "pages" if len(pages) <= MAX_PAGES_READ else "pages (at least)",
            len(pages),
            rules.max_pages,
            0 < len(pages) <= rules.max_pages,
        ),
    ]
    found = [Violation(name, None, "document", f"{c}") for c in counts if not c.ok]
    shapes = sorted(set(pages))
    if len(shapes) > 1:
        found.append(Violation(name, None, "document", f"pages differ in size: {shapes}"))
    for width, height in shapes:
        if height <= 0 or abs(width / height - float(rules.aspect)) > 0.005:
            ratio = f"{rules.aspect.numerator}:{rules.aspect.denominator}"
            found.append(Violation(name, None, "document", f"page {width:g}×{height:g} pt is not {ratio}"))
    return counts, found


def gif_counts(path: Path, rules: GifRules | None = None) -> tuple[list[Count], list[Violation]]:
    """An animated GIF against X's limits, read with Pillow (matplotlib's own image library)."""
    rules = rules or X_GIF
    from PIL import Image

    path = Path(path)
    size = path.stat().st_size
    # Over X's limit whatever it holds: not read. Counting frames walks every one (a 15 MB file
    # of empty frames holds 800,000 and takes seconds), so nothing past the limit is walked.
    if size > min(rules.max_bytes, MAX_MEDIA_BYTES):
        count = Count("GIF bytes", size, rules.max_bytes, False)
        return [count], [Violation(path.name, None, "animated GIF", f"{count}")]
    data = read_bytes_limited(path, MAX_MEDIA_BYTES, "GIF")
    try:
        # Only the header and the frame count are read, never the pixels, so a large canvas is
        # no decompression bomb here: its size is reported against X's limits, not as Pillow's
        # warning on stderr. (Past twice Pillow's pixel limit Pillow refuses to open it at all:
        # that is "not a readable image", one line too.)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
        with image:
            fmt, (width, height) = image.format, image.size
            frames = getattr(image, "n_frames", 1)
            loop = image.info.get("loop")
    except (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError) as exc:
        # Pillow's ways of saying a file is not a readable image: truncated, corrupt, or not one.
        said = re.sub(r"\s*<_io\.BytesIO object at 0x[0-9a-f]+>|\s+", " ", str(exc)).strip()[:80]
        raise UserError(f"not a readable image ({type(exc).__name__}: {said})", file=path) from None
    pixels = width * height * frames
    counts = [
        Count("GIF bytes", size, rules.max_bytes, size <= rules.max_bytes),
        Count("width px", width, rules.max_width, width <= rules.max_width),
        Count("height px", height, rules.max_height, height <= rules.max_height),
        Count("frames", frames, rules.max_frames, frames <= rules.max_frames),
        Count("pixels × frames", pixels, rules.max_pixels, pixels <= rules.max_pixels),
    ]
    found = [Violation(path.name, None, "animated GIF", f"{c}") for c in counts if not c.ok]
    if fmt != "GIF":
        found.append(Violation(path.name, None, "animated GIF", f"not a GIF (Pillow reads {fmt})"))
    if loop != 0:
        found.append(Violation(path.name, None, "animated GIF", f"does not loop forever (loop={loop})"))
    return counts, found
