"""The formats people post: the LinkedIn carousel (one PDF) and the animated timeline for X.

The PDF is read back with pypdf, the GIF with Pillow: libraries that did not write them. The
figures expected on the slides are the lab's (test_build_day37 pins them: 14.3%, 72.3%, 5.0x,
5,797 and 1,148 steps); the limits are the platforms' published ones (engine.platforms.media).
"""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from pypdf import PdfReader

from engine.charts import drawcache
from engine.charts.animation import FRAMES
from engine.errors import UserError
from engine.pipeline import ChecksFailed, build
from engine.platforms import media
from engine.render import slides
from engine.render.context import template_context
from engine.spec import load_spec

from helpers import DAYS, REPO, examples

TEMPLATES = REPO / "templates"


@pytest.fixture(scope="module")
def day37(built_out: Path) -> Path:
    """The session's build of days/day37.yaml (read only here)."""
    return built_out / "day37"


@pytest.fixture(scope="module")
def results(day37: Path) -> dict:
    return json.loads((day37 / "results.json").read_text())


@pytest.fixture(scope="module")
def pdf(day37: Path) -> PdfReader:
    return PdfReader(day37 / "carousel.pdf")


def page_text(reader: PdfReader, k: int) -> str:
    return " ".join(reader.pages[k].extract_text().split())


# ---- the carousel ----------------------------------------------------------------------------


def test_carousel_has_one_page_per_slide_at_linkedin_portrait_size(pdf: PdfReader) -> None:
    spec = load_spec(DAYS / "day37.yaml")
    assert spec.carousel is not None
    assert len(pdf.pages) == len(spec.carousel.slides) == 5
    for page in pdf.pages:
        box = page.mediabox
        # 1080 x 1350 points: at 72 dpi, LinkedIn's 4:5 portrait size in pixels.
        assert (float(box.left), float(box.bottom), float(box.width), float(box.height)) == (0, 0, 1080, 1350)


def test_slides_say_the_labs_numbers_as_text(pdf: PdfReader, results: dict) -> None:
    cover, memory, batching, timeline, closing = (page_text(pdf, k) for k in range(5))
    assert "Day 37" in cover and results["title"] in cover
    assert "2,048-token chats: 64 requests fit" in memory and "8,192-token chats: 16" in memory
    assert "calculated" in memory
    for figure in ("200 requests", "16 slots", "14.3%", "72.3%", "5.0x", "simulated"):
        assert figure in batching, figure
    assert "Static batching waits for its slowest request" in timeline
    assert "github.com/anurag629/system-design-60-days" in closing
    assert [f"{k} / 5" in page_text(pdf, k - 1) for k in range(1, 6)] == [True] * 5


def test_each_chart_slide_embeds_the_image_its_post_carries(pdf: PdfReader, built_out: Path) -> None:
    """Cover and closing are text only; each chart slide carries one image, the chart's PNG as
    the post attaches it: the picture a reader sees (the samples, decoded from the PDF by pypdf,
    turned as the page's matrix places them) is the PNG's pixels, decoded by Pillow (neither
    wrote them)."""
    import re

    spec = load_spec(DAYS / "day37.yaml")
    assert spec.carousel is not None
    charts = [slide.chart for slide in spec.carousel.slides]
    placed = [
        re.findall(rb"([-\d.]+) 0 0 ([-\d.]+) [-\d.]+ [-\d.]+ cm /(\w+) Do", page.get_contents().get_data())
        for page in pdf.pages
    ]
    assert [len(images) for images in placed] == [0, 1, 1, 1, 0]
    xobjects = pdf.pages[1]["/Resources"]["/XObject"]  # matplotlib shares one resource dictionary
    for chart, images in zip(charts, placed):
        if chart is None:
            continue
        ((width, height, name),) = images
        assert float(width) > 0
        samples = xobjects["/" + name.decode()].get_object().decode_as_image().convert("RGB")
        shown = np.asarray(samples)[:: -1 if float(height) < 0 else 1]  # rows from the top down
        with Image.open(built_out / "day37" / f"{chart}.png") as posted:
            assert np.array_equal(shown, np.asarray(posted.convert("RGB"))), chart


def test_a_chart_slides_preview_shows_the_post_image_shrunk_and_placed_as_it_is(
    pdf: PdfReader, built_out: Path
) -> None:
    """The preview of the slot timeline's slide (an X-sized chart, 1,600 × 900, on 912 × 513
    points) holds the post's PNG reduced by carousel.shrunk, pixel for pixel, where the PDF
    places it (inside the thin frame drawn over its edge): no second resampling, so no seams."""
    import re

    from engine.charts import carousel, png

    page = 4
    placed = re.search(
        rb"q 1 0 0 1 ([-\d.]+) ([-\d.]+) cm ([-\d.]+) 0 0 ([-\d.]+) [-\d.]+ [-\d.]+ cm /\w+ Do",
        pdf.pages[page - 1].get_contents().get_data(),
    )
    assert placed is not None
    left, bottom, width, height = (float(v) for v in placed.groups())
    top = 1350 - (bottom - height)  # points down from the page's top (height < 0: rows top down)
    assert (width, -height) == (912, 513)
    post = png.decode((built_out / "day37" / "slot_timeline.png").read_bytes())
    with Image.open(built_out / "day37" / "carousel" / f"page-{page:02d}.png") as preview:
        shown = np.asarray(preview.convert("RGB"))
    region = shown[round(top) : round(top) + 513, round(left) : round(left) + 912]
    inside = (slice(3, -3), slice(3, -3))
    assert np.array_equal(region[inside], carousel.shrunk(post, 513, 912)[inside])


def _fonts(obj) -> list[dict]:
    """Every font dictionary on a page, with the CID fonts inside composite (Type 0) ones."""
    found = []
    for font in obj.get("/Resources", {}).get("/Font", {}).values():
        font = font.get_object()
        found.append(font)
        for child in font.get("/DescendantFonts", []):
            found.append(child.get_object())
    return found


def test_fonts_are_embedded_truetype_and_there_is_no_creation_date(pdf: PdfReader) -> None:
    fonts = [f for page in pdf.pages for f in _fonts(page)]
    assert fonts
    described = [f["/FontDescriptor"].get_object() for f in fonts if "/FontDescriptor" in f]
    assert described and all("/FontFile2" in d for d in described)  # TrueType program embedded
    assert not [f for f in fonts if f.get("/Subtype") == "/Type3"]  # no Type 3 bitmaps
    info = pdf.metadata
    assert "/CreationDate" not in info and "/ModDate" not in info
    assert info["/Title"].startswith("Day 37: ")


def test_embedded_font_subsets_keep_their_glyphs_and_drop_the_layout_tables(pdf: PdfReader) -> None:
    """The page places every glyph, so the embedded programs need their glyphs, metrics and
    character map, not the tables a text-layout engine reads (engine.charts.pdffonts); and the
    subsetter's own defaults are as they were once the PDF is written."""
    from io import BytesIO

    from fontTools.subset import Options
    from fontTools.ttLib import TTFont

    from engine.charts.pdffonts import LAYOUT_TABLES

    fonts = [f for page in pdf.pages for f in _fonts(page)]
    programs = {
        f["/FontDescriptor"]["/FontFile2"].get_object().get_data() for f in fonts if "/FontDescriptor" in f
    }
    assert programs
    for data in programs:
        font = TTFont(BytesIO(data))
        assert {"glyf", "loca", "head", "hhea", "hmtx", "maxp", "cmap"} <= set(font.keys())
        assert font["maxp"].numGlyphs > 1 and font["glyf"].glyphs  # outlines, not an empty shell
        assert not set(LAYOUT_TABLES) & set(font.keys())
    assert not set(LAYOUT_TABLES) & set(Options._drop_tables_default)


def test_previews_are_the_pages_in_order(day37: Path, results: dict) -> None:
    pages = results["carousel"]["pages"]
    assert [p["number"] for p in pages] == [1, 2, 3, 4, 5]
    assert [p["kind"] for p in pages] == ["cover", "chart", "chart", "chart", "closing"]
    assert [p["chart"] for p in pages[1:4]] == ["kv_fit", "utilisation", "slot_timeline"]
    for page in pages:
        with Image.open(day37 / page["preview"]) as image:
            assert image.size == (1080, 1350)


def test_review_page_shows_the_carousel_and_the_animation(day37: Path) -> None:
    html = (day37 / "index.html").read_text()
    section = html.split('<section id="carousel">', 1)[1].split("</section>", 1)[0]
    assert 'href="carousel.pdf"' in section
    shown = [line.split('src="', 1)[1].split('"', 1)[0] for line in section.splitlines() if "<img" in line]
    assert shown == [f"carousel/page-{k:02d}.png" for k in range(1, 6)]
    assert '<img src="slot_timeline_animation.gif"' in html and "animated GIF" in html


# ---- the animation ---------------------------------------------------------------------------


def test_gif_is_within_x_limits_and_loops(day37: Path, results: dict) -> None:
    path = day37 / "slot_timeline_animation.gif"
    assert path.stat().st_size < media.GIF_TARGET_BYTES  # well under X's 15 MB, under mobile's 5 MB
    with Image.open(path) as gif:
        assert gif.format == "GIF" and gif.size == (1280, 720)
        assert 10 <= gif.n_frames <= 60  # sampled, not one frame per decode step
        assert gif.info["loop"] == 0
        durations = []
        for k in range(gif.n_frames):
            gif.seek(k)
            durations.append(gif.info["duration"])
    assert 2000 <= sum(durations) <= 10000  # a few seconds, the last frame held longest
    assert durations[-1] == max(durations)
    alt = (day37 / "slot_timeline_animation.alt.txt").read_text()
    assert "5,797" in alt and "1,148" in alt and "14.3%" in alt and "72.3%" in alt
    entry = next(c for c in results["charts"] if c["name"] == "slot_timeline_animation")
    assert (entry["file"], entry["width"], entry["height"], entry["platform"]) == (
        "slot_timeline_animation.gif",
        1280,
        720,
        "x",
    )


def test_gif_first_and_last_frames_show_the_run(day37: Path) -> None:
    """Frame one has no request drawn yet; the last shows the continuous run ending near 1,148 of
    5,797 steps: its panel is blank past about a fifth of the width."""
    with Image.open(day37 / "slot_timeline_animation.gif") as gif:
        first = gif.convert("RGB")
        gif.seek(gif.n_frames - 1)
        last = gif.convert("RGB")
    blue = (0, 114, 178)  # a short request's colour (Okabe-Ito blue)

    def share_of(image: Image.Image, colour: tuple, box: tuple) -> float:
        pixels = np.asarray(image.crop(box)).reshape(-1, 3)
        return float(np.mean(np.all(pixels == colour, axis=1)))

    top_panel = (70, 150, 1250, 310)
    assert share_of(first, blue, top_panel) == 0
    assert share_of(last, blue, top_panel) > 0
    past_continuous = (int(64 + 1190 * 0.3), 410, 1250, 570)  # x beyond ~30% of the axis
    assert share_of(last, blue, past_continuous) == 0


# ---- the spec and the template ---------------------------------------------------------------


def _spec_with(tmp_path: Path, old: str, new: str) -> Path:
    days = tmp_path / "days"
    shutil.copytree(DAYS, days, ignore=shutil.ignore_patterns("*.measured"))
    path = days / "day37.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    return path


def test_a_slide_naming_an_unknown_chart_is_a_spec_error(tmp_path: Path) -> None:
    path = _spec_with(tmp_path, "    - chart: utilisation", "    - chart: utilisaton")
    with pytest.raises(UserError) as err:
        load_spec(path)
    assert err.value.field == "carousel.slides.2"
    assert "unknown chart 'utilisaton'" in str(err.value)


def test_a_slide_needs_its_charts_section(tmp_path: Path) -> None:
    path = _spec_with(tmp_path, "    - chart: utilisation", "    - chart: queue_hockey_stick")
    with pytest.raises(UserError, match="chart 'queue_hockey_stick' needs a 'queueing' section"):
        load_spec(path)


def test_too_many_slides_is_a_spec_error(tmp_path: Path) -> None:
    many = "\n".join(["    - chart: kv_fit"] * (slides.MAX_SLIDES + 1))
    path = _spec_with(tmp_path, "    - chart: utilisation", many)
    with pytest.raises(UserError, match=f"at most {slides.MAX_SLIDES}"):
        load_spec(path)


@pytest.fixture(scope="module")
def context(results: dict) -> dict:
    return template_context(results)


def _templates(tmp_path: Path, text: str) -> Path:
    root = tmp_path / "templates"
    shutil.copytree(TEMPLATES, root)
    (root / "day37" / "carousel" / "slides.md.j2").write_text(text)
    return root


def test_a_number_typed_into_the_slide_template_is_refused(tmp_path: Path, context: dict) -> None:
    source = (TEMPLATES / "day37" / "carousel" / "slides.md.j2").read_text()
    root = _templates(tmp_path, source.replace("First: memory caps", "First: 64 requests, memory caps"))
    spec = load_spec(DAYS / "day37.yaml")
    with pytest.raises(UserError) as err:
        slides.render_text(spec.carousel, context, root, "day37")
    assert str(err.value.file) == "templates/day37/carousel/slides.md.j2"
    assert "a number typed into a template" in str(err.value)


def test_slide_template_sections_must_match_the_slides(tmp_path: Path, context: dict) -> None:
    spec = load_spec(DAYS / "day37.yaml")
    source = (TEMPLATES / "day37" / "carousel" / "slides.md.j2").read_text()
    missing = _templates(tmp_path / "a", source.replace("## closing", "## closin"))
    with pytest.raises(UserError, match="section 'closin' is not a slide"):
        slides.render_text(spec.carousel, context, missing, "day37")
    long_line = "word " * (slides.MAX_HEADLINE // 5 + 1)
    too_long = _templates(tmp_path / "b", source.replace("## closing\n", f"## closing\n{long_line}\n"))
    with pytest.raises(UserError, match=f"over {slides.MAX_HEADLINE}"):
        slides.render_text(spec.carousel, context, too_long, "day37")
    texts = slides.render_text(spec.carousel, context, TEMPLATES, "day37")
    assert [t.headline for t in texts][0] == context["title"] + "."


@pytest.mark.parametrize(
    ("words", "held"),
    [
        ("One queue\u202e, many servers.", "U+202E"),  # a direction override
        ("One queue \x1b[Km servers.", "U+001B"),  # a terminal escape
        ("Ring the bell \x07.", "U+0007"),
    ],
)
def test_a_slide_holding_a_control_character_is_one_line(tmp_path: Path, context: dict, words, held) -> None:
    """A slide's words are plain text, as a post's labels are: a control character or a
    direction override is refused, naming the section and the character."""
    spec = load_spec(DAYS / "day37.yaml")
    source = (TEMPLATES / "day37" / "carousel" / "slides.md.j2").read_text()
    root = _templates(tmp_path, source.replace("## closing\n", f"## closing\n{words}\n"))
    with pytest.raises(UserError) as err:
        slides.render_text(spec.carousel, context, root, "day37")
    assert err.value.file == "templates/day37/carousel/slides.md.j2"
    assert "section 'closing' holds a control character" in err.value.message and held in err.value.message


def test_slide_words_the_font_cannot_draw_are_one_line_before_any_page(tmp_path: Path) -> None:
    """An emoji or a CJK character has no glyph in the slides' font: it would print as an
    empty box, with a warning of matplotlib's per glyph on the terminal. The build says which
    characters in which section, in one line, and draws nothing."""
    source = (TEMPLATES / "day37" / "carousel" / "slides.md.j2").read_text()
    root = _templates(tmp_path, source.replace("## closing\n", "## closing\nShip it \U0001f680 今日.\n"))
    out = tmp_path / "out"
    with pytest.raises(UserError) as err:  # the pages' words are new: drawn, so checked
        build(DAYS / "day37.yaml", out, templates_root=root)
    line = err.value.line()
    assert line.startswith("templates/day37/carousel/slides.md.j2: section 'closing' holds ")
    assert "U+1F680" in line and "U+4ECA" in line and "empty box" in line
    assert not (out / "day37").exists()


def test_a_series_name_the_slides_font_cannot_draw_names_the_spec_field(tmp_path: Path) -> None:
    """Every page's frame draws the series name: one the font cannot draw (CJK) is one line
    naming the spec and its field, not the slides' template."""
    days = tmp_path / "days"
    shutil.copytree(DAYS, days)
    spec = days / "day37.yaml"
    spec.write_text(
        spec.read_text().replace("name: 60 days of system design", "name: 六十日 of system design")
    )
    with pytest.raises(UserError) as err:
        build(spec, tmp_path / "out")
    assert err.value.line().startswith(f"{spec}: series.name: it holds ")
    assert "U+516D" in err.value.line() and not (tmp_path / "out" / "day37").exists()


def test_a_word_wider_than_a_slide_is_cut_to_fit_it() -> None:
    """A 300-character link on a slide: no line is wider than the room (it ran off the page);
    the cut pieces, put back together, are the word."""
    from engine.charts import carousel

    word = "github.com/" + "a" * 289
    with _slide_page() as fig:
        lines = carousel.wrap(fig, f"See {word} now", 34, "normal", 600)
        assert lines[0] == "See" and lines[-1].endswith("now") and len(lines) > 3
        assert "".join(lines).replace(" ", "") == f"See{word}now"  # cut, never lost
        renderer = fig.canvas.get_renderer()
        probe = fig.text(0, 0, "", fontsize=34)
        for line in lines:
            probe.set_text(line)
            assert probe.get_window_extent(renderer).width * 72 / fig.dpi <= 600, line


# ---- the platform rules on files ---------------------------------------------------------------


def _gif(path: Path, size: tuple[int, int], frames: int, loop: int | None = 0) -> Path:
    images = [Image.new("P", size, color=k % 2) for k in range(frames)]
    for image in images:
        image.putpalette([255, 255, 255, 0, 0, 0])
    extra = {} if loop is None else {"loop": loop}
    images[0].save(path, save_all=True, append_images=images[1:], duration=100, **extra)
    return path


def test_gif_rules_at_their_limits(tmp_path: Path) -> None:
    ok = _gif(tmp_path / "ok.gif", (1280, 1080), 2)
    assert media.gif_counts(ok)[1] == []
    wide = media.gif_counts(_gif(tmp_path / "wide.gif", (1281, 10), 2))[1]
    assert [str(v) for v in wide] == ["wide.gif: animated GIF: width px 1281/1280 FAIL"]
    once = media.gif_counts(_gif(tmp_path / "once.gif", (8, 8), 2, loop=None))[1]
    assert [v.detail for v in once] == ["does not loop forever (loop=None)"]
    frames = media.gif_counts(_gif(tmp_path / "many.gif", (4, 4), 351))[1]
    assert [v.detail for v in frames] == ["frames 351/350 FAIL"]
    # The pixel budget counts every frame: two 1280 x 1080 frames are 2,764,800 pixels.
    assert media.gif_counts(ok, media.GifRules(max_pixels=2_764_800))[1] == []
    over = media.gif_counts(ok, media.GifRules(max_pixels=2_764_799))[1]
    assert [v.detail for v in over] == ["pixels × frames 2764800/2764799 FAIL"]


def test_document_rules_at_their_limits(tmp_path: Path) -> None:
    path = tmp_path / "deck.pdf"
    path.write_bytes(b"%PDF-1.4\n" + b"0" * 100)
    portrait = (1080.0, 1350.0)
    assert media.document_counts(path, [portrait] * 300)[1] == []
    assert [v.detail for v in media.document_counts(path, [portrait] * 301)[1]] == ["pages 301/300 FAIL"]
    square = media.document_counts(path, [(1080.0, 1080.0)])[1]
    assert [v.detail for v in square] == ["page 1080×1080 pt is not 4:5"]
    mixed = media.document_counts(path, [portrait, (540.0, 675.0)])[1]
    assert [v.detail.split(":")[0] for v in mixed] == ["pages differ in size"]
    small = media.DocumentRules(max_bytes=100)
    assert [v.detail for v in media.document_counts(path, [portrait], small)[1]] == [
        "document bytes 109/100 FAIL"
    ]


def test_a_media_file_over_its_limit_fails_the_build_naming_it(tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "out"
    monkeypatch.setattr(media, "X_GIF", media.GifRules(max_frames=10))
    with pytest.raises(ChecksFailed) as err:
        build(DAYS / "day37.yaml", out)
    assert err.value.violations == [f"slot_timeline_animation.gif: animated GIF: frames {FRAMES}/10 FAIL"]
    assert not (out / "day37").exists()  # nothing written


def test_check_command_holds_the_files_to_the_same_limits(day37: Path, tmp_path: Path, capsys) -> None:
    """`engine check` on a day's folder: the built one passes; a GIF a person swapped in that is
    too wide, and one with no alt text, are each named."""
    from engine.cli import main
    from engine.platforms.day_dir import check_day_dir

    day = tmp_path / "day37"
    shutil.copytree(day37, day)
    report = check_day_dir(day)
    assert report.ok, report.violations
    assert [c.name for c in report.counts["carousel.pdf"]] == ["document bytes", "pages"]
    _gif(day / "slot_timeline_animation.gif", (1600, 900), 3)
    _gif(day / "extra.gif", (8, 8), 2)
    assert main(["check", str(day)]) == 1
    out = capsys.readouterr().out
    assert "FAIL slot_timeline_animation.gif: animated GIF: width px 1600/1280" in out
    assert "FAIL extra.gif: alt text: no extra.alt.txt beside it" in out


def test_frames_are_thinned_until_the_gif_fits_the_margin(
    day37: Path, results: dict, tmp_path: Path, monkeypatch
) -> None:
    """With a margin the full animation overshoots, the frames are halved until it fits (or the
    floor is reached): the file stays under the margin, with fewer frames than the default.
    The first attempt is the full animation drawn again from scratch: the build's bytes."""
    from engine import charts
    from engine.charts import animation

    attempts: list[tuple[int, bytes]] = []
    real_draw = animation._draw

    def draw_and_keep(batching, shown, path, frames):  # the real drawing, each attempt's bytes kept
        real_draw(batching, shown, path, frames)
        attempts.append((frames, path.read_bytes()))

    monkeypatch.setattr(animation, "_draw", draw_and_keep)
    built = (day37 / "slot_timeline_animation.gif").read_bytes()  # the build's draw of these numbers
    size = len(built)
    monkeypatch.setattr(media, "GIF_TARGET_BYTES", size - 1)
    with drawcache.fresh():  # the thinned one drawn for real
        thin = charts.draw("slot_timeline_animation", results, tmp_path / "thin").path
    assert attempts[0][0] == FRAMES and attempts[0][1] == built  # same bytes when drawn again
    with Image.open(thin) as gif:
        assert animation.MIN_FRAMES <= gif.n_frames < FRAMES
    assert thin.stat().st_size < size


def _wrap_measuring_every_line(fig, text: str, size: float, weight: str, room: float) -> list[str]:
    """The naive reference: every candidate line measured whole, the first too wide breaks; a
    word too wide for a line of its own is cut, character by character, where the next would
    no longer fit (one character at least)."""
    renderer = fig.canvas.get_renderer()
    probe = fig.text(0, 0, "", fontsize=size, fontweight=weight)

    def too_wide(line: str) -> bool:
        probe.set_text(line)
        return probe.get_window_extent(renderer).width * 72 / fig.dpi > room

    words = []
    for word in text.split():
        while too_wide(word) and len(word) > 1:
            end = 1
            while end < len(word) and not too_wide(word[: end + 1]):
                end += 1
            words.append(word[:end])
            word = word[end:]
        words.append(word)
    lines, current = [], ""
    for word in words:
        candidate = f"{current} {word}".strip()
        probe.set_text(candidate)
        if current and probe.get_window_extent(renderer).width * 72 / fig.dpi > room:
            lines.append(current)
            current = word
        else:
            current = candidate
    if current:
        lines.append(current)
    probe.remove()
    return lines


_WORDS = st.text(alphabet=st.sampled_from("aeiouWMlil1.,%x→·—"), min_size=1, max_size=14)


_SIZES, _WEIGHTS, _ROOMS = (
    st.sampled_from([24, 34, 50, 64]),
    st.sampled_from(["normal", "bold"]),
    st.floats(200, 912),
)


@contextlib.contextmanager
def _slide_page():
    """A carousel page's figure on its Agg canvas, inside the carousel's rc settings."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from engine.charts import carousel

    with matplotlib.rc_context(carousel.RC):
        fig = Figure(
            figsize=(carousel.PAGE_W / carousel.DPI, carousel.PAGE_H / carousel.DPI), dpi=carousel.DPI
        )
        FigureCanvasAgg(fig)
        yield fig


@settings(max_examples=examples(12, 400), deadline=None)
@given(words=st.lists(_WORDS, min_size=1, max_size=40), size=_SIZES, weight=_WEIGHTS, room=_ROOMS)
def test_the_slides_wrap_breaks_where_measuring_every_line_would(words, size, weight, room):
    """The carousel's wrap estimates a line from its words' widths and measures only lines near
    the room: its breaks are the naive reference's on any words, sizes, weights and widths."""
    from engine.charts import carousel

    with _slide_page() as fig:
        text = " ".join(words)
        assert carousel.wrap(fig, text, size, weight, room) == _wrap_measuring_every_line(
            fig, text, size, weight, room
        )


@settings(max_examples=examples(20, 400), deadline=None)
@given(words=st.lists(_WORDS, min_size=2, max_size=40), size=_SIZES, weight=_WEIGHTS, room=_ROOMS)
def test_the_slides_lines_fit_the_room_as_the_pdf_sets_them(words, size, weight, room):
    """The wrap measures on the page's Agg canvas; the PDF sets the text at its own widths
    (matplotlib's PDF renderer, the reference here). A line of more than one word fits the room
    as the PDF sets it, and with the next line's first word it would not have."""
    import io

    from matplotlib.backends.backend_pdf import PdfFile, RendererPdf
    from matplotlib.font_manager import FontProperties

    from engine.charts import carousel

    with _slide_page() as fig:
        lines = carousel.wrap(fig, " ".join(words), size, weight, room)
        pdf = RendererPdf(PdfFile(io.BytesIO()), carousel.DPI, carousel.PAGE_H, carousel.PAGE_W)
        font = FontProperties(size=size, weight=weight)

        def set_width(line: str) -> float:
            return float(pdf.get_text_width_height_descent(line, font, False)[0])

        for line, following in zip(lines, lines[1:]):
            assert set_width(f"{line} {following.split()[0]}") > room, (line, following)
        for line in lines:
            assert " " not in line or set_width(line) <= room, line


@pytest.mark.parametrize("colours", [3, 16, 300])  # up to 256 colours matplotlib indexes them (mode P)
def test_a_pdfs_images_decode_to_the_pixels_drawn_without_pillows_writer(colours, tmp_path):
    """engine.charts.pdfimages writes the PNG-predicted image streams itself (filter 0, 8 bits):
    a PDF of an image decodes (pypdf, which did not write it) to exactly the pixels drawn, in the
    indexed form matplotlib picks for few colours and in RGB, where it is also what matplotlib's
    own Pillow path gives."""
    import io

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.backends.backend_pdf import PdfPages
    from matplotlib.figure import Figure

    from engine.charts import pdfimages

    rng = np.random.default_rng(colours)
    palette = rng.integers(0, 256, size=(colours, 3), dtype=np.uint8)
    pixels = palette[rng.integers(0, colours, size=(37, 53))]

    def pdf_images(fast: bool) -> list[np.ndarray]:
        fig = Figure(figsize=(2, 2), dpi=72)
        FigureCanvasAgg(fig)
        fig.add_axes((0, 0, 1, 1)).imshow(pixels, interpolation="none")
        buffer = io.BytesIO()
        with pdfimages.unfiltered_images() if fast else contextlib.nullcontext(), PdfPages(buffer) as pdf:
            pdf.savefig(fig)
        (page,) = PdfReader(io.BytesIO(buffer.getvalue())).pages
        return [np.asarray(image.image.convert("RGB")) for image in page.images]

    (fast,) = pdf_images(True)
    assert np.array_equal(fast, pixels[::-1])  # the PDF stores the rows bottom-up
    if colours > 256:
        assert np.array_equal(fast, pdf_images(False)[0])
