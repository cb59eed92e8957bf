"""``python -m engine serve [days/dayNN.yaml …]``: a live preview of out/, as MkDocs' serve.

Builds the days once, serves out/ on 127.0.0.1 only (the drafts are not public yet), and
rebuilds a day when its spec, its templates, its workload or its measurement files change;
a change to shared templates rebuilds every day. Served pages carry a small polling script
that reloads them after a rebuild; the files in out/ never contain it. A failed rebuild is one
line in the terminal and a banner on the page, and the last good build stays in place.
Ctrl-C (or SIGTERM) stops the server and the watcher and exits 0.
"""

from __future__ import annotations

import argparse
import functools
import html
import re
import signal
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"  # never another interface: drafts and unpublished numbers stay on this machine
VERSION_PATH = "/__version"
_DAY = re.compile(r"day(\d+)")
RELOAD = """<script>
(() => {{ let seen = "{version}";
  const poll = () => fetch("{path}").then((r) => r.text()).then((v) => {{ if (v !== seen) location.reload(); }})
    .catch(() => {{}}).finally(() => setTimeout(poll, 500));
  setTimeout(poll, 500); }})();
</script>"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "specs", nargs="*", type=Path, help="days/dayNN.yaml files (default: every days/dayNN.yaml)"
    )
    parser.add_argument("--out", type=Path, default=Path("out"), help="output root (out/)")
    from engine.validation import whole_flag

    parser.add_argument(
        "--port",
        type=whole_flag("--port", 0, 65535),
        default=8000,
        help="port on 127.0.0.1 (0: any free one)",
    )


class State:
    """What the server shows: a build counter the pages poll, and the last build's errors."""

    def __init__(self) -> None:
        self.version = 0
        self.errors: dict[Path, str] = {}
        self.lock = threading.Lock()

    def built(self, spec: Path, error: str | None) -> None:
        with self.lock:
            if error is None:
                self.errors.pop(spec, None)
            else:
                self.errors[spec] = error
            self.version += 1


def rebuild(spec: Path, out: Path, state: State) -> None:
    """One day, as `build` does it; a mistake is reported and the server goes on."""
    from engine.errors import UserError
    from engine.pipeline import ChecksFailed, build

    try:
        report = build(spec, out)
    except UserError as err:
        error = err.line()
    except ChecksFailed as failed:
        error = f"{spec}: " + "; ".join(failed.violations)
    else:
        print(f"rebuilt Day {report.day} → {report.folder}/", flush=True)
        if report.commit is not None:
            from engine.outdir import report_lines

            for line in report_lines(report.commit):
                print(f"  {line}", flush=True)
        state.built(spec, None)
        return
    print(f"build failed, the last good build stays: {error}", file=sys.stderr, flush=True)
    state.built(spec, error)


def affected(
    changed: list[Path], specs: list[Path], templates: Path, shared: tuple[Path, ...] = ()
) -> list[Path]:
    """The specs to rebuild for these changed files.

    A template in templates/dayNN/ → that day; any other template (shared macros, the review
    page) → every day. Any other file → the day its name or folder names (day37.yaml,
    day37.workload.csv, day37.measured/…), and every spec that names the file (Day 37 cites
    day04.yaml, so a change there rebuilds both). A file under a shared folder (the catalog of
    models and GPUs) → every day.
    """
    days = {spec: _DAY.match(spec.name) for spec in specs}
    if not all(days.values()):
        return list(specs)  # a spec not named dayNN: cannot tell, rebuild everything
    number = {spec: int(m.group(1)) for spec, m in days.items() if m}
    chosen: list[Path] = []
    for path in changed:
        if any(root in path.parents for root in shared):
            return list(specs)
        try:
            top = path.relative_to(templates).parts[0]
        except (ValueError, IndexError):
            named = {int(m.group(1)) for part in path.parts if (m := _DAY.match(part))}
            hits = [s for s in specs if number[s] in named or path.name in _text(s)]
        else:
            match = _DAY.fullmatch(top)
            if match is None:
                return list(specs)  # a shared template: every day may use it
            hits = [s for s in specs if number[s] == int(match.group(1))]
        chosen += [s for s in hits if s not in chosen]
    return chosen


def _text(spec: Path) -> str:
    try:
        return spec.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def handler(out: Path, state: State) -> type[SimpleHTTPRequestHandler]:
    class Handler(SimpleHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == VERSION_PATH:
                self._send(str(state.version).encode(), "text/plain")
                return
            target = Path(self.translate_path(self.path))
            if target.is_dir():
                target = target / "index.html"
            if target.suffix == ".html" and target.is_file():
                self._send(self._with_reload(target.read_text(encoding="utf-8")), "text/html; charset=utf-8")
                return
            super().do_GET()

        def _with_reload(self, page: str) -> bytes:
            with state.lock:
                script = RELOAD.format(version=state.version, path=VERSION_PATH)
                errors = list(state.errors.values())
            banner = "".join(
                f'<p class="serve-error" style="background:#b3261e;color:#fff;margin:0;'
                f'padding:8px 24px">{html.escape(e)}</p>'
                for e in errors
            )
            page = page.replace("<body>", "<body>" + banner, 1)
            return (page.replace("</body>", script + "</body>", 1)).encode("utf-8")

        def _send(self, body: bytes, kind: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass  # one line per page poll would bury the rebuild messages

    return functools.partial(Handler, directory=str(out))  # type: ignore[return-value]


def watch(
    paths: list[Path],
    specs: list[Path],
    out: Path,
    templates: Path,
    state: State,
    stop: threading.Event,
    ready: threading.Event,
    shared: tuple[Path, ...] = (),
) -> None:
    import watchfiles

    # yield_on_timeout: an empty batch every rust_timeout ms, the first of which says "watching".
    for changes in watchfiles.watch(
        *paths, stop_event=stop, debounce=300, raise_interrupt=False, yield_on_timeout=True, rust_timeout=200
    ):
        ready.set()
        if not changes:
            continue
        changed = [Path(p).resolve() for _, p in changes]
        out_root = out.resolve()
        changed = [p for p in changed if out_root not in p.parents]
        for spec in affected(changed, specs, templates, shared):
            rebuild(spec, out, state)


def _stop_on_sigterm() -> None:
    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


def run(args: argparse.Namespace) -> int:
    from engine.errors import UserError
    from engine.pipeline import TEMPLATES

    specs = [Path(s) for s in args.specs] or sorted(Path("days").glob("day[0-9]*.yaml"))
    if not specs:
        raise UserError("no day specs to serve: name days/dayNN.yaml files", file="days/")
    for spec in specs:
        if not spec.is_file():
            raise UserError("no such spec file", file=spec)
    out: Path = args.out
    state = State()
    for spec in specs:
        rebuild(spec, out, state)
    out.mkdir(parents=True, exist_ok=True)
    try:
        server = ThreadingHTTPServer((HOST, args.port), handler(out, state))
    except OSError as exc:
        raise UserError(f"cannot listen on {HOST}:{args.port}: {exc.strerror}", field="--port") from exc
    templates = TEMPLATES.resolve()
    catalog = Path(__file__).resolve().parent.parent / "catalog"  # models and GPUs: every day
    shared = (catalog,) if catalog.is_dir() else ()
    watched = sorted({s.resolve().parent for s in specs} | {templates, *shared})
    stop, ready = threading.Event(), threading.Event()
    watcher = threading.Thread(
        target=watch,
        name="watch",
        daemon=True,
        args=(watched, list(specs), out, templates, state, stop, ready, shared),
    )
    watcher.start()
    ready.wait(timeout=10)  # a change saved right after "serving" is not missed
    _stop_on_sigterm()
    port = server.server_address[1]
    print(
        f"serving {out}/ at http://{HOST}:{port}/ ; watching {', '.join(map(str, watched))} (Ctrl-C stops)",
        flush=True,
    )
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        server.server_close()
        watcher.join(timeout=5)
    print("stopped", flush=True)
    return 0
