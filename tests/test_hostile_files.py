"""Hostile files, by the kind of file: the images and PDFs `check` reads, a day folder's own
records, a sweep's results file, the files `serve` sends, and the files the engine hashes.

Each kind has a table of named cases (a FIFO, a link out of the folder, a file truncated, a
sparse giant, a header that claims a huge image) and a hypothesis strategy over its bytes. Every
case holds the engine to one rule: the command works, and says what is true of the file, or it
stops with one line naming the file, exit 2, and no traceback; within a time bound, reading no
more than its stated limit; and nothing in out/ or days/ changes but what a good run writes.
`make soak` draws many more examples (helpers.examples).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import shutil
import stat
import struct
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from engine import limits
from engine.errors import UserError
from engine.validation import MAX_ONE_LINE_CHARS

from helpers import (
    CASE_BYTES,
    DAYS,
    bounded,
    examples,
    lab_day_spec,
    lean_spec,
    one_line,
    run_cli,
    sweep_section,
    unlinked,
)

SETTINGS = settings(
    deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


def test_the_bounds_catch_a_case_that_reads_a_giant_whole():
    """The memory bound is a real one: a case that holds twice its limit in memory it did not
    have before (fresh pages, as a read growing with its input takes) fails it."""
    import mmap

    with pytest.raises(AssertionError), bounded("giant"):
        held = mmap.mmap(-1, 2 * CASE_BYTES)
        for page in range(0, len(held), mmap.PAGESIZE):  # touched, so resident
            held[page] = 1
        held.close()


def state(root: Path) -> dict[str, Any]:
    """Every entry below ``root`` as lstat sees it, read without following a link or opening a
    FIFO: a file by its bytes' digest (a sparse giant by its size and time), a link by its
    target. Equal states mean nothing was touched."""
    found: dict[str, Any] = {}
    for folder, dirs, files in os.walk(root):
        for name in sorted(dirs + files):
            path = Path(folder) / name
            info = os.lstat(path)
            where = path.relative_to(root).as_posix()
            if stat.S_ISLNK(info.st_mode):
                found[where] = ("link", os.readlink(path))
            elif stat.S_ISREG(info.st_mode) and info.st_size <= limits.MIB:
                found[where] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
            else:
                found[where] = (stat.S_IFMT(info.st_mode), info.st_size, info.st_mtime_ns)
    return found


def sparse(path: Path, size: int) -> Path:
    """A file of ``size`` bytes on paper and none on disk: reading it whole would take the time."""
    with path.open("wb") as f:
        f.truncate(size)
    return path


def plant(path: Path, kind: str, data: bytes = b"", outside: Path | None = None) -> None:
    """``path`` made as ``kind``: a plain file of ``data``, or a hostile stand-in for one (for
    "outside", a link to a file of ``data`` in ``outside``, by default two folders up)."""
    if kind == "file":
        path.write_bytes(data)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "dangling":
        path.symlink_to(path.parent / "nothing-here")
    elif kind == "loop":
        path.symlink_to(path.name)
    elif kind == "outside":
        there = (outside or path.parents[2]) / f"outside-{path.name}"
        there.write_bytes(data)
        path.symlink_to(there)
    else:
        raise AssertionError(kind)


# ---- images and PDFs beside the drafts, as `engine check` reads them -------------------------


LINKEDIN = "Hook line.\n\n#A #B #C\n"
THREAD = "One post.\n"
PDF = b"%PDF-1.4\n1 0 obj << /Type /Page /MediaBox [0 0 1080 1350] >> endobj\n%%EOF\n"


def gif(width: int = 2, height: int = 2, frames: int = 1) -> bytes:
    """A looping GIF drawn by Pillow, then its header's canvas size set to width × height (a GIF
    says its size in bytes 6–9, little-endian, read before any pixel)."""
    from PIL import Image

    buf = io.BytesIO()
    pictures = [Image.new("P", (2, 2), k) for k in range(frames)]
    pictures[0].save(buf, "GIF", save_all=True, append_images=pictures[1:], loop=0)
    data = buf.getvalue()
    return data[:6] + struct.pack("<HH", width, height) + data[10:]


def png() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (4, 5)).save(buf, "PNG")
    return buf.getvalue()


def day_folder(root: Path) -> Path:
    """out/day37 holding drafts that pass every rule, so a medium's own outcome is what shows."""
    day = root / "out" / "day37"
    day.mkdir(parents=True)
    (day / "linkedin.md").write_text(LINKEDIN)
    (day / "x-thread.md").write_text(THREAD)
    return day


def check(day: Path) -> tuple[int, str, str]:
    """`engine check` on the folder: a passing or failing check with nothing on stderr, or one
    line naming a file in it; out/ and days/ as they were."""
    before, days = state(day.parent), state(DAYS)
    code, out, err = run_cli("check", str(day))
    if code == 2:
        assert str(day) in one_line(err), err
    else:
        assert code in (0, 1) and err == "", (code, err)
    assert state(day.parent) == before and state(DAYS) == days
    return code, out, err


@pytest.mark.parametrize(
    "name, kind, data, words",
    [
        ("anim.gif", "fifo", b"", "FAIL anim.gif: alt text"),  # not opened: only its alt text is missing
        ("chart.png", "fifo", b"", "FAIL chart.png: alt text"),
        ("carousel.pdf", "dev-zero", b"", "x-thread.md post 1/1: 9/280 ok\n"),  # no document: passed over
        ("anim.gif", "folder", b"", "FAIL anim.gif: alt text"),
        ("chart.png", "dangling", b"", "FAIL chart.png: alt text"),
        ("chart.png", "loop", b"", "FAIL chart.png: alt text"),
        ("anim.gif", "outside", gif(), "anim.gif: GIF bytes"),  # followed: the person's own file
        ("anim.gif", "file", b"", "not a readable image"),
        ("anim.gif", "file", b"\x89PNG\r\n\x1a\n", "not a readable image"),
        ("anim.gif", "file", gif()[:20], "not a readable image"),
        ("anim.gif", "file", png(), "not a GIF (Pillow reads PNG)"),
        ("anim.gif", "file", gif(10_000, 10_000), "width px 10000/1280 FAIL"),  # no bomb warning
        ("anim.gif", "file", gif(65_535, 65_535), "DecompressionBombError"),
        ("carousel.pdf", "file", b"", "pages 0/300 FAIL"),
        ("carousel.pdf", "file", b"GIF89a", "pages 0/300 FAIL"),
        ("carousel.pdf", "file", PDF[:40], "pages 0/300 FAIL"),
        ("carousel.pdf", "file", PDF.replace(b"1350", b"1.2.3"), "MediaBox of page 1 is not four numbers"),
        ("carousel.pdf", "file", PDF.replace(b"1350", b"1080"), "page 1080×1080 pt is not 4:5"),
        ("carousel.pdf", "file", PDF * 3000, "pages 3000/300 FAIL"),  # counted to the last
        ("carousel.pdf", "file", PDF * 5000, "pages (at least) 3001/300 FAIL"),  # then a lower bound
        (
            "CAROUSEL.PDF",
            "file",
            PDF,
            f"CAROUSEL.PDF: document bytes {len(PDF)}/104857600 ok · pages 1/300 ok",
        ),
        ("photo.jpg", "file", b"\xff\xd8\xff" + b"\x00" * 10, "FAIL photo.jpg: alt text"),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 30 else None,
)
def test_media_beside_the_drafts_are_checked_or_one_line(tmp_path, name, kind, data, words):
    day = day_folder(tmp_path)
    plant(day / name, kind, data)
    code, out, err = check(day)
    assert words in (err if code == 2 else out), (out, err)


def test_a_giant_media_file_is_judged_by_its_size_unread(tmp_path):
    """Over the platform's limit whatever it holds: a sparse GIF or PDF is not read (reading 8 GiB
    of zeros would take a minute, walking 16 MiB of GIF frames seconds), and its size is the
    violation."""
    day = day_folder(tmp_path)
    sparse(day / "anim.gif", 16 * limits.MIB)
    sparse(day / "carousel.pdf", 8 * 1024 * limits.MIB)
    (day / "anim.alt.txt").write_text("An animation.")
    code, out, _ = check(day)
    assert code == 1
    assert "anim.gif: GIF bytes 16777216/15728640 FAIL\n" in out  # and nothing else counted
    assert "document bytes 8589934592/104857600 FAIL · pages 0/300 FAIL" in out


def _mutated(base: bytes) -> st.SearchStrategy[bytes]:
    """``base`` cut short, with a byte changed, or with bytes put in front."""
    return st.one_of(
        st.integers(0, len(base)).map(lambda n: base[:n]),
        st.tuples(st.integers(0, len(base) - 1), st.integers(0, 255)).map(
            lambda t: base[: t[0]] + bytes([t[1]]) + base[t[0] + 1 :]
        ),
        st.binary(min_size=1, max_size=16).map(lambda b: b + base),
    )


_PDF_PIECES = st.sampled_from(
    [
        b"/MediaBox",
        b"[",
        b"]",
        b" ",
        b"\n",
        b"0",
        b"-0",
        b"1080",
        b"1350",
        b"1.2.3",
        b"1e400",
        b".",
        b"-",
        b"9" * 400,
    ]
)
_MEDIA_BYTES = st.one_of(
    st.binary(max_size=64),
    _mutated(gif(frames=2)),
    _mutated(PDF),
    st.lists(_PDF_PIECES, max_size=30).map(lambda parts: b"%PDF-1.4\n" + b"".join(parts)),
)


@settings(SETTINGS, max_examples=examples(8, 2000))
@given(
    name=st.sampled_from(["anim.gif", "carousel.pdf", "chart.png"]),
    data=_MEDIA_BYTES,
    dims=st.none() | st.tuples(st.integers(0, 65_535), st.integers(0, 65_535)),
)
def test_any_media_bytes_are_checked_or_one_line(tmp_path_factory, name, data, dims):
    """Any bytes under a medium's name: counted, or one line. A GIF whose header claims a canvas
    is counted at that canvas (bytes 6–9 of the file, the independent truth here), or at its
    2 × 2 frame where the canvas is smaller: a reader shows the whole frame."""
    if dims is not None and name.endswith(".gif"):
        data = gif(*dims)
    day = day_folder(tmp_path_factory.mktemp("media"))
    (day / name).write_bytes(data)
    (day / f"{Path(name).stem}.alt.txt").write_text("A picture.")
    code, out, _ = check(day)
    if dims is not None and name.endswith(".gif") and code != 2:
        width, height = max(dims[0], 2), max(dims[1], 2)
        assert f"width px {width}/1280" in out and f"height px {height}/1080" in out


# ---- a day folder's own records: the manifest, the base renders, the changes, the audit ------


DRAFT = "a\nb\nc\nd\n"
EDIT = DRAFT + "mine\n"  # the person's line, at the end
RENDER = "A\nb\nc\nd\n"  # the next build's, at the start: the two merge cleanly


def commit_twice(target: Path, record: str, data: bytes) -> None:
    """A folder the engine wrote (linkedin.md, notes of the person's beside it), the draft
    edited by the person, ``record`` replaced by ``data``, and a second commit of a new render.
    The second commit either stops with one line naming the record, folder untouched, or puts the
    new render in place keeping the person's line and file."""
    from engine import outdir

    staging = outdir.Staging.create(target)
    (staging.path / "linkedin.md").write_text(DRAFT)
    outdir.commit(staging)
    (target / "linkedin.md").write_text(EDIT)
    (target / "notes.txt").write_text("the person's own\n")
    (target / record).write_bytes(data)
    before = state(target.parent)
    staging = outdir.Staging.create(target)
    (staging.path / "linkedin.md").write_text(RENDER)
    try:
        outdir.commit(staging)
    except UserError as err:
        assert err.file == str(target / record) and "\n" not in err.line()
        assert state(target.parent) == before
        return
    kept = (target / "linkedin.md").read_text()
    beside = target / "linkedin.new.md"
    assert kept == "A\nb\nc\nd\nmine\n" or (kept == EDIT and beside.read_text() == RENDER), kept
    assert (target / "notes.txt").read_text() == "the person's own\n"
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]  # nothing left beside


_RECORDS = [".manifest.json", ".base.json", ".changes.json", ".audit.json"]
_RECORD_TEXTS = st.one_of(
    st.binary(max_size=40),
    st.sampled_from(['{"files": 5}', '{"files": {"linkedin.md": 1}}', '{"linkedin.md": 7}', "[]", "null"]),
    st.integers(60, 70).map(lambda n: "[" * n + "]" * n),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=3),
        max_leaves=8,
    ).map(json.dumps),
)


@settings(SETTINGS, max_examples=examples(12, 3000))
@given(record=st.sampled_from(_RECORDS), text=_RECORD_TEXTS)
def test_any_record_bytes_cost_the_person_nothing(tmp_path_factory, record, text):
    data = text if isinstance(text, bytes) else text.encode()
    commit_twice(tmp_path_factory.mktemp("records") / "day37", record, data)


def rebuild(tmp_path: Path, built_out: Path) -> tuple[Path, Path]:
    """A copy of the session's built Day 37 with the person's line in linkedin.md, and the spec
    to build it again without drawings (a rebuild is what is under test, not the charts): the
    day's engine files no longer rendered go, as they do when a spec drops a chart."""
    days = tmp_path / "days"
    shutil.copytree(DAYS, days, ignore=shutil.ignore_patterns("*.measured"))
    spec = days / "day37.yaml"
    spec.write_text(unlinked(lean_spec(spec.read_text())))
    day = tmp_path / "out" / "day37"
    shutil.copytree(built_out / "day37", day)
    draft = day / "linkedin.md"
    draft.write_text(draft.read_text() + "\nA line of my own.\n")
    return spec, day


def test_a_rebuild_over_an_unreadable_manifest_is_one_line_and_changes_nothing(tmp_path, built_out):
    spec, day = rebuild(tmp_path, built_out)
    (day / ".manifest.json").write_bytes(b'{"files": ' + b"[" * 100 + b"]" * 100 + b"}")
    before, days = state(day.parent), state(spec.parent)
    code, _, err = run_cli("build", str(spec), "--out", str(day.parent))
    assert code == 2 and str(day / ".manifest.json") in one_line(err)
    assert state(day.parent) == before and state(spec.parent) == days


def test_a_rebuild_over_mangled_records_and_odd_files_keeps_the_persons_files(tmp_path, built_out):
    """Records of the wrong shapes cost only what they held, and the person's FIFO and links
    are carried as they are: a FIFO is accounted for by its inode, never opened to hash it,
    so the build neither stops after the swap nor leaves the old folder beside the new."""
    spec, day = rebuild(tmp_path, built_out)
    (day / ".base.json").write_bytes(b"\xff\xfe not json")
    (day / ".changes.json").write_bytes(b'{"previous": true, "figures": [1], "drafts": [2]}')
    (day / ".audit.json").write_bytes(b'{"drafts": {"linkedin.md": {"render": 5, "previous": ["x"]}}}')
    odd = {"pipe.png": "fifo", "zero.gif": "dev-zero", "gone.md": "dangling"}
    for name, kind in odd.items():
        plant(day / name, kind)
    days = state(spec.parent)
    code, _, err = run_cli("build", str(spec), "--out", str(day.parent))
    assert code == 0, err
    assert "A line of my own." in (day / "linkedin.md").read_text()
    modes = {name: os.lstat(day / name).st_mode for name in odd}
    assert (
        stat.S_ISFIFO(modes["pipe.png"])
        and stat.S_ISLNK(modes["zero.gif"])
        and stat.S_ISLNK(modes["gone.md"])
    )
    assert sorted(p.name for p in day.parent.iterdir()) == ["day37", "index.html"]  # nothing left beside
    assert state(spec.parent) == days
    (day / ".changes.json").write_bytes(b'{"previous": true, "merged": 7, "conflicts": [[1]]}')
    assert run_cli("review", "--out", str(day.parent))[0] == 0  # the page without the panel


# ---- a sweep's results file ------------------------------------------------------------------


# one point: the small grid's first GPU, batch size and rate, on ten requests
ONE_POINT = {
    "workload.requests": 10,
    "grid.gpu": ["h100-80gb"],
    "grid.max_num_seqs": [4],
    "grid.arrival_rate": [5],
}


@pytest.fixture(scope="module")
def sweep_truth(tmp_path_factory) -> tuple[Any, dict[str, Any], str]:
    """The one-point sweep, its rows computed with no results file, and its stored line."""
    from engine.experiments import sweep as experiment
    from engine.sections import SpecLocation

    section = sweep_section(**ONE_POINT)
    store = tmp_path_factory.mktemp("sweep") / "points.jsonl"
    rows = experiment.run(
        section, SpecLocation(spec_path=store.parent / "s.yaml"), store_path=store, full=True
    )
    return section, rows, store.read_text()


def sweep_over(section: Any, store: Path) -> dict[str, Any] | None:
    """The sweep with ``store`` as its results file: its summary, or None after one line naming
    the file; nothing beside the results file is written."""
    from engine.experiments import sweep as experiment
    from engine.sections import SpecLocation

    before = state(store.parent)
    try:
        with bounded(store):
            summary = experiment.run(
                section,
                SpecLocation(spec_path=store.parent / "s.yaml"),
                store_path=store,
                workers=1,
                full=True,
            )
    except UserError as err:
        assert err.file == str(store) and "\n" not in err.line()
        assert state(store.parent) == before
        return None
    after = state(store.parent)
    assert {k: v for k, v in after.items() if k != store.name} == {
        k: v for k, v in before.items() if k != store.name
    }
    return summary


# No metric takes one of these: a status is "ok" or "infeasible", a reason is text, every other
# metric a finite number at least 0, or none.
_BAD_METRIC = st.one_of(
    st.booleans(),
    st.integers(max_value=-1),
    st.sampled_from([math.inf, -math.inf, math.nan, {}]),
    st.lists(st.integers(), max_size=2),
)


@settings(SETTINGS, max_examples=examples(8, 2000))
@given(data=st.data())
def test_any_results_file_gives_the_true_table_or_one_line(tmp_path_factory, sweep_truth, data):
    """Lines of any bytes, and the true point's line with its metrics mangled (a key dropped, one
    set to a value no metric takes, another added): the table is the one computed with no file."""
    section, truth, good = sweep_truth
    row = json.loads(good)
    lines = data.draw(
        st.lists(
            st.one_of(
                st.just(good.strip()),
                st.binary(max_size=30).map(lambda b: b.decode("latin-1")),
                st.sampled_from(list(row["metrics"])).map(
                    lambda k: json.dumps(
                        {**row, "metrics": {m: v for m, v in row["metrics"].items() if m != k}}
                    )
                ),
                st.tuples(st.sampled_from([*row["metrics"], "gpu", "tp", "extra"]), _BAD_METRIC).map(
                    lambda kv: json.dumps({**row, "metrics": {**row["metrics"], kv[0]: kv[1]}})
                ),
            ),
            max_size=4,
        )
    )
    store = tmp_path_factory.mktemp("results") / "points.jsonl"
    store.write_text("\n".join(lines) + "\n" if lines else "", errors="surrogateescape")
    summary = sweep_over(section, store)
    assert summary is not None and summary["rows"] == truth["rows"]


def test_a_stored_line_of_the_right_shape_is_the_point_as_stored(tmp_path, sweep_truth):
    """What resuming means: a point whose line is there, in the shape the sweep writes, is not
    run again, whatever its numbers say (the file is the person's; --fresh runs every point)."""
    section, truth, good = sweep_truth
    row = json.loads(good)
    store = tmp_path / "points.jsonl"
    store.write_text(json.dumps({**row, "metrics": {**row["metrics"], "ttft_p99": 0.25}}) + "\n")
    summary = sweep_over(section, store)
    assert summary is not None
    assert summary["rows"] == [{**truth["rows"][0], "ttft_p99": 0.25}]


@pytest.mark.parametrize("kind", ["fifo", "folder", "dev-zero", "loop", "outside"])
def test_a_results_file_that_is_no_plain_file_is_one_line(tmp_path, sweep_truth, kind):
    section, _, good = sweep_truth
    store = tmp_path / "results" / "points.jsonl"
    store.parent.mkdir()
    plant(store, kind, good.encode(), outside=tmp_path)
    assert sweep_over(section, store) is None


def test_a_giant_results_file_is_one_line_unread(tmp_path, sweep_truth):
    section, _, _ = sweep_truth
    from engine.sweep.store import MAX_STORE_BYTES

    store = sparse(tmp_path / "points.jsonl", MAX_STORE_BYTES + 1)
    assert sweep_over(section, store) is None


# ---- files `serve` sends ---------------------------------------------------------------------


class Conn:
    """A connected socket as the request handler uses one: the request's bytes in, the answer's
    bytes out. The handler runs in this thread, so an exception in it fails the test."""

    def __init__(self, request: bytes) -> None:
        self.incoming = io.BytesIO(request)
        self.sent = bytearray()

    def settimeout(self, seconds: float | None) -> None:
        pass

    def makefile(self, mode: str, *args: Any) -> io.BytesIO:
        assert mode == "rb"
        return self.incoming

    def sendall(self, data: bytes) -> None:
        self.sent += data


def served(out: Path, path: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    """One request to the preview's handler over ``out``: (status, headers, body)."""
    from engine.preview.server import handler
    from engine.preview.state import State

    conn = Conn(f"{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode())
    before = state(out)
    with bounded(path):
        handler(out, State())(conn, ("127.0.0.1", 0), None)
    assert state(out) == before
    head, _, body = bytes(conn.sent).partition(b"\r\n\r\n")
    status_line, *fields = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (f.partition(":") for f in fields)}
    if method == "GET":
        assert int(headers["content-length"]) == len(body)
    return int(status_line.split()[1]), headers, body


@pytest.mark.parametrize(
    "name, kind, data, status",
    [
        ("linkedin.md", "file", b"caf\xe9 \xff\xfe", 200),
        ("linkedin.md", "fifo", b"", 403),
        ("chart.png", "fifo", b"", 403),
        ("linkedin.md", "outside", b"a secret", 403),
        ("chart.png", "dev-zero", b"", 403),
        ("linkedin.md", "loop", b"", 403),
        ("linkedin.md", "dangling", b"", 404),
        ("linkedin.md", "folder", b"", 301),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_serve_sends_plain_files_under_out_and_refuses_the_rest(tmp_path, name, kind, data, status):
    day = tmp_path / "out" / "day37"
    day.mkdir(parents=True)
    plant(day / name, kind, data)
    code, headers, body = served(tmp_path / "out", f"/day37/{name}")
    assert code == status, body
    if code == 200:
        assert body == data and headers["content-type"] == "text/plain"  # not UTF-8: no charset claimed


def test_serve_refuses_a_giant_page_unread_and_heads_a_giant_file_without_sending_it(tmp_path):
    day = tmp_path / "out" / "day37"
    day.mkdir(parents=True)
    sparse(day / "linkedin.md", 8 * 1024 * limits.MIB)
    sparse(day / "video.mp4", 4 * 1024 * limits.MIB)
    sparse(day / "huge.mp4", limits.MAX_DAY_FILE_BYTES + 1)
    assert served(tmp_path / "out", "/day37/linkedin.md")[0] == 403
    code, headers, body = served(tmp_path / "out", "/day37/video.mp4", "HEAD")
    assert (code, headers["content-length"], body) == (200, str(4 * 1024 * limits.MIB), b"")
    assert served(tmp_path / "out", "/day37/huge.mp4", "HEAD")[0] == 403


@settings(SETTINGS, max_examples=examples(15, 3000))
@given(
    name=st.sampled_from(["linkedin.md", "index.html", "chart.png", "results.json", "notes", "a b.txt"]),
    kind=st.sampled_from(
        ["file", "file", "file", "fifo", "folder", "dev-zero", "dangling", "loop", "outside"]
    ),
    data=st.binary(max_size=200) | st.text(max_size=50).map(lambda t: t.encode("utf-8", "surrogatepass")),
    method=st.sampled_from(["GET", "HEAD"]),
)
def test_any_file_under_out_is_served_as_its_bytes_or_refused(tmp_path_factory, name, kind, data, method):
    out = tmp_path_factory.mktemp("serve") / "out"
    (out / "day37").mkdir(parents=True)
    plant(out / "day37" / name, kind, data)
    code, headers, body = served(out, "/day37/" + name.replace(" ", "%20"), method)
    assert code == {"file": 200, "folder": 301, "dangling": 404}.get(kind, 403), (kind, body)
    if code == 200 and method == "GET" and name != "index.html":
        assert body == data  # served as the bytes it is, whatever they are
    if code == 200 and "charset=utf-8" in headers["content-type"]:
        data.decode("utf-8")  # claimed UTF-8 only when it is


# ---- hashes: the one bounded hasher, and the lab folder's hash ---------------------------------


@pytest.mark.parametrize("kind", ["fifo", "folder", "dev-zero", "dangling", "loop"])
def test_a_hash_of_anything_but_a_plain_file_is_one_line_unread(tmp_path, kind):
    plant(tmp_path / "f.json", kind)
    with pytest.raises(UserError) as caught, bounded(kind):
        limits.sha256_limited(tmp_path / "f.json", limits.MIB, "step-time", field="grid.step_time")
    assert caught.value.file == str(tmp_path / "f.json") and caught.value.field == "grid.step_time"
    assert "\n" not in caught.value.line()


@settings(SETTINGS, max_examples=examples(12, 3000))
@given(data=st.binary(max_size=300), limit=st.integers(0, 300), chunk=st.integers(1, 64))
def test_a_hash_is_hashlibs_within_the_limit_and_one_line_past_it(tmp_path_factory, data, limit, chunk):
    path = tmp_path_factory.mktemp("hash") / "f.bin"
    path.write_bytes(data)
    if len(data) > limit:
        with pytest.raises(UserError, match="over the limit"):
            limits.sha256_limited(path, limit, "image")
        return
    assert limits.sha256_limited(path, limit, "image") == hashlib.sha256(data).hexdigest()
    assert b"".join(limits.iter_bytes_limited(path, limit, "image", chunk=chunk)) == data


def test_a_sparse_giant_is_refused_by_its_size_before_a_byte_is_read(tmp_path):
    path = sparse(tmp_path / "video.mp4", limits.MAX_DAY_FILE_BYTES + 1)
    started = time.perf_counter()
    with pytest.raises(UserError, match="over the limit of 8 GiB"):
        limits.sha256_limited(path, limits.MAX_DAY_FILE_BYTES, "day folder")
    assert time.perf_counter() - started < 0.5


def test_the_lab_folders_hash_skips_what_is_no_plain_file(tmp_path):
    """A FIFO, a link to a device, a loop and a dangling link are not the lab (never opened);
    a link to a plain file is, by its bytes: the digest worked by hand over the two files."""
    from engine.lab import labfiles

    (tmp_path / "lab.py").write_text("print(1)\n")
    for name, kind in (("pipe", "fifo"), ("zero", "dev-zero"), ("loop", "loop"), ("gone", "dangling")):
        plant(tmp_path / name, kind)
    (tmp_path.parent / "outside-data.txt").write_bytes(b"42\n")
    (tmp_path / "data.txt").symlink_to(tmp_path.parent / "outside-data.txt")

    def entry(name: bytes, data: bytes) -> bytes:
        return len(name).to_bytes(8, "big") + name + len(data).to_bytes(8, "big") + data

    want = hashlib.sha256(entry(b"data.txt", b"42\n") + entry(b"lab.py", b"print(1)\n")).hexdigest()
    assert labfiles.content_hash(tmp_path) == want


LAB_SPEC = lab_day_spec("A lab that fills its own folder", {"wait": ("ns", "how long it says it waited")})
LAB = """\
from pathlib import Path
from labkit import figure
with open(Path(__file__).with_name("data.bin"), "wb") as f:
    f.truncate(70 * 2**20)
figure("wait", 1.5, "us")
"""


def test_a_lab_that_fills_its_own_folder_past_the_limit_is_one_line(tmp_path):
    """A lab that grows its own folder past the 64 MiB the folder's hash reads is the same one
    line after the run as a folder too big before it, and nothing is kept."""
    days = tmp_path / "days"
    (days / "day02.lab").mkdir(parents=True)
    (days / "day02.lab" / "lab.py").write_text(LAB)
    (days / "day02.yaml").write_text(LAB_SPEC)
    code, _, err = run_cli("lab", str(days / "day02.yaml"), "--quiet")
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1] == (  # after the line saying the lab is running
        f"{days / 'day02.yaml'}: lab.script: {days / 'day02.lab'} holds over 64 MiB; "
        "keep data out of the lab folder"
    )
    assert not (days / "day02.measured").exists()


# ---- the figures file a lab writes -----------------------------------------------------------

FIGURES_SPEC = lab_day_spec(
    "A lab with any figures file",
    {"wait": ("ns", "how long it says it waited"), "size": ("KiB", "how much it read")},
)
_TEXTS = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["", "x" * 400, "two\nlines", "\x1b[31mred\x1b[0m", "tab\there", "\u202eevil", "µs"]),
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 1.5, 1e308, -1e-320, 4096]),
    _TEXTS,
)
_UNITS = st.one_of(st.sampled_from(["ns", "us", "µs", "s", "B", "KiB", "GiB", "x", "%", "MiB/s"]), _TEXTS)
_FIGURE = st.one_of(
    st.fixed_dictionaries(
        {"value": _SCALARS, "unit": _UNITS},
        optional={"about": _TEXTS, "label": _TEXTS, "line": _TEXTS, "extra": _SCALARS},
    ),
    _SCALARS,
    st.lists(_SCALARS, max_size=3),
)
_NAMES = st.one_of(st.sampled_from(["wait", "size"]), st.text(max_size=12))
_RECORDED = st.one_of(
    st.fixed_dictionaries(
        {
            "labkit": st.one_of(st.sampled_from([1, 2]), _SCALARS),
            "figures": st.one_of(st.dictionaries(_NAMES, _FIGURE, max_size=3), _SCALARS),
        },
        optional={
            "given": st.one_of(st.dictionaries(_NAMES, _FIGURE, max_size=2), _SCALARS),
            "tables": st.one_of(
                st.dictionaries(
                    _NAMES,
                    st.fixed_dictionaries(
                        {
                            "columns": st.lists(st.lists(_TEXTS, max_size=3), max_size=3),
                            "rows": st.lists(st.lists(_SCALARS, max_size=3), max_size=3),
                        }
                    ),
                    max_size=1,
                ),
                _SCALARS,
            ),
            "notes": st.one_of(st.lists(_TEXTS, max_size=3), _SCALARS),
        },
    ),
    st.just({"error": "not JSON: line 1"}),
    _SCALARS,
)


_GOOD_FIGURES = {
    "wait": {"value": 1.5, "unit": "us", "about": "how long it waited"},
    "size": {"value": 4096, "unit": "B", "about": "how much it read", "label": "read"},
}
_PLACES = [("wait", k) for k in ("value", "unit", "about", "label", "line")] + [
    ("size", "value"),
    ("size", "unit"),
]


@st.composite
def _good_but(draw: st.DrawFn) -> dict[str, Any]:
    """A labkit file the spec takes, then a few of its fields set to anything, and maybe a
    figure, set values, a table or notes added: most of what a real lab gets wrong is one field."""
    figures = json.loads(json.dumps(_GOOD_FIGURES))
    for name, key in draw(st.lists(st.sampled_from(_PLACES), max_size=2, unique=True)):
        figures[name][key] = draw(st.one_of(_SCALARS, _UNITS))
    doc: dict[str, Any] = {"labkit": draw(st.sampled_from([1, 2])), "figures": figures}
    if draw(st.integers(0, 3)) == 0:
        figures[draw(_NAMES)] = draw(_FIGURE)
    for key in draw(st.lists(st.sampled_from(["given", "tables", "notes"]), max_size=2, unique=True)):
        doc[key] = draw(
            {
                "given": st.dictionaries(_NAMES, _FIGURE, max_size=2),
                "tables": _RECORDED.map(lambda r: r.get("tables") if isinstance(r, dict) else r),
                "notes": st.lists(_TEXTS, max_size=3),
            }[key]
        )
    return doc


@pytest.fixture(scope="module")
def figures_day(tmp_path_factory) -> Path:
    days = tmp_path_factory.mktemp("figures") / "days"
    (days / "day02.lab").mkdir(parents=True)
    (days / "day02.lab" / "lab.py").write_text("print('the run is stood in for')\n")
    (days / "day02.yaml").write_text(FIGURES_SPEC)
    return days


@settings(SETTINGS, max_examples=examples(25, 3000))
@given(recorded=st.one_of(_good_but(), _RECORDED), printed=_TEXTS)
@example(recorded={"labkit": 2, "figures": _GOOD_FIGURES}, printed="")
@example(  # accepted: its texts made one line and bounded
    recorded={
        "labkit": 2,
        "figures": {**_GOOD_FIGURES, "wait": {**_GOOD_FIGURES["wait"], "label": "a\n" * 200}},
    },
    printed="\x1b[2J",
)
def test_any_figures_file_is_a_measurement_the_build_takes_or_one_line(figures_day, recorded, printed):
    """Whatever the lab's figures file held (read back as the runner parses it), the run is a
    measurement the build accepts, every figure a finite value in the spec's unit with one-line
    texts, or one line naming the spec and nothing written. The lab itself is stood in for:
    the runner's answer is the drawn file, and the judge and the acceptance are the engine's."""
    from engine.experiments.lab import measure
    from engine.lab import runner

    spec = figures_day / "day02.yaml"
    run = runner.LabRun(text=printed, wall_seconds=0.01, exit_status=0, recorded=recorded)
    before = state(figures_day)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runner, "run_lab", lambda *a, **k: run)
        try:
            with bounded(recorded):
                doc, path = measure.measure(spec, echo=io.StringIO(), status=io.StringIO())
        except UserError as err:
            assert "\n" not in err.line() and err.line().startswith(f"{spec}: ")
            assert state(figures_day) == before  # no measurement kept
            return
    try:
        assert set(doc["figures"]) == {"wait", "size"}
        for figure in doc["figures"].values():
            assert isinstance(figure["value"], float | int) and math.isfinite(figure["value"])
            assert figure["unit"] in ("ns", "KiB")
            for key in ("about", "label"):
                assert "\n" not in figure.get(key, "") and len(figure.get(key, "")) <= MAX_ONE_LINE_CHARS
        assert json.loads(path.read_text())["figures"] == doc["figures"]
    finally:
        shutil.rmtree(path.parent)


def test_a_path_past_the_file_systems_length_limit_is_one_line(tmp_path, capsys):
    """A name of 300 characters is past the 255 a folder entry may have: the system refuses it
    wherever a path is first looked at (a flag here, or a file a spec names), and that is one
    line naming the path, exit 2, never a traceback."""
    from engine.cli import main

    long = tmp_path / ("a" * 300)
    hostile = tmp_path / ("\x1b]0;title\x07\x1b[2J" + "a" * 300 + "\nFAKE: second line")
    runs = (["check", str(long)], ["build", str(long / "day37.yaml")], ["review", "--out", str(long)])
    for argv in (*runs, ["check", str(hostile)]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err and "a" * 255 in err, argv
        if argv[1] == str(hostile):  # the escapes shown as escapes, the line break too
            assert "\x1b" not in err and "\\x1b" in err


@pytest.mark.parametrize(
    ("where", "text"),
    [
        (("device", "name"), "NVIDIA\x1b]0;pwned\x07\x1b[2J H200"),  # sets the title, clears the screen
        (("device", "name"), "NVIDIA\nH200 second line"),
        (("device", "name"), "H200 \u202egnitset"),  # a right-to-left override reorders the post
        (("device", "name"), "   "),
        (("torch",), "2.13.0\x1b[31m"),
    ],
)
def test_text_a_measurement_file_puts_on_a_post_is_one_plain_line(where, text):
    """A GPU measurement's names reach the posts, the charts and the terminal: an escape, a line
    break, a direction override or only spaces is refused, one line naming the field."""
    import copy

    from engine.errors import UserError
    from engine.measured import validate_measurement

    from helpers import DAYS

    doc = json.loads((DAYS / "day37.measured" / "nvidia-h200.json").read_text())
    validate_measurement(copy.deepcopy(doc), file="m.json")  # as committed: accepted
    target = doc
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = text
    with pytest.raises(UserError) as err:
        validate_measurement(doc, file="m.json")
    assert err.value.field == ".".join(where) and "\n" not in err.value.line()


def test_a_template_named_with_a_control_character_is_one_line(tmp_path):
    """A template's name becomes a draft's file name and a line in the terminal."""
    from engine.errors import UserError
    from engine.pipeline import render_drafts

    from helpers import REPO

    root = tmp_path / "templates"
    shutil.copytree(REPO / "templates", root)
    (root / "day37" / "e\x1b[2Jx.md.j2").write_text("hello\n")
    with pytest.raises(UserError) as err:
        render_drafts({"day": 37}, root)
    assert err.value.line() == (
        "templates/day37/: a template's name is letters, digits, '.', '_' and '-' (it names a draft "
        "file): 'e\\x1b[2Jx.md.j2'"
    )


@pytest.mark.parametrize("key", ["cpu", "os", "kernel", "arch", "python"])
def test_a_lab_measurements_machine_fields_are_plain_lines(key):
    """What a lab file says of its machine is drawn on charts and shown on the review page:
    a terminal escape or a line break in any of it is refused, naming the field."""
    from engine.errors import UserError
    from engine.lab import store

    from helpers import DAYS

    doc = json.loads((DAYS / "day01.measured" / "amd-epyc-2-cores.json").read_text())
    store.validate(json.loads(json.dumps(doc)), file="m.json")  # as committed: accepted
    doc["machine"][key] = "6.1\x1b[2J\nx"
    with pytest.raises(UserError) as err:
        store.validate(doc, file="m.json")
    assert err.value.field == f"machine.{key}"


def test_a_huge_cell_quoted_in_an_error_is_cut_to_a_readable_line(tmp_path):
    """A trace cell of 5,000 digits: the one line keeps the file, the field and the message's
    end around an ellipsis, not the whole cell."""
    from engine.errors import MAX_MESSAGE_CHARS, UserError
    from engine.workload import load_trace

    path = tmp_path / "w.csv"
    path.write_text("output_tokens\n" + "9" * 5000 + "\n")
    with pytest.raises(UserError) as err:
        load_trace(path)
    line = err.value.line()
    assert len(line) == MAX_MESSAGE_CHARS and "…" in line
    assert line.startswith(f"{path}: ") and line.endswith("9" * 20 + "'")
