"""No hand edit is ever lost, and a failing build leaves out/ as it was."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest

from engine import outdir
from engine.errors import UserError
from engine.outdir import atomic


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


# ---- nothing the person put in the folder is lost ---------------------------------------------


def test_any_name_and_any_subfolder_survive_rebuilds(tmp_path):
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"linkedin.md": "v1\n", "scoreboard.png": "png1"}))
    (target / "notes").mkdir()
    (target / "notes" / "deep").mkdir()
    (target / "notes" / "deep" / "idea.txt").write_text("idea\n")
    (target / "my.new.draft.md").write_text("mine, with .new. in the name\n")
    (target / "results.json.bak").write_text("{}")
    (target / "link").symlink_to("notes/deep/idea.txt")
    for version in ("v2\n", "v3\n"):
        outdir.commit(stage(target, {"linkedin.md": version, "scoreboard.png": "png2"}))
    assert (target / "notes" / "deep" / "idea.txt").read_text() == "idea\n"
    assert (target / "my.new.draft.md").read_text() == "mine, with .new. in the name\n"
    assert (target / "results.json.bak").read_text() == "{}"
    assert (target / "link").is_symlink() and (target / "link").read_text() == "idea\n"
    assert (target / "linkedin.md").read_text() == "v3\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["day37"]


def test_an_edit_to_a_new_md_survives_and_the_next_conflict_goes_elsewhere(tmp_path):
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"linkedin.md": "v1\n"}))
    (target / "linkedin.md").write_text("mine\n")
    outdir.commit(stage(target, {"linkedin.md": "v2\n"}))
    (target / "linkedin.new.md").write_text("resolving it by hand\n")
    report = outdir.commit(stage(target, {"linkedin.md": "v3\n"}))
    assert (target / "linkedin.new.md").read_text() == "resolving it by hand\n"
    assert (target / "linkedin.md").read_text() == "mine\n"
    assert report.conflicts[0][1] == target / "linkedin.new-2.md"
    assert "v3" in report.conflicts[0][1].read_text()


def test_an_untouched_new_md_is_the_engines_and_goes_when_the_conflict_does(tmp_path):
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"linkedin.md": "v1\n"}))
    (target / "linkedin.md").write_text("mine\n")
    outdir.commit(stage(target, {"linkedin.md": "v2\n"}))
    assert (target / "linkedin.new.md").exists()
    (target / "linkedin.md").write_text("v2\n")  # resolved: took the new numbers
    outdir.commit(stage(target, {"linkedin.md": "v2\n"}))
    assert not (target / "linkedin.new.md").exists()
    assert (target / "linkedin.md").read_text() == "v2\n"


def test_an_edited_chart_or_results_is_set_aside_and_replaced(tmp_path):
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"results.json": '{"a": 1}\n', "scoreboard.png": "png1"}))
    (target / "scoreboard.png").write_text("retouched")
    (target / "results.json").write_text('{"a": 99}\n')
    report = outdir.commit(stage(target, {"results.json": '{"a": 2}\n', "scoreboard.png": "png2"}))
    assert (target / "scoreboard.png").read_text() == "png2"
    assert (target / "scoreboard.edited.png").read_text() == "retouched"
    assert (target / "results.json").read_text() == '{"a": 2}\n'
    assert (target / "results.edited.json").read_text() == '{"a": 99}\n'
    assert sorted(p.name for p in target.glob("*.edited.*")) == [
        "results.edited.json",
        "scoreboard.edited.png",
    ]
    assert len(report.set_aside) == 2
    assert any("your version kept as scoreboard.edited.png" in line for line in outdir.report_lines(report))
    # The set-aside copies are the person's now: the next build keeps them.
    outdir.commit(stage(target, {"results.json": '{"a": 3}\n', "scoreboard.png": "png3"}))
    assert (target / "scoreboard.edited.png").read_text() == "retouched"


def test_a_reindented_results_json_is_not_an_edit(tmp_path):
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"results.json": '{"a": 1, "b": [1, 2]}\n'}))
    (target / "results.json").write_text('{\n    "b": [\n        1,\n        2\n    ],\n    "a": 1\n}')
    report = outdir.commit(stage(target, {"results.json": '{"a": 2, "b": [1, 2]}\n'}))
    assert report.set_aside == [] and (target / "results.json").read_text() == '{"a": 2, "b": [1, 2]}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["day37"]  # nothing kept aside either


def test_a_reindented_manifest_still_reads(tmp_path):
    import json

    target = tmp_path / "day37"
    outdir.commit(stage(target, {"linkedin.md": "v1\n"}))
    data = json.loads((target / outdir.MANIFEST).read_text())
    (target / outdir.MANIFEST).write_text(json.dumps(data, indent=8))
    outdir.commit(stage(target, {"linkedin.md": "v2\n"}))
    assert (target / "linkedin.md").read_text() == "v2\n"


# ---- the merge --------------------------------------------------------------------------------

POST = "Hook.\n\nI finally read it: the GPU is busy {u} of the time, static only {s}.\n\nThe end #tag\n"


def test_an_edit_takes_the_new_numbers_when_it_merges_cleanly(tmp_path):
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"linkedin.md": POST.format(u="72.3%", s="14.3%")}))
    edited = POST.format(u="72.3%", s="14.3%").replace("I finally read it", "This week I read it")
    edited = edited.replace("Hook.", "A better hook.")
    (target / "linkedin.md").write_text(edited)
    report = outdir.commit(stage(target, {"linkedin.md": POST.format(u="74.1%", s="15.0%")}))
    expected = "A better hook.\n\nThis week I read it: the GPU is busy 74.1% of the time, static only 15.0%.\n\nThe end #tag\n"
    assert (target / "linkedin.md").read_text() == expected
    assert report.merged == [target / "linkedin.md"] and report.conflicts == []
    assert not (target / "linkedin.new.md").exists()
    assert "merged the new numbers into your edit of linkedin.md" in outdir.report_lines(report)
    # The merged draft is still the person's: the next build merges from the render they saw.
    report = outdir.commit(stage(target, {"linkedin.md": POST.format(u="75.0%", s="15.0%")}))
    assert (target / "linkedin.md").read_text() == expected.replace("74.1%", "75.0%")


def test_a_conflict_leaves_their_file_and_marks_the_merge(tmp_path):
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"linkedin.md": POST.format(u="72.3%", s="14.3%")}))
    mine = POST.format(u="about three quarters", s="14.3%").replace("Hook.", "A better hook.")
    (target / "linkedin.md").write_text(mine)
    report = outdir.commit(stage(target, {"linkedin.md": POST.format(u="74.1%", s="14.3%")}))
    assert (target / "linkedin.md").read_text() == mine
    merged = (target / "linkedin.new.md").read_text().split("\n")
    # The clean part (their hook) is merged; the line both changed is between markers.
    assert merged[0] == "A better hook."
    assert merged[2:7] == [
        "<<<<<<< your edit",
        mine.split("\n")[2],
        "=======",
        POST.format(u="74.1%", s="14.3%").split("\n")[2],
        ">>>>>>> new numbers",
    ]
    assert report.conflicts == [(target / "linkedin.md", target / "linkedin.new.md", "line 3-7")]
    line = next(x for x in outdir.report_lines(report) if "conflicts" in x)
    assert "line 3-7 of linkedin.new.md" in line


def test_a_conflict_answered_in_the_draft_stays_answered_and_later_numbers_merge_into_it(tmp_path):
    """The person takes the new figure into their own wording and deletes linkedin.new.md: the
    next build, with the same numbers, keeps their file and writes no merge; a later build with
    new numbers merges them into that answer (its base is the render the conflict was against)."""
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"linkedin.md": POST.format(u="72.3%", s="14.3%")}))
    (target / "linkedin.md").write_text(POST.format(u="nearly three quarters (72.3%)", s="14.3%"))
    report = outdir.commit(stage(target, {"linkedin.md": POST.format(u="74.1%", s="14.3%")}))
    assert [kept.name for kept, _, _ in report.conflicts] == ["linkedin.md"]
    line = next(x for x in outdir.report_lines(report) if "conflicts" in x)
    assert "answer it in linkedin.md" in line and "delete linkedin.new.md" in line
    answer = POST.format(u="nearly three quarters (74.1%)", s="14.3%")
    (target / "linkedin.md").write_text(answer)
    (target / "linkedin.new.md").unlink()
    report = outdir.commit(stage(target, {"linkedin.md": POST.format(u="74.1%", s="14.3%")}))
    assert report.conflicts == [] and report.unchanged_edits == [target / "linkedin.md"]
    assert (target / "linkedin.md").read_text() == answer
    assert not (target / "linkedin.new.md").exists()
    report = outdir.commit(stage(target, {"linkedin.md": POST.format(u="74.1%", s="15.0%")}))
    assert report.conflicts == [] and report.merged == [target / "linkedin.md"]
    assert (target / "linkedin.md").read_text() == answer.replace("14.3%", "15.0%")


def test_a_resolved_merge_moved_over_the_draft_is_the_answer(tmp_path):
    """The other way to answer: the markers taken out of linkedin.new.md, which is then moved
    over linkedin.md. Left untouched instead, the conflict is written again at every build."""
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"linkedin.md": "v1\n", "x-thread.md": "t1\n"}))
    (target / "linkedin.md").write_text("v1, tweaked by hand\n")
    outdir.commit(stage(target, {"linkedin.md": "v2\n", "x-thread.md": "t1\n"}))
    report = outdir.commit(stage(target, {"linkedin.md": "v2\n", "x-thread.md": "t1\n"}))
    assert [new.name for _, new, _ in report.conflicts] == ["linkedin.new.md"]  # not answered yet
    (target / "linkedin.new.md").write_text("v2, tweaked by hand\n")
    (target / "linkedin.new.md").replace(target / "linkedin.md")
    report = outdir.commit(stage(target, {"linkedin.md": "v2\n", "x-thread.md": "t2\n"}))
    assert report.conflicts == [] and (target / "linkedin.md").read_text() == "v2, tweaked by hand\n"
    assert sorted(p.name for p in target.glob("*.md")) == ["linkedin.md", "x-thread.md"]


def test_force_still_overwrites_a_conflict(tmp_path):
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"linkedin.md": POST.format(u="72.3%", s="14.3%")}))
    (target / "linkedin.md").write_text(POST.format(u="lots", s="14.3%"))
    outdir.commit(stage(target, {"linkedin.md": POST.format(u="74.1%", s="14.3%")}), force=True)
    assert (target / "linkedin.md").read_text() == POST.format(u="74.1%", s="14.3%")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["day37"]  # nothing kept: asked for


# ---- one clear line, nothing lost ------------------------------------------------------------


def test_a_corrupt_manifest_stops_the_build_in_one_line(tmp_path):
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"linkedin.md": "v1\n"}))
    (target / outdir.MANIFEST).write_text('{"files": {"linkedin.md": ')
    staging = stage(target, {"linkedin.md": "v2\n"})
    with pytest.raises(UserError, match=r"\.manifest\.json: unreadable .*delete it"):
        outdir.commit(staging)
    assert (target / "linkedin.md").read_text() == "v1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["day37"]


def test_a_kept_edit_that_is_not_utf8_stops_the_build_in_one_line(tmp_path):
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"linkedin.md": "v1\n"}))
    (target / "linkedin.md").write_bytes("caf\u00e9 edited\n".encode("latin-1"))
    with pytest.raises(UserError, match=r"linkedin\.md: your edit is not UTF-8 text \(byte 0xe9"):
        outdir.commit(stage(target, {"linkedin.md": "v2\n"}))
    assert (target / "linkedin.md").read_bytes() == "caf\u00e9 edited\n".encode("latin-1")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["day37"]


def test_out_pointing_at_a_file_or_a_day_that_is_a_file(tmp_path):
    (tmp_path / "out").write_text("not a folder")
    with pytest.raises(UserError, match=r"out: --out names a file"):
        outdir.Staging.create(tmp_path / "out" / "day37")
    (tmp_path / "day37").write_text("a file")
    with pytest.raises(UserError, match=r"day37: is a file, not a day folder"):
        outdir.Staging.create(tmp_path / "day37")
    assert (tmp_path / "day37").read_text() == "a file"


@pytest.mark.parametrize(
    "code, words",
    [(errno.EROFS, "read-only"), (errno.ENOSPC, "disk is full"), (errno.EACCES, "permission denied")],
)
def test_an_unwritable_out_is_one_line(tmp_path, monkeypatch, code, words):
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"linkedin.md": "v1\n"}))

    def refuse(*args, **kwargs):
        raise OSError(code, os.strerror(code), str(tmp_path))

    monkeypatch.setattr(outdir.os, "mkdir", refuse)
    with pytest.raises(UserError, match=words):
        outdir.Staging.create(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["day37"]  # and the lock went with it


def test_a_disk_filling_up_during_the_commit_loses_nothing(tmp_path, monkeypatch):
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"linkedin.md": POST.format(u="1%", s="2%")}))
    (target / "linkedin.md").write_text("Mine. " + POST.format(u="1%", s="2%"))
    (target / "notes.txt").write_text("notes\n")
    before = {p.name: p.read_bytes() for p in target.iterdir()}
    real = os.open

    def full(path, *args, **kwargs):  # every write goes through engine.outdir.atomic's os.open
        if str(path).startswith(f".{outdir.MANIFEST}."):
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(atomic.os, "open", full)
    with pytest.raises(UserError, match="disk is full"):
        outdir.commit(stage(target, {"linkedin.md": POST.format(u="3%", s="2%")}))
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["day37"]


def tmpfs(tmp_path: Path, size: str) -> Path:
    mount = tmp_path / "mnt"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], check=False, capture_output=True
    )
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root); the monkeypatched test covers it")
    return mount


def test_a_really_full_disk_is_one_line(tmp_path):
    mount = tmpfs(tmp_path, "64k")
    try:
        target = mount / "day37"
        outdir.commit(stage(target, {"linkedin.md": "v1\n"}))
        (target / "notes.txt").write_text("mine\n")
        with pytest.raises(UserError, match="disk is full"):
            staging = outdir.Staging.create(target)
            try:
                (staging.path / "linkedin.md").write_text("v2\n" * 40_000)
            except OSError as exc:
                staging.discard()
                raise outdir.write_failed(exc, target) from exc
        assert (target / "linkedin.md").read_text() == "v1\n"
        assert (target / "notes.txt").read_text() == "mine\n"
        assert sorted(p.name for p in mount.iterdir()) == ["day37"]
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_huge_edit_is_kept_not_merged(tmp_path, monkeypatch):
    monkeypatch.setattr(outdir, "MAX_MERGE_BYTES", 100)
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"linkedin.md": "v1\n"}))
    (target / "linkedin.md").write_text("x" * 101)
    report = outdir.commit(stage(target, {"linkedin.md": "v2\n"}))
    assert (target / "linkedin.md").read_text() == "x" * 101
    assert (target / "linkedin.new.md").read_text() == "v2\n"
    assert "linkedin.md is over 100 bytes, too large to merge: kept as it is" in report.notes


def test_an_edit_saved_with_crlf_line_ends_merges_line_by_line(tmp_path):
    """A draft edited on Windows: its CRLF line ends are read as text mode reads them, so the
    person's line and the build's new line each land where they belong."""
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"linkedin.md": "line one\nline two\n"}))
    (target / "linkedin.md").write_bytes(b"line one, edited\r\nline two\r\n")
    outdir.commit(stage(target, {"linkedin.md": "line one\nline two, new\n"}))
    assert (target / "linkedin.md").read_bytes() == b"line one, edited\nline two, new\n"


def test_an_answered_conflict_keeps_what_the_merge_carried_elsewhere(tmp_path):
    """The new numbers changed two paragraphs: one the person had edited (the conflict), one
    they had not (merged cleanly into linkedin.new.md). They answer the conflict in their own
    file and delete the merge: the other paragraph's new number is carried into their file
    too, and a later change to it merges, rather than conflicting over an edit never made."""
    two = "Hook.\n\nBusy {u} of the time.\n\nStatic only {s}.\n"
    target = tmp_path / "day37"
    outdir.commit(stage(target, {"linkedin.md": two.format(u="72.3%", s="14.3%")}))
    (target / "linkedin.md").write_text(two.format(u="about three quarters", s="14.3%"))
    report = outdir.commit(stage(target, {"linkedin.md": two.format(u="74.1%", s="15.0%")}))
    assert [kept.name for kept, _, _ in report.conflicts] == ["linkedin.md"]
    assert "Static only 15.0%." in (target / "linkedin.new.md").read_text()  # the clean part
    (target / "linkedin.md").write_text(two.format(u="nearly three quarters (74.1%)", s="14.3%"))
    (target / "linkedin.new.md").unlink()
    report = outdir.commit(stage(target, {"linkedin.md": two.format(u="74.1%", s="15.0%")}))
    answer = two.format(u="nearly three quarters (74.1%)", s="15.0%")
    assert report.conflicts == [] and report.merged == [target / "linkedin.md"]
    assert (target / "linkedin.md").read_text() == answer
    report = outdir.commit(stage(target, {"linkedin.md": two.format(u="74.1%", s="16.0%")}))
    assert report.conflicts == [] and (target / "linkedin.md").read_text() == answer.replace("15.0%", "16.0%")
