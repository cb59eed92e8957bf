"""Benchmark of rebuilds against the drawing cache (run by `make bench`; not a test).

Prints, in one run and side by side with a cold build (an empty drawing cache) of the same
invocation, the CPU seconds of the following, each beside its target where it has one (exit
status 1 when one is missed):
- a warm build of Day 37 with nothing changed (every drawing copied from the cache);
- a build of a copy of Day 37 with one number changed (the batching slots: 16 → 12), which
  draws again only the charts, animation and carousel pages that show the batching results;
  for reference, one whose number only the KV charts show (the reserve, 16 → 20 GiB): what
  any redraw costs however little it draws (the drawing libraries, the whole PDF again);
  beside it, for reference, its floor: a warm build (nothing to draw) in a process that first
  imports the libraries any drawing needs, what a build that redraws one picture costs before
  its first pixel;
- a warm build of every day (after a cold one, also printed);
- `serve`: from its start to the first page served (it serves the last built pages before it
  builds anything), and from an edit of the spec (the slots, as above) to the new draft served
  (the drafts come before the images). The server is a long-running process, so its CPU seconds are read from
  /proc/<pid>/stat (user + system of all its threads) at each moment.

Each build is a new `python -m engine build` process, as `make day37` starts one, so imports
count as they do for the person. CPU seconds are the children's user + system time
(resource.getrusage(RUSAGE_CHILDREN)), measured here around each process; wall seconds and the
load average are printed beside them: on a shared machine wall time grows with the neighbours'
load, CPU time much less, yet CPU seconds still vary by a third from one build to the next on
these machines, so the warm and changed rows are each the median of REPEATS builds: warm ones
one after another (the first after the cold build writes the review page's record of what
changed, the others find it there; they cost the same), changed ones each from the cache and
out folder as they were before the first (the cold ones, a build each). The caches and out
folders are temporary: the person's cache and out/ are not touched.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DAYS = ROOT / "days"


@dataclass(frozen=True)
class Took:
    cpu: float  # user + system seconds of the build's process
    wall: float


# What a build that draws anything imports before its first pixel (a redraw's floor).
DRAWING_LIBRARIES = (
    "import matplotlib.figure, matplotlib.backends.backend_agg, matplotlib.backends.backend_pdf, PIL.Image"
)


def build(specs: list[Path], out: Path, cache: Path, first: str | None = None) -> Took:
    """One `python -m engine build` process; with ``first``, a statement that process runs
    before the engine's command line does."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(ROOT)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    command = ["-m", "engine"]
    if first is not None:
        command = ["-c", f"{first}; import runpy; runpy.run_module('engine', run_name='__main__')"]
    subprocess.run(
        [sys.executable, *command, "build", *map(str, specs), "--out", str(out)],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Took(cpu, wall)


@dataclass(frozen=True)
class Edit:
    """One number of days/day37.yaml changed, as a person edits it: ``pattern`` matches the line
    once, and its first group is kept before ``new``."""

    label: str
    pattern: str
    new: str


# The batching slots: every batching picture (four charts, the animation, two carousel pages)
# shows what they change. The KV reserve: only the two KV charts and one carousel page do.
SLOTS = Edit("slots 16 → 12", r"(?m)^(\s+slots:\s*)16\b", "12")
KV_RESERVE = Edit("KV reserve 16 → 20 GiB", r"(?m)^(\s+reserve_gib:\s*)16\b", "20")


def one_number_changed(days: Path, spec: Path | None = None, edit: Edit = SLOTS) -> Path:
    """A copy of days/ (or ``spec``, edited in place) whose Day 37 has ``edit`` made."""
    if spec is None:
        shutil.copytree(DAYS, days)
        spec = days / "day37.yaml"
    text, count = re.subn(edit.pattern, rf"\g<1>{edit.new}", spec.read_text(encoding="utf-8"))
    if count != 1:
        raise SystemExit(f"bench_build: days/day37.yaml no longer matches {edit.pattern!r} once")
    spec.write_text(text, encoding="utf-8")
    return spec


def process_cpu(pid: int) -> float:
    """User + system seconds a running process (all its threads) has used, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fetch(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # the loopback server started here
            return response.read().decode("utf-8")
    except OSError:
        return None


def serve_rows(days: Path, out: Path, cache: Path, cold: Took) -> None:
    """Start `serve` on a copy of days/ built once already; time its first page, then an edit of
    the spec (Day 37's slots, 16 → 12) until the new draft is served."""
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(ROOT)}
    spec = days / "day37.yaml"
    build([spec], out, cache)
    log = out.parent / "serve.log"  # a file, not a pipe nobody reads while the server prints
    start = time.perf_counter()
    with log.open("w") as printed:
        proc = subprocess.Popen(
            [sys.executable, "-u", "-m", "engine", "serve", str(spec), "--port", "0", "--out", str(out)],
            cwd=ROOT,
            env=env,
            stdout=printed,
            stderr=subprocess.STDOUT,
        )
    try:
        url = None
        while url is None:
            if proc.poll() is not None:
                raise SystemExit(f"bench_build: serve stopped before it listened: {log.read_text()}")
            url = re.search(r"http://127\.0\.0\.1:\d+/", log.read_text())
            time.sleep(0.005)
        while fetch(url.group(0) + "day37/index.html") is None:
            time.sleep(0.01)
        row(
            "serve: start → first page served",
            Took(process_cpu(proc.pid), time.perf_counter() - start),
            cold,
            SERVE_START_TARGET,
        )
        while "\n" in (fetch(url.group(0) + "__version") or "\n"):  # let its start-up build finish
            time.sleep(0.05)
        draft = fetch(url.group(0) + "day37/linkedin.md")
        before, start = process_cpu(proc.pid), time.perf_counter()
        one_number_changed(days, spec)
        while fetch(url.group(0) + "day37/linkedin.md") in (draft, None):
            if time.perf_counter() - start > 120:
                raise SystemExit(f"bench_build: serve did not rebuild: {log.read_text()}")
            time.sleep(0.01)
        took = Took(process_cpu(proc.pid) - before, time.perf_counter() - start)
        row("serve: spec edit (slots) → new draft served", took, cold, SERVE_EDIT_TARGET)
    finally:
        proc.kill()
        proc.wait()


# The targets (CPU seconds), and the most of a cold build's CPU a warm one may take.
WARM_TARGET, WARM_OF_COLD = 1.0, 0.2
CHANGED_TARGET = 2.0
SERVE_START_TARGET, SERVE_EDIT_TARGET = 1.5, 1.0
EVERY_DAY_WARM_TARGET = 2.5
MISSED: list[str] = []


def row(
    label: str, took: Took, cold: Took | None, target: float | None = None, of_cold: float | None = None
) -> None:
    """One row; where it has a target, whether its CPU seconds meet it (and, with ``of_cold``,
    the share of the cold build's CPU it may take), judged on CPU, not wall."""
    ratio = f"{cold.cpu / took.cpu:5.1f}× less CPU than cold" if cold is not None else ""
    judged = ""
    if target is not None:
        goals = [f"≤ {target:g} s"] + ([f"≤ {of_cold:g} × cold"] if of_cold is not None else [])
        met = took.cpu <= target and (of_cold is None or cold is None or took.cpu <= of_cold * cold.cpu)
        judged = f"  target {', '.join(goals)}: {'met' if met else 'FAIL'}"
        if not met:
            MISSED.append(label)
    print(f"  {label:<44}{took.cpu:7.2f} s CPU  {took.wall:7.2f} s wall  {ratio}{judged}")


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} over 1, 5, 15 min ({os.cpu_count()} CPUs)"


def main() -> int:
    day37 = DAYS / "day37.yaml"
    every_day = sorted(DAYS.glob("day[0-9]*.yaml"))
    print("rebuilds against the drawing cache: CPU seconds (user + system) of each build's process")
    print(f"wall seconds beside them; {load_average()}")
    print(f"warm and changed rows: the median of {REPEATS} builds (each changed one from the same state)\n")
    with tempfile.TemporaryDirectory(prefix="bench-build-") as temp:
        root = Path(temp)
        print("Day 37")
        cache, out = root / "cache-37", root / "out-37"
        cold = build([day37], out, cache)
        row("cold (empty cache)", cold, None)
        row(
            "warm, nothing changed",
            median(lambda: build([day37], out, cache)),
            cold,
            WARM_TARGET,
            WARM_OF_COLD,
        )
        changed = one_number_changed(root / "days-changed")
        row(
            f"one number changed ({SLOTS.label})",
            median(lambda: build([changed], out, cache), restore=(cache, out)),
            cold,
            CHANGED_TARGET,
        )
        fewer = one_number_changed(root / "days-kv", edit=KV_RESERVE)
        row(
            f"  for reference: {KV_RESERVE.label}",
            median(lambda: build([fewer], out, cache), restore=(cache, out)),
            cold,
        )
        row(
            "  its floor: warm + drawing libraries",
            median(lambda: build([day37], root / "out-floor", cache, first=DRAWING_LIBRARIES)),
            cold,
        )
        shutil.copytree(DAYS, root / "days-served")
        serve_rows(root / "days-served", root / "out-served", cache, cold)
        print(f"\nevery day ({', '.join(p.stem for p in every_day)})")
        cache, out = root / "cache-all", root / "out-all"
        cold_all = build(every_day, out, cache)
        row("cold (empty cache)", cold_all, None)
        row(
            "warm, nothing changed",
            median(lambda: build(every_day, out, cache)),
            cold_all,
            EVERY_DAY_WARM_TARGET,
        )
    print(f"\n({load_average()})")
    print(f"targets missed: {', '.join(MISSED)}" if MISSED else "every target met")
    return 1 if MISSED else 0


REPEATS = 3  # a shared machine's CPU seconds vary by a third from one build to the next


def median(run: Callable[[], Took], restore: tuple[Path, ...] = ()) -> Took:
    """The median of REPEATS runs (CPU and wall each), every run starting from the state of the
    folders in ``restore`` as they were before the first (a changed build draws again each time),
    and those folders left in that state for the next row."""
    kept = [(folder, folder.with_name(folder.name + "-before")) for folder in restore]
    for folder, copy in kept:
        shutil.copytree(folder, copy)
    runs = []
    for _ in range(REPEATS):
        for folder, copy in kept:
            shutil.rmtree(folder)
            shutil.copytree(copy, folder)
        runs.append(run())
    for folder, copy in kept:
        shutil.rmtree(folder)
        copy.rename(folder)
    return Took(statistics.median(t.cpu for t in runs), statistics.median(t.wall for t in runs))


if __name__ == "__main__":
    sys.exit(main())
