"""Day 1 lab: the latency numbers, measured on the machine that runs this.

Four measurements, each stated with its method in the output:
  RAM    dependent loads (pointer chasing) over an array far larger than the caches, in C
         (compiled here with the system's cc); without a compiler, a Python chase with the
         interpreter's own cost subtracted, and the output says so.
  disk   4 KiB reads from a scratch file with the page cache out of the way (O_DIRECT where the
         filesystem allows it, else the cache is dropped with fadvise and the output says so):
         random offsets, sequential offsets, and 1 MiB sequential reads.
  net    a TCP round trip over loopback (127.0.0.1) between two processes.
  ratios how many RAM reads fit in one round trip, in one disk read, and so on.

Runs on its own (python lab.py) and under the post engine (python -m engine lab days/day01.yaml),
which keeps the figures recorded through labkit. No network beyond loopback.
"""
from __future__ import annotations

import argparse
import mmap
import os
import platform
import random
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from multiprocessing import get_context
from pathlib import Path

from labkit import figure, note

HERE = Path(__file__).resolve().parent
BLOCK = 4096


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ram-mib", type=int, default=128, help="pointer-chase array size")
    parser.add_argument("--file-mib", type=int, default=128, help="scratch file size")
    parser.add_argument("--reads", type=int, default=2000, help="4 KiB reads per pattern")
    parser.add_argument("--round-trips", type=int, default=5000)
    parser.add_argument("--scratch", type=Path, default=HERE, help="folder for the scratch file")
    args = parser.parse_args()

    print("Day 1 lab: latency numbers, measured here")
    print(f"on {cpu_name()}, {os.cpu_count()} cores, {platform.system()} {platform.release().split('-')[0]}")
    ram_ns = measure_ram(args.ram_mib)
    disk = measure_disk(args.scratch, args.file_mib, args.reads)
    rtt_us = measure_round_trip(args.round_trips)

    rows = [
        ("RAM, random dependent load", figure("ram_random", ram_ns, "ns"), "ns"),
        ("disk, 4 KiB random read", figure("disk_random_4k", disk["random"], "us"), "µs"),
        ("disk, 4 KiB sequential read", figure("disk_sequential_4k", disk["sequential"], "us"), "µs"),
        ("disk, 1 MiB sequential read", figure("disk_sequential_1mib", disk["mib"], "us"), "µs"),
        ("TCP round trip, loopback", figure("tcp_round_trip", rtt_us, "us"), "µs"),
    ]
    figure("ram_array", args.ram_mib, "MiB")
    figure("scratch_file", args.file_mib, "MiB")
    print()
    print(f"{'what':<30}{'measured':>12}")
    for label, value, unit in rows:
        print(f"{label:<30}{value:>9,.1f} {unit}")
    print()
    in_ram_rtt = figure("round_trip_in_ram_reads", rtt_us * 1000 / ram_ns, "x")
    in_ram_disk = figure("disk_read_in_ram_reads", disk["random"] * 1000 / ram_ns, "x")
    in_rtt_disk = figure("disk_read_in_round_trips", disk["random"] / rtt_us, "x")
    rand_seq = figure("random_over_sequential", disk["random"] / disk["sequential"], "x")
    print(f"1 loopback round trip    = {in_ram_rtt:,.0f} RAM reads")
    print(f"1 random 4 KiB disk read = {in_ram_disk:,.0f} RAM reads")
    print(f"                         = {in_rtt_disk:,.1f} loopback round trips")
    print(f"random / sequential 4 KiB read = {rand_seq:,.2f}x")


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# ---- RAM --------------------------------------------------------------------------------------


def measure_ram(mib: int, steps: int = 500_000, runs: int = 15) -> float:
    """Nanoseconds per dependent load: the fastest of `runs` timed chases of `steps` loads (the
    run least disturbed by whatever else the machine was doing; every run is kept in a note)."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc:
        with tempfile.TemporaryDirectory() as tmp:
            binary = Path(tmp) / "chase"
            built = subprocess.run([cc, "-O2", "-o", str(binary), str(HERE / "chase.c")],
                                   capture_output=True, text=True, check=False)
            if built.returncode == 0:
                out = subprocess.run([str(binary), str(mib), str(steps), str(runs), "1"],
                                     capture_output=True, text=True, check=True).stdout
                per_run = [float(x) for x in out.split()]
                print(f"RAM   C pointer chase over {mib} MiB ({Path(cc).name} -O2),")
                print(f"      {steps:,} dependent loads x {runs}, fastest run, CPU clock")
                note(f"RAM: C pointer chase over {mib} MiB, one 64-byte node per cache line, timed on "
                     "the thread's CPU clock (time spent descheduled is not counted), "
                     f"{steps:,} loads x {runs} runs; ns per load by run: "
                     f"{', '.join(f'{x:.1f}' for x in per_run)}; transparent huge pages: {thp_mode()}")
                return min(per_run)
            print(f"RAM   {cc} could not build chase.c: falling back to Python")
    return ram_python(mib, steps // 10)


def thp_mode() -> str:
    try:
        text = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
        return text[text.index("[") + 1:text.index("]")]
    except (OSError, ValueError):
        return "unknown"


def ram_python(mib: int, steps: int) -> float:
    """Without a compiler: the same chase in Python, minus the same loop over a 4 KiB array
    (in L1), so the interpreter's own cost per step cancels out. Coarser, and said so."""
    from array import array

    def chain(n: int) -> array:
        order = list(range(n))
        rng = random.Random(1)
        for i in range(n - 1, 0, -1):  # Sattolo: one cycle through every slot
            j = rng.randrange(i)
            order[i], order[j] = order[j], order[i]
        nxt = array("q", bytes(8 * n * 8))  # one slot used per 64 bytes
        for i in range(n):
            nxt[order[i] * 8] = order[(i + 1) % n] * 8
        return nxt

    def chase(nxt: array, count: int) -> float:
        p = 0
        start = time.thread_time_ns()  # CPU time: waiting for a core is not a memory access
        for _ in range(count):
            p = nxt[p]
        return (time.thread_time_ns() - start) / count

    big, small = chain(mib * 2**20 // 64), chain(64)
    took, base = chase(big, steps), chase(small, steps)
    print(f"RAM   no C compiler: Python chase over {mib} MiB minus the same loop in L1")
    print(f"      ({took:.0f} - {base:.0f} ns a step): coarse")
    note("RAM: Python pointer chase minus an in-cache baseline (no C compiler): coarse")
    return max(took - base, 0.1)


# ---- disk -------------------------------------------------------------------------------------


def measure_disk(scratch: Path, mib: int, reads: int) -> dict[str, float]:
    """Median microseconds per 4 KiB read (random and sequential offsets) and per 1 MiB
    sequential read, with the page cache out of the way."""
    fd_w, name = tempfile.mkstemp(prefix=".day01-scratch-", dir=scratch)
    try:
        chunk = os.urandom(2**20)
        with os.fdopen(fd_w, "wb") as out:
            for _ in range(mib):
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        fd, how = open_uncached(name)
        try:
            buf = mmap.mmap(-1, 2**20)  # page-aligned, as O_DIRECT requires
            view4k = memoryview(buf)[:BLOCK]
            blocks = mib * 2**20 // BLOCK
            rng = random.Random(1)
            random_offsets = [rng.randrange(blocks) * BLOCK for _ in range(reads)]
            seq_start = rng.randrange(blocks - reads) * BLOCK if blocks > reads else 0
            sequential_offsets = [seq_start + i * BLOCK for i in range(min(reads, blocks))]
            rand = timed_reads(fd, view4k, random_offsets)
            seq = timed_reads(fd, view4k, sequential_offsets)
            whole = memoryview(buf)
            mib_reads = timed_reads(fd, whole, [i * 2**20 for i in range(min(mib, 64))])
        finally:
            os.close(fd)
    finally:
        os.unlink(name)
    print(f"disk  {mib} MiB file on {filesystem(scratch)}, {how},")
    print(f"      {reads:,} x 4 KiB random and sequential, {min(mib, 64)} x 1 MiB,")
    print("      median read")
    return {"random": statistics.median(rand), "sequential": statistics.median(seq),
            "mib": statistics.median(mib_reads)}


def open_uncached(path: str) -> tuple[int, str]:
    """A read-only descriptor that bypasses the page cache, and how that was done."""
    if hasattr(os, "O_DIRECT"):
        try:
            return os.open(path, os.O_RDONLY | os.O_DIRECT), "O_DIRECT (no page cache)"
        except OSError as err:
            reason = err.strerror
        note(f"disk: O_DIRECT refused ({reason}); page cache dropped with posix_fadvise instead")
    fd = os.open(path, os.O_RDONLY)
    if hasattr(os, "posix_fadvise"):
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        return fd, "no O_DIRECT: cache dropped (fadvise)"
    import fcntl

    fcntl.fcntl(fd, getattr(fcntl, "F_NOCACHE", 48), 1)  # macOS
    return fd, "no O_DIRECT: F_NOCACHE (macOS)"


def timed_reads(fd: int, buffer: memoryview, offsets: list[int]) -> list[float]:
    took = []
    for offset in offsets:
        start = time.perf_counter_ns()
        got = os.preadv(fd, [buffer], offset)
        took.append((time.perf_counter_ns() - start) / 1000)
        if got != len(buffer):
            raise SystemExit(f"short read at {offset}: {got} bytes")
    return took


def filesystem(folder: Path) -> str:
    try:
        out = subprocess.run(["df", "-T", str(folder)], capture_output=True, text=True,
                             check=False).stdout
        return out.splitlines()[1].split()[1]
    except (OSError, IndexError):
        return "an unknown filesystem"


# ---- network: loopback only -------------------------------------------------------------------


def echo_server(listener: socket.socket) -> None:
    conn, _ = listener.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    while data := conn.recv(64):
        conn.sendall(data)


def measure_round_trip(count: int, warmup: int = 500) -> float:
    """Median microseconds for a 64-byte message to 127.0.0.1 and back, between two processes."""
    listener = socket.create_server(("127.0.0.1", 0))
    server = get_context("fork" if hasattr(os, "fork") else "spawn").Process(
        target=echo_server, args=(listener,), daemon=True)
    server.start()
    message = struct.pack("64s", b"ping")
    took = []
    with socket.create_connection(listener.getsockname()) as sock:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for i in range(warmup + count):
            start = time.perf_counter_ns()
            sock.sendall(message)
            got = 0
            while got < len(message):
                got += len(sock.recv(64))
            if i >= warmup:
                took.append((time.perf_counter_ns() - start) / 1000)
    server.join(timeout=5)
    listener.close()
    print("net   TCP on 127.0.0.1 between two processes, 64 bytes,")
    print(f"      median of {count:,} round trips (no wire, no NIC)")
    note("net: loopback only; no wire, NIC or switch is in this round trip")
    return statistics.median(took)


if __name__ == "__main__":
    sys.exit(main())
