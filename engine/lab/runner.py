"""Run a lab once: a subprocess with a timeout, its output kept as the transcript, its figures
checked against the spec. The only module here that touches processes and the clock.

Contained, because a lab is code someone else may have written:
- it runs in a session of its own; at its exit or timeout the whole group is stopped, and any
  descendant that left the session is found and killed too (engine.lab.processes), and named;
- its output streams to a file on disk capped at MAX_TRANSCRIPT_BYTES (engine/limits.py): the
  head up to the cap, then a marker and the last TRANSCRIPT_TAIL_BYTES, so a lab printing
  gigabytes costs neither memory nor disk and its closing summary still parses;
- its figures file is read as a regular file only, never through a link, within a size cap
  (limits.read_bytes_limited): a FIFO or a link to /dev/zero in its place cannot hang the
  engine or fill its memory.
"""

from __future__ import annotations

import codecs
import os
import secrets
import selectors
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from engine.errors import UserError
from engine.lab import processes
from engine.lab.store import MAX_TRANSCRIPT_CHARS
from engine.limits import (
    MAX_FIGURES_BYTES,
    MAX_TRANSCRIPT_BYTES,
    TRANSCRIPT_TAIL_BYTES,
    load_json,
    present,
    read_bytes_limited,
)

KIT_DIR = Path(__file__).resolve().parent / "kit"
FIGURES_ENV = "LABKIT_FIGURES"
LEFTOVER_GRACE_S = 2.0  # output still arriving after the lab exited: its children, briefly
SAMPLE_S = 0.25  # how often the process table is read for the lab's descendants


@dataclass(frozen=True)
class LabRun:
    """What one run left behind, before any judgement of it."""

    text: str  # stdout and stderr, interleaved as the lab wrote them (capped: see the module)
    wall_seconds: float
    exit_status: int | None  # None when it was stopped at the timeout
    recorded: Any  # the parsed figures file, or None when the lab wrote none
    printed_bytes: int = 0  # everything the lab printed, kept or not
    cut_bytes: int = 0  # printed but not kept (between the head and the tail)
    escaped: list[str] = field(default_factory=list)  # left the session, found and killed
    survivors: list[str] = field(default_factory=list)  # still running: could not be stopped


def command_for(script: Path, args: list[str]) -> list[str]:
    """A Python lab runs under this interpreter; anything else must be executable itself."""
    if script.suffix == ".py":
        return [sys.executable, script.name, *args]
    if not os.access(script, os.X_OK):
        raise ValueError(f"{script.name} is not executable (chmod +x, or write it in Python)")
    return [f"./{script.name}", *args]


def display_command(script: Path, args: list[str]) -> str:
    """The command as a person types it in the lab's folder: 'python lab.py --quick'."""
    first = ["python", script.name] if script.suffix == ".py" else [f"./{script.name}"]
    return shlex.join([*first, *args])


def run_lab(
    command: list[str],
    cwd: Path,
    timeout_s: float,
    *,
    echo: TextIO | None = None,
    status: TextIO | None = None,
) -> LabRun:
    """Run ``command`` in ``cwd``; echo its output live to ``echo`` and an elapsed-time line to
    ``status``; stop everything it started at its exit, or at ``timeout_s``."""
    with tempfile.TemporaryDirectory(prefix="lab-", ignore_cleanup_errors=True) as tmp:
        figures_path = Path(tmp) / "figures.json"
        token = secrets.token_hex(16)
        env = {**os.environ, FIGURES_ENV: str(figures_path), "PYTHONUNBUFFERED": "1"}
        env[processes.MARKER_ENV] = token
        env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(KIT_DIR)) if p)
        start = time.monotonic()
        # The engine's own file in its own temporary folder, written by the lab and capped as it is.
        with open(Path(tmp) / "transcript.txt", "w+b") as log:
            watch = processes.Watch(token)  # before the lab starts: an orphan of it comes here
            try:
                proc = subprocess.Popen(
                    command,
                    cwd=cwd,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            except BaseException:
                watch.end()
                raise
            watch.started(proc.pid)
            transcript = _Transcript(log)
            try:
                timed_out = _pump(proc, watch, start, timeout_s, transcript, echo, status)
                wall = time.monotonic() - start  # the lab's time, not the clean-up's
            finally:
                watch.stop_group()
                escaped, survivors = watch.stop_escaped()
                proc.wait()
                if proc.stdout is not None:
                    proc.stdout.close()
            text = transcript.text()
        recorded = _read_figures(figures_path)
    return LabRun(
        text,
        wall,
        None if timed_out else proc.returncode,
        recorded,
        printed_bytes=transcript.printed,
        cut_bytes=transcript.cut,
        escaped=escaped,
        survivors=survivors,
    )


class _Transcript:
    """The lab's output on disk: the head up to the cap, and a bounded tail kept in memory."""

    def __init__(self, log: BinaryIO, cap: int = MAX_TRANSCRIPT_BYTES, tail: int = TRANSCRIPT_TAIL_BYTES):
        self.log = log
        self.head_room = max(0, cap - tail)
        self.tail_size = tail
        self.tail = bytearray()
        self.printed = 0
        self.cut = 0

    def add(self, data: bytes) -> bool:
        """Keep ``data``; False once past the head (the rest is kept only as the tail)."""
        self.printed += len(data)
        room = self.head_room - self.log.tell()
        if room > 0:
            self.log.write(data[:room])
            data = data[room:]
        if data:
            self.tail += data
            if len(self.tail) > self.tail_size:
                drop = len(self.tail) - self.tail_size
                del self.tail[:drop]
                self.cut += drop
            return False
        return True

    def text(self) -> str:
        if self.cut:
            marker = f"\n[... {self.cut:,} bytes of output not kept ...]\n"  # ASCII: the text stays 1 byte a character
            self.log.write(marker.encode())
        self.log.write(self.tail)
        self.log.flush()
        size = self.log.tell()
        self.log.seek(0)
        return self.log.read(size).decode("utf-8", "replace")  # one buffer of the known size


def _pump(
    proc: subprocess.Popen,
    watch: processes.Watch,
    start: float,
    timeout_s: float,
    transcript: _Transcript,
    echo: TextIO | None,
    status: TextIO | None,
) -> bool:
    """Read the lab's output until it exits (and its pipe closes, or a grace passes); True when
    it ran past its timeout."""
    assert proc.stdout is not None
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    ticker = _Ticker(status, timeout_s)
    showing = echo is not None
    sampled = 0.0
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        open_pipe = True
        exited_at: float | None = None
        while True:
            elapsed = time.monotonic() - start
            if elapsed - sampled >= SAMPLE_S:
                watch.sample()
                sampled = elapsed
            if exited_at is None and proc.poll() is not None:
                exited_at = elapsed
            if exited_at is not None and elapsed - exited_at > LEFTOVER_GRACE_S:
                break  # the lab is done; a child it left behind holds the pipe open
            if elapsed > timeout_s:
                ticker.clear()
                return True
            if not open_pipe:
                if proc.poll() is not None:
                    break
                time.sleep(0.02)
                continue
            if sel.select(timeout=min(0.25, max(0.01, timeout_s - elapsed))):
                data = os.read(proc.stdout.fileno(), 65536)
                if not data:
                    open_pipe = False
                    continue
                kept = transcript.add(data)
                if showing and echo is not None:
                    piece = decoder.decode(data)
                    ticker.clear()
                    if not kept:
                        piece += f"\n[output past {MAX_TRANSCRIPT_BYTES // 2**20} MiB is not shown]\n"
                        showing = False
                    echo.write(piece)
                    echo.flush()
                    ticker.at_line_start = piece.endswith("\n")
            ticker.draw(time.monotonic() - start)
    ticker.clear()
    return False


class _Ticker:
    """'  lab running: 3.2 s of 60 s' on a terminal, rewritten in place; every 10 s otherwise."""

    def __init__(self, stream: TextIO | None, timeout_s: float):
        self.stream = stream
        self.tty = bool(stream is not None and stream.isatty())
        self.timeout_s = timeout_s
        self.shown = False
        self.at_line_start = True
        self.last_plain = 0.0

    def draw(self, elapsed: float) -> None:
        if self.stream is None or not self.at_line_start:
            return
        line = f"  lab running: {elapsed:.1f} s of {self.timeout_s:g} s"
        if self.tty:
            self.stream.write("\r\033[K" + line)
            self.shown = True
        elif elapsed - self.last_plain >= 10:
            self.stream.write(line + "\n")
            self.last_plain = elapsed
        else:
            return
        self.stream.flush()

    def clear(self) -> None:
        if self.stream is not None and self.tty and self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.shown = False


def _read_figures(path: Path) -> Any:
    """The figures file the lab wrote: a regular file, not through a link, within its cap; a
    FIFO or a device in its place is an error the judge reports, read without blocking."""
    if not present(path):
        return None
    try:
        data = read_bytes_limited(path, MAX_FIGURES_BYTES, "figures", follow_symlinks=False)
        return load_json(data, path, "figures")
    except UserError as err:
        return {"error": f"{err.field}: {err.message}" if err.field else err.message}


def clip_transcript(text: str, limit: int = MAX_TRANSCRIPT_CHARS) -> tuple[str, bool]:
    """The transcript as stored: whole when it fits, else its head and tail around a marker."""
    if len(text) <= limit:
        return text, False
    keep = (limit - 100) // 2
    cut = len(text) - 2 * keep
    return f"{text[:keep]}\n[… {cut:,} characters cut …]\n{text[-keep:]}", True
