"""Every registered section runs the example it was registered with (helpers.
assert_section_runs_its_example): a new kind of experiment is held to the shared contract by
registering it, with no test edited. The toy section of test_registries is held to it there."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine import sections

from helpers import assert_section_runs_its_example


@pytest.mark.parametrize("key", [section.key for section in sections.sections()])
def test_every_section_runs_its_example(key: str, tmp_path: Path) -> None:
    assert_section_runs_its_example(sections.get(key), tmp_path)
