"""Benchmark of rebuilds against the drawing cache (run by `make bench`; not a test).

Prints, in one run and side by side with a cold build (an empty drawing cache) of the same
invocation, the CPU seconds of:
- a warm build of Day 37 with nothing changed (every drawing copied from the cache);
- a build of a copy of Day 37 with one number changed (the batching slots: 16 → 12), which
  draws again only the charts, animation and carousel pages that show the batching results;
- a warm build of every day (after a cold one, also printed).

Each build is a new `python -m engine build` process, as `make day37` starts one, so imports
count as they do for the person. CPU seconds are the children's user + system time
(resource.getrusage(RUSAGE_CHILDREN)), measured here around each process; wall seconds and the
load average are printed beside them: on a shared machine wall time grows with the neighbours'
load, CPU time much less. The caches and out folders are temporary: the person's cache and out/
are not touched.
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DAYS = ROOT / "days"


@dataclass(frozen=True)
class Took:
    cpu: float  # user + system seconds of the build's process
    wall: float


def build(specs: list[Path], out: Path, cache: Path) -> Took:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(ROOT)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "engine", "build", *map(str, specs), "--out", str(out)],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Took(cpu, wall)


def one_number_changed(days: Path) -> Path:
    """A copy of days/ whose Day 37 replays its requests on 12 slots instead of 16."""
    shutil.copytree(DAYS, days)
    spec = days / "day37.yaml"
    text, count = re.subn(r"(?m)^(\s+slots:\s*)16\b", r"\g<1>12", spec.read_text(encoding="utf-8"))
    if count != 1:
        raise SystemExit("bench_build: days/day37.yaml no longer sets 'slots: 16' once")
    spec.write_text(text, encoding="utf-8")
    return spec


def row(label: str, took: Took, cold: Took | None) -> None:
    ratio = f"{cold.cpu / took.cpu:5.1f}× less CPU than cold" if cold is not None else ""
    print(f"  {label:<44}{took.cpu:7.2f} s CPU  {took.wall:7.2f} s wall  {ratio}")


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f} over 1, 5, 15 min ({os.cpu_count()} CPUs)"


def main() -> int:
    day37 = DAYS / "day37.yaml"
    every_day = sorted(DAYS.glob("day[0-9]*.yaml"))
    print("rebuilds against the drawing cache: CPU seconds (user + system) of each build's process")
    print(f"wall seconds beside them; {load_average()}\n")
    with tempfile.TemporaryDirectory(prefix="bench-build-") as temp:
        root = Path(temp)
        print("Day 37")
        cache = root / "cache-37"
        cold = build([day37], root / "out-37", cache)
        row("cold (empty cache)", cold, None)
        row("warm, nothing changed", build([day37], root / "out-37", cache), cold)
        changed = one_number_changed(root / "days-changed")
        row("one number changed (slots 16 → 12)", build([changed], root / "out-37", cache), cold)
        print(f"\nevery day ({', '.join(p.stem for p in every_day)})")
        cache = root / "cache-all"
        cold_all = build(every_day, root / "out-all", cache)
        row("cold (empty cache)", cold_all, None)
        row("warm, nothing changed", build(every_day, root / "out-all", cache), cold_all)
    print(f"\n({load_average()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
