"""The person's loop, end to end: build, edit the draft by hand, get new numbers, rebuild.

New numbers come from editing the spec (16 → 20 slots): the simulator then reports other
figures, and the rebuild must carry them into the person's prose, say which changed, and show
them on the review page.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from engine.cli import main

from helpers import lean_spec, unlinked


@pytest.fixture(scope="module")
def rebuilt(tmp_path_factory: pytest.TempPathFactory) -> dict:
    import shutil

    from helpers import DAYS

    root = tmp_path_factory.mktemp("loop")
    days = root / "days"
    shutil.copytree(DAYS, days, ignore=shutil.ignore_patterns("*.measured"))
    # No charts or carousel: they take most of a build's time and play no part in merging or
    # comparing; unlinked (helpers.unlinked), so no Day 4 simulation either.
    (days / "day37.yaml").write_text(unlinked(lean_spec((days / "day37.yaml").read_text())))
    out = root / "out"
    spec = str(days / "day37.yaml")
    assert main(["build", spec, "--out", str(out)]) == 0
    draft = out / "day37" / "linkedin.md"
    first = draft.read_text()
    draft.write_text(first.replace("I finally read", "This week I read"))
    (out / "day37" / "drafts-v0").mkdir()
    (out / "day37" / "drafts-v0" / "linkedin.new.md").write_text("an old attempt\n")
    text = (days / "day37.yaml").read_text()
    assert "\n  slots: 16\n" in text
    (days / "day37.yaml").write_text(text.replace("\n  slots: 16\n", "\n  slots: 20\n"))
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(["build", spec, "--out", str(out)]) == 0
    return {"out": out, "first": first, "printed": printed.getvalue()}


def test_the_edit_keeps_its_prose_and_takes_the_new_numbers(rebuilt):
    day = rebuilt["out"] / "day37"
    draft = (day / "linkedin.md").read_text()
    results = json.loads((day / "results.json").read_text())
    utilisation = results["batching"]["policies"]["continuous"]["utilisation"]
    assert "This week I read" in draft and "I finally read" not in draft
    assert f"{utilisation * 100:.1f}%" in draft and "72.3%" not in draft and "72.3%" in rebuilt["first"]
    assert not (day / "linkedin.new.md").exists()
    assert (day / "drafts-v0" / "linkedin.new.md").read_text() == "an old attempt\n"
    assert "merged the new numbers into your edit of linkedin.md" in rebuilt["printed"]


def test_the_build_says_which_figures_changed(rebuilt):
    results = json.loads((rebuilt["out"] / "day37" / "results.json").read_text())
    now = results["batching"]["policies"]["continuous"]["utilisation"] * 100
    line = next(x for x in rebuilt["printed"].splitlines() if "figures changed" in x)
    assert re.search(r"\d+ figures changed: slots 16 → 20, ", line)
    assert f"continuous utilisation 72.3% → {now:.1f}%" in line


def test_the_review_page_shows_what_changed(rebuilt):
    page = (rebuilt["out"] / "day37" / "index.html").read_text()
    panel = page[page.index('id="changes"') : page.index('id="sources"')]
    assert "Changed since the last build" in panel
    assert re.search(
        r'data-path="batching.slots"><td>slots</td><td class="num">16</td><td class="num">20</td>', panel
    )
    assert "The new numbers were merged into your edit of linkedin.md." in panel
    assert "<del>72.3%" in panel and re.search(r"<ins>\d+\.\d%", panel)


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Day 37's spec without charts or carousel and unlinked (so the failing builds below stop
    fast, and a child process loads no chart module), in a scratch days/."""
    import shutil

    from helpers import DAYS

    days = tmp_path_factory.mktemp("errors") / "days"
    shutil.copytree(DAYS, days, ignore=shutil.ignore_patterns("*.measured"))
    (days / "day37.yaml").write_text(unlinked(lean_spec((days / "day37.yaml").read_text())))
    return days / "day37.yaml"


def one_line(capsys: pytest.CaptureFixture) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_out_is_a_file_or_the_day_is_a_file(spec, tmp_path, capsys):
    (tmp_path / "out").write_text("x")
    assert main(["build", str(spec), "--out", str(tmp_path / "out")]) == 2
    assert one_line(capsys) == f"{tmp_path / 'out'}: --out names a file, not a folder"
    (tmp_path / "out2").mkdir()
    (tmp_path / "out2" / "day37").write_text("mine")
    assert main(["build", str(spec), "--out", str(tmp_path / "out2")]) == 2
    assert "day37: is a file, not a day folder" in one_line(capsys)
    assert (tmp_path / "out2" / "day37").read_text() == "mine"


def test_a_read_only_out_is_one_line_and_nothing_is_lost(spec, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["build", str(spec), "--out", str(out)]) == 0
    (out / "day37" / "linkedin.md").write_text("mine\n")
    before = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    capsys.readouterr()
    mount = subprocess.run(
        ["mount", "--bind", "-o", "ro", str(out), str(out)], check=False, capture_output=True
    )
    if mount.returncode != 0:
        pytest.skip("cannot bind-mount read-only here; test_outdir covers EROFS by a stand-in")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(out)], check=True, capture_output=True)
        assert main(["build", str(spec), "--out", str(out)]) == 2
        line = one_line(capsys)
        assert "cannot write: the file system is read-only; out/ was left as it was" in line
    finally:
        subprocess.run(["umount", str(out)], check=False)
    assert {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == before


def test_a_corrupt_manifest_is_one_line(spec, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["build", str(spec), "--out", str(out)]) == 0
    (out / "day37" / ".manifest.json").write_text("{not json")
    capsys.readouterr()
    assert main(["build", str(spec), "--out", str(out)]) == 2
    assert one_line(capsys).startswith(f"{out / 'day37' / '.manifest.json'}: unreadable")


def test_review_of_a_corrupt_results_json_is_one_line(tmp_path, capsys):
    day = tmp_path / "out" / "day37"
    day.mkdir(parents=True)
    (day / "results.json").write_text('{"day": 37,')
    assert main(["review", "--out", str(tmp_path / "out")]) == 2
    assert one_line(capsys).startswith(f"{day / 'results.json'}: not readable JSON")
    assert (day / "results.json").read_text() == '{"day": 37,'


def test_a_merged_draft_is_held_to_the_platform_rules(tmp_path):
    """The merge is the person's text: the build checks it as it checks any kept edit."""
    from engine import outdir, pipeline

    target = tmp_path / "day37"
    post = "Hook.\n\nBusy {u}.\n\n#SystemDesign #LLM #Inference\n"
    staging = outdir.Staging.create(target)
    (staging.path / "linkedin.md").write_text(post.format(u="72.3%"))
    outdir.commit(staging)
    (target / "linkedin.md").write_text(post.format(u="72.3%").replace("Hook.", "Hook. " + "word " * 700))
    staging = outdir.Staging.create(target)
    (staging.path / "linkedin.md").write_text(post.format(u="74.1%"))
    report = outdir.commit(staging)
    assert report.merged == [target / "linkedin.md"] and "74.1%" in (target / "linkedin.md").read_text()
    warnings = pipeline.check_kept_edits(target, report.checked_edits())
    assert any(w.startswith("your edited linkedin.md") and "3000" in w for w in warnings), warnings


@pytest.mark.parametrize("point", ["swapped"])  # the other moments: test_outdir_crash
def test_a_real_build_killed_mid_swap_then_rebuilt(spec, tmp_path, point):
    """A whole build, the command line's own (engine.cli.main), in a process of its own, killed
    with SIGKILL while it holds the day's lock.

    The process is forked from this one, which has loaded every module a build needs: a fresh
    `python -m engine build` spends most of its second importing them again before it builds
    (that `python -m engine` runs main and exits with its status is test_batching_cli's)."""
    import os
    import signal
    import sys
    import time

    out = tmp_path / "out"
    assert main(["build", str(spec), "--out", str(out)]) == 0
    draft = out / "day37" / "linkedin.md"
    draft.write_text(draft.read_text().replace("I finally read", "This week I read"))
    (out / "day37" / "mine.txt").write_text("keep me\n")
    paused = tmp_path / "paused"
    pid = os.fork()
    if pid == 0:  # the child: build, stopping at `point` until it is killed; never back to pytest
        status = 70
        try:
            import engine.outdir.swap

            from helpers import pause_at

            engine.outdir.swap.pause = pause_at(point, paused)
            sys.stdout = sys.stderr = open(os.devnull, "w")  # closed by os._exit
            status = main(["build", str(spec), "--out", str(out)])
        finally:
            os._exit(status)
    deadline = time.monotonic() + 60
    while not paused.exists():
        ended, status = os.waitpid(pid, os.WNOHANG)
        assert ended == 0, f"the build ended before the swap, status {status}"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    assert os.waitpid(pid, 0)[1] == signal.SIGKILL  # killed, not ended on its own
    assert "This week I read" in draft.read_text()  # old or new folder: the edit is there
    assert main(["build", str(spec), "--out", str(out)]) == 0
    assert "This week I read" in draft.read_text()
    assert (out / "day37" / "mine.txt").read_text() == "keep me\n"
    assert sorted(p.name for p in out.iterdir()) == ["day37", "index.html"]
