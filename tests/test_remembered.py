"""What a build simulates, remembered in the engine's cache (a sweep's points, a day's queues): a
rebuild simulates only what it has not seen, gives the same results as simulating everything,
and a cache that is stale, damaged, too big or unusable is never trusted and never fails the
build."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from engine import cachedir, queueing, remembered, sections
from engine.experiments import queueing as queue_experiment
from engine.experiments import sweep as experiment
from engine.experiments.sweep import SweepSection
from engine.sections import SpecLocation
from engine.sweep import adapter
from engine.sweep import store as store_module

from helpers import sweep_section as section  # the small 8-point grid

POINTS = 8


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return experiment.POINTS.folder()


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The points simulated (in this process: the grid runs with one worker)."""
    seen: list[Any] = []
    real = adapter.evaluate
    monkeypatch.setattr(adapter, "evaluate", lambda p, w, o: seen.append(p) or real(p, w, o))
    return seen


def small() -> SweepSection:
    return section(workers=1)


def built(sec: SweepSection, tmp_path: Path) -> dict[str, Any]:
    """The sweep section as a build computes it."""
    return experiment._run_for_build(sec, SpecLocation(spec_path=tmp_path / "spec.yaml"), None)  # type: ignore[arg-type]


def computed(sec: SweepSection, tmp_path: Path) -> dict[str, Any]:
    """Every point simulated, nothing stored: the reference."""
    return experiment.run(sec, SpecLocation(spec_path=tmp_path / "spec.yaml"), workers=1)


def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Equal, and in the same order (a template iterating a row sees its columns in order)."""
    return json.dumps(a) == json.dumps(b)


def plant(planted: str, folder: Path, mine: Path) -> Path:
    """Make the cache ``folder`` unusable as ``planted`` says; ``mine`` is a person's file (and
    its folder theirs) that nothing may write to or delete. Returns the cache file's path."""
    name = remembered.code_digest() + remembered.SUFFIX
    if planted == "file-for-folder":
        folder.parent.mkdir(parents=True)
        folder.write_text("not a folder")
    elif planted == "linked-folder":
        folder.parent.mkdir(parents=True)
        folder.symlink_to(mine.parent)
        (mine.parent / name).write_text("")
    elif planted == "linked-parent":
        folder.parent.parent.mkdir(parents=True)
        folder.parent.symlink_to(mine.parent)
        (mine.parent / folder.name).mkdir()
    elif planted == "linked-root":  # the engine's whole cache folder
        folder.parent.parent.parent.mkdir(parents=True)
        folder.parent.parent.symlink_to(mine.parent)
        (mine.parent / folder.parent.name / folder.name).mkdir(parents=True)
        (mine.parent / folder.parent.name / folder.name / name).write_text("theirs\n")
    else:
        folder.mkdir(parents=True)
        path = folder / name
        if planted == "fifo":
            os.mkfifo(path)
        elif planted == "link":
            path.symlink_to(mine)
        else:
            os.link(mine, path)
    return folder / name


def test_a_rebuild_simulates_nothing_and_gives_the_same_table(cache, calls, tmp_path):
    reference = computed(small(), tmp_path)
    calls.clear()
    first = built(small(), tmp_path)
    assert len(calls) == POINTS and same(first, reference)
    (kept,) = cache.iterdir()
    assert kept.name == remembered.code_digest() + remembered.SUFFIX
    calls.clear()
    again = built(small(), tmp_path)
    assert calls == [] and same(again, reference)
    # a changed grid reuses the points it shares and simulates only the new ones
    wider = section(workers=1, **{"grid.max_num_seqs": [4, 16, 32]})
    wider_reference = computed(wider, tmp_path)
    calls.clear()
    assert same(built(wider, tmp_path), wider_reference)
    assert len(calls) == 4  # the new max_num_seqs, at two GPUs and two rates


def test_other_code_is_a_new_file_and_only_versions_past_the_last_few_are_deleted(
    cache, calls, tmp_path, monkeypatch
):
    built(small(), tmp_path)
    (old,) = cache.iterdir()
    mine = cache / "my-sweep.jsonl"
    mine.write_text("a person's file, not the cache's\n")
    others = [f"{i}" * 64 for i in range(cachedir.KEEP_VERSIONS)]  # processes started with other code
    for n, other in enumerate(others, start=1):
        monkeypatch.setattr(remembered, "code_digest", lambda files=None, other=other: other)
        monkeypatch.setattr(experiment, "POINTS", remembered.Memory("sweeps", valid=adapter.is_metrics))
        calls.clear()
        assert same(built(small(), tmp_path), computed(small(), tmp_path))
        assert len(calls) == 2 * POINTS  # nothing another version computed is read
        os.utime(cache / (other + remembered.SUFFIX), ns=(n * 10**9, n * 10**9))  # used in this order
        if n < cachedir.KEEP_VERSIONS:  # still among the last used: kept for its checkout
            assert old.exists()
            os.utime(old, ns=(0, 0))  # the first version, used before any of them
    # the last KEEP_VERSIONS used stay; the first went when the last one was opened
    assert not old.exists() and sorted(p.name for p in cache.iterdir()) == sorted(
        [*(other + remembered.SUFFIX for other in others), "my-sweep.jsonl"]
    )  # only the digest-named files are the cache's to delete


def test_two_checkouts_sharing_one_cache_each_find_their_own(cache, calls, tmp_path, monkeypatch):
    """A branch and main built in turn (two code digests): each rebuild reads its own points."""
    for digest in ("a" * 64, "b" * 64):
        monkeypatch.setattr(remembered, "code_digest", lambda files=None, d=digest: d)
        built(small(), tmp_path)
    calls.clear()
    for _ in range(2):
        for digest in ("a" * 64, "b" * 64):
            monkeypatch.setattr(remembered, "code_digest", lambda files=None, d=digest: d)
            monkeypatch.setattr(experiment, "POINTS", remembered.Memory("sweeps", valid=adapter.is_metrics))
            assert same(built(small(), tmp_path), computed(small(), tmp_path))
    assert len(calls) == 4 * POINTS  # the four references only: no build simulated a point


def test_a_process_reads_its_file_once_and_again_only_when_another_changed_it(cache, monkeypatch):
    """Look-ups after the first reuse what the process read and wrote; a line another build
    appended, or the file replaced, is read again."""
    loads: list[Path] = []
    real = store_module.ResultStore._load
    monkeypatch.setattr(
        store_module.ResultStore, "_load", lambda self, path: loads.append(path) or real(self, path)
    )
    memory = remembered.Memory("toy", valid=lambda value: True)
    computed_now: list[int] = []

    def square(x: int) -> Any:
        return lambda: computed_now.append(x) or x * x

    assert memory.recall("square", square(3), {"x": 3}) == 9  # no file yet: nothing to read
    assert [memory.recall("square", square(x), {"x": x}) for x in (3, 4, 3, 4)] == [9, 16, 9, 16]
    assert computed_now == [3, 4] and loads == []  # it wrote the file, so knows all it holds
    other = remembered.Memory("toy", valid=lambda value: True)  # another build, appending
    assert other.recall("square", square(5), {"x": 5}) == 25
    assert memory.recall("square", square(5), {"x": 5}) == 25 and computed_now == [3, 4, 5]
    assert len(loads) == 2  # the other build read it; this one read it again, and found 5
    (path,) = memory.folder().iterdir()
    path.unlink()  # make clean-cache, between two look-ups
    assert memory.recall("square", square(3), {"x": 3}) == 9 and computed_now == [3, 4, 5, 3]
    assert memory.recall("square", square(3), {"x": 3}) == 9 and computed_now == [3, 4, 5, 3]
    assert path.exists()  # kept again after the file went


def test_a_line_another_build_appended_while_this_one_wrote_is_read_not_simulated_again(cache):
    memory = remembered.Memory("toy", valid=lambda value: True)
    other = remembered.Memory("toy", valid=lambda value: True)  # a concurrent build
    computed_now: list[int] = []

    def square(x: int) -> Any:
        return lambda: computed_now.append(x) or x * x

    memory.recall("square", square(1), {"x": 1})
    store = memory.store()  # open while the other build appends, then add one of its own
    other.recall("square", square(3), {"x": 3})
    store.add(remembered.key("square", {"x": 2}), {"what": "square", "x": 2}, {"sha256": "-", "value": 4})
    store.close()
    assert memory.recall("square", square(3), {"x": 3}) == 9 and computed_now == [1, 3]


def test_a_warm_sweep_reads_its_file_once_a_process(cache, calls, tmp_path, monkeypatch):
    built(small(), tmp_path)  # the points, written
    monkeypatch.setattr(experiment, "POINTS", remembered.Memory("sweeps", valid=adapter.is_metrics))
    loads: list[Path] = []
    real = store_module.ResultStore._load
    monkeypatch.setattr(
        store_module.ResultStore, "_load", lambda self, path: loads.append(path) or real(self, path)
    )
    calls.clear()
    for _ in range(3):
        built(small(), tmp_path)
    assert calls == [] and len(loads) == 1


def test_a_file_only_read_counts_as_used_and_outlives_newer_versions(cache, tmp_path, monkeypatch):
    """Checkout A only reads its points after B's first build: A's file is then among the last
    used, so when C and D come the one that goes is B's."""

    def build_as(letter: str, made_at: int | None) -> None:
        monkeypatch.setattr(remembered, "code_digest", lambda files=None: letter * 64)
        monkeypatch.setattr(experiment, "POINTS", remembered.Memory("sweeps", valid=adapter.is_metrics))
        built(small(), tmp_path)
        if made_at is not None:  # as if written long ago, in this order
            os.utime(cache / (letter * 64 + remembered.SUFFIX), ns=(made_at, made_at))

    build_as("a", 1)
    build_as("b", 2)
    build_as("a", None)  # read, nothing simulated: used now all the same
    build_as("c", 3)
    build_as("d", 4)
    assert sorted(name[0] for name in os.listdir(cache)) == ["a", "c", "d"]


def test_a_platform_that_cannot_touch_a_link_still_remembers(cache, monkeypatch):
    monkeypatch.setattr(os, "supports_follow_symlinks", set())
    memory = remembered.Memory("toy", valid=lambda value: True)
    assert memory.recall("square", lambda: 4, {"x": 2}) == 4
    assert remembered.Memory("toy", valid=lambda value: True).recall("square", lambda: 0, {"x": 2}) == 4


def test_a_process_whose_engine_files_changed_remembers_nothing(cache, calls, tmp_path, monkeypatch):
    """Its code is the old files', its digest would be the new files': neither file is right."""
    monkeypatch.setattr(remembered, "LOADED_NS", 0)  # every file of the engine is newer than that
    built(small(), tmp_path)
    built(small(), tmp_path)
    assert len(calls) == 2 * POINTS and not cache.exists()


def test_a_full_disk_is_points_kept_in_memory_and_the_build_goes_on(cache, calls, tmp_path, monkeypatch):
    reference = computed(small(), tmp_path)
    real_open = store_module._open_append

    class Full:
        """The results file on a disk that fills after two lines: every write, flush and close
        after that fails, as they do when the kernel refuses the bytes."""

        def __init__(self, path: Path) -> None:
            self.file, self.lines = real_open(path), 0

        def fileno(self) -> int:
            return self.file.fileno()

        def write(self, text: str) -> int:
            self.lines += 1
            self._refuse()
            return self.file.write(text)

        def flush(self) -> None:
            self._refuse()
            self.file.flush()

        def close(self) -> None:
            self.file.close()
            self._refuse()

        def _refuse(self) -> None:
            if self.lines > 2:
                raise OSError(28, "No space left on device")

    monkeypatch.setattr(store_module, "_open_append", Full)
    calls.clear()
    assert same(built(small(), tmp_path), reference)
    assert len(calls) == POINTS
    (kept,) = cache.iterdir()
    assert len(kept.read_text().splitlines()) == 2  # what fitted; the next build computes the rest


@pytest.mark.parametrize("planted", ["file-for-folder", "fifo", "link", "hard-link", "linked-folder"])
def test_an_unusable_cache_computes_every_point_and_the_build_goes_on(cache, calls, tmp_path, planted):
    reference = computed(small(), tmp_path)
    mine = tmp_path / "elsewhere" / "mine.jsonl"
    mine.parent.mkdir()
    mine.write_text("")
    path = plant(planted, cache, mine)
    kept = mine.parent / path.name
    calls.clear()
    assert same(built(small(), tmp_path), reference)
    assert mine.read_text() == ""  # nothing written through a link
    if planted == "linked-folder":
        assert len(calls) == POINTS and kept.read_text() == ""  # nor into, nor deleted from, its target
        remembered.clear()
        assert kept.exists()
    elif planted == "hard-link":
        assert len(calls) == POINTS and len((cache / path.name).read_text().splitlines()) == POINTS
    else:
        assert len(calls) == POINTS


# ---- a day's queues ------------------------------------------------------------------------------

QUEUES = sections.get("queueing").example.spec  # type: ignore[union-attr]  # the section's own


@pytest.fixture
def simulated(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The queue simulations run, by name."""
    seen: list[str] = []
    for name in ("mm1_sweep", "shared_sweep", "compare_lines"):
        real = getattr(queueing, name)
        monkeypatch.setattr(queueing, name, lambda *a, _n=name, _r=real, **k: seen.append(_n) or _r(*a, **k))
    return seen


def queues(tmp_path: Path, **changed: Any) -> dict[str, Any]:
    section = queue_experiment.QueueingSection.model_validate({**QUEUES, **changed})
    return queue_experiment.run(section, SpecLocation(spec_path=tmp_path / "day04.yaml"), None)  # type: ignore[arg-type]


def test_a_rebuild_simulates_no_queue_and_gives_the_same_results(tmp_path, monkeypatch, simulated):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    with monkeypatch.context() as nothing_kept:
        nothing_kept.setattr(remembered, "LOADED_NS", 0)  # no store: every queue simulated
        reference = queues(tmp_path)
    assert simulated == ["mm1_sweep", "shared_sweep", "compare_lines"]
    assert not queue_experiment.SIMULATIONS.folder().exists()
    simulated.clear()
    assert same(queues(tmp_path), reference) and len(simulated) == 3
    simulated.clear()
    assert same(queues(tmp_path), reference) and simulated == []
    # the figure a later day cites (Day 37 from Day 4) is read back too
    section = queue_experiment.QueueingSection.model_validate(QUEUES)
    figure = queue_experiment.link_figure(section, SpecLocation(spec_path=tmp_path / "day04.yaml"))
    assert simulated == [] and figure["wait_ratio"] == reference["lines"]["wait_ratio"]
    # another seed is another queue; the rest is read back
    assert queues(tmp_path, seed=4)["mm1"] != reference["mm1"]
    assert simulated == ["mm1_sweep", "shared_sweep", "compare_lines"]


def test_a_damaged_queue_line_is_simulated_again(tmp_path, monkeypatch, simulated):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    reference = queues(tmp_path)
    (kept,) = queue_experiment.SIMULATIONS.folder().iterdir()
    lines = kept.read_text().splitlines()
    assert len(lines) == 3
    row = json.loads(lines[0])
    row["metrics"] = {"value": "not a table"}  # of another shape: never read
    kept.write_text("\n".join([json.dumps(row), lines[1], lines[2][: len(lines[2]) // 2]]) + "\n")
    simulated.clear()
    assert same(queues(tmp_path), reference)
    assert simulated == ["mm1_sweep", "compare_lines"]  # the mangled line and the cut one


def test_clean_cache_empties_every_kind_and_nothing_else(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    queues(tmp_path)
    built(small(), tmp_path)
    mine = queue_experiment.SIMULATIONS.folder() / "my-notes.jsonl"
    mine.write_text("a person's file\n")
    remembered.clear()
    assert list(experiment.POINTS.folder().iterdir()) == []
    assert list(queue_experiment.SIMULATIONS.folder().iterdir()) == [mine]


# ---- the memory itself, with a toy kind ---------------------------------------------------------


@pytest.mark.parametrize(
    "planted",
    ["file-for-folder", "fifo", "link", "hard-link", "linked-folder", "linked-parent", "linked-root"],
)
def test_any_kind_of_memory_that_cannot_be_kept_computes_and_writes_nothing_through_a_link(
    tmp_path, monkeypatch, planted
):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    toy = remembered.Memory("toy", valid=lambda kept: isinstance(kept.get("sha256"), str))
    folder = toy.folder()
    mine = tmp_path / "elsewhere" / "mine.jsonl"
    mine.parent.mkdir()
    mine.write_text("")
    name = plant(planted, folder, mine).name
    computed: list[int] = []

    def compute(n: int) -> dict[str, Any]:
        computed.append(n)
        return {"n": n * n}

    for _ in range(2):
        assert [toy.recall("square", lambda n=n: compute(n), {"n": n}) for n in (2, 3)] == [
            {"n": 4},
            {"n": 9},
        ]
    assert mine.read_text() == ""  # nothing written through a link
    theirs = {
        "linked-folder": {name},
        "linked-parent": {"toy"},
        "linked-root": {remembered.FOLDER, "toy", name},
    }.get(planted, set())
    assert sorted(p.name for p in mine.parent.rglob("*")) == sorted({"mine.jsonl"} | theirs)
    if planted == "linked-root":  # their file, neither deleted nor written to
        assert (mine.parent / remembered.FOLDER / "toy" / name).read_text() == "theirs\n"
    if planted == "hard-link":  # the link is let go of, and a file of the cache's own started
        assert computed == [2, 3] and len((folder / name).read_text().splitlines()) == 2
    else:
        assert computed == [2, 3, 2, 3]  # nothing kept: computed each time, never an error


@pytest.mark.parametrize(
    "edit",
    [
        lambda value: [1],  # rows that are not rows
        lambda value: [{}],  # rows with no fields
        lambda value: {},  # the other kind's type
        lambda value: [{**row, "mean_sojourn_ms": "12"} for row in value],  # numbers as strings
    ],
)
def test_a_queue_line_of_the_right_shape_and_the_wrong_content_is_simulated_again(
    tmp_path, monkeypatch, simulated, edit
):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    reference = queues(tmp_path)
    (kept,) = queue_experiment.SIMULATIONS.folder().iterdir()
    lines = kept.read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    (row,) = [r for r in rows if r["point"]["what"] == "mm1_sweep"]
    row["metrics"]["value"] = edit(row["metrics"]["value"])  # its checksum left as it was
    kept.write_text("".join(json.dumps(r) + "\n" for r in rows))
    simulated.clear()
    assert same(queues(tmp_path), reference) and simulated == ["mm1_sweep"]


def test_a_value_json_cannot_hold_is_computed_each_time_and_never_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    toy = remembered.Memory("toy", valid=lambda kept: isinstance(kept.get("sha256"), str))
    computed: list[float] = []
    for _ in range(2):
        value = toy.recall("inf", lambda: computed.append(1.0) or {"x": float("inf")}, {})
        assert value == {"x": float("inf")}
    assert len(computed) == 2
    assert not toy.folder().exists() or all(p.stat().st_size == 0 for p in toy.folder().iterdir())


def test_clear_goes_on_past_a_kind_it_cannot_list_and_empties_the_older_sweeps_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    top = queue_experiment.SIMULATIONS.folder().parent
    name = "ab" * 32 + remembered.SUFFIX
    for kind in ("a-kind", "b-kind"):
        (top / kind).mkdir(parents=True)
        (top / kind / name).write_text("")
    earlier = top.parent / "sweeps"  # the engine's folder before there were kinds
    earlier.mkdir()
    (earlier / name).write_text("")
    (earlier / "my-notes.jsonl").write_text("a person's file\n")
    real = os.scandir

    def refusing(path: Any = "."):
        if str(path).endswith("a-kind"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", refusing)  # root cannot be refused by chmod
    remembered.clear()
    assert (top / "a-kind" / name).exists() and not (top / "b-kind" / name).exists()
    assert sorted(p.name for p in earlier.iterdir()) == ["my-notes.jsonl"]


def test_the_code_digest_is_worked_out_once_and_again_for_an_edited_file(tmp_path, monkeypatch):
    from engine import cachedir

    monkeypatch.setattr(cachedir, "ENGINE", tmp_path)
    source = tmp_path / "a.py"
    source.write_text("x = 1\n")
    first = remembered.code_digest([source])
    hashed: list[Any] = []
    real = cachedir.code_digest
    monkeypatch.setattr(cachedir, "code_digest", lambda *a: hashed.append(a) or real(*a))
    assert remembered.code_digest([source]) == first and hashed == []  # the files as they were
    source.write_text("x = 2\n")  # the same size: its times tell it apart
    os.utime(source, ns=(1, 1))
    assert remembered.code_digest([source]) == real([source], remembered.LIBRARIES) != first
    assert len(hashed) == 1
    # the same files on another machine sharing the cache folder: another digest, never theirs
    elsewhere = real([source], remembered.LIBRARIES)
    monkeypatch.setattr(cachedir, "machine", lambda: "another processor")
    assert remembered.code_digest([source]) != elsewhere
