"""`python -m engine serve`: a template change is rebuilt and the page learns of it; Ctrl-C stops.

The server runs in a child process on a free loopback port, in a scratch copy of the project
(engine, templates, days), so changing a template touches nothing real.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from engine.commands.serve import affected

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
        page = get(url + "day37/index.html")
        assert "/__version" in page and "<script>" in page  # the reload script, served only
        assert "<script>" not in (project / "out" / "day37" / "index.html").read_text()
        version = get(url + "__version")

        template = project / "templates" / "day37" / "linkedin.md.j2"
        text = template.read_text()
        assert "I finally read" in text
        template.write_text(text.replace("I finally read", "Previewed live: I finally read"))
        deadline = time.monotonic() + 30
        while get(url + "__version") == version:
            assert time.monotonic() < deadline, "no rebuild after the template changed"
            time.sleep(0.1)
        assert "Previewed live: I finally read" in get(url + "day37/linkedin.md")
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
