"""URLs found in posts, remembered between builds (engine.platforms.urls): inside a build the
answers are twitter-text's, a later build with the same texts reads them back without asking
the finder, a damaged or impossible answer is found again, the file stays bounded, and outside a
build nothing is kept."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import pytest

from engine import cachedir
from engine.platforms import _twitter_text, urls, x_weighted_length

# Hand-worked: "https://example.com/x" is code points 4–25, "foo.org" 30–37 (the final "." is
# no part of it); the emoji is one code point; t.co/abc and bit.ly are links without a scheme.
TEXTS = {
    "see https://example.com/x and foo.org.": [(4, 25), (30, 37)],
    "no links here": [],
    "a.b.c.d": [],
    "émoji 🎉 at t.co/abc and bit.ly": [(11, 19), (24, 30)],
}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "sixty-days-engine" / urls.FOLDER


def refuse_to_find(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(text: str) -> list[tuple[int, int]]:
        raise AssertionError(f"looked for URLs in {text!r}, which the last build's answers hold")

    monkeypatch.setattr(_twitter_text, "extract_urls", refuse)


def test_a_build_finds_what_twitter_text_finds_and_the_next_reads_it_back(cache, monkeypatch) -> None:
    post = "read https://example.com/a/long/path/here"  # X counts 23 for the link, 1 a character else
    with urls.kept_between_builds():
        assert {text: urls.extract_urls(text) for text in TEXTS} == TEXTS
        assert x_weighted_length(post) == 5 + 23
    assert len(list(cache.glob("*.json"))) == 1
    with monkeypatch.context() as patch, urls.kept_between_builds():
        refuse_to_find(patch)
        assert {text: urls.extract_urls(text) for text in TEXTS} == TEXTS
        assert x_weighted_length(post) == 5 + 23  # the count reads its URLs through the same memory


def test_outside_a_build_nothing_is_kept(cache) -> None:
    for text, spans in TEXTS.items():
        assert urls.extract_urls(text) == spans
    assert not cache.exists()


@pytest.mark.parametrize(
    "damage",
    [
        lambda doc: doc["spans"].update({k: [[0, 10_000]] for k in doc["spans"]}),  # checksum no longer holds
        lambda doc: doc.update(sha256="0" * 64),
        lambda doc: doc.pop("spans"),
        lambda doc: doc.update(spans=[1, 2, 3]),
    ],
)
def test_a_damaged_file_is_found_again(cache, damage) -> None:
    with urls.kept_between_builds():
        for text in TEXTS:
            urls.extract_urls(text)
    (path,) = cache.glob("*.json")
    doc = json.loads(path.read_text())
    damage(doc)
    path.write_text(json.dumps(doc))
    with urls.kept_between_builds():
        assert {text: urls.extract_urls(text) for text in TEXTS} == TEXTS
    assert json.loads(path.read_text())["spans"]  # written anew, whole


@pytest.mark.parametrize(
    "wrong",
    [
        # spans that cannot be the text's: overlapping, backwards, past its end, empty
        [[4, 25], [20, 37]],
        [[30, 37], [4, 25]],
        [[4, 99]],
        [[5, 5]],
        # and values that are not two integers: floats, booleans, strings, three numbers, a map
        [[4.0, 25.0]],
        [[False, True]],
        [["4", "25"]],
        [[4, 25, 1]],
        [{"a": 4, "b": 25}],
    ],
)
def test_an_answer_that_cannot_be_the_texts_is_found_again(cache, wrong) -> None:
    """An answer whose checksum holds but that cannot be this text's spans (another text's, or
    a hand-made file) is found again."""
    text = "see https://example.com/x and foo.org."
    with urls.kept_between_builds():
        urls.extract_urls(text)
    (path,) = cache.glob("*.json")
    doc = json.loads(path.read_text())
    doc["spans"] = {name: wrong for name in doc["spans"]}
    doc["sha256"] = urls._checksum(doc["spans"])
    path.write_text(json.dumps(doc))
    with urls.kept_between_builds():
        assert urls.extract_urls(text) == TEXTS[text]


def test_the_file_is_bounded_and_keeps_this_builds_answers_first(cache, monkeypatch) -> None:
    monkeypatch.setattr(urls, "MAX_TEXTS", 3)
    with urls.kept_between_builds():
        for k in range(5):
            urls.extract_urls(f"old post {k} at example.com")
    with urls.kept_between_builds():
        urls.extract_urls("new post at example.org")
    (path,) = cache.glob("*.json")
    assert len(json.loads(path.read_text())["spans"]) == 3
    with monkeypatch.context() as patch, urls.kept_between_builds():
        refuse_to_find(patch)
        assert urls.extract_urls("new post at example.org") == [(12, 23)]


def test_a_cache_that_cannot_be_written_only_costs_time(tmp_path, monkeypatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    with urls.kept_between_builds():
        assert {text: urls.extract_urls(text) for text in TEXTS} == TEXTS
    assert blocker.read_text() == "not a folder"


def test_answers_of_other_code_are_never_read_and_the_last_few_versions_are_kept(cache, monkeypatch) -> None:
    """The file is named after the code that finds URLs and the library's version: another
    digest's file is never read. Two checkouts sharing the cache each find their own file again;
    once KEEP_VERSIONS others were used after it, a version's file is deleted, and a file not
    named as the module names its own is never touched."""
    text = "x at example.com"
    mine = cache / "notes.json"
    cache.mkdir(parents=True, exist_ok=True)
    mine.write_text("a person's file, not the cache's")

    def build(digest: str) -> list[str]:
        """One build's count of ``text`` under code ``digest``: the texts it had to find afresh."""
        found: list[str] = []
        real = _twitter_text.extract_urls
        with monkeypatch.context() as patch:
            patch.setattr(urls, "code_digest", lambda: digest)
            patch.setattr(_twitter_text, "extract_urls", lambda t: found.append(t) or real(t))
            with urls.kept_between_builds():
                assert urls.extract_urls(text) == [(5, 16)]
        return found

    versions = [f"{k:x}" * 32 for k in range(10, 10 + cachedir.KEEP_VERSIONS + 1)]
    assert build(versions[0]) == [text] and build(versions[1]) == [text]  # not read across versions
    assert build(versions[0]) == [] and build(versions[1]) == []  # each checkout's own, found again
    for age, digest in enumerate(versions[:2]):
        os.utime(cache / f"{digest}.json", ns=(age * 10**9, age * 10**9))  # used in this order
    for digest in versions[2:]:
        assert build(digest) == [text]
    assert sorted(p.name for p in cache.glob("*.json")) == sorted(
        [*(f"{d}.json" for d in versions[1:]), "notes.json"]
    )  # the least recently used went; the person's file stays


def test_clean_cache_empties_it_and_nothing_follows_a_linked_folder(cache, tmp_path) -> None:
    with urls.kept_between_builds():
        urls.extract_urls("x at example.com")
    assert urls.clear() == cache and not list(cache.glob("*.json"))
    elsewhere = tmp_path / "someone-elses"
    elsewhere.mkdir()
    (elsewhere / "keep.json").write_text("{}")
    cache.rmdir()
    cache.symlink_to(elsewhere)
    urls.clear()
    with urls.kept_between_builds():  # nor does a build read or write through it
        assert urls.extract_urls("x at example.com") == [(5, 16)]
    assert [p.name for p in elsewhere.iterdir()] == ["keep.json"]
    assert (elsewhere / "keep.json").read_text() == "{}"


def test_threads_compiling_the_expressions_at_once_leave_nothing_behind(monkeypatch) -> None:
    """The first URL look-up imports the library's parts under a stand-in package; eight threads
    doing it at once each get the one compiled set, and no twitter_text module is left over."""
    monkeypatch.setattr(_twitter_text, "_compiled_once", None)
    start = threading.Barrier(8)
    found: list[object] = []
    failed: list[BaseException] = []

    def first_lookup() -> None:
        start.wait()
        try:
            found.append(_twitter_text._expressions())
        except BaseException as exc:  # reported below
            failed.append(exc)

    threads = [threading.Thread(target=first_lookup) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failed == [] and len(found) == 8 and all(f is found[0] for f in found)
    assert not [name for name in sys.modules if name.split(".")[0] == "twitter_text"]
    assert _twitter_text.extract_urls("x at example.com") == [(5, 16)]
