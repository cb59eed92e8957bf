"""What several test files share: the repository's paths, the lab's trace, a folder snapshot, a
schedule invariant and copies of the session's built days. Test files import from here, never
from conftest.py or from one another."""

from __future__ import annotations

import ast
import contextlib
import faulthandler
import io
import json
import os
import re
import shutil
import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

REPO = Path(__file__).resolve().parent.parent
DAYS = REPO / "days"
# The lab's reference trace: days/ holds a byte copy of ../shared/reference/day37-lab-workload.csv
# (tests/test_reference_copy.py checks the two agree wherever shared/ is beside the checkout).
LAB_TRACE = DAYS / "day37.workload.csv"
REFERENCE = REPO.parent / "shared" / "reference"


def syntax_tree(path: Path) -> ast.Module:
    """A source file parsed, for the tests that read the engine's imports and format specs from
    its source (imports, torch, matplotlib, number formats). Not kept for the session: kept, the
    171 trees (about 400,000 objects) were walked by every full garbage collection for the rest
    of the run (the suite's full collections took 3.7 s of CPU with them, 3.0 s without, one run
    each), to save 71 parses (about 0.3 s). What a test derives from a tree and reads again
    (test_imports.import_statements) is kept instead."""
    return ast.parse(path.read_text(encoding="utf-8"))


# `make soak` runs the properties with new examples every time (conftest's "explore" profile).
SOAK = os.environ.get("HYPOTHESIS_PROFILE") == "explore"


def examples(quick: int, soak: int) -> int:
    """A property's example count: ``quick`` in `make test`, ``soak`` in `make soak`.

    `make test` draws the same examples every run (derandomized), so its count buys a fixed set
    of cases; a property checked against a naive reference keeps enough of them to reach its
    interesting corners, and the soak run draws many more, new each time."""
    return soak if SOAK else quick


class Lab:
    """The lab's published Day 37 figures (../shared/reference/day37-lab.md), in one place: the
    independent truth the simulator, the build, the charts and the review page are held to."""

    requests = 200
    slots = 16
    total_output_tokens = 13_280
    longest = 661
    static_steps = 5_797
    continuous_steps = 1_148
    static_busy = "14.3%"  # 13,280 / (16 × 5,797)
    continuous_busy = "72.3%"  # 13,280 / (16 × 1,148)
    multiple = "5.0x"  # 5,797 / 1,148
    ideal_steps = 830  # max(ceil(13,280 / 16), 661)
    # Requests that fit the lab's 7B-class model in 64 GiB of KV budget, per context.
    fits = {512: 256, 1024: 128, 2048: 64, 4096: 32, 8192: 16, 16384: 8, 32768: 4}


def out_snapshot(out: Path) -> dict[str, bytes]:
    """Every file under ``out`` with its bytes: equal snapshots mean nothing was touched."""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def copy_built(built_out: Path, target: Path) -> Path:
    """A private copy of the session's built out/ folder, for a test that edits or rebuilds it
    (a rebuild over a copy is what a rebuild over a person's out/ is: the manifest travels)."""
    shutil.copytree(built_out, target)
    return target


def assert_no_overlap(s) -> None:  # s: engine.batching.Schedule
    """No two stays share a slot at the same step (static: a slot is held to its group's end)."""
    end = s.end if s.groups is None else s.groups.end[s.groups.member_group]
    for slot in np.unique(s.slot):
        mine = np.flatnonzero(s.slot == slot)
        order = mine[np.argsort(s.start[mine], kind="stable")]
        assert np.all(s.start[order][1:] >= end[order][:-1])
    assert s.slot.min() >= 0 and s.slot.max() < s.slots


def load_yaml(text: str) -> Any:
    """yaml.safe_load through libyaml's parser (PyYAML's wheels bundle it, and the engine reads
    specs the same way): the same data in a tenth of the time, for tests that read and rewrite
    specs hundreds of times."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def dump_yaml(data: Any, **options: Any) -> str:
    """yaml.safe_dump through libyaml's emitter, for the same reason as load_yaml."""
    return yaml.dump(data, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), **options)


def lean_spec(text: str) -> str:
    """A spec's text with no charts, LinkedIn image or carousel: drawing is most of a build's
    cost, and a test about drafts, results, merging, locking or errors reads none of it.
    The rest of the text (comments included) is kept as it was."""
    text = re.sub(r"(?m)^charts:(?: .*)?\n(?:[ \t]*- .*\n)*", "charts: []\n", text)
    text = re.sub(r"(?m)^linkedin_image: .*\n", "", text)
    text = re.sub(r"(?m)^carousel:\n(?:(?:[ \t-].*)?\n)*", "", text)
    data = load_yaml(text)
    assert data["charts"] == [] and "linkedin_image" not in data and "carousel" not in data, text
    return text


def unlinked(text: str) -> str:
    """Day 37's spec text with its link back to Day 4 naming no spec (the claim stays). Reading
    Day 4's spec checks its chart names, which imports every chart module and matplotlib, and
    its figure is simulated: over a second of a child process's start for a test about something
    else (the process boundary, a rebuild, a kill)."""
    link = "\n    spec: day04.yaml\n"
    assert link in text, text
    return text.replace(link, "\n", 1)


def valid_doc(*, day: int = 37, date: str = "2026-01-31T12:00:00Z") -> dict:
    """A valid schema-1 GPU measurement file (an H100 run), for tests that read or break one."""
    policy = {
        "wall_seconds": 2.0,
        "steps": 100,
        "tokens": 800,
        "tokens_per_second": 400.0,
        "utilisation": 0.5,
    }
    return {
        "schema": 1,
        "day": day,
        "device": {
            "kind": "cuda",
            "name": "NVIDIA H100 80GB HBM3",
            "slug": "nvidia-h100-80gb-hbm3",
            "memory_bytes": 85_045_346_304,
        },
        "torch": "2.13.0",
        "cuda": "12.8",
        "date": date,
        "settings": {
            "model": {
                "name": "7b-class",
                "num_layers": 32,
                "hidden_size": 4096,
                "num_heads": 32,
                "num_kv_heads": 32,
                "head_dim": 128,
                "intermediate_size": 11008,
                "vocab_size": 32000,
            },
            "dtype": "bfloat16",
            "slots": 16,
            "contexts": [512, 8192],
            "quick": False,
            "workload_scale": 1.0,
            "repeats": 10,
            "prompt_tokens": 8,
        },
        "random_weights": True,
        "note": "random weights: step time and memory do not depend on the weights' values",
        "notes": [],
        "memory": {
            "weights_bytes": 13_476_839_424,
            "free_after_weights_bytes": 70_000_000_000,
            "kv_bytes_per_token": 524_288,
            "contexts": [{"context": 512, "max_requests_measured": 260, "max_requests_calculated": 260}],
        },
        "step_time": {
            "points": [
                {
                    "batch": 16,
                    "context": 512,
                    "seconds": 0.006,
                    "bytes_moved": 17_000_000_000,
                    "achieved_bytes_per_s": 17e9 / 0.006,
                }
            ],
            "prefill": [{"tokens": 512, "seconds": 0.05}],
            "hbm_peak_bytes_per_s": 3.35e12,
            "share_of_peak_at_slots": 0.85,
        },
        "batching": {
            "requests": 200,
            "scale": 1.0,
            "policies": {
                "static": dict(policy, wall_seconds=10.0, steps=500, tokens_per_second=80.0, utilisation=0.1),
                "continuous": policy,
            },
            "multiple": 5.0,
        },
    }


@contextmanager
def toy_policy() -> Iterator[Any]:
    """A batching policy registered from the tests alone, never from engine/: continuous batching
    on one slot whatever the slots, so requests run back to back. Unregistered on the way out."""
    from engine import batching
    from engine.batching import registry

    @dataclass(frozen=True)
    class OneAtATime(batching.ContinuousPolicy):
        name = "one_at_a_time"

        def schedule(self, eligible, prompt, output, slots, deadline=None):
            return super().schedule(eligible, prompt, output, 1, deadline)

    kind = registry.PolicyKind(
        OneAtATime.name,
        lambda settings: OneAtATime(),
        "one at a time",
        "Every request alone, in arrival order.",
        colour="#123456",
        example=registry.PolicyExample(
            (3, 1, 2), (1, 1, 1), slots=2, steps=6
        ),  # 3 + 1 + 2, one after another
    )
    registry.register(kind)
    try:
        yield kind
    finally:
        registry.unregister(kind.name)


def pause_at(point: str, flag: Path, seconds: float = 60) -> Callable[[str], None]:
    """A stand-in for engine.outdir.swap.pause that stops the process at ``point``: it writes ``flag``
    (so the test knows it is there) and sleeps until the test kills it."""

    def pause(reached: str) -> None:
        if reached == point:
            flag.write_text(point)
            time.sleep(seconds)

    return pause


def assert_platform_counts_its_example(platform: Any) -> None:  # an engine.platforms Platform
    """The contract every registered platform keeps, held to its own example (Platform.example):
    the sample draft passes the platform's rules, and each post's length is the one its author
    worked out by hand. tests/test_platforms.py loops it over every registration; a toy platform
    registered from a test file is held to it the same way."""
    per_post, violations = platform.check_draft(platform.example.draft)
    assert violations == [], (platform.name, violations)
    lengths = tuple(c.value for counts in per_post for c in counts if c.name == "length")
    assert lengths == platform.example.lengths, (platform.name, lengths)


def assert_policy_schedules_its_example(kind: Any) -> None:  # an engine.batching PolicyKind
    """The contract every registered policy keeps, held to its own example (PolicyKind.example):
    the simulator, run with the policy built from the example's settings, takes the steps its
    author worked out by hand and emits every token."""
    from engine.batching import simulate
    from engine.workload import Workload

    example = kind.example
    workload = Workload.of(np.array(example.output_tokens), prompt_tokens=np.array(example.prompt_tokens))
    result = simulate(workload, kind.build(example.settings), slots=example.slots)
    assert (result.steps, result.tokens) == (example.steps, sum(example.output_tokens)), kind.name


# ---- the bounds every hostile case is held to ----------------------------------------------------

CASE_SECONDS = 5.0  # wall time of one case: each takes milliseconds; a hang or a full read does not
# Memory one case may add at its peak, over what the process held when it began: hostile files are
# refused or read within limits of a few MiB; a giant read whole, or a FIFO or /dev/zero read to
# the end, is past it at once.
CASE_BYTES = 64 * 2**20
# A whole day's build over a hostile input: its results, drafts and pages, on a loaded machine.
BUILD_SECONDS, BUILD_BYTES = 60.0, 256 * 2**20


def _resident() -> tuple[int, int]:
    """(resident bytes now, the peak since the last reset), as the kernel counts them."""
    text = Path("/proc/self/status").read_text()
    found = [re.search(rf"^{key}:\s+(\d+) kB", text, re.M) for key in ("VmRSS", "VmHWM")]
    assert all(found), f"/proc/self/status holds no VmRSS and VmHWM: {text[:200]!r}"
    now, peak = (int(match.group(1)) * 1024 for match in found if match)
    return now, peak


@contextlib.contextmanager
def bounded(what: object = None, limit: int = CASE_BYTES, seconds: float = CASE_SECONDS) -> Iterator[None]:
    """One case held to ``seconds`` of wall time and ``limit`` bytes of memory at its peak,
    whether it ends in a result or in the one-line error it is allowed (which is not masked: the
    bounds are checked as it passes). The peak is the kernel's high-water mark of resident
    memory, reset as the case begins (Linux's clear_refs), so C allocations count and nothing is
    slowed as tracing would; where the kernel cannot reset it, Python's own allocations are
    traced instead (slower, and blind to C buffers, but a bound all the same).

    What it bounds is growth past the memory the process already holds: a case may reuse what
    an earlier one freed without it counting. That is the failure it is for: a read that grows
    with its input (a giant file, a FIFO, /dev/zero) outgrows any such slack at once."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        kernel = True
    except OSError:
        kernel = False
        tracemalloc.start()
    before, _ = _resident()
    started = time.perf_counter()
    # A case that never returns is stopped, its stack printed, and the run ends with it, instead
    # of the suite waiting for ever (the assertion below only sees a case that came back).
    # (to the process's own stderr: a case runs with sys.stderr captured in memory)
    faulthandler.dump_traceback_later(2 * seconds + 30, exit=True, file=sys.__stderr__)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()
        elapsed = time.perf_counter() - started
        if kernel:
            grown = _resident()[1] - before
        else:
            grown = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        assert elapsed < seconds, (what, elapsed)
        assert grown < limit, (what, grown)


def bounded_command(argv: Sequence[str]) -> contextlib.AbstractContextManager[None]:
    """``bounded`` for one command line: a build by a build's bounds, anything else by a case's."""
    if argv and argv[0] == "build":
        return bounded(list(argv), BUILD_BYTES, BUILD_SECONDS)
    return bounded(list(argv))


# ---- every registered section runs its example ---------------------------------------------------

EXAMPLE_DAY = {
    "series": {"name": "60 days of system design", "length": 60},
    "title": "A section's example",
    "repository": "github.com/you/example",
    "hashtags": ["SystemDesign", "Testing", "LearningInPublic"],
}
SOURCES = ("calculated", "simulated", "measured on ", "set")  # what a number on a post may be


def assert_section_runs_its_example(section: Any, folder: Path) -> dict[str, Any]:
    """The shared contract of a section: its example, written as a day's spec (with the files it
    reads) into ``folder``, loads as any spec does and computes through the pipeline; the
    section's results are JSON, say where their numbers came from in one line, and its
    headline and review tables are what the terminal and the review page print. Returns the
    results."""
    from engine import pipeline
    from engine.sections import SpecLocation
    from engine.spec import load_spec

    example = section.example
    assert example is not None, f"section {section.key!r}: register it with an example (SectionExample)"
    for name, text in example.files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    spec_path = folder / f"day{example.day:02d}.yaml"
    doc = {"day": example.day, **EXAMPLE_DAY, section.key: example.spec}
    if example.measured is not None:
        doc["measured"] = example.measured
    spec_path.write_text(dump_yaml(doc, sort_keys=False), encoding="utf-8")
    if example.prepare is not None:
        example.prepare(spec_path)
    results = pipeline.compute(load_spec(spec_path), SpecLocation(spec_path))
    result = results[section.key]
    assert json.loads(json.dumps(result, allow_nan=False)) == result, section.key
    source = result["source"]
    assert isinstance(source, str) and "\n" not in source and source.startswith(SOURCES), (
        section.key,
        source,
    )
    if section.headline is not None:  # a line, several, or none: each one line of text
        said = section.headline(result)
        for line in [said] if isinstance(said, str) else said or []:
            assert line.strip() and "\n" not in line, (section.key, line)
    if section.review_tables is not None:
        for table in section.review_tables(result):
            assert isinstance(table["title"], str) and table["title"], (section.key, table)
            for row in table["rows"]:
                assert len(row) == 2 and all(isinstance(cell, str) for cell in row), (section.key, row)
    return results


def lab_day_spec(title: str, figures: dict[str, tuple[str, str]], charts: str = "[]") -> str:
    """A Day 2 spec whose lab is day02.lab/lab.py, listing ``figures`` (name → unit, about)."""
    listed = "".join(
        f"    {name}: {{unit: {unit}, about: {about}}}\n" for name, (unit, about) in figures.items()
    )
    return (
        "day: 2\n"
        "series: {name: 60 days of system design, length: 60}\n"
        f"title: {json.dumps(title)}\n"
        "repository: github.com/example/repo\n"
        "hashtags: [SystemDesign, Testing, LearningInPublic]\n"
        "lab:\n"
        "  script: day02.lab/lab.py\n"
        "  timeout_s: 20\n"
        "  figures:\n"
        f"{listed}"
        f"charts: {charts}\n"
        "measured: latest\n"
    )


def run_cli(*argv: str) -> tuple[int, str, str]:
    """The command in this process, its output captured and held to bounded_command's bounds;
    any warning raised is an error, so a library's warning on stderr fails a hostile case as a
    second line would."""
    from engine.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
        warnings.simplefilter("error")
        with bounded_command(argv):
            code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def one_line(err: str) -> str:
    """The one line a command wrote to stderr, asserted to be one and no traceback."""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ---- a small sweep ------------------------------------------------------------------------------

SMALL_SWEEP: dict[str, Any] = {  # eight points: two GPUs, two batch sizes, two rates
    "workload": {
        "requests": 40,
        "seed": 3,
        "output_tokens": {"kind": "uniform", "low": 5, "high": 30},
        "prompt_tokens": {"kind": "uniform", "low": 10, "high": 60},
    },
    "grid": {
        "gpu": ["h100-80gb", "a10g"],
        "model": ["llama-3-8b"],
        "max_num_seqs": [4, 16],
        "max_num_batched_tokens": [256],
        "step_time": ["unit:0.02"],
        "arrival_rate": [5, 50],
    },
    "targets": {"ttft_p99": 0.5},
}


def sweep_section(**changes: Any) -> Any:
    """SMALL_SWEEP with `changes` by dotted path ('grid.gpu': [...]), as a SweepSection."""
    from engine.experiments.sweep import SweepSection

    doc = json.loads(json.dumps(SMALL_SWEEP))
    for key, value in changes.items():
        node = doc
        *path, last = key.split(".")
        for part in path:
            node = node[part]
        node[last] = value
    return SweepSection.model_validate(doc)
