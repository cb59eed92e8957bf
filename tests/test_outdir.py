"""No hand edit is ever lost, and a failing build leaves out/ as it was."""
from __future__ import annotations

from pathlib import Path

import pytest

from engine import outdir


def stage(target: Path, files: dict[str, str]) -> outdir.Staging:
    staging = outdir.Staging.create(target)
    for name, text in files.items():
        (staging.path / name).write_text(text)
    return staging


def test_first_build_writes_everything_and_a_manifest(tmp_path):
    target = tmp_path / "day37"
    report = outdir.commit(stage(target, {"linkedin.md": "v1\n", "x-thread.md": "t1\n"}))
    assert (target / "linkedin.md").read_text() == "v1\n"
    assert (target / outdir.MANIFEST).exists()
    assert report.kept_edits == []
    assert [p.name for p in tmp_path.iterdir()] == ["day37"]  # no staging folder left behind


def test_unedited_drafts_are_replaced(tmp_path):
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"linkedin.md": "v1\n"}))
    outdir.commit(stage(target, {"linkedin.md": "v2\n"}))
    assert (target / "linkedin.md").read_text() == "v2\n"
    assert not (target / "linkedin.new.md").exists()


def test_conflicting_hand_edit_is_kept_and_the_merge_goes_beside_it(tmp_path):
    """Both sides changed the one line: their file stays, linkedin.new.md holds both versions
    between standard conflict markers (a line-level and a word-level conflict)."""
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"linkedin.md": "v1\n", "x-thread.md": "t1\n"}))
    (target / "linkedin.md").write_text("v1, tweaked by hand\n")
    report = outdir.commit(stage(target, {"linkedin.md": "v2\n", "x-thread.md": "t2\n"}))
    assert (target / "linkedin.md").read_text() == "v1, tweaked by hand\n"
    conflict = "<<<<<<< your edit\nv1, tweaked by hand\n=======\nv2\n>>>>>>> new numbers\n"
    assert (target / "linkedin.new.md").read_text() == conflict
    assert (target / "x-thread.md").read_text() == "t2\n"
    assert report.conflicts == [(target / "linkedin.md", target / "linkedin.new.md", "line 1-5")]
    # A third build still recognises the edit, and still merges from the render they last saw.
    outdir.commit(stage(target, {"linkedin.md": "v3\n", "x-thread.md": "t3\n"}))
    assert (target / "linkedin.md").read_text() == "v1, tweaked by hand\n"
    assert (target / "linkedin.new.md").read_text() == conflict.replace("v2", "v3")


def test_force_overwrites_the_edit(tmp_path):
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"linkedin.md": "v1\n"}))
    (target / "linkedin.md").write_text("edited\n")
    outdir.commit(stage(target, {"linkedin.md": "v2\n"}), force=True)
    assert (target / "linkedin.md").read_text() == "v2\n"
    assert not (target / "linkedin.new.md").exists()


def test_a_persons_own_files_are_carried_over(tmp_path):
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"linkedin.md": "v1\n", "old-chart.png": "png"}))
    (target / "notes.txt").write_text("my notes\n")
    outdir.commit(stage(target, {"linkedin.md": "v2\n"}))
    assert (target / "notes.txt").read_text() == "my notes\n"
    assert not (target / "old-chart.png").exists()  # the engine's own stale file goes


def test_a_file_there_before_any_manifest_is_treated_as_hand_written(tmp_path):
    target = tmp_path / "day37"
    target.mkdir()
    (target / "linkedin.md").write_text("written before the engine existed\n")
    outdir.commit(stage(target, {"linkedin.md": "render\n"}))
    assert (target / "linkedin.md").read_text() == "written before the engine existed\n"
    assert (target / "linkedin.new.md").read_text() == "render\n"


def test_discarded_staging_leaves_target_as_it_was(tmp_path):
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"linkedin.md": "v1\n"}))
    staging = stage(target, {"linkedin.md": "half-written"})
    staging.discard()
    assert (target / "linkedin.md").read_text() == "v1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["day37"]


@pytest.mark.parametrize(
    "name, expected",
    [("linkedin.md", "linkedin.new.md"), ("scoreboard.alt.txt", "scoreboard.alt.new.txt")],
)
def test_new_name(name, expected):
    assert outdir.new_name(name) == expected


def test_the_review_page_is_derived_and_always_replaced(tmp_path):
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"linkedin.md": "v1\n", "index.html": "<p>v1</p>"}))
    (target / "index.html").write_text("<p>rewritten by make review</p>")
    report = outdir.commit(stage(target, {"linkedin.md": "v2\n", "index.html": "<p>v2</p>"}))
    assert (target / "index.html").read_text() == "<p>v2</p>"
    assert not (target / "index.new.html").exists() and report.kept_edits == []
