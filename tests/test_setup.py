"""Set-up in proportion: a person who only renders posts gets a venv without torch.

torch serves the optional GPU benchmark alone; the engine's dependencies, and the commands a
person runs to write a day (`make dayNN`, `all`, `serve`, `new-dayNN`, `lab-dayNN`), must not
pull it in, while `make test` and `make bench-day37` add it through the extras.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RENDERING = ["day37", "day01", "all", "serve", "review", "new-day12", "lab-day01"]
WITH_EXTRAS = ["test", "lint", "bench-day37"]


def _planned_installs(target: str, venv: Path) -> list[str]:
    """The pip installs `make -n TARGET` would run to set up a venv that does not exist yet."""
    plan = subprocess.run(
        ["make", "-n", "-B", target, f"VENV={venv}"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    return [line for line in plan.splitlines() if "pip install" in line]


def test_the_engine_dependencies_hold_no_torch():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    names = [re.split(r"[=<>\[ ;]", dep, maxsplit=1)[0].lower() for dep in project["dependencies"]]
    assert "torch" not in names and not any(n.startswith("nvidia") for n in names)
    assert any(dep.startswith("torch==") for dep in project["optional-dependencies"]["bench"])


@pytest.mark.parametrize("target", RENDERING)
def test_rendering_targets_install_the_engine_alone(target, tmp_path):
    installs = _planned_installs(target, tmp_path / "venv")
    assert installs, f"make {target} sets up no venv"
    assert all(line.rstrip().endswith("-e .") for line in installs), installs


@pytest.mark.parametrize("target", WITH_EXTRAS)
def test_the_suite_and_the_bench_add_the_extras(target, tmp_path):
    installs = _planned_installs(target, tmp_path / "venv")
    assert any('".[test,lint,bench]"' in line for line in installs), installs
