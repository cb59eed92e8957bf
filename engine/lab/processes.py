"""Finding every process a lab started, even one that left its session, and stopping them all.

Why more than the process group: a lab runs in a session of its own (``start_new_session``), and
killing that group stops whatever stayed in it. But a child can call ``setsid()`` (a daemon, a
server started with ``nohup … &`` and ``disown``) and be in neither; when the lab exits, it is
re-parented to init and nothing ties it to the run any more. Two marks still do:

- the environment the runner gave the lab carries a per-run marker variable, inherited by every
  descendant that did not scrub its environment (``/proc/<pid>/environ``);
- while the lab runs, the runner samples the process table and remembers every descendant it
  sees by parent chain (pid and start time, so a reused pid is never mistaken for it);
- and the one no descendant can shed: while the lab runs, the runner is the child subreaper
  (Linux's ``PR_SET_CHILD_SUBREAPER``), so a descendant orphaned between two samples (a double
  fork whose middle process exits at once, then ``setsid`` and an empty environment) is
  re-parented to the runner instead of init, and found as a child the runner did not start.

Linux only (``/proc``); elsewhere only the group is stopped. Nothing here kills a process that
carries no mark of the run.
"""

from __future__ import annotations

import ctypes
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
MARKER_ENV = "LABKIT_RUN"  # the variable the runner sets; its value is new for every run
STOP_GRACE_S = 1.0  # between SIGTERM and SIGKILL for the lab's own group
SWEEP_S = 3.0  # how long stopping the escaped ones may take, all sweeps together


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    pgid: int
    sid: int
    start: int  # clock ticks since boot: with pid, one process for all time
    state: str
    name: str

    def describe(self) -> str:
        return f"pid {self.pid} ({self.name})"


def _stat(pid: int) -> Proc | None:
    try:
        # The kernel's own files here and below, not a person's input; each a few hundred bytes.
        text = (PROC / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    # "pid (comm) state ppid pgrp session …": comm may hold spaces and parentheses.
    open_, close = text.find("("), text.rfind(")")
    if open_ < 0 or close < 0:
        return None
    rest = text[close + 2 :].split()
    try:
        return Proc(
            pid, int(rest[1]), int(rest[2]), int(rest[3]), int(rest[19]), rest[0], text[open_ + 1 : close]
        )
    except (IndexError, ValueError):
        return None


def table() -> dict[int, Proc]:
    """Every live process (zombies are already dead: only their parent can remove them)."""
    if not PROC.is_dir():
        return {}
    found = {}
    for entry in os.listdir(PROC):
        if entry.isdigit() and (p := _stat(int(entry))) is not None and p.state != "Z":
            found[p.pid] = p
    return found


def descendants(root: int, procs: dict[int, Proc]) -> set[tuple[int, int]]:
    """(pid, start) of every process whose parent chain leads to ``root``."""
    found = set()
    for p in procs.values():
        seen: set[int] = set()
        up: Proc | None = p
        while up is not None and up.pid not in seen and up.pid > 1:
            if up.ppid == root:
                found.add((p.pid, p.start))
                break
            seen.add(up.pid)
            up = procs.get(up.ppid)
    return found


def _has_marker(pid: int, marker: bytes) -> bool:
    try:
        environ = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return False
    return marker in environ.split(b"\0")


PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>


def _subreaper(on: bool) -> bool:
    """Make this process the child subreaper (or stop it being one); False where the system has
    no such thing (not Linux), and the other marks are all there is."""
    try:
        return int(ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _children() -> set[tuple[int, int]]:
    me = os.getpid()
    return {(p.pid, p.start) for p in table().values() if p.ppid == me}


class Watch:
    """One run's marks: the group it started, its marker, the descendants seen while it ran, and
    the orphans re-parented to this process while it is the subreaper (created before the lab
    starts; ``stop_escaped`` ends it)."""

    def __init__(self, token: str):
        self.group = 0  # the lab's process group: its first process's pid (started)
        self.marker = f"{MARKER_ENV}={token}".encode()
        self.seen: set[tuple[int, int]] = set()
        self.own_children = _children()  # this process's children before the lab: never the lab's
        self.since = 0
        self.reaping = _subreaper(True)

    def started(self, group: int) -> None:
        self.group = group
        lab = _stat(group)
        self.since = lab.start if lab is not None else 0  # what the lab started began after it

    def end(self) -> None:
        """No longer the subreaper (the lab that needed it is stopped, or never started)."""
        if self.reaping:
            self.reaping = not _subreaper(False)

    def sample(self) -> None:
        """Remember the lab's descendants now (cheap enough to do a few times a second)."""
        self.seen |= descendants(self.group, table())

    def _marked(self, procs: dict[int, Proc]) -> list[Proc]:
        me = os.getpid()
        return [
            p
            for p in procs.values()
            if p.pid not in (me, 1)
            and (
                p.pgid == self.group
                or p.sid == self.group
                or (p.pid, p.start) in self.seen
                or self._handed_over(p, me)
                or _has_marker(p.pid, self.marker)
            )
        ]

    def _handed_over(self, p: Proc, me: int) -> bool:
        """An orphan the kernel gave this process while it was the subreaper, and that began
        after the lab did (an orphan of one of this process's own earlier children began before,
        and carries no mark of the run)."""
        return (
            self.reaping
            and p.ppid == me
            and p.pid != self.group
            and p.start >= self.since
            and (p.pid, p.start) not in self.own_children
        )

    def stop_group(self) -> None:
        """SIGTERM to the lab's process group, SIGKILL after a grace if any of it is left."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.group, sig)
            except (ProcessLookupError, PermissionError):
                return
            deadline = time.monotonic() + STOP_GRACE_S
            while time.monotonic() < deadline:
                if not any(p.pgid == self.group for p in table().values()):
                    return
                time.sleep(0.02)

    def stop_escaped(self) -> tuple[list[str], list[str]]:
        """Kill every marked process left outside the group; return (those stopped, those still
        running when the sweeps ran out), each as 'pid N (name)'."""
        stopped: dict[tuple[int, int], str] = {}
        left: list[Proc] = []
        deadline = time.monotonic() + SWEEP_S
        while time.monotonic() < deadline:
            left = self._marked(table())
            if not left:
                break
            for p in left:
                _kill(p)
                stopped.setdefault((p.pid, p.start), p.describe())
            time.sleep(0.02)
        still = {(p.pid, p.start) for p in left}
        if self.reaping:  # the orphans it was given, killed or gone on their own: collected
            _reap(self._handed_over)
            self.end()
        return sorted(d for k, d in stopped.items() if k not in still), sorted(p.describe() for p in left)


def _reap(handed_over: Callable[[Proc, int], bool]) -> None:
    """Collect the exit of each orphan handed to this process that has ended (a zombie until
    its parent, now this process, waits for it)."""
    me = os.getpid()
    for entry in os.listdir(PROC) if PROC.is_dir() else []:
        p = _stat(int(entry)) if entry.isdigit() else None
        if p is not None and p.state == "Z" and handed_over(p, me):
            try:
                os.waitpid(p.pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _kill(p: Proc) -> None:
    again = _stat(p.pid)
    if again is None or again.start != p.start:
        return  # gone, or its pid now belongs to another process
    try:
        os.kill(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
