"""Shared fixtures: a scratch copy of days/ to break on purpose, and each day built once per
session (building is the suite's dearest step; tests that change a build work on a copy)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import settings

# `make test` draws the same examples on every run, so a failure in CI reproduces anywhere and a
# green run stays green; `make soak` (HYPOTHESIS_PROFILE=explore) draws new ones every time.
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


@pytest.fixture(scope="session", autouse=True)
def drawing_cache(tmp_path_factory: pytest.TempPathFactory):
    """The drawing cache in a folder of the session's, for this process and every `python -m
    engine` it starts (XDG_CACHE_HOME is where engine.charts.drawcache keeps it): the suite never
    writes the person's cache, and what one test draws, a later build of the same numbers copies."""
    patch = pytest.MonkeyPatch()
    patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
    yield
    patch.undo()


@pytest.fixture
def days_copy(tmp_path: Path) -> Path:
    """A private copy of days/, so a test can edit a spec without touching the real one."""
    from helpers import DAYS

    target = tmp_path / "days"
    shutil.copytree(DAYS, target, ignore=shutil.ignore_patterns("*.measured"))
    return target


@pytest.fixture(scope="session")
def built_cold(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """out/ with days/day37.yaml then days/day04.yaml built into it (Day 37 first: its link back
    to Day 4 must not need Day 4's folder) from an empty drawing cache, so every drawing in it
    was drawn; and the drawing-cache entries that build made (the drawing cache's own tests
    build again from them). The entries also go into the session's cache: a later build of the
    same numbers copies them."""
    from engine.charts import drawcache
    from engine.pipeline import build

    from helpers import DAYS

    out = tmp_path_factory.mktemp("session-out")
    kept = tmp_path_factory.mktemp("session-drawings")
    with drawcache.fresh() as cache:
        build(DAYS / "day37.yaml", out)
        build(DAYS / "day04.yaml", out)
        entries = sorted(cache.iterdir())
        for entry in entries:
            shutil.copyfile(entry, kept / entry.name)
    session = drawcache.folder()
    session.mkdir(parents=True, exist_ok=True)
    for entry in entries:
        shutil.copyfile(kept / entry.name, session / entry.name)
    return out, kept


@pytest.fixture(scope="session")
def built_out(built_cold: tuple[Path, Path]) -> Path:
    """out/ with Day 37 and Day 4 built (built_cold). Read-only for tests: one that edits or
    rebuilds copies it first (helpers.copy_built)."""
    return built_cold[0]
