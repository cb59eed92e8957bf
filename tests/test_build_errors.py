"""Template mistakes are user mistakes: one line naming the template and the line, out/ untouched."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.errors import UserError
from engine.pipeline import build

from helpers import DAYS, REPO, unlinked


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Day 37's spec, unlinked (helpers.unlinked: no Day 4 simulation before each failure); the
    builds below stop at the templates, before any chart is drawn."""
    days = tmp_path_factory.mktemp("errors") / "days"
    shutil.copytree(DAYS, days, ignore=shutil.ignore_patterns("*.measured"))
    path = days / "day37.yaml"
    path.write_text(unlinked(path.read_text()))
    return path


@pytest.fixture
def templates(tmp_path: Path) -> Path:
    root = tmp_path / "templates"
    shutil.copytree(REPO / "templates", root)
    return root


def break_thread(templates: Path, old: str, new: str) -> None:
    path = templates / "day37" / "x-thread.md.j2"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(
    "old, new, expected",
    [
        (
            "{{ batching.slots | thousands }}",
            "{{ batching.slots | thousands }",
            "templates/day37/x-thread.md.j2: line ",
        ),
        ("| multiple }}", "| multipel }}", "No filter named 'multipel'"),
        (  # the name it has: a misspelling, not a section left out
            "{{ batching.multiple | multiple }}",
            "{{ batching.multipel | multiple }}",
            "has no attribute 'multipel' (it has 'multiple')",
        ),
        (
            "{{ batching.multiple | multiple }}",
            "{{ batching.multipel | fixed }}",
            "has no attribute 'multipel' (it has 'multiple')",
        ),
        (  # a section the spec leaves out (results hold None for it)
            "{{ batching.multiple | multiple }}",
            "{{ sweep.multiple | multiple }}",
            "'None' has no attribute 'multiple': does the spec have the section this template needs?",
        ),
        ("Second fact:", "Second fact, on 8 slots:", "a number typed into a template"),
        ("{{ batching.multiple | multiple }}", "{{ batching.multiple }}", "printed without a filter"),
    ],
    ids=[
        "syntax",
        "unknown-filter",
        "misspelt-variable",
        "misspelt-into-format",
        "section-left-out",
        "typed-number",
        "unformatted-number",
    ],
)
def test_template_mistakes_are_one_line(spec, templates, tmp_path, old, new, expected):
    out = tmp_path / "out"
    break_thread(templates, old, new)
    with pytest.raises(UserError) as err:
        build(spec, out, templates_root=templates)
    line = err.value.line()
    assert expected in line and "\n" not in line
    assert line.startswith("templates/day37/x-thread.md.j2: line ")
    assert not (out / "day37").exists()


def test_a_day_without_templates_says_what_to_create(spec, templates, tmp_path):
    shutil.rmtree(templates / "day37")
    with pytest.raises(UserError) as err:
        build(spec, tmp_path, templates_root=templates)
    assert err.value.line().startswith("templates/day37/: no templates for this day")
