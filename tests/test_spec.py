"""Bad input: one line naming the file and the field, exit status 2, out/ untouched."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from engine.cli import main
from engine.errors import UserError
from engine.spec import load_spec

from helpers import DAYS, copy_built, dump_yaml, load_yaml, out_snapshot


def edit(days: Path, change) -> Path:
    """Apply `change` to a copy of day37.yaml and return the edited file's path."""
    path = days / "day37.yaml"
    data = load_yaml(path.read_text())
    change(data)
    path.write_text(dump_yaml(data, sort_keys=False))
    return path


def error_line(path: Path) -> str:
    with pytest.raises(UserError) as err:
        load_spec(path)
    return err.value.line()


def test_the_real_spec_loads():
    spec = load_spec(DAYS / "day37.yaml")
    assert spec.day == 37 and spec.batching.slots == 16
    assert spec.kv_cache.contexts[0] == 512 and spec.kv_cache.contexts[-1] == 32768


def test_zero_slots(days_copy):
    path = edit(days_copy, lambda d: d["batching"].update(slots=0))
    assert error_line(path) == f"{path}: batching.slots: must be at least 1, got 0"


def test_negative_reserve(days_copy):
    path = edit(days_copy, lambda d: d["kv_cache"]["budget"].update(reserve_gib=-1))
    assert error_line(path) == f"{path}: kv_cache.budget.reserve_gib: must be at least 0, got -1"


def test_missing_field(days_copy):
    path = edit(days_copy, lambda d: d.pop("title"))
    assert error_line(path) == f"{path}: title: required field is missing"


def test_wrong_type(days_copy):
    path = edit(days_copy, lambda d: d["batching"].update(slots="sixteen"))
    assert error_line(path) == f"{path}: batching.slots: must be a whole number, got 'sixteen'"


def test_unknown_key_is_a_typo_not_ignored(days_copy):
    def typo(d):
        d["batching"]["slotz"] = d["batching"].pop("slots")

    path = edit(days_copy, typo)
    assert error_line(path) == f"{path}: batching.slotz: unknown field 'slotz'; did you mean 'slots'?"


def test_unknown_key_suggests_the_nearest(days_copy):
    path = edit(days_copy, lambda d: d["batching"].update(polices=["static"]))
    assert error_line(path) == (
        f"{path}: batching.polices: unknown field 'polices'; did you mean 'policies'?"
    )


def test_unknown_policy(days_copy):
    path = edit(days_copy, lambda d: d["batching"].update(policies=["static", "greedy"]))
    line = error_line(path)
    assert line.startswith(f"{path}: batching.policies.1: must be one of")
    assert "'greedy'" in line


def test_zero_context(days_copy):
    path = edit(days_copy, lambda d: d["kv_cache"].update(contexts=[0, 512]))
    assert error_line(path) == f"{path}: kv_cache.contexts.0: must be at least 1, got 0"


def test_malformed_yaml(days_copy):
    path = days_copy / "day37.yaml"
    path.write_text("day: 37\nbatching: [slots: 16\n")
    line = error_line(path)
    assert line.startswith(f"{path}: line ") and "malformed YAML" in line


def test_not_a_mapping(days_copy):
    path = days_copy / "day37.yaml"
    path.write_text("- just\n- a list\n")
    assert error_line(path) == f"{path}: the spec must be a mapping of fields"


def test_missing_spec_file(tmp_path):
    assert error_line(tmp_path / "day99.yaml") == f"{tmp_path / 'day99.yaml'}: no such spec file"


@pytest.mark.parametrize(
    "change, field",
    [
        (lambda d: d["batching"].update(slots=0), "batching.slots"),
        (lambda d: d["batching"]["workload"].update(trace="missing.csv"), "batching.workload.trace"),
        (lambda d: d.update(hashtag=["x"]), "hashtag"),
    ],
    ids=["zero-slots", "missing-workload", "unknown-key"],
)
def test_cli_bad_input_exits_2_and_leaves_out_alone(days_copy, built_out, tmp_path, capsys, change, field):
    out = copy_built(built_out, tmp_path / "out")  # a good build of the same spec, to keep
    before = out_snapshot(out)
    capsys.readouterr()
    path = edit(days_copy, change)
    assert main(["build", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"{path}: {field}: ")
    assert "Traceback" not in err[0]
    assert out_snapshot(out) == before


def test_a_key_given_twice_is_an_error(days_copy):
    path = days_copy / "day37.yaml"
    path.write_text(path.read_text().replace("  slots: 16\n", "  slots: 16\n  slots: 8\n"))
    line = error_line(path)
    assert line.startswith(f"{path}: line ") and "key 'slots' is given twice" in line


@pytest.mark.parametrize("key", ["? [1, 2]\n: 3\n", "? {slots: 1}\n: 3\n"])
def test_a_list_or_mapping_as_a_key_is_one_line(days_copy, key):
    path = days_copy / "day37.yaml"
    path.write_text(path.read_text() + key)
    line = error_line(path)
    assert line.startswith(f"{path}: line ") and "a list or mapping cannot be a key" in line


def test_the_fast_reader_gives_what_the_pure_python_reader_gives():
    """libyaml parses, PyYAML's Python classes construct: every shipped spec and catalog file
    means the same under both parsers."""
    from engine import yamlfile

    assert yamlfile.Loader is getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    files = sorted(DAYS.glob("*.yaml")) + sorted((DAYS.parent / "engine" / "catalog").rglob("*.yaml"))
    assert len(files) > 10
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert yaml.load(text, Loader=yamlfile.Loader) == yaml.load(text, Loader=yaml.SafeLoader), path


def test_day_past_the_series_length(days_copy):
    path = edit(days_copy, lambda d: d.update(day=61))
    assert error_line(path) == f"{path}: day 61 is past the series' length 60"


def test_hashtags_are_one_word_and_three_to_five(days_copy):
    path = edit(days_copy, lambda d: d.update(hashtags=["System Design", "LLM", "AI"]))
    assert error_line(path) == (
        f"{path}: hashtags.0: 'System Design' is not one word "
        "(letters, digits, underscores; CamelCase reads best)"
    )
    path = edit(days_copy, lambda d: d.update(hashtags=["SystemDesign"]))
    assert error_line(path) == f"{path}: hashtags: must have at least 3 item(s)"


def test_a_chart_without_its_data_is_a_spec_error(days_copy):
    path = edit(days_copy, lambda d: d.update(charts=["queue_hockey_stick"]))
    assert error_line(path) == f"{path}: chart 'queue_hockey_stick' needs a 'queueing' section"


@pytest.mark.parametrize(
    "change, expected",
    [
        (lambda d: d["batching"].update({"max-wait": 3}), "batching.max-wait: unknown field 'max-wait'"),
        (
            lambda d: d.update({"kv-cache": {}}),
            "kv-cache: unknown field 'kv-cache'; did you mean 'kv_cache'?",
        ),
        (lambda d: d.update(measured=5), "measured: must be text, got 5"),
        (lambda d: d["batching"].update(slots=True), "batching.slots: must be a whole number, got True"),
        (
            lambda d: d["kv_cache"]["model"].update(num_layers=0),
            "kv_cache.model.num_layers: must be at least 1, got 0",
        ),
        (
            lambda d: d["kv_cache"]["budget"].update(kind="guess"),
            "kv_cache.budget: kind must be one of 'reserve', 'vllm', 'given', got 'guess'",
        ),
    ],
    ids=["dash-key", "dash-section", "wrong-type-top", "bool-for-int", "inline-model", "bad-kind"],
)
def test_error_locations_are_the_users_keys(days_copy, change, expected):
    path = edit(days_copy, change)
    assert error_line(path).startswith(f"{path}: {expected}")


def test_absurd_sizes_are_typos_not_crashes(days_copy):
    path = edit(days_copy, lambda d: d["kv_cache"]["gpu"].update(memory_gib=1.0e300))
    assert error_line(path) == f"{path}: kv_cache.gpu.memory_gib: must be at most 1048576, got 1e+300"


def test_a_spec_with_several_mistakes_lists_each_on_its_own_line(tmp_path, capsys):
    """One run names every mistake: an unknown key (with its suggestion, not the missing key it
    hides), a wrong type and an impossible value, in the file's order, exit status 2."""
    from engine.cli import main

    spec = tmp_path / "day09.yaml"
    spec.write_text(
        "day: 9\nseries: {name: s, length: 60}\ntitle: T\nrepositry: r\n"
        "hashtags: [SystemDesign, Labs, LearningInPublic]\n"
        "queueing: {service_ms: 0, requests: many, utilisations: [0.5], lines: {servers: 2, load: 0.9}}\n"
    )
    assert main(["build", str(spec), "--out", str(tmp_path / "out")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [
        f"{spec}: repositry: unknown field 'repositry'; did you mean 'repository'?",
        f"{spec}: queueing.service_ms: must be greater than 0, got 0",
        f"{spec}: queueing.requests: must be a whole number, got 'many'",
    ]
    assert not (tmp_path / "out").exists()


def test_the_list_of_mistakes_is_capped(tmp_path):
    from engine.validation import MAX_REPORTED_ERRORS

    spec = tmp_path / "day09.yaml"
    spec.write_text(
        "day: 9\nseries: {name: s, length: 60}\ntitle: T\nrepository: r\n"
        "hashtags: [SystemDesign, Labs, LearningInPublic]\n"
        f"queueing: {{service_ms: 10, utilisations: [{', '.join(['2'] * 41)}], lines: {{servers: 2, load: 0.9}}}}\n"
    )
    with pytest.raises(UserError) as err:
        load_spec(spec)
    lines = err.value.lines()
    # 41 utilisations out of range and the missing requests: 42 mistakes, 19 shown, then a count.
    assert len(lines) == MAX_REPORTED_ERRORS
    assert lines[-1].endswith(f"and {42 - (MAX_REPORTED_ERRORS - 1)} more")
