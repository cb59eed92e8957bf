"""A build killed at any moment leaves a complete folder, and the next build loses no edit.

Each test runs a commit in a child process that stops at a named point of the swap (engine.outdir.swap.pause,
replaced in the child by helpers.pause_at), kills it with SIGKILL, then builds again here. The
child is forked from this process, which has the engine loaded already: a fresh interpreter
would spend most of its time importing before it commits anything.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from pathlib import Path

import pytest

import engine.outdir.swap
from engine import outdir

from helpers import pause_at

# Where a child stops: the moment of the swap, the file it writes there, how long it waits.
Pause = tuple[str, Path, float] | None

POST = "Hook.\n\nThe GPU is busy {u} of the time.\n\nThe end #tag\n"


def stage(target: Path, busy: str) -> None:
    staging = outdir.Staging.create(target)
    (staging.path / "linkedin.md").write_text(POST.format(u=busy))
    (staging.path / "scoreboard.png").write_text("png " + busy)
    outdir.commit(staging)


def _commit(target: Path, busy: str, exchange: str, pause: Pause, out: Path, err: Path) -> None:
    """The child: a commit of new numbers, printing what it merged (stdout and stderr to files)."""
    if pause is not None:
        engine.outdir.swap.pause = pause_at(*pause)
    sys.stdout, sys.stderr = open(out, "w"), open(err, "w")  # the child's own
    if exchange == "renames":
        engine.outdir.swap._exchange = lambda a, b: False  # a file system without an atomic exchange
    staging = outdir.Staging.create(target)
    (staging.path / "linkedin.md").write_text(POST.format(u=busy))
    (staging.path / "scoreboard.png").write_text("png " + busy)
    report = outdir.commit(staging)
    print("committed", [str(p) for p in report.merged])


class Child:
    """A committing child process, asked as subprocess.Popen is: poll, wait, communicate."""

    def __init__(self, target: Path, busy: str, pause: Pause, exchange: str) -> None:
        folder = target.parent.parent
        self.out, self.err = (folder / f"child-{busy}.{name}" for name in ("out", "err"))
        args = (target, busy, exchange, pause, self.out, self.err)
        self.process = multiprocessing.get_context("fork").Process(target=_commit, args=args)
        self.process.start()
        self.pid = self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.exitcode

    def poll(self) -> int | None:
        return self.process.exitcode

    def wait(self, timeout: float | None = None) -> int | None:
        self.process.join(timeout)
        return self.process.exitcode

    def communicate(self, timeout: float | None = None) -> tuple[str, str]:
        self.wait(timeout)
        out, err = (p.read_text() if p.exists() else "" for p in (self.out, self.err))
        return out, err


def child(
    target: Path, busy: str, *, pause: str | None = None, seconds: float = 60, swap: str = "exchange"
) -> Child:
    where: Pause = (pause, target.parent.parent / "paused", seconds) if pause else None
    return Child(target, busy, where, swap)


def wait_for(path: Path, proc: Child, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"child ended before pausing: {proc.communicate()}")
        assert time.monotonic() < deadline, "child never reached the pause point"
        time.sleep(0.02)


def a_day_with_an_edit(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    target = out / "day37"
    stage(target, "72.3%")
    (target / "linkedin.md").write_text(POST.format(u="72.3%").replace("Hook.", "My hook."))
    (target / "notes").mkdir()
    (target / "notes" / "plan.txt").write_text("mine\n")
    return target


def complete(target: Path) -> str:
    """'old' or 'new': the day's folder is whole, with the edit and the notes, at every moment."""
    assert (target / "notes" / "plan.txt").read_text() == "mine\n"
    draft = (target / "linkedin.md").read_text()
    assert draft.startswith("My hook.")
    png = (target / "scoreboard.png").read_text()
    if "74.1%" in draft:
        assert png == "png 74.1%"
        return "new"
    assert "72.3%" in draft and png == "png 72.3%"
    return "old"


@pytest.mark.parametrize(
    "point, swap, expect",
    [
        ("staging", "exchange", "old"),
        ("staged", "exchange", "old"),
        ("ready", "exchange", "old"),
        ("swapped", "exchange", "new"),
        ("old-moved", "renames", None),  # between two renames: .day37.old holds the whole old folder
        ("swapped", "renames", "new"),
    ],
)
def test_killed_at_any_point_then_rebuilt(tmp_path, point, swap, expect):
    target = a_day_with_an_edit(tmp_path)
    proc = child(target, "74.1%", pause=point, swap=swap)
    wait_for(target.parent.parent / "paused", proc)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    if expect is None:
        assert not target.exists() and complete(target.with_name(".day37.old")) == "old"
    else:
        assert complete(target) == expect
    # The next build repairs what was left, merges the new numbers, and leaves nothing behind.
    stage(target, "75.0%")
    assert (target / "linkedin.md").read_text() == POST.format(u="75.0%").replace("Hook.", "My hook.")
    assert (target / "notes" / "plan.txt").read_text() == "mine\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["day37"]


def test_an_old_folder_with_an_edit_made_mid_build_is_kept_not_deleted(tmp_path):
    target = a_day_with_an_edit(tmp_path)
    proc = child(target, "74.1%", pause="staged", seconds=0.8)
    wait_for(target.parent.parent / "paused", proc)
    (target / "notes" / "plan.txt").write_text("edited while the build ran\n")  # after staging
    assert proc.wait(timeout=20) == 0, proc.communicate()
    # Carried by hard link, the late edit is in the new folder too; a late new file is not.
    assert (target / "notes" / "plan.txt").read_text() == "edited while the build ran\n"


def test_a_file_written_mid_build_survives_in_a_kept_folder(tmp_path):
    target = a_day_with_an_edit(tmp_path)
    proc = child(target, "74.1%", pause="staged", seconds=0.8)
    wait_for(target.parent.parent / "paused", proc)
    (target / "late.txt").write_text("written while the build ran\n")
    assert proc.wait(timeout=20) == 0, proc.communicate()
    kept = target.with_name("day37.kept-1")
    assert (kept / "late.txt").read_text() == "written while the build ran\n"
    assert complete(target) == "new"


def test_two_builds_of_one_day_take_turns(tmp_path):
    target = a_day_with_an_edit(tmp_path)
    first = child(target, "74.1%", pause="staged", seconds=0.8)
    wait_for(target.parent.parent / "paused", first)
    second = child(target, "75.0%")
    out2, err2 = second.communicate(timeout=30)
    out1, _ = first.communicate(timeout=30)
    assert first.returncode == 0 and second.returncode == 0, err2
    assert "waiting for another build of day37" in err2
    # The second staged after the first was in place, so it merged into the first's result.
    assert (target / "linkedin.md").read_text() == POST.format(u="75.0%").replace("Hook.", "My hook.")
    assert "linkedin.md" in out1 and "linkedin.md" in out2  # both merged the edit
    assert sorted(p.name for p in target.parent.iterdir()) == ["day37"]


def test_a_build_holds_the_days_lock_until_its_review_page_is_written(tmp_path, monkeypatch, built_out):
    """The build writes into the day's folder after its swap (its audit record, its review page):
    the day's lock is still held then, so a second build of the day (a terminal and `serve`)
    cannot swap the folder away under those writes (it did: "cannot write the review page: No
    such file or directory", and kept copies left in out/). Seen from inside the write: another
    descriptor cannot take the lock."""
    import fcntl

    from engine import pipeline
    from engine.outdir import lock as day_lock
    from engine.render import review

    from helpers import DAYS, copy_built

    out = copy_built(built_out, tmp_path / "out")
    seen: list[bool] = []
    write_day_page = review.write_day_page

    def watching(target, **kwargs):
        path = day_lock.for_folder(target).path
        fd = os.open(path, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            seen.append(False)  # free: a second build could have swapped the folder now
        except BlockingIOError:
            seen.append(True)
        finally:
            os.close(fd)
        return write_day_page(target, **kwargs)

    monkeypatch.setattr(review, "write_day_page", watching)
    pipeline.build(DAYS / "day04.yaml", out)
    assert seen == [True]
    assert sorted(p.name for p in out.iterdir()) == ["day04", "day37", "index.html"]  # and let go
