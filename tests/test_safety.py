"""Safe to build a day you did not write: no write escapes the project, and a lab is contained.

Each test sets up one way a day, a folder or a lab could reach outside (a link planted where the
engine writes, a device or FIFO named as an output, a lab that leaves a process behind, floods its
output, swaps its figures file for a FIFO, or edits the days/ folder) and asserts what the person
sees (one line naming the path, exit status 2, or a report) and that nothing outside was touched.
Every case is bounded in time: none waits for a blocked read or a lab's full sleep.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import time
from pathlib import Path

import pytest

from engine.cli import main
from engine.errors import UserError
from engine.outdir import atomic

from helpers import DAYS, lab_day_spec

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


def a_device(tmp_path: Path) -> Path:
    """A character device to name as an output. As root, a private node like /dev/null (made
    here, so that were the refusal ever to break, the test would replace this node and never the
    system's /dev/null or /dev/full); otherwise /dev/null itself, which only root could replace."""
    if os.geteuid() == 0:
        node = tmp_path / "null"
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        return node
    return Path("/dev/null")


@pytest.mark.skipif(not hasattr(os, "mknod"), reason="needs device nodes")
@pytest.mark.parametrize("flag", ["--trace", "--requests-csv"])
def test_simulate_refuses_a_device_as_its_output_and_leaves_it_a_device(
    tmp_path: Path, capsys, flag: str
) -> None:
    device = a_device(tmp_path)
    assert main([*SIMULATE, flag, str(device), "--force"]) == 2  # --force never means a device
    line = one_line(capsys)
    assert line.startswith(f"{device}: {flag}: ") and "not a regular file" in line
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


# ---- labs: contained -----------------------------------------------------------------------------

LAB_SPEC = lab_day_spec(
    "A contained lab",
    {"wait": ("ns", "how long the lab says it waited"), "size": ("KiB", "how much the lab says it read")},
    charts="[terminal]",
)

GOOD = """\
from labkit import figure
figure("wait", 1.5, "us")
figure("size", 4096, "B")
print("wait 1.5 us, size 4096 B")
"""


def lab_day(root: Path, script: str = GOOD) -> Path:
    """days/day02.yaml and its lab, ``script``, under ``root``; returns the spec."""
    lab = root / "days" / "day02.lab"
    lab.mkdir(parents=True, exist_ok=True)
    (lab / "lab.py").write_text(script, encoding="utf-8")
    spec = root / "days" / "day02.yaml"
    spec.write_text(LAB_SPEC, encoding="utf-8")
    return spec


def measure_quietly(spec: Path) -> tuple[dict, Path, str]:
    from engine.experiments.lab.measure import measure

    status = io.StringIO()
    doc, path = measure(spec, echo=None, status=status)
    return doc, path, status.getvalue()


def alive(pid: int) -> bool:
    """Running, not a zombie waiting for its parent (init) to reap it."""
    from engine.lab import processes

    found = processes._stat(pid)
    return found is not None and found.state != "Z"


def wait_dead(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.02)
    return False


ESCAPE = """\
import os, subprocess, sys, time
from labkit import figure
child = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(60)"],
    start_new_session=True,  # its own session: not in the lab's process group
    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    env=ENV,
)
open("../../child.pid", "w").write(str(child.pid))
time.sleep(HOLD)
figure("wait", 1.5, "us")
figure("size", 4096, "B")
"""


DOUBLE_FORK = """\
import os, time
from labkit import figure
if os.fork() == 0:  # the middle process: a session of its own, a grandchild, then gone at once
    os.setsid()
    if os.fork() == 0:
        os.execve("/bin/sleep", ["sleep", "61"], {})  # an empty environment: no marker
    os._exit(0)
time.sleep(0.05)  # shorter than the runner's sampling: the grandchild is never seen by its chain
figure("wait", 1.5, "us")
figure("size", 4096, "B")
"""


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_a_double_forked_child_with_no_marker_is_still_killed_and_reported(tmp_path: Path) -> None:
    """The escape no mark of the lab's own survives: a double fork whose middle process exits
    at once (the grandchild is orphaned before any sample sees its parent chain), a session of
    its own and an empty environment. Orphaned, it comes to the runner (the child subreaper),
    not to init: found, killed and named, and the runner is no subreaper after the run."""
    from engine.lab import processes

    spec = lab_day(tmp_path, DOUBLE_FORK)
    before = {p.pid for p in processes.table().values() if p.name == "sleep"}
    doc, _, status = measure_quietly(spec)
    left = [p for p in processes.table().values() if p.name == "sleep" and p.pid not in before]
    assert left == [], "the double-forked sleep outlived the run"
    assert "stopped 1 process(es) the lab left running outside its session: pid " in status
    assert "(sleep)" in status and doc["figures"]["wait"]["value"] == pytest.approx(1500)
    import ctypes

    flag = ctypes.c_int(-1)  # PR_GET_CHILD_SUBREAPER (37): this process is no subreaper after the run
    assert ctypes.CDLL(None).prctl(37, ctypes.byref(flag), 0, 0, 0) == 0 and flag.value == 0


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_an_orphan_of_the_engines_own_earlier_child_is_left_alone(tmp_path: Path) -> None:
    """This process started a child before the lab, and that child's own child (begun before the
    lab too) is orphaned while the lab runs: handed to this process, the subreaper, it carries no
    mark of the run (it began before the lab did), and is left running."""
    import subprocess
    import sys

    from engine.lab import processes

    go = tmp_path / "go"  # the lab makes it; the earlier child then exits, while the lab runs
    earlier = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, subprocess, time; p = subprocess.Popen(['sleep', '62']); print(p.pid, flush=True)\n"
            f"while not os.path.exists({str(go)!r}): time.sleep(0.01)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert earlier.stdout is not None
    grandchild = int(earlier.stdout.readline())
    try:
        lab = f"import pathlib, time\npathlib.Path({str(go)!r}).touch()\ntime.sleep(0.3)\n" + GOOD
        spec = lab_day(tmp_path, lab)
        doc, _, status = measure_quietly(spec)
        earlier.wait()
        assert alive(grandchild) and "stopped" not in status, (processes._stat(grandchild), status)
        assert doc["figures"]
    finally:
        os.kill(grandchild, 9)
        with contextlib.suppress(ChildProcessError):  # handed to this process: collected here
            os.waitpid(grandchild, 0)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize(
    ("env", "hold"),
    [
        ("None", "0"),  # the marker variable is inherited: found by it after the lab exits
        ("{'PATH': os.environ.get('PATH', '')}", "0.8"),  # scrubbed: found by its parent chain
    ],
    ids=["marked", "scrubbed"],
)
def test_a_child_that_leaves_the_labs_session_is_killed_and_reported(
    tmp_path: Path, env: str, hold: str
) -> None:
    spec = lab_day(tmp_path, ESCAPE.replace("ENV", env).replace("HOLD", hold))
    start = time.monotonic()
    doc, _, status = measure_quietly(spec)
    assert time.monotonic() - start < 5
    pid = int((tmp_path / "child.pid").read_text())
    assert wait_dead(pid), f"the lab's child {pid} outlived the run"
    assert f"stopped 1 process(es) the lab left running outside its session: pid {pid} (python" in status
    assert doc["figures"]["wait"]["value"] == pytest.approx(1500)


FLOOD = """\
import sys
from labkit import figure
line = b"x" * 999 + b"\\n"
for _ in range(50_000):  # 50 MB
    sys.stdout.buffer.write(line)
print("the last line: 42")
figure("wait", 1.5, "us")
figure("size", 4096, "B")
"""


def test_a_lab_printing_50_mb_is_kept_to_the_cap_with_the_cut_marked(tmp_path: Path) -> None:
    import tracemalloc

    from engine.lab import runner
    from engine.limits import MAX_TRANSCRIPT_BYTES, TRANSCRIPT_TAIL_BYTES

    spec = lab_day(tmp_path, FLOOD)
    command = runner.command_for(spec.parent / "day02.lab" / "lab.py", [])
    echo = io.StringIO()
    run = runner.run_lab(command, spec.parent / "day02.lab", 20, echo=echo)
    printed = 50_000 * 1000 + len("the last line: 42\n")
    assert run.exit_status == 0 and run.printed_bytes == printed
    assert run.cut_bytes == printed - MAX_TRANSCRIPT_BYTES
    kept = run.text.encode()
    assert MAX_TRANSCRIPT_BYTES < len(kept) < MAX_TRANSCRIPT_BYTES + 100  # the cap, and the marker
    assert f"[... {run.cut_bytes:,} bytes of output not kept ...]" in run.text
    assert run.text.endswith("the last line: 42\n")  # the tail survives: a summary still parses
    assert run.text.index("bytes of output not kept") > MAX_TRANSCRIPT_BYTES - TRANSCRIPT_TAIL_BYTES - 10
    assert len(echo.getvalue()) < MAX_TRANSCRIPT_BYTES + 200 and "is not shown" in echo.getvalue()
    del echo, run, kept
    tracemalloc.start()
    try:
        runner.run_lab(command, spec.parent / "day02.lab", 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 * MAX_TRANSCRIPT_BYTES  # the file read back and its text; never the 50 MB


def test_the_transcript_file_holds_the_head_a_marker_and_the_tail(tmp_path: Path) -> None:
    from engine.lab.runner import _Transcript

    with open(tmp_path / "t.txt", "w+b") as log:
        t = _Transcript(log, cap=100, tail=20)
        for i in range(50):
            t.add(f"{i:04d}\n".encode())  # 250 bytes in
        text = t.text()
    assert t.printed == 250 and t.cut == 250 - 100
    assert text == "".join(
        f"{i:04d}\n" for i in range(16)
    ) + "\n[... 150 bytes of output not kept ...]\n" + "".join(f"{i:04d}\n" for i in range(46, 50))
    assert (tmp_path / "t.txt").read_text() == text


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize(
    "swap",
    [
        "os.mkfifo(path)",  # a FIFO: reading it would wait for a writer forever
        "os.symlink('/dev/zero', path)",  # endless zeros: reading it would fill memory
    ],
    ids=["fifo", "dev-zero-link"],
)
def test_a_figures_file_swapped_for_a_fifo_or_device_link_is_refused_in_bounded_time(
    tmp_path: Path, swap: str
) -> None:
    spec = lab_day(tmp_path)
    _, earlier, _ = measure_quietly(spec)
    before = earlier.read_bytes()
    lab_day(
        tmp_path,
        GOOD + f"import os\npath = os.environ['LABKIT_FIGURES']\nos.unlink(path)\n{swap}\n",
    )
    start = time.monotonic()
    with pytest.raises(UserError) as caught:
        measure_quietly(spec)
    assert time.monotonic() - start < 5
    assert caught.value.field == "lab.figures" and "cannot be read" in caught.value.message
    assert earlier.read_bytes() == before


@pytest.mark.parametrize(
    "harm",
    [
        "Path('../day02.yaml').touch()",  # the spec's mtime moves
        "Path('../notes.txt').unlink()",  # a file beside the spec goes
        "Path('../stray.txt').write_text('x')",  # a file appears in days/
        # edited in place to the same size, its modification time then set back: the change
        # time, which no program can set, still moves
        "import os; n = Path('../notes.txt'); s = n.stat(); n.write_bytes(n.read_bytes().upper()); "
        "os.utime(n, ns=(s.st_atime_ns, s.st_mtime_ns))",
    ],
    ids=["touch", "delete", "add", "edit-hidden"],
)
def test_a_lab_that_changes_days_fails_loudly_and_keeps_the_old_measurement(
    tmp_path: Path, harm: str
) -> None:
    spec = lab_day(tmp_path)
    (spec.parent / "notes.txt").write_text("the person's\n")
    _, earlier, _ = measure_quietly(spec)
    before = earlier.read_bytes()
    time.sleep(0.01)  # a touch within the file system's time granularity still moves mtime_ns
    lab_day(tmp_path, "from pathlib import Path\n" + harm + "\n" + GOOD)
    with pytest.raises(UserError) as caught:
        measure_quietly(spec)
    assert "changed files outside its own folder" in caught.value.message
    assert caught.value.file == str(spec) and "no file written" in caught.value.message
    assert earlier.read_bytes() == before
    assert sorted(p.name for p in earlier.parent.iterdir()) == [earlier.name]


def test_a_lab_that_plants_a_file_in_the_engines_cache_fails_and_the_cache_is_emptied(
    tmp_path: Path, monkeypatch
) -> None:
    """The engine's cache holds compiled templates, code a later build runs: a lab that writes
    there fails like one that edits a spec, and what it left is not kept (the cache is emptied:
    every cache in it makes again what it needs)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    kept = tmp_path / "cache" / "sixty-days-engine" / "drawings" / "an-earlier-drawing"
    kept.parent.mkdir(parents=True)
    kept.write_bytes(b"png")
    planted = "sixty-days-engine/templates/drafts-0/planted"
    harm = (
        "import os; from pathlib import Path\n"
        f"p = Path(os.environ['XDG_CACHE_HOME']) / {planted!r}\n"
        "p.parent.mkdir(parents=True, exist_ok=True); p.write_bytes(b'marshalled code')\n"
    )
    spec = lab_day(tmp_path, harm + GOOD)
    with pytest.raises(UserError) as caught:
        measure_quietly(spec)
    assert (
        "changed files outside its own folder" in caught.value.message and "planted" in caught.value.message
    )
    assert "the engine's cache, which it changed, was emptied" in caught.value.message
    assert not (tmp_path / "cache" / planted).exists() and not kept.exists()


def test_a_measurement_the_build_would_refuse_is_not_written(tmp_path: Path, monkeypatch) -> None:
    """The check before writing is the build's own (section.from_document on the text read
    back): when it refuses, the old measurement stays."""
    from engine.experiments.lab import results as section

    spec = lab_day(tmp_path)
    _, earlier, _ = measure_quietly(spec)
    before = earlier.read_bytes()
    seen: list[dict] = []

    def refuse(sec, spec_path, day, doc, path):
        seen.append(doc)
        raise UserError("has no figure 'wait'", file=spec_path, field="lab.figures.wait")

    monkeypatch.setattr(section, "from_document", refuse)
    with pytest.raises(UserError) as caught:
        measure_quietly(spec)
    assert "the build would refuse" in caught.value.message and caught.value.field == "lab.figures.wait"
    assert earlier.read_bytes() == before
    assert seen and seen[0]["figures"]["wait"]["value"] == pytest.approx(1500)  # what was to be written


@pytest.mark.parametrize("kind", ["link", "folder"])
def test_a_link_or_folder_where_the_build_writes_a_draft_is_refused_and_the_day_kept(
    tmp_path: Path, kind: str
) -> None:
    from engine import outdir

    target = tmp_path / "day04"

    def staged(text: str) -> outdir.Staging:
        staging = outdir.Staging.create(target)
        (staging.path / "linkedin.md").write_text(text)
        return staging

    outdir.commit(staged("v1\n"))
    outside = tmp_path / "outside.md"
    outside.write_text("theirs\n")
    (target / "linkedin.md").unlink()
    if kind == "link":
        (target / "linkedin.md").symlink_to(outside)
    else:
        (target / "linkedin.md").mkdir()
    before = tree(target)
    with pytest.raises(UserError) as caught:
        outdir.commit(staged("v2\n"))
    assert caught.value.file == str(target / "linkedin.md")
    assert ("symbolic link" if kind == "link" else "is a folder") in caught.value.message
    assert tree(target) == before and outside.read_text() == "theirs\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["day04", "outside.md"]  # no staging left


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_the_sweep_results_file_must_be_a_regular_file(tmp_path: Path) -> None:
    from engine.sweep.store import ResultStore

    fifo = tmp_path / "points.jsonl"
    os.mkfifo(fifo)
    start = time.monotonic()
    with pytest.raises(UserError, match="not a regular file"):
        ResultStore(fifo)  # reading a FIFO would wait for a writer forever
    assert time.monotonic() - start < 5
    outside = tmp_path / "outside.jsonl"
    outside.write_text("")
    link = tmp_path / "linked.jsonl"
    link.symlink_to(outside)
    with pytest.raises(UserError, match="symbolic link"):
        ResultStore(link)
    fresh = ResultStore(tmp_path / "new" / "points.jsonl")
    fresh.add("k", {"a": 1}, {"m": 2.0})
    fresh.close()
    assert json.loads((tmp_path / "new" / "points.jsonl").read_text()) == {
        "key": "k",
        "point": {"a": 1},
        "metrics": {"m": 2.0},
    }
    assert ResultStore(tmp_path / "new" / "points.jsonl").get("k") == {"m": 2.0}  # read back
