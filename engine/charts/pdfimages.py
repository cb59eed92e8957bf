"""The images in a PDF written as the PNGs are (engine.charts.png): rows unfiltered, zlib at its
level, instead of through Pillow's writer.

Why: matplotlib puts each image into a PDF as PNG-predicted Flate data, which it makes by saving
the image with Pillow and keeping the IDAT chunks. Pillow tries all five row filters on every
row and keeps the best, and offers no way to choose; a carousel embeds each chart at twice the
page's resolution, so a deck of three chart slides spends about a tenth of a second there every
time its PDF is written, pages kept from the drawing cache included. The PDF's image stream
says which filter each row used, so filter 0 is as valid, and the pixels a viewer decodes are
the same: the tests decode every image back with a library that did not write it.

matplotlib makes that PNG in one private method, which is replaced only while a PDF is written,
under a lock, as engine.charts.pdffonts replaces the font subsetting.
"""

from __future__ import annotations

import contextlib
import threading
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from engine.charts import png

_lock = threading.Lock()


def png_predicted(image: Any) -> tuple[bytes, int, bytes | None]:
    """What matplotlib's PDF writer takes for an image (a Pillow image in mode RGB, L or P): the
    Flate data of its rows, each led by filter type 0, its bits per component (8), and its
    palette's bytes when it has one."""
    pixels = np.asarray(image)
    if pixels.ndim == 2:
        pixels = pixels[..., None]
    height = pixels.shape[0]
    palette = bytes(image.getpalette()) if image.mode == "P" else None
    return zlib.compress(png.unfiltered_rows(pixels.reshape(height, -1)), png.LEVEL), 8, palette


@contextlib.contextmanager
def unfiltered_images() -> Iterator[None]:
    """Images in PDFs written inside the block are encoded by png_predicted."""
    from matplotlib.backends.backend_pdf import PdfFile

    with _lock:
        writer = PdfFile._writePng
        PdfFile._writePng = lambda self, image: png_predicted(image)  # type: ignore[method-assign]
        try:
            yield
        finally:
            PdfFile._writePng = writer  # type: ignore[method-assign]
