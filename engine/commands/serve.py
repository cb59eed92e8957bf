"""``python -m engine serve [days/dayNN.yaml …]``: a live preview of out/, as MkDocs' serve.

It listens at once and serves the last build in out/ (engine.preview.server: loopback only);
the days are built in the background, each day's drafts first and its images after
(engine.preview.builder), and rebuilt when their spec, templates, workload or measurement files
change; a change to shared templates rebuilds every day. An open page shows what is being
rebuilt and reloads when the drafts are there, and again when the images are. A failed rebuild
is one line in the terminal and a banner on the page, and the last good build stays in place.
Ctrl-C (or SIGTERM) stops the server, the watcher and the builder, and exits 0.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import watchfiles

from engine.errors import UserError
from engine.limits import MAX_SPEC_BYTES, read_text_limited
from engine.pipeline import TEMPLATES
from engine.preview.builder import Builder
from engine.preview.server import HOST, VERSION_PATH, PreviewServer, handler
from engine.preview.state import State
from engine.validation import whole_flag

__all__ = ["HOST", "VERSION_PATH", "State", "add_arguments", "affected", "handler", "run", "watch"]

_DAY = re.compile(r"day(\d+)")
# Ctrl-C lets the step under way finish (out/ would survive a cut, as after a crash, but the
# next build would have to tidy up). A day's whole build takes seconds; a second Ctrl-C, or
# this long, and the process leaves without it.
BUILD_STOP_WAIT_S = 60.0
WATCHER = Path("(file watcher)")  # where the watcher's own errors are shown, as a day's are


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "specs", nargs="*", type=Path, help="days/dayNN.yaml files (default: every days/dayNN.yaml)"
    )
    parser.add_argument("--out", type=Path, default=Path("out"), help="output root (out/)")
    parser.add_argument(
        "--port",
        type=whole_flag("--port", 0, 65535),
        default=8000,
        help="port on 127.0.0.1 (0: any free one)",
    )


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
    """A spec's text, to see which templates it names; "" for one that cannot be read (its
    build says why)."""
    try:
        return read_text_limited(spec, MAX_SPEC_BYTES, "spec")
    except UserError:
        return ""


def watch(
    paths: list[Path],
    specs: list[Path],
    out: Path,
    templates: Path,
    builder: Builder,
    stop: threading.Event,
    ready: threading.Event,
    shared: tuple[Path, ...] = (),
    state: State | None = None,
) -> None:
    """Hand each batch of changed files' days to the builder until ``stop``. Builds run on the
    builder's thread, so no error in one reaches here; an error of the watcher's own (a watched
    folder removed) is shown and it watches again."""
    out_root = out.resolve()
    while not stop.is_set():
        try:
            # yield_on_timeout: an empty batch every rust_timeout ms, the first saying "watching".
            for changes in watchfiles.watch(
                *paths,
                stop_event=stop,
                debounce=300,
                raise_interrupt=False,
                yield_on_timeout=True,
                rust_timeout=200,
            ):
                ready.set()
                if not changes:
                    continue
                changed = [Path(p).resolve() for _, p in changes]
                changed = [p for p in changed if out_root not in p.parents]
                builder.request(affected(changed, specs, templates, shared))
                if state is not None and WATCHER in state.errors:
                    state.built(WATCHER, None)
        except Exception as exc:  # the watcher's own trouble: say so, and watch again
            line = f"the file watcher stopped ({type(exc).__name__}: {exc}); watching again"
            print(line, file=sys.stderr, flush=True)
            if state is not None and state.errors.get(WATCHER) != line:
                state.built(WATCHER, line)  # a new version only when there is something new to read
            stop.wait(1.0)


class Stops:
    """Ctrl-C and SIGTERM, counted by a signal handler that only appends to a list.

    A handler that raises KeyboardInterrupt (Python's default for Ctrl-C) raises it wherever the
    main thread is; inside a finalizer the garbage collector runs there, Python prints and drops
    it. Once in twelve measured runs a server went on serving after its SIGTERM. A count the
    main thread polls cannot be lost that way.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.received: list[int] = []
        self._before: dict[int, Any] = {}

    def __enter__(self) -> Stops:
        for signum in self.SIGNALS:
            self._before[signum] = signal.signal(signum, self._count)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, before in self._before.items():
            signal.signal(signum, before)

    def _count(self, signum: int, frame: Any) -> None:
        self.received.append(signum)

    def wait(self, count: int, alive: Callable[[], bool] = lambda: True) -> None:
        """Until ``count`` stops have come, or ``alive`` turns false."""
        while len(self.received) < count and alive():
            time.sleep(0.1)  # a signal cuts the sleep short; the handler has counted it


def run(args: argparse.Namespace) -> int:
    specs = [Path(s) for s in args.specs] or sorted(Path("days").glob("day[0-9]*.yaml"))
    if not specs:
        raise UserError("no day specs to serve: name days/dayNN.yaml files", file="days/")
    for spec in specs:
        if not spec.is_file():
            raise UserError("no such spec file", file=spec)
    out: Path = args.out
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot make the output folder: {exc.strerror}", file=out, field="--out") from exc
    state = State()
    try:
        server = PreviewServer((HOST, args.port), handler(out, state))  # listening from here on
    except OSError as exc:
        raise UserError(f"cannot listen on {HOST}:{args.port}: {exc.strerror}", field="--port") from exc
    port = server.server_address[1]
    print(
        f"serving {out}/ at http://{HOST}:{port}/ ; building {len(specs)} day(s) in the background (Ctrl-C stops)",
        flush=True,
    )
    builder = Builder(out, state)
    builder.request(specs)
    stop, ready = threading.Event(), threading.Event()
    building = threading.Thread(target=builder.run, name="build", daemon=True, args=(ready,))
    watcher = threading.Thread(
        target=_watch_all, name="watch", daemon=True, args=(specs, out, builder, state, stop, ready)
    )
    serving = threading.Thread(target=server.serve_forever, name="serve", kwargs={"poll_interval": 0.2})
    with Stops() as stops:
        building.start()
        watcher.start()
        serving.start()
        try:
            stops.wait(1, alive=serving.is_alive)
        finally:
            server.shutdown()
            serving.join()
            server.server_close()
            stop.set()
            builder.stop()
            watcher.join(timeout=5)
            _finish(building, stops)
    print("stopped", flush=True)
    return 0


def _finish(building: threading.Thread, stops: Stops) -> None:
    """Let the build under way land; a second Ctrl-C leaves it unfinished."""
    if not building.is_alive():
        return
    print("finishing the build under way (Ctrl-C again leaves it for the next build to tidy up)", flush=True)
    deadline = time.monotonic() + BUILD_STOP_WAIT_S
    stops.wait(2, alive=lambda: building.is_alive() and time.monotonic() < deadline)
    if building.is_alive():
        print("left the build unfinished; the next build of that day tidies up", flush=True)


def _watch_all(
    specs: list[Path],
    out: Path,
    builder: Builder,
    state: State,
    stop: threading.Event,
    ready: threading.Event,
) -> None:
    """The watcher over the specs' folders, the templates and the catalog."""
    templates = TEMPLATES.resolve()
    catalog = Path(__file__).resolve().parent.parent / "catalog"  # models and GPUs: every day
    shared = (catalog,) if catalog.is_dir() else ()
    watched = sorted({s.resolve().parent for s in specs} | {templates, *shared})
    print(f"watching {', '.join(map(str, watched))}", flush=True)
    watch(watched, list(specs), out, templates, builder, stop, ready, shared, state)
