"""The drawing cache on disk (engine.charts.drawcache): a warm build copies exactly the bytes a
cold build draws and draws nothing; a new number draws only the pages that show it; a damaged
entry is drawn again, never copied; the folder stays under its bound; and a build that draws
nothing imports no drawing library."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine import cachedir, charts, pipeline
from engine.charts import animation, carousel, drawcache, style
from engine.platforms import urls
from engine.render.slides import SlideText

from helpers import DAYS, Lab

ROOT = Path(__file__).resolve().parents[1]


def files_of(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def refuse_to_draw(patch: pytest.MonkeyPatch) -> None:
    """Every way a build draws (a still chart's PNG, the GIF, the carousel's pages) fails."""

    def refuse(*args, **kwargs):
        raise AssertionError("drew, where the drawing cache holds these bytes")

    patch.setattr(style, "png_bytes", refuse)
    patch.setattr(animation, "_draw", refuse)
    patch.setattr(carousel, "_draw", refuse)


@pytest.fixture(scope="module")
def cold_and_warm(
    built_cold: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path, Path]:
    """Day 37 built with an empty cache (cold: the session's build, conftest.built_cold), then
    again from that build's cache alone (warm), with every drawing function made to fail; and
    the cache entries both used."""
    out, kept = built_cold
    root = tmp_path_factory.mktemp("cold-warm")
    with drawcache.fresh() as cache, pytest.MonkeyPatch.context() as patch:
        for entry in kept.iterdir():
            (cache / entry.name).write_bytes(entry.read_bytes())
        refuse_to_draw(patch)
        pipeline.build(DAYS / "day37.yaml", root / "warm")
    return out / "day37", root / "warm" / "day37", kept


def test_a_warm_build_copies_the_cold_builds_bytes_and_draws_nothing(cold_and_warm) -> None:
    cold, warm, _ = cold_and_warm
    drawn, copied = files_of(cold), files_of(warm)
    assert drawn.keys() == copied.keys()
    kinds = {Path(name).suffix for name in drawn}
    assert {".png", ".gif", ".pdf", ".txt"} <= kinds  # charts, the animation, the deck, alt texts
    assert len([n for n in drawn if n.startswith("carousel/page-")]) == 5
    for name in drawn:
        assert copied[name] == drawn[name], name


def test_the_cache_holds_every_kind_of_drawing(cold_and_warm) -> None:
    """Charts (a slide's chart is its post's image: no image of its own), the GIF, the deck's
    pages, the PDF, its fonts, and what each chart read: each entry's header names its parts."""
    _, _, kept = cold_and_warm
    names = set()
    for entry in kept.iterdir():
        header = json.loads(entry.read_bytes().split(b"\n", 1)[0])
        names |= {name for name, _ in header["parts"]}
    assert "slot_timeline_animation.gif" in names and "carousel.pdf" in names
    assert {"font", "slot_timeline.png", "carousel/page-02.png"} <= names
    assert "rgba" not in names


def test_a_new_number_draws_only_the_page_that_shows_it(cold_and_warm, tmp_path: Path, monkeypatch) -> None:
    """A compare view's label is on the KV chart's slide alone: that slide's chart and preview are
    drawn again, the other pages' previews are copied, and every file is what a cold draw of the
    new numbers writes (the PDF's fonts come from the cache too). That cold draw is also the
    carousel's check of same bytes when drawn again: cover, chart and closing pages alike."""
    cold, _, kept = cold_and_warm
    results = json.loads((cold / "results.json").read_text())
    spec = pipeline.load_spec(DAYS / "day37.yaml")
    assert spec.carousel is not None
    texts = [SlideText(p["headline"], p["body"]) for p in results["carousel"]["pages"]]
    changed = copy.deepcopy(results)
    changed["kv_cache"]["compare"][1]["label"] = "Llama-3-8B with grouped-query attention"

    with drawcache.fresh() as cache:
        for entry in kept.iterdir():
            (cache / entry.name).write_bytes(entry.read_bytes())
        figures, previews, subsets = [], [], []
        figure, write_png = charts.figure, style.write_png
        from fontTools import subset

        subset_font = subset.Subsetter.subset
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(charts, "figure", lambda name, *a: figures.append(name) or figure(name, *a))
            patch.setattr(
                style,
                "write_png",
                lambda fig, path, *a: previews.append(path.name) or write_png(fig, path, *a),
            )
            patch.setattr(subset.Subsetter, "subset", lambda *a: subsets.append(a) or subset_font(*a))
            carousel.build(spec.carousel, texts, changed, tmp_path / "again")
        # The same words: the same glyphs, so every font comes from the cache, unsubsetted.
        assert figures == ["kv_fit"] and previews == ["page-02.png"] and subsets == []
    with drawcache.fresh(), pytest.MonkeyPatch.context() as patch:
        patch.setattr(subset.Subsetter, "subset", lambda *a: subsets.append(a) or subset_font(*a))
        carousel.build(spec.carousel, texts, changed, tmp_path / "cold")
    assert subsets  # a cold draw subsets its fonts (the count above can fail)
    again, fresh = files_of(tmp_path / "again"), files_of(tmp_path / "cold")
    assert again == fresh
    before = files_of(cold)
    for number in (1, 3, 4, 5):
        name = f"carousel/page-{number:02d}.png"
        assert again[name] == before[name]
        # Same bytes when drawn again: the cold draw here and the session's cold build, two
        # real draws of a page whose numbers did not change, wrote the same preview (and the
        # PDF assembled from kept chart images is the one a fresh draw writes, above).
        assert fresh[name] == before[name]
    assert again["carousel/page-02.png"] != before["carousel/page-02.png"]
    assert again["carousel.pdf"] != before["carousel.pdf"]


# ---- entries: damaged ones are drawn again, the folder is bounded ----------------------------------


def test_a_damaged_entry_is_drawn_again_never_copied(tmp_path: Path, monkeypatch) -> None:
    with drawcache.fresh() as cache:
        entry = drawcache.Entry({"a.bin": b"first", "b.bin": b"second"}, {"n": 1})
        for damage in (
            lambda data: data[:-1],  # cut short
            lambda data: data[:-2] + b"X" + data[-1:],  # a byte changed
            lambda data: b"not json\n" + data.split(b"\n", 1)[1],  # header unreadable
            lambda data: data.replace(b'"n": 1', b'"n": 2'),  # the note changed
        ):
            drawcache.save("k", entry)
            assert drawcache.load("k") == entry
            path = cache / f"k{drawcache.SUFFIX}"
            path.write_bytes(damage(path.read_bytes()))
            assert drawcache.load("k") is None and not path.exists()
            assert drawcache.recall("k", tmp_path / "out", ["a.bin", "b.bin"]) is None
            assert not (tmp_path / "out").exists()


def test_an_entry_writes_only_the_files_asked_for_inside_the_folder(tmp_path: Path) -> None:
    """An entry whose header names other files (a forged one whose checksum holds: it needs no
    secret) writes nothing: not a path that climbs out of the folder, nor one from the root;
    an entry copied under another key fails its checksum; a note of a shape the reader cannot
    read is dropped, as a damaged entry is."""
    out = tmp_path / "out"
    with drawcache.fresh() as cache:
        climbing = drawcache.Entry({"page.png": b"ok", "../../escaped.sh": b"x", "/tmp/abs.sh": b"y"})
        drawcache.save("forged", climbing)
        assert drawcache.load("forged") == climbing  # its checksum holds
        assert drawcache.recall("forged", out, ["page.png"]) is None
        assert not out.exists() and not (tmp_path / "escaped.sh").exists()
        drawcache.save("k", drawcache.Entry({"page.png": b"day 4"}))
        assert drawcache.recall("k", out, ["page.png"]) == {} and (out / "page.png").read_bytes() == b"day 4"
        (cache / f"k{drawcache.SUFFIX}").replace(cache / f"other{drawcache.SUFFIX}")
        assert drawcache.load("other") is None  # kept under "k": another key's drawing
        drawcache.save("note", drawcache.Entry({}, ["x", ["not a key"]]))
        assert drawcache.load_as("note", lambda e: [k.upper() for k in e.note]) is None
        assert not (cache / f"note{drawcache.SUFFIX}").exists()


def test_a_cache_folder_that_is_a_link_or_open_to_anyone_is_not_used(tmp_path: Path, monkeypatch) -> None:
    """What a cache holds is trusted (compiled templates are code): a cache folder another user
    could have made or may write in, or that links elsewhere, is no cache; a build still builds."""
    from engine import cachedir

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    folder = tmp_path / "xdg" / cachedir.NAME
    folder.mkdir(parents=True)
    assert cachedir.root() == folder
    folder.chmod(0o777)
    with pytest.raises(cachedir.NoCacheFolder, match="may be written by anyone"):
        cachedir.root()
    folder.chmod(0o700)
    (folder / "drawings").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(cachedir.NoCacheFolder, match="is a link"):
        drawcache.folder()
    drawcache.save("k", drawcache.Entry({"a": b"1"}))  # not through the link
    assert not (tmp_path / f"k{drawcache.SUFFIX}").exists()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    folder.rename(tmp_path / "moved")
    folder.symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(cachedir.NoCacheFolder, match="is a link"):
        cachedir.root()


def test_a_damaged_chart_is_drawn_again_to_the_same_bytes(cold_and_warm, tmp_path: Path) -> None:
    cold, _, _ = cold_and_warm
    results = json.loads((cold / "results.json").read_text())
    saved: list[str] = []
    png_bytes = style.png_bytes
    with drawcache.fresh() as cache, pytest.MonkeyPatch.context() as patch:
        patch.setattr(style, "png_bytes", lambda fig: saved.append(style.size_of(fig).key) or png_bytes(fig))
        first = charts.draw("kv_fit", results, tmp_path / "a").path.read_bytes()
        charts.draw("kv_fit", results, tmp_path / "b")
        assert saved == ["linkedin"]  # the second came from the cache
        for entry in cache.iterdir():
            if b"kv_fit.png" in entry.read_bytes().split(b"\n", 1)[0]:
                entry.write_bytes(entry.read_bytes()[:-100])  # cut short
        again = charts.draw("kv_fit", results, tmp_path / "c").path.read_bytes()
        assert saved == ["linkedin", "linkedin"] and again == first == (cold / "kv_fit.png").read_bytes()


def test_the_cache_is_bounded_least_recently_used_out_first(monkeypatch) -> None:
    with drawcache.fresh() as cache:
        monkeypatch.setattr(drawcache, "MAX_BYTES", 3 * 1000 + 3 * 200)  # three entries' worth
        for i in range(3):
            drawcache.save(f"k{i}", drawcache.Entry({"f": bytes(1000)}))
            os.utime(cache / f"k{i}{drawcache.SUFFIX}", ns=(i * 10**9, i * 10**9))
        assert drawcache.load("k0") is not None  # used now: the newest
        drawcache.save("k3", drawcache.Entry({"f": bytes(1000)}))
        assert drawcache.load("k1") is None  # the least recently used went first
        assert all(drawcache.load(k) is not None for k in ("k0", "k2", "k3"))
        assert sum(p.stat().st_size for p in cache.iterdir()) <= drawcache.MAX_BYTES
        drawcache.clear()
        assert not list(cache.iterdir())


def test_a_key_holds_the_code_and_refuses_what_is_not_json(monkeypatch) -> None:
    import numpy as np

    assert drawcache.key("chart", {"a": 1, "b": 2}) == drawcache.key("chart", {"b": 2, "a": 1})
    assert drawcache.key("chart", np.zeros(2000)) is None  # str() of it would abbreviate
    key = drawcache.key("chart", 1)
    monkeypatch.setattr(drawcache, "code_digest", lambda: "other code")
    assert drawcache.key("chart", 1) != key


def test_the_code_digest_reads_every_drawing_source_and_the_library_versions(monkeypatch) -> None:
    """Every module of engine/charts/, the formatting it prints with, and the pinned libraries'
    versions: an edit to any, or an upgrade, is a new digest."""
    from importlib import metadata

    engine = ROOT / "engine"
    read = {p.resolve() for p in drawcache._SOURCES}
    assert {p.resolve() for p in (engine / "charts").glob("*.py")} <= read
    assert {(engine / f"{n}.py").resolve() for n in ("numbers", "units", "quotable")} <= read
    before = drawcache.code_digest()
    version = metadata.version
    for library in drawcache.LIBRARIES:
        monkeypatch.setattr(
            metadata, "version", lambda name, lib=library: "0" if name == lib else version(name)
        )
        drawcache.code_digest.cache_clear()
        assert drawcache.code_digest() != before, library
    monkeypatch.setattr(metadata, "version", version)
    drawcache.code_digest.cache_clear()
    assert drawcache.code_digest() == before
    # another machine sharing the folder (another processor's SIMD, another interpreter)
    here = cachedir.machine()
    monkeypatch.setattr(cachedir, "machine", lambda: here + " elsewhere")
    drawcache.code_digest.cache_clear()
    assert drawcache.code_digest() != before
    monkeypatch.undo()
    drawcache.code_digest.cache_clear()


def test_the_machine_names_the_interpreter_the_processor_and_numpy_s_simd() -> None:
    import platform

    import numpy as np

    said = json.loads(cachedir.machine())
    simd = np.show_config(mode="dicts")["SIMD Extensions"]
    assert said == [
        [platform.python_implementation(), platform.python_version()],
        platform.machine(),
        list(platform.libc_ver()),
        simd,
    ]


def test_the_cache_lives_in_the_xdg_cache_folder_never_the_repository(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(drawcache, "FOLDER", None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert drawcache.folder() == tmp_path / "sixty-days-engine" / "drawings"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # not absolute: ignored, as XDG says
    assert drawcache.folder() == Path.home() / ".cache" / "sixty-days-engine" / "drawings"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert drawcache.folder() == Path.home() / ".cache" / "sixty-days-engine" / "drawings"


def no_home(monkeypatch: pytest.MonkeyPatch, home: str | None = None) -> None:
    """No XDG_CACHE_HOME, and HOME unset (a container's unnamed user: no password entry) or
    relative: there is no folder to keep a cache in."""
    import pwd

    def unknown(uid: int) -> Any:
        raise KeyError(uid)

    monkeypatch.setattr(drawcache, "FOLDER", None)
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setattr(pwd, "getpwuid", unknown)
    if home is None:
        monkeypatch.delenv("HOME", raising=False)
    else:
        monkeypatch.setenv("HOME", home)


@pytest.mark.parametrize("home", [None, "relative/home"])
def test_with_no_folder_for_a_cache_a_build_keeps_nothing_and_writes_only_its_out(
    monkeypatch, tmp_path: Path, days_copy: Path, home: str | None
) -> None:
    """Every cache is then one it cannot use: nothing is recalled, kept or cleared, and a build
    (drafts, results, queues, compiled templates) writes the same bytes as one with a cache,
    and nothing under the folder it ran in but its out/."""
    from engine import remembered
    from engine.render import template_cache

    from helpers import lean_spec

    spec = days_copy / "day04.yaml"
    spec.write_text(lean_spec(spec.read_text()))
    pipeline.build(spec, tmp_path / "with-cache")
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    no_home(monkeypatch, home)
    template_cache.DRAFTS.clear()  # what this process compiled: read from the (absent) folder again
    template_cache.REVIEW.clear()
    drawcache.keep("k", tmp_path / "with-cache" / "day04", ["results.json"])
    assert drawcache.recall("k", here, ["results.json"]) is None and drawcache.clear() is None
    assert template_cache.clear() is None and remembered.clear() is None
    pipeline.build(spec, here / "out")
    assert [p.name for p in here.iterdir()] == ["out"]
    assert files_of(here / "out") == files_of(tmp_path / "with-cache")


# ---- a warm build imports no drawing library ----------------------------------------------------------

PROBE = """
import sys
from engine.cli import main
rc = main(["build", sys.argv[1], "--out", sys.argv[2]])
loaded = sorted({m.split(".")[0] for m in sys.modules} & {"matplotlib", "PIL", "fontTools", "torch", "tqdm", "regex", "concurrent"})
print("loaded:", " ".join(loaded) or "none")
from engine.platforms import _twitter_text
print("URL expressions compiled:", _twitter_text.expressions_compiled())
import engine.measured
assert "engine.gpubench" not in sys.modules, "reading measurements imported engine.gpubench"
import engine.commands.bench, engine.gpubench.shapes
assert "torch" not in sys.modules, "the bench command or the model shapes imported torch"
sys.exit(rc)
"""


def test_a_build_that_draws_nothing_imports_no_drawing_library(cold_and_warm, tmp_path: Path) -> None:
    """A new process (this one has torch loaded by the bench's tests) runs `engine build` on
    Day 37 with the cache the cold build filled: it finds every drawing there, loads none of
    matplotlib, Pillow, fontTools, torch, tqdm, regex or concurrent.futures, finds its posts' URLs
    among those the session's builds found (engine.platforms.urls) so compiles no URL expression,
    prints the summary and writes the cold build's bytes.

    The same process then checks the other modules that must stay torch-free, each import on
    its own so a failure names it: reading measurements (engine.measured) imports no part of
    engine.gpubench, and the bench command's module and the model shapes its argument checks
    read import no torch. One process for all of it: each new one is a fifth of a second of
    imports before it checks anything."""
    cold, _, kept = cold_and_warm
    cache = tmp_path / "cache" / "sixty-days-engine" / "drawings"
    cache.mkdir(parents=True)
    for entry in kept.iterdir():
        (cache / entry.name).write_bytes(entry.read_bytes())
    found = cachedir.root() / urls.FOLDER  # the session's: Day 37's cold build wrote its answers there
    shutil.copytree(found, cache.parent / urls.FOLDER)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    run = [sys.executable, "-c", PROBE, str(DAYS / "day37.yaml"), str(tmp_path / "b")]
    warm = subprocess.run(run, env=env, cwd=ROOT, capture_output=True, text=True)
    assert warm.returncode == 0, warm.stderr
    assert "loaded: none" in warm.stdout.splitlines(), warm.stdout
    assert "URL expressions compiled: False" in warm.stdout.splitlines(), warm.stdout
    assert f"{Lab.static_steps:,} steps" in warm.stdout and f"{Lab.continuous_steps:,} steps" in warm.stdout
    assert str(tmp_path / "b" / "day37") in warm.stdout
    assert files_of(tmp_path / "b" / "day37") == files_of(cold)
