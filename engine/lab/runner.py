"""Run a lab once: a subprocess with a timeout, its output kept as the transcript, its figures
checked against the spec. The only module here that touches processes and the clock.

Why a process group: a lab may fork (an echo server for a round trip, a compiler); a timeout
must stop all of it, not only the script, or a stray server outlives the run.
"""

from __future__ import annotations

import codecs
import json
import os
import selectors
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from engine.lab.store import MAX_TRANSCRIPT_CHARS

KIT_DIR = Path(__file__).resolve().parent / "kit"
FIGURES_ENV = "LABKIT_FIGURES"
LEFTOVER_GRACE_S = 2.0  # output still arriving after the lab exited: its children, briefly


@dataclass(frozen=True)
class LabRun:
    """What one run left behind, before any judgement of it."""

    text: str  # stdout and stderr, interleaved as the lab wrote them
    wall_seconds: float
    exit_status: int | None  # None when it was stopped at the timeout
    recorded: Any  # the parsed figures file, or None when the lab wrote none


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
    ``status``; stop its whole process group at ``timeout_s``."""
    with tempfile.TemporaryDirectory(prefix="lab-") as tmp:
        figures_path = Path(tmp) / "figures.json"
        env = {**os.environ, FIGURES_ENV: str(figures_path), "PYTHONUNBUFFERED": "1"}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(KIT_DIR)) if p)
        start = time.monotonic()
        proc = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        text, timed_out = _pump(proc, start, timeout_s, echo, status)
        wall = time.monotonic() - start
        recorded = _read_figures(figures_path)
    return LabRun(text, wall, None if timed_out else proc.returncode, recorded)


def _pump(
    proc: subprocess.Popen, start: float, timeout_s: float, echo: TextIO | None, status: TextIO | None
) -> tuple[str, bool]:
    assert proc.stdout is not None
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    chunks: list[str] = []
    ticker = _Ticker(status, timeout_s)
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        open_pipe = True
        exited_at: float | None = None
        while True:
            elapsed = time.monotonic() - start
            if exited_at is None and proc.poll() is not None:
                exited_at = elapsed
            if exited_at is not None and elapsed - exited_at > LEFTOVER_GRACE_S:
                _stop(proc)  # the lab is done; a child it left behind holds the pipe open
                break
            if elapsed > timeout_s:
                _stop(proc)
                ticker.clear()
                return "".join(chunks) + decoder.decode(b"", final=True), True
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
                piece = decoder.decode(data)
                chunks.append(piece)
                ticker.clear()
                if echo is not None:
                    echo.write(piece)
                    echo.flush()
                ticker.at_line_start = piece.endswith("\n")
            ticker.draw(time.monotonic() - start)
    ticker.clear()
    proc.wait()
    return "".join(chunks) + decoder.decode(b"", final=True), False


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the lab's process group, SIGKILL a second later if anything is left."""
    for sig, grace in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


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
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        return {"error": str(err)}


def clip_transcript(text: str, limit: int = MAX_TRANSCRIPT_CHARS) -> tuple[str, bool]:
    """The transcript as stored: whole when it fits, else its head and tail around a marker."""
    if len(text) <= limit:
        return text, False
    keep = (limit - 100) // 2
    cut = len(text) - 2 * keep
    return f"{text[:keep]}\n[… {cut:,} characters cut …]\n{text[-keep:]}", True
