"""Inputs of the sweep and serve commands: a device, a bad port, an over-deep file each get one
line and exit status 2, before any work."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.cli import main


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["sweep", "/dev/zero"], "/dev/zero: not a regular file"),
        (["sweep", "/no/such/grid.yaml"], "/no/such/grid.yaml: no such spec file"),
        (["serve", "--port", "99999"], "--port: must be at most 65,535"),
        (["serve", "--port", "-1"], "--port: must be at least 0"),
    ],
)
def test_one_line_and_exit_2(argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(expected) and err.count("\n") == 1


def test_a_sweep_file_nested_too_deep_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("sweep: " + "[" * 5000 + "\n")
    assert main(["sweep", str(deep)]) == 2
    err = capsys.readouterr().err
    assert "nested more than" in err and err.count("\n") == 1
