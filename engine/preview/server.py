"""The preview's HTTP server: out/ over loopback, to this machine's browser and nothing else.

- It binds to 127.0.0.1 only: the drafts and their numbers are not public yet.
- It answers only requests whose Host header is a loopback name (any port). A page on another
  site can point its own domain name at 127.0.0.1 (DNS rebinding) and then read this server as
  "same origin"; its requests still carry that domain as Host, so they get 403.
- Each connection has a timeout and the number served at once is capped (the constants below),
  so an idle or stuck client cannot hold a thread for ever, nor can many of them pile threads up:
  a connection beyond the cap waits in the listen queue until one ends.
- Only regular files under out/ are read. A FIFO would block the reading thread until something
  writes to it, a device never ends; both are refused (403) without being read, as is a link
  that leads out of out/.
- Files are served as the bytes they are: a page that is not UTF-8 is served, not a traceback.

Served HTML pages carry a status banner and a small script that polls VERSION_PATH, which
answers the content version and, on a second line while a build runs, what is being rebuilt:
the script shows that line and reloads the page when the version changes. The files in out/
never contain either. A page or day folder not in out/ yet is a page that reloads itself.
"""

from __future__ import annotations

import html
import mimetypes
import os
import re
import sys
import threading
import urllib.parse
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from engine.errors import UserError
from engine.limits import MAX_DAY_FILE_BYTES, MAX_PAGE_RENDER_CHARS, open_limited
from engine.preview.state import State

HOST = "127.0.0.1"  # never another interface: drafts and unpublished numbers stay on this machine
VERSION_PATH = "/__version"

# A request over loopback arrives in well under a millisecond and every file here is read from
# local disk; a connection silent for this long is a browser's spare pre-opened socket or a stuck
# client, and closing it frees its slot. Long enough for a debugger paused in the page's script.
CONNECTION_TIMEOUT_S = 10.0

# One person's browser opens at most 6 connections to a host (HTTP/1.1 browsers' per-host limit),
# and the page's poll one more; two or three tabs fit. Each connection is a thread and a file
# descriptor, so beyond this they wait in the listen queue instead of each starting a thread.
MAX_CONNECTIONS = 24
# A page or text file is read whole to be decorated: at most what a review page may render.
MAX_SERVED_PAGE_BYTES = MAX_PAGE_RENDER_CHARS

_LOOPBACK_HOST = re.compile(r"(?:127\.0\.0\.1|localhost|\[::1\])(?::[0-9]{1,5})?", re.IGNORECASE)

# Text a person reads in the browser; served as UTF-8 when it is UTF-8, else with no charset.
_TEXT = {".md": "text/plain", ".txt": "text/plain", ".csv": "text/plain", ".yaml": "text/plain"}

RELOAD = """<div id="serve-busy" style="display:{display};background:#1a73e8;color:#fff;margin:0;\
padding:8px 24px">{busy}</div>
<script>
(() => {{ const seen = "{version}", banner = document.getElementById("serve-busy");
  const poll = () => fetch("{path}").then((r) => r.text()).then((t) => {{
      const [v, ...busy] = t.split("\\n");
      if (v !== seen) {{ location.reload(); return; }}
      banner.textContent = busy.join(" ");
      banner.style.display = busy.length ? "block" : "none"; }})
    .catch(() => {{}}).finally(() => setTimeout(poll, 500));
  setTimeout(poll, 500); }})();
</script>"""

NOTHING_YET = (
    "<!doctype html><html><head><title>{title}</title></head><body>"
    '<div style="font-family:sans-serif;margin:24px"><p>{title}</p>{links}</div></body></html>'
)


def loopback_host(values: list[str] | None) -> bool:
    """One Host header, naming 127.0.0.1, localhost or [::1], with or without a port."""
    if not values or len(values) != 1:
        return False
    return _LOOPBACK_HOST.fullmatch(values[0].strip()) is not None


class PreviewServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer with at most ``max_connections`` connections handled at once."""

    daemon_threads = True  # a stuck connection never holds the process open after Ctrl-C
    request_queue_size = 64  # connections the kernel holds while every slot is taken

    def __init__(self, address: tuple[str, int], handler: Any, *, max_connections: int = MAX_CONNECTIONS):
        self.slots = threading.BoundedSemaphore(max_connections)
        self.closing = threading.Event()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        # Wait here, in the accept loop, for a free slot: further connections queue in the
        # kernel. Waking every tenth of a second lets shutdown() stop the loop meanwhile.
        while not self.slots.acquire(timeout=0.1):
            if self.closing.is_set():
                self.shutdown_request(request)
                return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line, not a traceback; nothing for a client that went away mid-answer."""
        error = sys.exc_info()[1]
        if not isinstance(error, (ConnectionError, TimeoutError)):
            print(f"serve: a request failed: {type(error).__name__}: {error}", file=sys.stderr, flush=True)

    def shutdown(self) -> None:
        self.closing.set()
        super().shutdown()


def handler(
    out: Path, state: State, *, timeout: float = CONNECTION_TIMEOUT_S
) -> type[BaseHTTPRequestHandler]:
    """The request handler class serving ``out`` with ``state``'s banner and reload script."""
    root, idle = Path(out), timeout

    class Handler(BaseHTTPRequestHandler):
        server_version = "engine-serve"
        timeout = idle  # StreamRequestHandler sets it on each connection's socket

        def do_GET(self) -> None:
            self._answer(body=True)

        def do_HEAD(self) -> None:
            self._answer(body=False)

        def _answer(self, *, body: bool) -> None:
            if not loopback_host(self.headers.get_all("Host")):
                self._send(HTTPStatus.FORBIDDEN, b"forbidden: not a loopback Host\n", "text/plain", body)
                return
            parts = _parts(self.path)
            if parts is None:
                self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain", body)
                return
            relative = "/".join(parts)
            if "/" + relative == VERSION_PATH:
                now = state.snapshot()
                text = f"{now.version}\n{now.busy}" if now.busy else str(now.version)
                self._send(HTTPStatus.OK, text.encode("utf-8"), "text/plain; charset=utf-8", body)
                return
            folder = state.overlaid(_index_of(relative)) is not None or os.path.isdir(root / relative)
            if relative and folder and not urllib.parse.urlsplit(self.path).path.endswith("/"):
                self._redirect("/" + relative + "/")  # so the page's relative image links resolve
                return
            for name in (relative, _index_of(relative)):
                fresh = state.overlaid(name)
                if fresh is not None:
                    self._send_file(name, fresh, body)
                    return
            self._from_disk(relative, body)

        def _redirect(self, location: str) -> None:
            self.send_response(HTTPStatus.MOVED_PERMANENTLY)
            self.send_header("Location", urllib.parse.quote(location))
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _from_disk(self, relative: str, body: bool) -> None:
            target = root / relative if relative else root
            real_root = os.path.realpath(root)
            real = os.path.realpath(target)
            if os.path.isdir(real):
                target, real = target / "index.html", os.path.join(real, "index.html")
            if real != real_root and not real.startswith(real_root + os.sep):
                self._send(HTTPStatus.FORBIDDEN, b"forbidden: outside out/\n", "text/plain", body)
                return
            decorated = _kind(target.name)[1]  # a page or text: read whole, to decorate or label it
            try:  # a regular file only, within its limit; a FIFO is refused without waiting
                file = open_limited(
                    real, MAX_SERVED_PAGE_BYTES if decorated else MAX_DAY_FILE_BYTES, "served"
                )
            except UserError as err:
                if not os.path.lexists(real):
                    self._missing(relative, body)
                else:
                    self._send(
                        HTTPStatus.FORBIDDEN, f"forbidden: {err.message}\n".encode(), "text/plain", body
                    )
                return
            with file:
                info = os.fstat(file.fileno())
                if decorated:
                    self._send_file(target.name, file.read(info.st_size), body)
                    return
                self._head(HTTPStatus.OK, _kind(target.name)[0], info.st_size)
                left = info.st_size if body else 0
                while left > 0 and (chunk := file.read(min(left, 1 << 16))):  # no more than it said
                    self.wfile.write(chunk)
                    left -= len(chunk)

        def _missing(self, relative: str, body: bool) -> None:
            """Not in out/: a page that reloads itself, as the day may be being built now. For
            the front page, a 200 linking to the days whose fresh drafts are already served."""
            front = relative in ("", "index.html")
            days = sorted({name.split("/")[0] for name in state.overlaid_names()})
            links = "".join(f'<p><a href="{html.escape(d)}/">{html.escape(d)}</a> (drafts)</p>' for d in days)
            page = NOTHING_YET.format(
                title="Nothing built yet" if front else "Not found", links=links if front else ""
            )
            status = HTTPStatus.OK if front else HTTPStatus.NOT_FOUND
            self._send(status, self._decorated(page.encode("utf-8")), "text/html; charset=utf-8", body)

        def _send_file(self, name: str, data: bytes, body: bool) -> None:
            kind, text = _kind(name)
            if kind == "text/html":
                data = self._decorated(data)
            if text:
                kind += "; charset=utf-8" if _utf8(data) else ""
            self._send(HTTPStatus.OK, data, kind, body)

        def _decorated(self, page: bytes) -> bytes:
            """The page with the error banners and the status script; ASCII only, so it fits
            into a page of any ASCII-based encoding."""
            now = state.snapshot()
            banners = "".join(
                f'<p class="serve-error" style="background:#b3261e;color:#fff;margin:0;'
                f'padding:8px 24px">{html.escape(e)}</p>'
                for e in now.errors
            )
            script = RELOAD.format(
                display="block" if now.busy else "none",
                busy=html.escape(now.busy),
                version=now.version,
                path=VERSION_PATH,
            )
            top = (banners + script).encode("ascii", "xmlcharrefreplace")
            if b"<body>" in page:
                return page.replace(b"<body>", b"<body>" + top, 1)
            return top + page

        def _send(self, status: HTTPStatus, data: bytes, kind: str, body: bool) -> None:
            self._head(status, kind, len(data))
            if body:
                self.wfile.write(data)

        def _head(self, status: HTTPStatus, kind: str, length: int) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(length))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")  # bytes that are not UTF-8 stay text
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass  # one line per page poll would bury the rebuild messages

    return Handler


def _parts(url: str) -> list[str] | None:
    """The request path's segments below out/, or None for one that climbs out or holds NUL."""
    path = urllib.parse.unquote(urllib.parse.urlsplit(url).path, errors="replace")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if any(p == ".." or "\0" in p or "\\" in p for p in parts):
        return None
    return parts


def _index_of(relative: str) -> str:
    return f"{relative}/index.html" if relative else "index.html"


def _kind(name: str) -> tuple[str, bool]:
    """(Content-Type without charset, whether it is text)."""
    suffix = Path(name).suffix.lower()
    if suffix in _TEXT:
        return _TEXT[suffix], True
    kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
    return kind, kind.startswith("text/") or kind in ("application/json", "image/svg+xml")


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
