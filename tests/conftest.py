"""Shared fixtures: a scratch copy of days/ to break on purpose, and each day built once per
session (building is the suite's dearest step; tests that change a build work on a copy)."""

from __future__ import annotations

import gc
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import settings

# OpenBLAS starts a thread per core as numpy loads (about 70 ms of CPU a process on these
# machines) and spins them on every call, for matrices too small to share out: one thread, in
# this process and in the engine processes the tests start. Set before anything imports numpy,
# which is why this file imports helpers (and numpy with it) only inside its fixtures.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

# The young generation is collected every 50,000 allocations instead of every 700: collecting
# the tests (their imports) and running them (hypothesis's examples, matplotlib's artists) make
# millions of short-lived objects, and the default made about 3,000 collections of it and 20
# full ones, a second and a half of CPU (under half a second this way).
gc.set_threshold(50_000, 20, 10)

# `make test` draws the same examples on every run, so a failure in CI reproduces anywhere and a
# green run stays green; `make soak` (HYPOTHESIS_PROFILE=explore) draws new ones every time.
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Every test module, and what they import (numpy, matplotlib, torch, pydantic), is loaded
    now and lives until the end: freeze it out of the collector's reach. Each full collection
    (Python's own, and the bench's between phases) then walks only what tests create, instead
    of a quarter of a second over a million long-lived objects each time."""
    gc.collect()
    gc.freeze()


@pytest.fixture
def days_copy(tmp_path: Path) -> Path:
    """A private copy of days/, so a test can edit a spec without touching the real one."""
    from helpers import DAYS

    target = tmp_path / "days"
    shutil.copytree(DAYS, target, ignore=shutil.ignore_patterns("*.measured"))
    return target


@pytest.fixture(scope="session")
def built_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """out/ with days/day37.yaml then days/day04.yaml built into it (Day 37 first: its link back
    to Day 4 must not need Day 4's folder).

    Read-only for tests: one that edits or rebuilds copies it first (helpers.copy_built).
    """
    from engine.pipeline import build

    from helpers import DAYS

    out = tmp_path_factory.mktemp("session-out")
    build(DAYS / "day37.yaml", out)
    build(DAYS / "day04.yaml", out)
    return out
