"""Measurement files (engine.measured): the schema both ways, atomic writes, and which file a
spec's ``measured:`` key picks. No torch here: a build reads these files without it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import engine.measured as measured
from engine.errors import UserError
from engine.measured import load_measurement, measured_dir, resolve_measurement, write_measurement

from helpers import valid_doc


def put(path: Path, doc: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def test_a_written_file_reads_back_the_same(tmp_path):
    path = write_measurement(valid_doc(), tmp_path / "day37.measured" / "gpu.json")
    assert load_measurement(path, day=37) == valid_doc()
    assert [p.name for p in path.parent.iterdir()] == ["gpu.json"]  # no temporary file left


def test_a_file_from_before_prefill_was_timed_reads_with_no_prefill_passes(tmp_path):
    doc = valid_doc()
    del doc["step_time"]["prefill"]
    path = write_measurement(doc, tmp_path / "day37.measured" / "gpu.json")
    assert load_measurement(path, day=37)["step_time"]["prefill"] == []


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"schema": 1, "day": 37, ', "not valid JSON"),
        ("", "not valid JSON"),
        ("[1, 2]", "one JSON object"),
    ],
)
def test_a_corrupt_file_is_a_user_error(tmp_path, text, message):
    path = tmp_path / "gpu.json"
    path.write_text(text)
    with pytest.raises(UserError) as err:
        load_measurement(path, day=37)
    assert err.value.file == str(path) and message in err.value.message


def test_a_file_for_another_day_is_refused(tmp_path):
    path = put(tmp_path / "gpu.json", valid_doc(day=38))
    with pytest.raises(UserError) as err:
        load_measurement(path, day=37)
    assert err.value.field == "day" and "day 38" in err.value.message


@pytest.mark.parametrize(
    "breakage, field",
    [
        (lambda d: d["step_time"]["points"][0].pop("seconds"), "step_time.points.0.seconds"),
        (lambda d: d["step_time"]["points"][0].update(seconds=0), "step_time.points.0.seconds"),
        (lambda d: d["step_time"].update(points=[]), "step_time.points"),
        (lambda d: d["batching"]["policies"].pop("continuous"), "batching.policies.continuous"),
        (
            lambda d: d["batching"]["policies"]["static"].update(utilisation=1.5),
            "batching.policies.static.utilisation",
        ),
        (lambda d: d["device"].update(kind="tpu"), "device.kind"),
        (lambda d: d["device"].update(slug="NVIDIA H100"), "device.slug"),
        (lambda d: d.update(date="2026-01-31T12:00:00+02:00"), "date"),
        (lambda d: d.update(date="yesterday"), "date"),
        (lambda d: d.update(schema=2), "schema"),
        (lambda d: d.update(surprise=1), "surprise"),
        # a bench writes numbers: true is not a count of 1, nor the text "5.05" a multiple
        (lambda d: d["batching"].update(requests=True), "batching.requests"),
        (lambda d: d["batching"].update(multiple="5.05"), "batching.multiple"),
        (lambda d: d["settings"].update(slots=True), "settings.slots"),
        (lambda d: d["settings"].update(quick="yes"), "settings.quick"),
    ],
)
def test_an_invalid_file_names_the_field(tmp_path, breakage, field):
    doc = valid_doc()
    breakage(doc)
    with pytest.raises(UserError) as err:
        load_measurement(put(tmp_path / "gpu.json", doc), day=37)
    assert err.value.field == field


def test_settings_may_grow():
    doc = valid_doc()
    doc["settings"]["cuda_graphs"] = True
    assert measured.validate_measurement(doc, file="x")["settings"]["cuda_graphs"] is True


def test_an_invalid_document_is_never_written(tmp_path):
    path = put(tmp_path / "gpu.json", {"earlier": "run"})
    before = path.read_text()
    doc = valid_doc()
    doc["batching"]["multiple"] = -1
    with pytest.raises(UserError):
        write_measurement(doc, path)
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["gpu.json"]


def test_a_write_that_fails_half_way_leaves_the_old_file(tmp_path, monkeypatch):
    path = put(tmp_path / "gpu.json", {"earlier": "run"})
    before = path.read_text()

    def dump_half(doc, out, **kwargs):
        out.write('{"schema": 1, ')
        raise OSError("disk full")

    monkeypatch.setattr(json, "dump", dump_half)
    with pytest.raises(UserError, match="cannot write the measurement: disk full"):  # one line
        write_measurement(valid_doc(), path)
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["gpu.json"]


# ---------------------------------------------------------------------------------------------
# Which file a spec means


def test_measured_dir_sits_beside_the_spec():
    assert measured_dir(Path("days/day37.yaml"), 37) == Path("days/day37.measured")
    assert measured_dir("days/day4.yaml", 4) == Path("days/day04.measured")


def test_latest_is_the_newest_recorded_date_not_the_name_or_mtime(tmp_path):
    folder = tmp_path / "day37.measured"
    newest = put(folder / "a-old-name.json", valid_doc(date="2026-03-01T00:00:00Z"))
    older = put(folder / "z-name.json", valid_doc(date="2026-02-01T00:00:00Z"))
    os.utime(newest, (1, 1))  # oldest mtime: the date inside decides
    assert resolve_measurement(folder, "latest") == newest
    same = put(folder / "b.json", valid_doc(date="2026-03-01T00:00:00Z"))
    assert resolve_measurement(folder, "latest") == same  # a tie goes to the later name
    assert older.exists()


def test_latest_without_measurements_is_simulated_only(tmp_path):
    assert resolve_measurement(tmp_path / "day37.measured", "latest") is None
    (tmp_path / "day37.measured").mkdir()
    assert resolve_measurement(tmp_path / "day37.measured", "latest") is None
    assert resolve_measurement(tmp_path / "day37.measured", "none") is None


def test_latest_with_a_corrupt_file_says_which(tmp_path):
    folder = tmp_path / "day37.measured"
    put(folder / "good.json", valid_doc())
    (folder / "broken.json").write_text("{nope")
    with pytest.raises(UserError) as err:
        resolve_measurement(folder, "latest")
    assert err.value.file.endswith("broken.json")


def test_a_named_file(tmp_path):
    folder = tmp_path / "day37.measured"
    path = put(folder / "nvidia-h100-80gb-hbm3.json", valid_doc())
    assert resolve_measurement(folder, "nvidia-h100-80gb-hbm3.json") == path
    assert resolve_measurement(folder, "nvidia-h100-80gb-hbm3") == path
    with pytest.raises(UserError) as err:
        resolve_measurement(folder, "nvidia-a100-80gb")
    assert err.value.field == "measured" and "nvidia-h100-80gb-hbm3.json" in err.value.message
    for sneaky in ("../day38.measured/x.json", "/etc/passwd", ".."):
        with pytest.raises(UserError):
            resolve_measurement(folder, sneaky)


# That reading measurements imports neither torch nor engine.gpubench is checked in a fresh
# process by test_build_day37's CLI build test (one child process for every such check).


def test_latest_prefers_a_gpu_measurement_over_a_newer_cpu_one(tmp_path):
    """A CPU trial run after the GPU run must not push the GPU's figures off the posts."""
    import json as _json

    from engine.measured import resolve_measurement

    def write(name, kind, date):
        (tmp_path / name).write_text(_json.dumps({"device": {"kind": kind}, "date": date}))

    write("nvidia-h100.json", "cuda", "2026-11-01T00:00:00+00:00")
    write("cpu-amd.json", "cpu", "2026-11-30T00:00:00+00:00")
    assert resolve_measurement(tmp_path, "latest").name == "nvidia-h100.json"
    write("nvidia-h200.json", "cuda", "2026-11-15T00:00:00+00:00")
    assert resolve_measurement(tmp_path, "latest").name == "nvidia-h200.json"
    assert resolve_measurement(tmp_path, "cpu-amd").name == "cpu-amd.json"  # by name: yes
