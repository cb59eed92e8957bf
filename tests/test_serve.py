"""`python -m engine serve`: a template change is rebuilt and the page learns of it; Ctrl-C stops.

The server runs in a child process on a free loopback port, in a scratch copy of the project
(engine, templates, days), so changing a template touches nothing real.
"""

from __future__ import annotations

import _thread
import argparse
import contextlib
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.commands import serve
from engine.commands.serve import affected
from engine.errors import UserError
from engine.preview.builder import Builder, render_drafts
from engine.preview.server import HOST, PreviewServer, handler
from engine.preview.state import State

from helpers import lean_spec, unlinked

ROOT = Path(__file__).resolve().parent.parent


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as response:  # loopback only
        return response.read().decode("utf-8")


def carry_bytecode(source: Path, copy: Path) -> None:
    """Give each copied module this checkout's compiled bytecode, where this process compiled
    it, at the place a process importing the copy looks (both under PYTHONPYCACHEPREFIX if it is
    set): the copies keep their modification times, so the bytecode is valid for them, and the
    child spends no time compiling the engine again."""
    for module in source.rglob("*.py"):
        compiled = Path(importlib.util.cache_from_source(str(module)))
        if compiled.is_file():
            target = Path(importlib.util.cache_from_source(str(copy / module.relative_to(source))))
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(compiled, target)


def content_version(url: str) -> str:
    """The version line of /__version (a second line, when there is one, says what is rebuilding)."""
    return get(url + "__version").split("\n")[0]


def wait_until_built(url: str, page: Path, within: float = 30) -> None:
    """Until the builder has nothing left to do (the version line stands alone) and page exists."""
    deadline = time.monotonic() + within
    while "\n" in get(url + "__version") or not page.is_file():
        assert time.monotonic() < deadline, "the background build did not finish"
        time.sleep(0.05)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    skip = shutil.ignore_patterns("__pycache__", "*.measured")
    for name in ("engine", "templates", "days"):
        shutil.copytree(ROOT / name, root / name, ignore=skip)
    carry_bytecode(ROOT / "engine", root / "engine")
    spec = root / "days" / "day37.yaml"  # no charts or carousel: the rebuild is tested, not drawing
    spec.write_text(unlinked(lean_spec(spec.read_text())))  # and no Day 4 read: helpers.unlinked
    return root


def test_serve_rebuilds_on_a_template_change_and_stops_on_ctrl_c(project: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen(
        [sys.executable, "-u", "-m", "engine", "serve", "days/day37.yaml", "--port", "0"],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # Ctrl-C as a person's terminal sends it, even when the suite itself was started in the
        # background (`pytest &` starts with SIGINT ignored, and an ignored signal is inherited).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        lines = []
        while not lines or "serving" not in lines[-1]:
            line = proc.stdout.readline()
            assert line, "".join(lines)
            lines.append(line)
        url = re.search(r"http://127\.0\.0\.1:(\d+)/", lines[-1]).group(0)
        wait_until_built(url, project / "out" / "day37" / "index.html")  # it builds in the background
        page = get(url + "day37/index.html")
        assert "/__version" in page and "<script>" in page  # the reload script, served only
        assert "<script>" not in (project / "out" / "day37" / "index.html").read_text()
        version = content_version(url)

        template = project / "templates" / "day37" / "linkedin.md.j2"
        text = template.read_text()
        assert "I finally read" in text
        template.write_text(text.replace("I finally read", "Previewed live: I finally read"))
        deadline = time.monotonic() + 30
        while content_version(url) == version:
            assert time.monotonic() < deadline, "no rebuild after the template changed"
            time.sleep(0.1)
        assert "Previewed live: I finally read" in get(url + "day37/linkedin.md")
        wait_until_built(url, project / "out" / "day37" / "index.html")  # drafts first, out/ after
        assert "Previewed live: I finally read" in (project / "out" / "day37" / "linkedin.md").read_text()
        proc.send_signal(signal.SIGINT)
        rest, _ = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, rest
    assert "rebuilt Day 37" in rest and rest.rstrip().endswith("stopped")
    assert "Traceback" not in "".join(lines) + rest


def test_which_days_a_change_rebuilds(tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    (tmp_path / "days").mkdir()
    days = [tmp_path / "days" / "day04.yaml", tmp_path / "days" / "day37.yaml"]
    days[0].write_text("day: 4\n")
    days[1].write_text("day: 37\nlinks_back:\n  - spec: day04.yaml\nbatching:\n  trace: lab.csv\n")
    assert affected([templates / "day37" / "x-thread.md.j2"], days, templates) == [days[1]]
    assert affected([templates / "_macros.j2"], days, templates) == days  # shared: every day
    assert affected([templates / "review" / "day.html.j2"], days, templates) == days
    assert affected([templates / "day05" / "linkedin.md.j2"], days, templates) == []  # not served
    assert affected([days[1]], days, templates) == [days[1]]
    assert affected([tmp_path / "days" / "day37.measured" / "h100.json"], days, templates) == [days[1]]
    assert affected([tmp_path / "days" / "lab.csv"], days, templates) == [days[1]]  # named by it
    assert affected([days[0]], days, templates) == days  # Day 37 cites Day 4's spec
    assert affected([tmp_path / "days" / "notes.txt"], days, templates) == []
    catalog = tmp_path / "engine" / "catalog"
    assert affected([catalog / "gpus" / "h200.yaml"], days, templates, (catalog,)) == days


def test_serves_loopback_only_and_injects_the_error_banner(tmp_path: Path) -> None:
    import threading
    from http.server import ThreadingHTTPServer

    from engine.commands import serve

    (tmp_path / "index.html").write_text("<html><body><p>page</p></body></html>")
    state = serve.State()
    state.built(Path("days/day37.yaml"), "days/day37.yaml: batching: slots: must be > 0 <b>")
    server = ThreadingHTTPServer((serve.HOST, 0), serve.handler(tmp_path, state))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        assert server.server_address[0] == "127.0.0.1"
        page = get(f"http://127.0.0.1:{server.server_address[1]}/")
        assert "slots: must be &gt; 0 &lt;b&gt;" in page and "<p>page</p>" in page
        assert get(f"http://127.0.0.1:{server.server_address[1]}/__version") == "1"
    finally:
        server.shutdown()
        server.server_close()


# ---- the server, over real loopback sockets -----------------------------------------------------


@contextlib.contextmanager
def serving(out: Path, state: State | None = None, **limits: Any) -> Iterator[PreviewServer]:
    """A PreviewServer on a free loopback port in a thread; shut down, closed and joined after."""
    timeout = limits.pop("timeout", 2.0)
    server = PreviewServer((HOST, 0), handler(out, state or State(), timeout=timeout), **limits)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=2)
        assert not thread.is_alive()
        wait_for(lambda: handler_threads() == 0)  # every connection's thread ended too


def ask(port: int, path: str = "/", host: str | None = "127.0.0.1") -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.0 request on a fresh socket: (status, headers, body); the server closes it."""
    lines = [f"GET {path} HTTP/1.0"] + ([f"Host: {host}"] if host is not None else [])
    with socket.create_connection((HOST, port), timeout=2) as conn:
        conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        data = read_all(conn)
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *fields = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (f.partition(":") for f in fields)}
    return int(status_line.split()[1]), headers, body


def read_all(conn: socket.socket) -> bytes:
    chunks = []
    while chunk := conn.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def handler_threads() -> int:
    return sum("process_request_thread" in t.name for t in threading.enumerate())


def test_only_loopback_host_headers_are_answered(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<html><body><p>page</p></body></html>")
    with serving(tmp_path) as server:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1"  # bound to loopback, not to every interface
        for name in (
            "127.0.0.1",
            f"127.0.0.1:{port}",
            "localhost",
            f"localhost:{port}",
            "LocalHost:80",
            "[::1]",
            f"[::1]:{port}",
        ):
            status, _, body = ask(port, host=name)
            assert (status, b"<p>page</p>" in body) == (200, True), name
        # a rebinding attacker's own name, look-alikes, a bare IPv6, none at all
        for name in (
            "evil.example",
            f"evil.example:{port}",
            "127.0.0.1.evil.example",
            "localhost.evil.example",
            "::1",
            "127.0.0.2",
            "localhost:http",
            None,
        ):
            status, _, body = ask(port, host=name)
            assert status == 403 and b"page" not in body, name
        with socket.create_connection((HOST, port), timeout=2) as conn:  # two Host headers
            conn.sendall(b"GET / HTTP/1.0\r\nHost: localhost\r\nHost: evil.example\r\n\r\n")
            assert read_all(conn).startswith(b"HTTP/1.0 403")


def test_an_idle_connection_is_closed_after_the_timeout(tmp_path: Path) -> None:
    with serving(tmp_path, timeout=0.3) as server:
        with socket.create_connection((HOST, server.server_address[1]), timeout=3) as conn:
            started = time.monotonic()
            assert conn.recv(1024) == b""  # nothing sent: the server hangs up
            waited = time.monotonic() - started
        assert 0.25 <= waited < 2.0, waited
        deadline = time.monotonic() + 2
        while handler_threads():  # and its thread is gone
            assert time.monotonic() < deadline
            time.sleep(0.01)


def test_connections_beyond_the_cap_wait_in_the_queue_without_a_thread_each(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<html><body>ok</body></html>")
    with serving(tmp_path, timeout=5.0, max_connections=2) as server:
        port = server.server_address[1]
        idle = [socket.create_connection((HOST, port), timeout=2) for _ in range(2)]
        waiting: list[socket.socket] = []
        try:
            deadline = time.monotonic() + 2
            while handler_threads() < 2:
                assert time.monotonic() < deadline
                time.sleep(0.01)
            for _ in range(5):
                conn = socket.create_connection((HOST, port), timeout=2)
                conn.sendall(b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n")
                waiting.append(conn)
            time.sleep(0.3)
            assert handler_threads() == 2  # the cap, not one thread per connection
            for conn in waiting:
                conn.setblocking(False)
                with pytest.raises(BlockingIOError):
                    conn.recv(1)  # queued: no answer yet
                conn.settimeout(2)
            for conn in idle:
                conn.close()  # slots free: the queued ones are answered, in turn
            for conn in waiting:
                assert read_all(conn).startswith(b"HTTP/1.0 200")
        finally:
            for conn in idle + waiting:
                conn.close()


def test_a_file_that_is_not_utf8_is_served_as_its_bytes(tmp_path: Path) -> None:
    (tmp_path / "latin.html").write_bytes(b"<html><body><p>caf\xe9 \xff</p></body></html>")
    (tmp_path / "notes.md").write_bytes(b"na\xefve\n")
    (tmp_path / "utf8.html").write_text("<html><body>café</body></html>", encoding="utf-8")
    with serving(tmp_path) as server:
        port = server.server_address[1]
        status, headers, body = ask(port, "/latin.html")
        assert status == 200 and b"<p>caf\xe9 \xff</p>" in body and b"/__version" in body
        assert headers["content-type"] == "text/html"  # no charset claimed for bytes that are not UTF-8
        assert int(headers["content-length"]) == len(body)
        assert ask(port, "/notes.md")[2] == b"na\xefve\n"
        status, headers, body = ask(port, "/utf8.html")
        assert headers["content-type"] == "text/html; charset=utf-8" and "café".encode() in body


def test_a_fifo_or_a_link_out_of_out_is_refused_without_being_read(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "pipe.html")  # opened for reading the usual way, it would wait for a writer
    (tmp_path / "secret.txt").write_text("not for the browser")
    (out / "secret.txt").symlink_to(tmp_path / "secret.txt")
    (out / "day37").mkdir()
    (out / "day37" / "chart.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    with serving(out) as server:
        port = server.server_address[1]
        status, _, body = ask(port, "/pipe.html")  # had it been opened to be read: no answer, a timeout
        assert status == 403
        assert ask(port, "/secret.txt")[0] == 403
        assert ask(port, "/../secret.txt")[0] == 404
        assert ask(port, "/%2e%2e/secret.txt")[0] == 404
        status, headers, body = ask(port, "/day37/chart.png")
        assert (status, headers["content-type"], body) == (200, "image/png", b"\x89PNG\r\n\x1a\n")
        assert ask(port, "/day37")[:2][0] == 301  # the folder, with its slash, so its links resolve


# ---- the builder: drafts first, errors shown, the last good page kept ---------------------------


def wait_for(condition: Callable[[], bool], within: float = 3.0) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@contextlib.contextmanager
def building(builder: Builder) -> Iterator[Builder]:
    thread = threading.Thread(target=builder.run, daemon=True)
    thread.start()
    try:
        yield builder
    finally:
        builder.stop()
        thread.join(timeout=2)
        assert not thread.is_alive()


def test_a_rebuild_error_is_shown_and_the_last_good_page_is_kept(tmp_path: Path) -> None:
    spec = tmp_path / "days" / "day37.yaml"
    (tmp_path / "out" / "day37").mkdir(parents=True)
    good = tmp_path / "out" / "day37" / "index.html"
    good.write_text("<html><body><p>last good build</p></body></html>")
    outcomes: list[Exception | None] = [
        UserError("must be at least 1, got 0", file=str(spec), field="batching.slots"),
        RuntimeError("a bug in a chart"),
        None,
    ]
    built: list[Path] = []

    def drafts(spec: Path, out: Path) -> dict[str, bytes]:
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome
        return {"day37/linkedin.md": b"fresh draft\n"}

    def whole(spec: Path, out: Path) -> None:
        built.append(spec)

    state = State()
    with (
        building(Builder(tmp_path / "out", state, drafts=drafts, build=whole)) as builder,
        serving(tmp_path / "out", state) as server,
    ):
        port = server.server_address[1]
        builder.request([spec])
        wait_for(lambda: state.snapshot().version == 1)
        status, _, page = ask(port, "/day37/")
        assert status == 200 and b"last good build" in page
        assert f"{spec}: batching.slots: must be at least 1, got 0".encode() in page
        assert built == []  # a day whose drafts failed is not built further
        builder.request([spec])  # an error that is no mistake of the person's: shown, and it goes on
        wait_for(lambda: state.snapshot().version == 2)
        page = ask(port, "/day37/")[2]
        assert b"last good build" in page and b"internal error (RuntimeError: a bug in a chart)" in page
        assert b"must be at least 1" not in page
        builder.request([spec])
        wait_for(lambda: state.snapshot().version == 4 and not state.snapshot().busy)
        assert built == [spec] and b"serve-error" not in ask(port, "/day37/")[2]
    assert good.read_text() == "<html><body><p>last good build</p></body></html>"


def test_drafts_are_served_before_the_images_and_every_draft_comes_first(tmp_path: Path) -> None:
    days = [tmp_path / "day04.yaml", tmp_path / "day37.yaml"]
    gate, steps = threading.Event(), []

    def drafts(spec: Path, out: Path) -> dict[str, bytes]:
        steps.append(("drafts", spec.name))
        return {f"{spec.stem}/linkedin.md": f"draft of {spec.stem}\n".encode()}

    def whole(spec: Path, out: Path) -> None:
        steps.append(("images", spec.name))
        assert gate.wait(3)
        (out / spec.stem).mkdir(parents=True, exist_ok=True)
        (out / spec.stem / "linkedin.md").write_text(f"built {spec.stem}\n")

    state = State()
    out = tmp_path / "out"
    with building(Builder(out, state, drafts=drafts, build=whole)) as builder, serving(out, state) as server:
        port = server.server_address[1]
        builder.request(days)
        wait_for(lambda: ("images", "day04.yaml") in steps)
        assert steps == [("drafts", "day04.yaml"), ("drafts", "day37.yaml"), ("images", "day04.yaml")]
        assert ask(port, "/day37/linkedin.md")[2] == b"draft of day37\n"  # from memory: out/ untouched
        assert not (out / "day37").exists()
        assert ask(port, "/__version")[2] == b"2\nrebuilding day04.yaml: images\xe2\x80\xa6"
        gate.set()
        wait_for(lambda: not state.snapshot().busy)
        assert ask(port, "/day37/linkedin.md")[2] == b"built day37\n"
        assert ask(port, "/__version")[2] == b"4"


def test_the_watcher_survives_a_failing_rebuild(tmp_path: Path) -> None:
    days = tmp_path / "days"
    days.mkdir()
    spec = days / "day37.yaml"
    spec.write_text("day: 37\n")
    seen: list[str] = []

    def drafts(spec: Path, out: Path) -> dict[str, bytes]:
        seen.append(spec.read_text())  # one save may come as two events: the text decides
        if seen[-1].endswith("# first edit\n"):
            raise RuntimeError("the first rebuild breaks")
        return {}

    state = State()
    builder = Builder(tmp_path / "out", state, drafts=drafts, build=lambda spec, out: None)
    stop, ready = threading.Event(), threading.Event()
    watcher = threading.Thread(
        target=serve.watch,
        args=([days], [spec], tmp_path / "out", tmp_path / "templates", builder, stop, ready),
        kwargs={"state": state},
        daemon=True,
    )
    with building(builder):
        watcher.start()
        try:
            assert ready.wait(5)
            spec.write_text("day: 37\n# first edit\n")
            wait_for(lambda: state.snapshot().errors != [], within=5)
            assert "the first rebuild breaks" in state.snapshot().errors[0]
            spec.write_text("day: 37\n# second edit\n")
            wait_for(lambda: seen[-1].endswith("# second edit\n") and not state.snapshot().busy, within=5)
            assert watcher.is_alive() and state.snapshot().errors == []
        finally:
            stop.set()
            watcher.join(timeout=3)
    assert not watcher.is_alive()


def test_serve_answers_before_any_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """run() itself, in this process: the first page is served while the builder has not even
    started, then the day's drafts and its whole build arrive; Ctrl-C ends it with 0."""
    (tmp_path / "days").mkdir()
    spec = tmp_path / "days" / "day37.yaml"
    spec.write_text(unlinked(lean_spec((ROOT / "days" / "day37.yaml").read_text())))
    shutil.copy(ROOT / "days" / "day37.workload.csv", tmp_path / "days")
    out = tmp_path / "out"
    out.mkdir()
    (out / "index.html").write_text("<html><body><p>yesterday's build</p></body></html>")
    gate, servers = threading.Event(), []

    class Gated(Builder):
        def run(self, start_after: threading.Event | None = None) -> None:
            assert gate.wait(10)
            super().run(start_after)

    class Recorded(PreviewServer):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            servers.append(self)

    monkeypatch.setattr(serve, "Builder", Gated)
    monkeypatch.setattr(serve, "PreviewServer", Recorded)
    answers: dict[str, Any] = {}

    def browse() -> None:
        try:
            wait_for(lambda: bool(servers))
            port = servers[0].server_address[1]
            answers["first"] = ask(port, "/")
            answers["version at first"] = ask(port, "/__version")[2]
            gate.set()
            wait_for(lambda: not ask(port, "/__version")[2].startswith(b"0"), within=20)
            answers["drafts"] = ask(port, "/day37/linkedin.md")[2]
            wait_for(
                lambda: (out / "day37" / "linkedin.md").is_file() and b"\n" not in ask(port, "/__version")[2],
                within=20,
            )
        finally:
            gate.set()
            _thread.interrupt_main()  # Ctrl-C

    sigterm = signal.getsignal(signal.SIGTERM)
    helper = threading.Thread(target=browse, daemon=True)
    helper.start()
    try:
        code = serve.run(argparse.Namespace(specs=[spec], out=out, port=0))
    finally:
        signal.signal(signal.SIGTERM, sigterm)
        helper.join(timeout=5)
    assert code == 0
    status, _, page = answers["first"]
    assert status == 200 and b"yesterday's build" in page
    assert answers["version at first"] == b"0\nrebuilding\xe2\x80\xa6"  # nothing built yet
    assert answers["drafts"].startswith(b"Day 37 of 60 days of system design.")
    assert (out / "day37" / "linkedin.md").read_bytes().startswith(b"Day 37 of 60 days of system design.")


def test_the_drafts_step_writes_nothing_and_leaves_an_edited_draft_as_the_person_left_it(
    tmp_path: Path,
) -> None:
    from engine.outdir.manifest import read_manifest
    from engine.pipeline import build

    (tmp_path / "days").mkdir()
    spec = tmp_path / "days" / "day37.yaml"
    spec.write_text(unlinked(lean_spec((ROOT / "days" / "day37.yaml").read_text())))
    shutil.copy(ROOT / "days" / "day37.workload.csv", tmp_path / "days")
    out = tmp_path / "out"

    fresh = render_drafts(spec, out)  # never built: every draft, and the page rendered with them
    assert not out.exists()
    assert set(fresh) == {"day37/linkedin.md", "day37/x-thread.md", "day37/index.html"}
    build(spec, out)
    for name in ("linkedin.md", "x-thread.md"):  # the same text the build writes
        assert fresh[f"day37/{name}"] == (out / "day37" / name).read_bytes()

    edited = out / "day37" / "x-thread.md"
    assert "x-thread.md" in read_manifest(out / "day37")
    edited.write_text("My own thread, Day 37.\n")
    last = json.loads((out / "day37" / "results.json").read_text())  # as if it had drawn a chart
    chart = {
        "name": "scoreboard",
        "file": "scoreboard.png",
        "platform": "linkedin",
        "alt_text": "The scores.",
    }
    last["charts"] = [{**chart, "width": 8, "height": 8}]
    (out / "day37" / "results.json").write_text(json.dumps(last))
    (out / "day37" / "scoreboard.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    before = {p: p.read_bytes() for p in (out / "day37").iterdir() if p.is_file()}
    again = render_drafts(spec, out)
    assert set(again) == {"day37/linkedin.md", "day37/index.html"}  # their edit is not overlaid
    assert b"My own thread, Day 37." in again["day37/index.html"]
    assert b"The scores." in again["day37/index.html"]  # the last build's image, as it recorded it
    assert {p: p.read_bytes() for p in (out / "day37").iterdir() if p.is_file()} == before
    # A draft that is a link out of out/ is refused in one line, as the build refuses it, and
    # what it points at is never put on the page.
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-KEY\n")
    edited.unlink()
    edited.symlink_to(secret)
    with pytest.raises(UserError, match="x-thread.md.*link"):
        render_drafts(spec, out)


def test_the_front_page_before_any_build_links_the_days_with_fresh_drafts(tmp_path: Path) -> None:
    state = State()
    state.drafted(
        Path("days/day37.yaml"), {"day37/linkedin.md": b"draft\n", "day37/index.html": b"<body>p</body>"}
    )
    with serving(tmp_path, state) as server:
        status, _, page = ask(server.server_address[1], "/")
        assert status == 200 and b"Nothing built yet" in page and b'<a href="day37/">' in page
        assert ask(server.server_address[1], "/day37/")[2].endswith(b"p</body>")
        assert ask(server.server_address[1], "/day05/")[0] == 404


def test_ctrl_c_and_sigterm_are_counted_not_raised_and_the_handlers_are_put_back() -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with serve.Stops() as stops:
        os.kill(os.getpid(), signal.SIGTERM)  # with Python's default, this process would end here
        stops.wait(1)
        os.kill(os.getpid(), signal.SIGINT)  # and this would raise KeyboardInterrupt
        stops.wait(2)
        assert stops.received == [signal.SIGTERM, signal.SIGINT]
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
