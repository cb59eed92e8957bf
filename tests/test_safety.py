"""Safe to build a day you did not write: no write escapes the project, and a lab is contained.

Each test sets up one way a day, a folder or a lab could reach outside (a link planted where the
engine writes, a device or FIFO named as an output, a lab that leaves a process behind, floods its
output, swaps its figures file for a FIFO, or edits the days/ folder) and asserts what the person
sees (one line naming the path, exit status 2, or a report) and that nothing outside was touched.
Every case is bounded in time: none waits for a blocked read or a lab's full sleep.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from engine.cli import main
from engine.errors import UserError
from engine.outdir import atomic

from helpers import DAYS

SIMULATE = ["simulate", "--requests", "20", "--output-tokens", "4", "--slots", "2", "--policy", "continuous"]


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def tree(folder: Path) -> dict[str, bytes | str]:
    """Every entry below ``folder``: a file's bytes, a link's target, a folder as 'dir'."""
    found: dict[str, bytes | str] = {}
    for p in sorted(folder.rglob("*")):
        rel = p.relative_to(folder).as_posix()
        found[rel] = os.readlink(p) if p.is_symlink() else "dir" if p.is_dir() else p.read_bytes()
    return found


# ---- the one writer ---------------------------------------------------------------------------


def test_the_writer_replaces_a_regular_file_whole_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b.txt"
    atomic.write_text(path, "one\n", what="test file", root=tmp_path)
    atomic.write_text(path, "two\n", what="test file", root=tmp_path)
    assert path.read_text() == "two\n"
    assert [p.name for p in path.parent.iterdir()] == ["b.txt"]


def test_the_writer_refuses_a_link_at_the_target_and_writes_nothing_through_it(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("theirs\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "index.html").symlink_to(outside)
    with pytest.raises(UserError) as caught:
        atomic.write_text(out / "index.html", "<html>", what="review index", root=out)
    assert caught.value.file == str(out / "index.html") and "symbolic link" in caught.value.message
    assert outside.read_text() == "theirs\n" and (out / "index.html").is_symlink()
    assert sorted(p.name for p in out.iterdir()) == ["index.html"]  # no temporary left


def test_the_writer_refuses_a_link_on_the_way_below_its_root(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "day04").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(UserError) as caught:
        atomic.write_text(out / "day04" / "index.html", "<html>", what="review page", root=out)
    assert caught.value.file == str(out / "day04") and "symbolic link" in caught.value.message
    assert list(elsewhere.iterdir()) == []


def test_the_writer_refuses_a_folder_where_a_file_belongs(tmp_path: Path) -> None:
    (tmp_path / "results.json").mkdir()
    with pytest.raises(UserError, match="is a folder"):
        atomic.write_text(tmp_path / "results.json", "{}", what="results", root=tmp_path)
    assert (tmp_path / "results.json").is_dir()


# ---- out/: the build and `engine review` --------------------------------------------------------


def test_a_build_refuses_a_linked_out_index_before_any_work_and_writes_nothing_outside(
    tmp_path: Path,
) -> None:
    from engine.pipeline import build

    outside = tmp_path / "bashrc"
    outside.write_text("theirs\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "index.html").symlink_to(outside)
    start = time.monotonic()
    with pytest.raises(UserError) as caught:
        build(DAYS / "day04.yaml", out)
    assert time.monotonic() - start < 5  # refused before computing anything
    assert caught.value.file == str(out / "index.html") and "symbolic link" in caught.value.message
    assert outside.read_text() == "theirs\n"
    assert sorted(p.name for p in out.iterdir()) == ["index.html"]


@pytest.mark.parametrize("which", ["out", "day"])
def test_a_build_refuses_a_linked_out_or_day_folder_with_one_line(tmp_path: Path, capsys, which: str) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    if which == "out":
        out = tmp_path / "out"
        out.symlink_to(elsewhere, target_is_directory=True)
        named = out
    else:
        out = tmp_path / "out"
        out.mkdir()
        named = out / "day04"
        named.symlink_to(elsewhere, target_is_directory=True)
    for _ in range(2):  # refused every time, and nothing left behind to fail the next build
        assert main(["build", str(DAYS / "day04.yaml"), "--out", str(out)]) == 2
        line = one_line(capsys)
        assert line.startswith(f"{named}: ") and "symbolic link" in line
    assert list(elsewhere.iterdir()) == []
    assert sorted(p.name for p in tmp_path.joinpath("out").iterdir()) == ([] if which == "out" else ["day04"])


def test_review_refuses_a_linked_day_folder_and_writes_nothing_through_it(tmp_path: Path, capsys) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "results.json").write_text(json.dumps({"day": 4}))
    out = tmp_path / "out"
    out.mkdir()
    (out / "day04").symlink_to(elsewhere, target_is_directory=True)
    before = tree(elsewhere)
    assert main(["review", "--out", str(out)]) == 2
    line = one_line(capsys)
    assert line.startswith(f"{out / 'day04'}: ") and "symbolic link" in line
    assert tree(elsewhere) == before


def test_review_refuses_a_linked_index_and_leaves_its_target(tmp_path: Path, capsys) -> None:
    outside = tmp_path / "outside.html"
    outside.write_text("theirs\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "index.html").symlink_to(outside)
    assert main(["review", "--out", str(out)]) == 2
    assert one_line(capsys).startswith(f"{out / 'index.html'}: ")
    assert outside.read_text() == "theirs\n"


# ---- simulate --trace / --requests-csv -------------------------------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("flag", ["--trace", "--requests-csv"])
def test_simulate_refuses_a_fifo_as_its_output_at_once(tmp_path: Path, capsys, flag: str) -> None:
    fifo = tmp_path / "out.json"
    os.mkfifo(fifo)
    start = time.monotonic()
    assert main([*SIMULATE, flag, str(fifo)]) == 2
    assert time.monotonic() - start < 5
    line = one_line(capsys)
    assert line.startswith(f"{fifo}: {flag}: ") and "not a regular file" in line
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.skipif(not Path("/dev/null").exists(), reason="needs /dev/null")
@pytest.mark.parametrize("device", ["/dev/null", "/dev/full"])
def test_simulate_refuses_a_device_as_its_output_and_leaves_it_a_device(capsys, device: str) -> None:
    if not Path(device).exists():
        pytest.skip(f"no {device}")
    assert main([*SIMULATE, "--trace", device, "--force"]) == 2  # --force never means a device
    line = one_line(capsys)
    assert line.startswith(f"{device}: --trace: ") and "not a regular file" in line
    assert stat.S_ISCHR(os.lstat(device).st_mode)


def test_simulate_refuses_a_link_as_its_output(tmp_path: Path, capsys) -> None:
    outside = tmp_path / "keep.txt"
    outside.write_text("theirs\n")
    link = tmp_path / "trace.json"
    link.symlink_to(outside)
    assert main([*SIMULATE, "--trace", str(link), "--force"]) == 2
    assert "symbolic link" in one_line(capsys)
    assert outside.read_text() == "theirs\n" and link.is_symlink()


@pytest.mark.parametrize("flag", ["--trace", "--requests-csv"])
def test_simulate_overwrites_an_existing_file_only_with_force(tmp_path: Path, capsys, flag: str) -> None:
    path = tmp_path / "mine.out"
    path.write_text("my notes\n")
    assert main([*SIMULATE, flag, str(path)]) == 2
    line = one_line(capsys)
    assert line == f"{path}: {flag}: already exists; pass --force to overwrite it"
    assert path.read_text() == "my notes\n"
    assert main([*SIMULATE, flag, str(path), "--force"]) == 0
    capsys.readouterr()
    written = path.read_text()
    if flag == "--trace":
        assert json.loads(written)["traceEvents"]
    else:
        assert written.splitlines()[0].startswith("policy,replica,request")
        assert len(written.splitlines()) == 1 + 20  # a header and one row per request


def test_simulate_writes_a_new_file_without_force(tmp_path: Path, capsys) -> None:
    path = tmp_path / "new" / "trace.json"
    assert main([*SIMULATE, "--trace", str(path)]) == 0
    assert json.loads(path.read_text())["traceEvents"]
