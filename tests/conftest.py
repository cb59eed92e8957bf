"""Shared fixtures: the repository's paths, and a scratch copy of days/ to break on purpose."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DAYS = REPO / "days"
# The lab's reference trace: days/ holds a byte copy of ../shared/reference/day37-lab-workload.csv
# (tests/test_reference_copy.py checks the two agree wherever shared/ is beside the checkout).
LAB_TRACE = DAYS / "day37.workload.csv"
REFERENCE = REPO.parent / "shared" / "reference"


@pytest.fixture
def days_copy(tmp_path: Path) -> Path:
    """A private copy of days/, so a test can edit a spec without touching the real one."""
    target = tmp_path / "days"
    shutil.copytree(DAYS, target, ignore=shutil.ignore_patterns("*.measured"))
    return target
