"""A build's sweep points, remembered in the engine's cache: a rebuild simulates only what it has
not seen, gives the same table as computing every point, and a cache that is stale, damaged,
too big or unusable is never trusted and never fails the build."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from engine.experiments import sweep as experiment
from engine.sections import SpecLocation
from engine.sweep import adapter, remembered
from engine.sweep.grid import SweepSection

from helpers import sweep_section as section  # the small 8-point grid

POINTS = 8


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return remembered.folder()


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The points simulated (in this process: the grid runs with one worker)."""
    seen: list[Any] = []
    real = adapter.evaluate
    monkeypatch.setattr(adapter, "evaluate", lambda p, w, o: seen.append(p) or real(p, w, o))
    return seen


def small() -> SweepSection:
    return section(workers=1)


def built(sec: SweepSection, tmp_path: Path) -> dict[str, Any]:
    """The sweep section as a build computes it."""
    return experiment._run_for_build(sec, SpecLocation(spec_path=tmp_path / "spec.yaml"), None)  # type: ignore[arg-type]


def computed(sec: SweepSection, tmp_path: Path) -> dict[str, Any]:
    """Every point simulated, nothing stored: the reference."""
    return experiment.run(sec, SpecLocation(spec_path=tmp_path / "spec.yaml"), workers=1)


def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_a_rebuild_simulates_nothing_and_gives_the_same_table(cache, calls, tmp_path):
    reference = computed(small(), tmp_path)
    calls.clear()
    first = built(small(), tmp_path)
    assert len(calls) == POINTS and same(first, reference)
    (kept,) = cache.iterdir()
    assert kept.name == remembered.code_digest() + remembered.SUFFIX
    calls.clear()
    again = built(small(), tmp_path)
    assert calls == [] and same(again, reference)
    # a changed grid reuses the points it shares and simulates only the new ones
    wider = section(workers=1, **{"grid.max_num_seqs": [4, 16, 32]})
    wider_reference = computed(wider, tmp_path)
    calls.clear()
    assert same(built(wider, tmp_path), wider_reference)
    assert len(calls) == 4  # the new max_num_seqs, at two GPUs and two rates


def test_other_code_is_a_new_file_and_the_old_one_is_deleted(cache, calls, tmp_path, monkeypatch):
    built(small(), tmp_path)
    (old,) = cache.iterdir()
    monkeypatch.setattr(remembered, "code_digest", lambda: "0" * 64)
    calls.clear()
    assert same(built(small(), tmp_path), computed(small(), tmp_path))
    assert len(calls) == 2 * POINTS  # nothing another version computed is read
    assert not old.exists() and [p.name for p in cache.iterdir()] == ["0" * 64 + remembered.SUFFIX]


def test_a_damaged_line_is_that_point_simulated_again(cache, calls, tmp_path):
    reference = computed(small(), tmp_path)
    built(small(), tmp_path)
    (kept,) = cache.iterdir()
    lines = kept.read_text().splitlines()
    edited = json.loads(lines[0])
    edited["metrics"] = {"throughput": "lots"}  # not the shape the sweep writes
    kept.write_text("\n".join(["not json", json.dumps(edited), *lines[1:], '{"key": "cut sh']) + "\n")
    calls.clear()
    assert same(built(small(), tmp_path), reference)
    assert len(calls) == 1


def test_a_file_past_its_bound_is_started_afresh(cache, calls, tmp_path, monkeypatch):
    built(small(), tmp_path)
    (kept,) = cache.iterdir()
    monkeypatch.setattr(remembered, "MAX_BYTES", kept.stat().st_size - 1)
    calls.clear()
    assert same(built(small(), tmp_path), computed(small(), tmp_path))
    assert len(calls) == 2 * POINTS
    assert len(kept.read_text().splitlines()) == POINTS  # written anew, not appended to


@pytest.mark.parametrize("planted", ["file-for-folder", "fifo", "link"])
def test_an_unusable_cache_computes_every_point_and_the_build_goes_on(cache, calls, tmp_path, planted):
    reference = computed(small(), tmp_path)
    if planted == "file-for-folder":
        cache.parent.mkdir(parents=True)
        cache.write_text("not a folder")
    else:
        cache.mkdir(parents=True)
        path = cache / (remembered.code_digest() + remembered.SUFFIX)
        if planted == "fifo":
            os.mkfifo(path)
        else:
            (tmp_path / "elsewhere.jsonl").write_text("")
            path.symlink_to(tmp_path / "elsewhere.jsonl")
    calls.clear()
    assert same(built(small(), tmp_path), reference)
    assert len(calls) == POINTS
    if planted == "link":
        assert (tmp_path / "elsewhere.jsonl").read_text() == ""  # nothing written through the link
