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

import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

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


_MEDIABOX = re.compile(rb"/MediaBox\s*\[\s*([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s+([-\d.]+)\s*\]")


def page_sizes(path: Path) -> list[tuple[float, float]]:
    """(width, height) in points of each page, read from the PDF's MediaBox entries.

    matplotlib writes one uncompressed MediaBox per page object, so a pattern finds them without
    a PDF library at build time (the tests read the same file with pypdf). A PDF that keeps its
    page objects compressed yields no sizes: the check then says it cannot read them."""
    found = _MEDIABOX.findall(Path(path).read_bytes())
    return [(float(x1) - float(x0), float(y1) - float(y0)) for x0, y0, x1, y1 in found]


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
        Count("pages", len(pages), rules.max_pages, 0 < len(pages) <= rules.max_pages),
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
    with Image.open(path) as image:
        fmt, (width, height) = image.format, image.size
        frames = getattr(image, "n_frames", 1)
        loop = image.info.get("loop")
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
