"""Hostile input: each input either works or gets exactly one line naming the file and field.

Part 1 reproduces, one by one, the inputs that used to hang, eat memory, crash with a traceback
or put something false on a post. Part 2 generates inputs (hypothesis) over spec fields, traces,
config.json files, measurement files, templates, drafts and command-line flags, and holds every
one to the same rule. `make soak` runs part 2 with many more examples (HOSTILE_EXAMPLES).
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import limits
from engine.errors import UserError
from engine.spec import load_spec

from helpers import DAYS, LAB_TRACE, bounded, dump_yaml, load_yaml, one_line, run_cli

EXAMPLES = int(os.environ.get("HOSTILE_EXAMPLES", "0"))  # 0: the quick run of `make test`
QUICK = settings(
    max_examples=EXAMPLES or 40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def spec_with(tmp_path: Path, edit, name: str = "day37") -> Path:
    """A copy of days/ with days/<name>.yaml edited as a dict."""
    days = tmp_path / "days"
    if not days.exists():
        shutil.copytree(DAYS, days, ignore=shutil.ignore_patterns("*.measured"))
    path = days / f"{name}.yaml"
    data = load_yaml((DAYS / f"{name}.yaml").read_text())
    edit(data)
    path.write_text(dump_yaml(data, sort_keys=False, allow_unicode=True))
    return path


def spec_error(path: Path) -> UserError:
    with pytest.raises(UserError) as caught, bounded(path):
        load_spec(path)
    assert "\n" not in caught.value.line()
    assert caught.value.file == str(path)
    return caught.value


# ---- part 1: the reproductions --------------------------------------------------------------


def test_a_carousel_chart_named_with_a_line_break_is_one_line(tmp_path):
    """Found by the any-field test below: the unknown name is quoted as Python writes it."""
    path = spec_with(tmp_path, lambda d: d["carousel"]["slides"].__setitem__(1, {"chart": "\n"}), "day04")
    err = spec_error(path)
    assert "unknown chart '\\n'" in err.line() and err.field == "carousel.slides.1"


@pytest.mark.parametrize(
    "edit, field, words",
    [
        (lambda d: d["queueing"].update(requests=100_000_000), "queueing.requests", "at most 10000000"),
        (
            lambda d: d["queueing"]["shared"].update(servers=[1, 1_000_000_000]),
            "queueing.shared.servers.1",
            "at most 100000",
        ),
        (lambda d: d["queueing"].update(seed=True), "queueing.seed", "whole number"),
        # Near zero, these drove the simulated clock past a float: inf, then a traceback.
        (
            lambda d: d["queueing"]["shared"].update(arrival_rate=1e-320),
            "queueing.shared.arrival_rate",
            "at least",
        ),
        (lambda d: d["queueing"].update(utilisations=[1e-320]), "queueing.utilisations.0", "at least"),
        (lambda d: d["queueing"]["lines"].update(load=1e-320), "queueing.lines.load", "at least"),
    ],
    ids=["requests", "servers", "seed", "rate-1e-320", "utilisation-1e-320", "load-1e-320"],
)
def test_day04_counts_have_limits(tmp_path, edit, field, words):
    err = spec_error(spec_with(tmp_path, edit, "day04"))
    assert err.field == field and words in err.message


@pytest.mark.parametrize(
    "edit, field, words",
    [
        (lambda d: d["batching"].update(slots=2**63), "batching.slots", "at most 1000000"),
        (
            lambda d: d["batching"]["step_time"].update(seconds_per_step=1e-320),
            "batching.step_time.seconds_per_step",
            "at least",
        ),
        (lambda d: d.update(title="x" * 1000), "title", "at most 200 characters"),
        (lambda d: d["series"].update(name="   "), "series.name", "only spaces"),
        (
            lambda d: d["batching"].update(step_time={"kind": "measured", "file": "x.csv"}),
            "batching.step_time.file",
            "this kind takes no 'file' (another kind does)",
        ),
        (lambda d: d.update(repository="github.com/me/‮demo"), "repository", "control character (U+202E)"),
        (lambda d: d.update(title="LLM\nserving"), "title", "U+000A"),
        (lambda d: d.update(title="LLM serving \U0001f680"), "title", "U+1F680"),
        (
            lambda d: d["kv_cache"].update(contexts=list(range(1, 2002))),
            "kv_cache.contexts",
            "at most 1000 item",
        ),
        (lambda d: d["kv_cache"].update(block_size=10**9), "kv_cache.block_size", "at most 1024"),
        (
            lambda d: d["kv_cache"]["model"].update(num_layers=32.7),
            "kv_cache.model.num_layers",
            "whole number",
        ),
        (
            lambda d: d["kv_cache"]["model"].update(num_layers=True),
            "kv_cache.model.num_layers",
            "whole number",
        ),
        (
            lambda d: d["kv_cache"]["model"].update(num_attention_heads=32, num_kv_heads=5),
            "kv_cache.model",
            "must divide",
        ),
        (
            lambda d: d["kv_cache"]["model"].update(num_attention_heads=32, num_kv_heads=64),
            "kv_cache.model",
            "must divide",
        ),
        (lambda d: d["links_back"][0].update(day=5), None, None),  # checked at build time, below
        (lambda d: d["links_back"][0].update(day=50), "links_back", "not before day 37"),
        (lambda d: d.update(hashtags=["LLM", "LLM", "llm"]), "hashtags", "given twice"),
        (
            lambda d: d["batching"].update(
                workload={"requests": 60, "seed": True, "output_tokens": "uniform:8:40"}
            ),
            "batching.workload.seed",
            "whole number",
        ),
        (
            lambda d: d["batching"].update(workload={"requests": 60, "output_tokens": "normal:-100:1"}),
            "batching.workload.output_tokens",
            "clipped to 1",
        ),
        (
            lambda d: d["batching"].update(workload={"requests": 6000, "output_tokens": "uniform:8:40"}),
            None,
            "slot_timeline",
        ),
    ],
    ids=[
        "slots-2^63",
        "step-1e-320",
        "title-long",
        "series-blank",
        "measured-file",
        "repository-override",
        "title-newline",
        "title-emoji",
        "contexts",
        "block-size",
        "layers-fraction",
        "layers-bool",
        "kv-heads-divide",
        "kv-heads-exceed",
        "link-day-5",
        "link-later-day",
        "duplicate-hashtags",
        "seed-true",
        "normal-clips-all",
        "timeline-6000",
    ],
)
def test_day37_impossible_values_are_one_line(tmp_path, edit, field, words):
    path = spec_with(tmp_path, edit)
    if words is None:
        return
    err = spec_error(path)
    if field is not None:
        assert err.field == field
    assert words in err.message


def test_a_copied_spec_that_still_says_day_37_is_refused(tmp_path):
    path = spec_with(tmp_path, lambda d: None)
    copy_path = path.with_name("day38.yaml")
    copy_path.write_text(path.read_text())
    err = spec_error(copy_path)
    assert err.field == "day" and "named for day 38 but says day 37" in err.message


def test_a_digit_led_hashtag_is_a_hashtag(tmp_path):
    path = spec_with(tmp_path, lambda d: d.update(hashtags=["SystemDesign", "LLM", "100DaysOfCode"]))
    assert load_spec(path).hashtags[-1] == "100DaysOfCode"
    bad = spec_with(tmp_path, lambda d: d.update(hashtags=["SystemDesign", "LLM", "2024"]))
    assert spec_error(bad).field == "hashtags.2"


def test_unknown_field_hints_name_every_form(tmp_path):
    err = spec_error(spec_with(tmp_path, lambda d: d["batching"]["workload"].update(sed=3)))
    assert err.message == "unknown field 'sed'; did you mean 'seed'?"


def test_valid_large_values_build_and_say_them_formatted(tmp_path):
    """slots 1024 and a 1,000-layer model are valid: they build, printed with separators,
    instead of failing the build with the shipped template blamed."""

    from engine.pipeline import TEMPLATES
    from engine.render import slides
    from engine.render.context import template_context

    def edit(d):
        d["batching"]["slots"] = 1024
        d["kv_cache"]["model"].update(num_layers=1000, num_kv_heads=1024, head_dim=8)
        d["charts"], d["linkedin_image"] = [], None
        d.pop("carousel")  # its words are rendered below; drawing its pages is not the point
        d["links_back"][0].pop("spec")
        d["hashtags"] = ["SystemDesign", "LLM", "100DaysOfCode"]

    code, _, err = run_cli("build", str(spec_with(tmp_path, edit)), "--out", str(tmp_path / "out"))
    assert code == 0, err
    linkedin = (tmp_path / "out" / "day37" / "linkedin.md").read_text()
    assert "on 1,024 slots" in linkedin and "(1,000 layers, 1,024 KV heads)" in linkedin
    assert "#100DaysOfCode" in linkedin
    assert not re.search(r"\b(nan|inf|Infinity)\b", linkedin)
    # The carousel's words come from a shipped template too: they say the same values formatted.
    results = json.loads((tmp_path / "out" / "day37" / "results.json").read_text())
    carousel = load_spec(DAYS / "day37.yaml").carousel
    assert carousel is not None
    texts = slides.render_text(carousel, template_context(results), TEMPLATES, "day37")
    words = " ".join(f"{t.headline} {t.body}" for t in texts)
    assert "on 1,024 slots" in words
    assert not re.search(r"\b(nan|inf|Infinity)\b", words)


def test_a_link_to_the_wrong_spec_is_refused_at_build(tmp_path):
    path = spec_with(tmp_path, lambda d: d["links_back"][0].update(day=5))
    code, _, err = run_cli("build", str(path), "--out", str(tmp_path / "out"))
    assert code == 2
    assert one_line(err) == f"{path}: links_back.0.day: day 5, but day04.yaml is the spec of day 4"
    assert not (tmp_path / "out" / "day37").exists()


def test_a_trace_too_long_for_the_timeline_chart_is_one_line(tmp_path):
    def edit(d):
        d["batching"].update(workload={"trace": "big.csv"})
        d["links_back"][0].pop("spec")  # Day 4's figure is not what this test is about

    path = spec_with(tmp_path, edit)
    (path.parent / "big.csv").write_text("output_tokens\n" + "5\n" * 5001)
    code, _, err = run_cli("build", str(path), "--out", str(tmp_path / "out"))
    assert code == 2
    assert one_line(err).startswith(f"{path}: charts: chart 'slot_timeline' draws one bar per request")


CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "torch_dtype": "bfloat16",
    "max_position_embeddings": 8192,
}


@pytest.mark.parametrize(
    "patch, field",
    [
        ({"num_hidden_layers": 10**12}, "num_hidden_layers"),
        ({"num_hidden_layers": "32"}, "num_hidden_layers"),
        ({"hidden_size": "big"}, "hidden_size"),
        ({"num_hidden_layers": 32.7}, "num_hidden_layers"),
        ({"num_hidden_layers": True}, "num_hidden_layers"),
        ({"num_key_value_heads": 5}, "num_key_value_heads"),
        ({"num_key_value_heads": 64}, "num_key_value_heads"),
        ({"vocab_size": -1}, "vocab_size"),
        ({"sliding_window": -5}, "sliding_window"),
        ({"kv_lora_rank": 512, "qk_rope_head_dim": 64}, "qk_nope_head_dim"),
        ({"kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128}, "v_head_dim"),
    ],
)
def test_config_json_that_cannot_be_a_model_is_one_line(tmp_path, patch, field):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(CONFIG, **patch)))
    code, _, err = run_cli("kv", "--model", str(path), "--gpu", "h100-80gb")
    assert code == 2
    assert one_line(err).startswith(f"{path}: {field}: ")


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["kv", "--model", "llama-3-8b", "--gpu", "h100-80gb", "--non-torch-gib", "nan"], "--non-torch-gib"),
        (["kv", "--model", "llama-3-8b", "--gpu", "h100-80gb", "--non-torch-gib", "inf"], "--non-torch-gib"),
        (
            ["kv", "--model", "llama-3-8b", "--gpu", "h100-80gb", "--non-torch-gib", "1e300"],
            "--non-torch-gib",
        ),
        (
            ["kv", "--model", "llama-3-8b", "--gpu", "h100-80gb", "--max-num-batched-tokens", "0"],
            "--max-num-batched-tokens",
        ),
        (["simulate", "--workload", str(LAB_TRACE), "--slots", "4", "--max-wait", "-1"], "--max-wait"),
        (["simulate", "--workload", str(LAB_TRACE), "--slots", "4", "--max-wait", "nan"], "--max-wait"),
        (
            ["simulate", "--workload", str(LAB_TRACE), "--slots", "4", "--step-time", "unit:inf"],
            "--step-time",
        ),
        (["simulate", "--workload", str(LAB_TRACE), "--slots", str(2**63)], "--slots"),
        (
            ["simulate", "--requests", "9", "--output-tokens", "5", "--slots", "2", "--arrival-rate", "1"]
            + ["--arrival-cv", "1.3e154"],  # cv² overflowed in the gamma draw
            "--arrival-cv",
        ),
    ],
)
def test_flags_out_of_range_are_one_line(argv, flag):
    code, _, err = run_cli(*argv)
    assert code == 2
    assert one_line(err).startswith(f"{flag}: ")


def test_a_gamma_burstier_than_its_limit_is_a_spec_error_not_an_overflow():
    from engine.validation import validate
    from engine.workload import GeneratedWorkload

    data = {"requests": 5, "output_tokens": 5, "arrivals": {"kind": "gamma", "rate": 1, "cv": 1.3e154}}
    with pytest.raises(UserError) as err:
        validate(GeneratedWorkload, data, file="day.yaml")
    assert (
        err.value.line()
        == f"day.yaml: arrivals.cv: must be at most {limits.MAX_ARRIVAL_CV:.0f}, got 1.3e+154"
    )


def _template_case(tmp_path: Path, body: bytes) -> tuple[int, str]:
    from engine.render import posts

    root = tmp_path / "templates"
    (root / "day05").mkdir(parents=True, exist_ok=True)
    (root / "day05" / "t.md.j2").write_bytes(body)
    try:
        posts.check_no_typed_numbers(root, ["day05/t.md.j2"])
        return 0, posts.render(posts.environment(root), "day05/t.md.j2", {"x": 5, "title": "T"})
    except UserError as err:
        return 2, err.line()


@pytest.mark.parametrize(
    "body, words",
    [
        (b"caf\xe9 {{ title }}", "not UTF-8 text"),
        (b"{% include 'day05/none.j2' %}", "which does not exist"),
        (b"{% include 'day05/t.md.j2' %}", "includes itself"),
        (b"{{ title | gib }}", "failed while rendering (TypeError"),
        (b"{{ (x / (x - x)) | fixed }}", "failed while rendering (ZeroDivisionError"),
    ],
)
def test_template_mistakes_are_one_line(tmp_path, body, words):
    code, line = _template_case(tmp_path, body)
    assert code == 2 and line.startswith("templates/day05/t.md.j2") and words in line
    assert "\n" not in line


def test_a_folder_named_like_a_template_is_one_line(tmp_path):
    from engine.render import posts

    root = tmp_path / "templates"
    (root / "day05" / "t.md.j2").mkdir(parents=True)
    with pytest.raises(UserError, match="is a folder, not a template file"):
        posts.render(posts.environment(root), "day05/t.md.j2", {})


def test_a_thread_image_that_is_not_there_fails_the_check(tmp_path):
    from engine.platforms.day_dir import check_day_dir

    (tmp_path / "linkedin.md").write_text("Hook line.\n\n#A #B #C\n")
    (tmp_path / "x-thread.md").write_text("1/2 First.\n![chart](gone.png)\n---\n2/2 Second.\n")
    report = check_day_dir(tmp_path)
    assert any("attaches gone.png, which is not in the folder" in str(v) for v in report.violations)


def test_a_huge_x_post_is_refused_by_size_quickly(tmp_path):
    import time

    (tmp_path / "x-thread.md").write_text("a" * (10 * 2**20))
    started = time.perf_counter()
    code, _, err = run_cli("check", str(tmp_path))
    assert code == 2 and "over the limit of 256 KiB for a draft file" in one_line(err)
    assert time.perf_counter() - started < 2


def test_another_days_results_json_being_a_list_does_not_break_the_index(tmp_path):
    from engine.render import review

    (tmp_path / "day04").mkdir()
    (tmp_path / "day04" / "results.json").write_text("[]")
    review.write_index(tmp_path)
    assert "day04" in (tmp_path / "index.html").read_text()


def _measurement(tmp_path: Path, edit) -> Path:
    from helpers import valid_doc

    doc = valid_doc()
    edit(doc)
    path = tmp_path / "day37.measured" / "gpu.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    "edit, field",
    [
        (
            lambda d: d["batching"]["policies"]["continuous"].update(tokens=10**30, tokens_per_second=5e29),
            "batching.policies.continuous.tokens",
        ),
        (
            lambda d: d["batching"]["policies"]["continuous"].update(tokens_per_second=9e9),
            "batching.policies.continuous.tokens_per_second",
        ),
        (
            lambda d: d["batching"]["policies"]["continuous"].update(tokens_per_second=401.0 * 2),
            "batching.policies.continuous",
        ),
        (lambda d: d["step_time"]["points"][0].update(seconds=float("inf")), "step_time.points.0.seconds"),
        (lambda d: d.update(cuda=None), "device.kind"),
    ],
    ids=["tokens-1e30", "rate-cap", "rate-inconsistent", "inf-seconds", "cpu-as-cuda"],
)
def test_measurements_that_cannot_be_true_are_one_line(tmp_path, edit, field):
    from engine.measured import load_measurement

    path = _measurement(tmp_path, edit)
    with pytest.raises(UserError) as caught:
        load_measurement(path, day=37)
    assert caught.value.file == str(path) and caught.value.field == field
    assert "\n" not in caught.value.line()


def test_infinity_in_a_measurement_is_not_json(tmp_path):
    from engine.measured import read_document

    path = tmp_path / "m.json"
    path.write_text('{"step_time": {"points": [{"batch": 1, "context": 1, "seconds": Infinity}]}}')
    with pytest.raises(UserError, match="Infinity is not a JSON number"):
        read_document(path)


# ---- part 2: generated hostile input ----------------------------------------------------------

_HOSTILE_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, -1, 999, 1000, 1024, 10**6, 2**31, 2**63, 2**64]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e300, 0.5, 32.7]),
    st.text(max_size=30),
    st.sampled_from(["", "x" * 300, "LLM\nx", "\U0001f680", "uniform:8:40", "normal:-100:1", "1_000"]),
)
_HOSTILE = st.one_of(
    _HOSTILE_SCALARS,
    st.lists(_HOSTILE_SCALARS, max_size=4),
    st.dictionaries(st.sampled_from(["kind", "value", "x", "day"]), _HOSTILE_SCALARS, max_size=2),
)


def _paths(node, prefix=()):
    """Every path to a value in the spec's dict."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield prefix + (key,)
            yield from _paths(value, prefix + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield prefix + (i,)
            yield from _paths(value, prefix + (i,))


_SPECS = {name: load_yaml((DAYS / f"{name}.yaml").read_text()) for name in ("day37", "day04")}
_SPEC_PATHS = [(name, p) for name, data in _SPECS.items() for p in _paths(data)]


@settings(QUICK, max_examples=EXAMPLES or 25)
@given(where=st.sampled_from(_SPEC_PATHS), value=_HOSTILE)
def test_any_spec_field_set_to_anything_loads_or_is_one_line(tmp_path_factory, where, value):
    name, path_in = where
    data = copy.deepcopy(_SPECS[name])
    node = data
    for part in path_in[:-1]:
        node = node[part]
    node[path_in[-1]] = value
    folder = tmp_path_factory.mktemp("spec")
    path = folder / f"{name}.yaml"
    try:
        text = dump_yaml(data, sort_keys=False, allow_unicode=True)
    except yaml.YAMLError:
        return
    path.write_text(text)
    try:
        load_spec(path)
    except UserError as err:
        assert err.file == str(path) and "\n" not in err.line()
        # A check across fields (day against the series, a chart against its section) names
        # them in its words; every other error names the field.
        assert err.field or re.match(r"(day \d+ is past|chart '|linkedin_image ')", err.message), err.line()


@QUICK
@given(
    lines=st.lists(
        st.lists(
            st.one_of(
                st.integers(-5, 2 * limits.MAX_TOKENS).map(str),
                st.floats(allow_nan=True, allow_infinity=True).map(repr),
                st.text(max_size=6),
            ),
            min_size=0,
            max_size=4,
        ),
        max_size=8,
    ),
    header=st.sampled_from(
        [
            "output_tokens",
            "output_tokens,prompt_tokens,arrival_time",
            "arrival_time,output_tokens",
            "x,output_tokens,output_tokens",
            "prompt_tokens",
            "",
        ]
    ),
)
def test_any_trace_loads_or_is_one_line(tmp_path_factory, lines, header):
    from engine.workload import load_trace

    path = tmp_path_factory.mktemp("trace") / "t.csv"
    path.write_text(
        header + "\n" + "\n".join(",".join(cells) for cells in lines),
        encoding="utf-8",
        errors="surrogatepass",
    )
    try:
        w = load_trace(path)
    except UserError as err:
        assert err.file == str(path) and "\n" not in err.line()
        return
    assert w.n >= 1 and w.output_tokens.min() >= 1 and w.output_tokens.max() <= limits.MAX_TOKENS


_CONFIG_KEYS = sorted(
    set(CONFIG)
    | {
        "head_dim",
        "sliding_window",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "qk_nope_head_dim",
        "v_head_dim",
        "num_local_experts",
        "num_experts_per_tok",
        "layer_types",
        "text_config",
    }
)


@QUICK
@given(patch=st.dictionaries(st.sampled_from(_CONFIG_KEYS), _HOSTILE, min_size=1, max_size=3))
def test_any_config_json_loads_or_is_one_line(tmp_path_factory, patch):
    from engine.catalog import load_model
    from engine.kvcache import VllmBudget, plan_kv_cache

    path = tmp_path_factory.mktemp("cfg") / "config.json"
    try:
        path.write_text(json.dumps(dict(CONFIG, **patch)))
    except (ValueError, TypeError):
        return
    try:
        model = load_model(str(path))
        plan = plan_kv_cache(model, 80 * 2**30, VllmBudget())
    except UserError as err:
        assert "\n" not in err.line() and (err.file == str(path) or err.field)
        return
    assert plan.num_blocks >= 0


@QUICK
@given(
    where=st.sampled_from(
        [
            "day",
            "device.memory_bytes",
            "step_time.points.0.seconds",
            "batching.policies.static.tokens",
            "batching.multiple",
            "memory.contexts.0.context",
            "settings.slots",
            "device.kind",
            "cuda",
            "batching.policies.continuous.tokens_per_second",
        ]
    ),
    value=_HOSTILE,
)
def test_any_measurement_validates_or_is_one_line(tmp_path_factory, where, value):
    from engine.measured import load_measurement

    def edit(doc):
        node = doc
        parts = [int(p) if p.isdigit() else p for p in where.split(".")]
        for part in parts[:-1]:
            node = node[part]
        node[parts[-1]] = value

    try:
        path = _measurement(tmp_path_factory.mktemp("m"), edit)
    except (ValueError, TypeError):
        return
    try:
        doc = load_measurement(path, day=37)
    except UserError as err:
        assert err.file == str(path) and "\n" not in err.line() and err.field
        return
    for policy in doc["batching"]["policies"].values():
        assert math.isfinite(policy["tokens_per_second"]) and policy["tokens_per_second"] <= 1e9


@QUICK
@given(
    body=st.lists(
        st.one_of(
            st.text(max_size=20),
            st.sampled_from(
                [
                    "{{ x }}",
                    "{{ title }}",
                    "{{ x | thousands }}",
                    "{{ title | gib }}",
                    "{% include 'day05/t.md.j2' %}",
                    "{% include 'nope' %}",
                    "{{ x / 0 }}",
                    "{{ 5 }}",
                    "{{",
                    "{% for a in x %}{{ a }}{% endfor %}",
                    "{{ y }}",
                    "{{ (x * 1000) }}",
                    "{{ x | fixed }}",
                ]
            ),
        ),
        max_size=5,
    )
)
def test_any_template_renders_or_is_one_line(tmp_path_factory, body):
    code, line = _template_case(
        tmp_path_factory.mktemp("tpl"), "".join(body).encode("utf-8", "surrogatepass")
    )
    if code == 2:
        assert line.startswith("templates/day05/") and "\n" not in line


@QUICK
@given(thread=st.text(max_size=400), linkedin=st.text(max_size=200))
def test_any_draft_is_checked_or_is_one_line(tmp_path_factory, thread, linkedin):
    from engine.platforms.day_dir import check_day_dir

    folder = tmp_path_factory.mktemp("drafts")
    (folder / "x-thread.md").write_text(thread, encoding="utf-8", errors="surrogatepass")
    (folder / "linkedin.md").write_text(linkedin, encoding="utf-8", errors="surrogatepass")
    try:
        report = check_day_dir(folder)
    except UserError as err:
        assert "\n" not in err.line() and err.file
        return
    assert all("\n" not in str(v) for v in report.violations)


_FLAGS = {
    "kv": [
        "--tp",
        "--block-size",
        "--max-model-len",
        "--max-num-batched-tokens",
        "--non-torch-gib",
        "--gpu-util",
        "--kv-memory-gib",
        "--reserve-gib",
        "--gpu-memory-gib",
        "--context",
    ],
    "simulate": [
        "--slots",
        "--max-wait",
        "--seed",
        "--arrival-rate",
        "--arrival-cv",
        "--step-time",
        "--max-num-seqs",
        "--block-size",
        "--num-blocks",
        "--max-num-batched-tokens",
        "--output-tokens",
    ],
}
_FLAG_VALUES = st.one_of(
    st.sampled_from(
        [
            "0",
            "-1",
            "nan",
            "inf",
            "-inf",
            "1e300",
            "2e9",
            str(2**63),
            "0.5",
            "",
            "abc",
            "unit:0",
            "unit:nan",
            "unit:-1",
            "measured:/dev/null",
            "roofline",
            "uniform:8:40",
            "normal:-100:1",
            "zipf:1:5",
            "0.9*uniform:8:40+0.2*constant:5",
        ]
    ),
    st.integers(-(2**66), 2**66).map(str),
    st.floats().map(repr),
    st.text(max_size=8),
)


@QUICK
@given(command=st.sampled_from(sorted(_FLAGS)), data=st.data())
def test_any_flag_value_runs_or_is_one_line(command, data):
    flag = data.draw(st.sampled_from(_FLAGS[command]))
    value = data.draw(_FLAG_VALUES)
    base = (
        ["kv", "--model", "llama-3-8b", "--gpu", "h100-80gb", "--json"]
        if command == "kv"
        else ["simulate", "--requests", "50", "--output-tokens", "uniform:1:20", "--slots", "4", "--json"]
    )
    if flag in base:
        i = base.index(flag)
        base = base[:i] + base[i + 2 :]
    if command == "simulate" and flag in (
        "--num-blocks",
        "--max-num-seqs",
        "--block-size",
        "--max-num-batched-tokens",
    ):
        base += ["--policy", "paged", "--model", "llama-3-8b", "--gpu", "h100-80gb"]
    if flag == "--arrival-cv":
        base += ["--arrival-rate", "10"]
    if flag == "--slots" or value.startswith("-"):
        argv = base + [f"{flag}={value}"]
    else:
        argv = base + [flag, value]
    code, out, err = run_cli(*argv)
    assert code in (0, 2), (argv, err)
    if code == 2:
        one_line(err)
    else:
        assert not re.search(r"\b(nan|NaN|Infinity|inf)\b", out), out


def test_zero_batched_tokens_is_not_quietly_the_default():
    from engine.catalog import load_model
    from engine.kvcache import VllmBudget, plan_kv_cache

    with pytest.raises(UserError, match="max_num_batched_tokens must be at least 1, got 0"):
        plan_kv_cache(load_model("llama-3-8b"), 80 * 2**30, VllmBudget(max_num_batched_tokens=0))


def _leaf(data, path_in):
    node = data
    for part in path_in:
        node = node[part]
    return node


_NUMBERS = [
    (name, p)
    for name, p in _SPEC_PATHS
    if isinstance(_leaf(_SPECS[name], p), (int, float))
    and not isinstance(_leaf(_SPECS[name], p), bool)
    and p[0] not in ("day", "series")
]


@pytest.mark.skipif(not EXAMPLES, reason="full builds: make soak")
@settings(
    max_examples=max(EXAMPLES // 20, 10),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(where=st.sampled_from(_NUMBERS), scale=st.sampled_from([0.001, 0.5, 2, 10, 1000, 10**6]))
def test_soak_any_valid_number_builds_a_post_without_nan_or_inf(tmp_path_factory, where, scale):
    """Scaled numbers either build a post that says no `nan`/`inf`, or are one line."""
    name, path_in = where
    folder = tmp_path_factory.mktemp("soak")

    def edit(d):
        node = _leaf(d, path_in[:-1])
        old = node[path_in[-1]]
        node[path_in[-1]] = type(old)(old * scale) if isinstance(old, int) else old * scale
        d["charts"], d["linkedin_image"] = [], None
        for link in d.get("links_back", []):
            link.pop("spec", None)

    path = spec_with(folder, edit, name)
    code, _, err = run_cli("build", str(path), "--out", str(folder / "out"))
    if code == 2:
        one_line(err)
        return
    assert code == 0, err
    for draft in (folder / "out").glob("day*/*.md"):
        text = draft.read_text()
        assert not re.search(r"\b(nan|NaN|inf|Infinity)\b", text), (where, scale, text)


# ---- part 3: every reader bounded, and plausible values --------------------------------------
# Each case is one defect class: a file the engine reads, written as an attacker or a careless
# person would, and the one line (exit status 2) it must get instead of a traceback, a hang or a
# silent wrong number. All run in-process, each in a few milliseconds.

BILLION_LAUGHS = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9 if prev else ['lol'] * 9)}]\n"
    for prev, name in zip([None, *"abcdefgh"], "abcdefghi")
)


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _spec_text(tmp_path: Path, text: str, name: str = "day05") -> list[str]:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return ["build", str(path), "--out", str(tmp_path / "out")]


def _config(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "config.json"
    path.write_text(text)
    return ["kv", "--model", str(path), "--gpu", "h100-80gb"]


def _measured(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "gpu.json"
    path.write_text(text)
    return ["simulate", "--workload", str(LAB_TRACE), "--slots", "4", "--step-time", f"measured:{path}"]


def _results(tmp_path: Path, text: str) -> list[str]:
    (tmp_path / "out" / "day37").mkdir(parents=True)
    (tmp_path / "out" / "day37" / "results.json").write_text(text)
    return ["review", "--out", str(tmp_path / "out")]


def _trace(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "t.csv"
    path.write_text(text)
    return ["simulate", "--workload", str(path), "--slots", "4"]


def _media(tmp_path: Path, name: str, data: bytes) -> list[str]:
    day = tmp_path / "out" / "day37"
    day.mkdir(parents=True)
    (day / "linkedin.md").write_text("Hook line.\n\n#A #B #C\n")
    (day / name).write_bytes(data)
    return ["check", str(day)]


_PDF_BAD_BOX = b"%PDF-1.4\n1 0 obj << /Type /Page /MediaBox [0 0 1.2.3 1350] >> endobj\n%%EOF\n"


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda t: _spec_text(t, "day: " + "9" * 5000 + "\n"), "a 5,000-digit integer, over the limit of 64"),
        (lambda t: _spec_text(t, BILLION_LAUGHS), "its aliases stand for more than 100,000 values"),
        (
            lambda t: _config(t, json.dumps(CONFIG)[:-1] + ', "vocab_size": ' + "7" * 5000 + "}"),
            "5,000-digit",
        ),
        (lambda t: _config(t, '{"a": ' + "[" * 200 + "]" * 200 + "}"), "nested more than 64 levels deep"),
        (
            lambda t: _measured(t, '{"step_time": {"points": [{"seconds": 1e400}]}}'),
            "past the largest number",
        ),
        (lambda t: _measured(t, '{"day": ' + "3" * 5000 + "}"), "5,000-digit integer"),
        (lambda t: _results(t, '{"day": 37, "inputs": {"x": NaN}}'), "NaN is not a JSON number"),
        (lambda t: _results(t, '{"day": 37, "charts": 5, "inputs": {}}'), "not a build's results"),
        (lambda t: _trace(t, "output_tokens,promt_tokens\n40,100\n"), "did you mean 'prompt_tokens'?"),
        (
            lambda t: ["kv", "--model", "llama-3-8b", "--gpu", "h100-80gb", "--gpu-memory-gib", "0.000001"],
            "llama-3-8b leaves no memory for the KV cache on this GPU",
        ),
        (lambda t: _media(t, "anim.gif", b"GIF89a" + b"\x00" * 20), "not a readable image"),
        (lambda t: _media(t, "carousel.pdf", _PDF_BAD_BOX), "MediaBox of page 1 is not four numbers"),
    ],
    ids=[
        "yaml-5000-digit-day",
        "yaml-alias-bomb",
        "config-5000-digit-int",
        "config-deep-nesting",
        "measurement-1e400",
        "measurement-5000-digit-int",
        "results-nan",
        "results-wrong-types",
        "csv-misspelt-column",
        "kv-weights-bigger-than-the-card",
        "check-corrupt-gif",
        "check-pdf-bad-mediabox",
    ],
)
def test_hostile_files_are_one_line_and_change_nothing(tmp_path, make, words):
    import time

    argv = make(tmp_path)
    out = tmp_path / "out"
    before = _tree(out) if out.exists() else {}
    started = time.perf_counter()
    code, _, err = run_cli(*argv)
    assert code == 2, err
    assert words in one_line(err)
    assert time.perf_counter() - started < 2
    assert (_tree(out) if out.exists() else {}) == before


def test_yaml_merge_keys_work_and_own_keys_stay_unique():
    from engine import yamlfile

    text = "base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\n"
    assert yamlfile.parse(text, "m.yaml")["other"] == {"x": 1, "y": 3}  # its own key wins
    with pytest.raises(UserError, match="key 'y' is given twice"):
        yamlfile.parse("base: &b {x: 1}\nother:\n  <<: *b\n  y: 3\n  y: 4\n", "m.yaml")


def test_a_binary_value_in_a_spec_is_refused_not_decoded():
    """`title: !!binary aGVsbG8=` was taken as the title "hello": words no one reading the spec
    saw. A spec holds text: one line naming the place."""
    from engine import yamlfile

    with pytest.raises(UserError, match="a !!binary value is not text a spec holds") as err:
        yamlfile.parse("day: 5\ntitle: !!binary aGVsbG8=\n", "s.yaml")
    assert err.value.line().startswith("s.yaml: ")


def test_a_spec_past_the_value_limit_is_told_whether_aliases_made_it_so():
    """A document of more values than the limit is refused either way; the message blames the
    aliases only where there are aliases (20,000 set values, written out, are no alias bomb)."""
    import yaml

    from engine import yamlfile

    written = yaml.compose("\n".join(f"k{i}: {i}" for i in range(40)))
    with pytest.raises(UserError, match="it holds more than 50 values, the stated limit of one spec"):
        yamlfile.check_expanded(written, "s.yaml", values=50)
    aliased = yaml.compose("a: &a [1, 2, 3, 4, 5]\nb: [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]")
    with pytest.raises(UserError, match="its aliases stand for more than 50 values"):
        yamlfile.check_expanded(aliased, "s.yaml", values=50)


def test_json_limits_name_the_field():
    cases = {
        '{"a": [1, ' + "9" * 100 + "]}": "f.json: a.1: a 100-digit integer, over the limit of 64 digits",
        '{"a": {"b": -Infinity}}': "f.json: a.b: -Infinity is not a JSON number",
        '{"a": 1e400}': "f.json: a: 1e400 is past the largest number a float holds",
        '{"a": ' + "[" * 65 + "]" * 65 + "}": "f.json: a: nested more than 64 levels deep",
    }
    for text, line in cases.items():
        with pytest.raises(UserError) as caught:
            limits.load_json(text, "f.json", "results")
        assert caught.value.line() == line
    assert limits.load_json('{"a": [1, 2.5, "' + "9" * 100 + '"]}', "f.json", "results")["a"][1] == 2.5


def test_the_day_folders_records_are_read_within_limits(tmp_path):
    """A deep .manifest.json stops the build with one line; a .base.json with 1e400 is no base
    (the edit is kept whole); a sweep line nested past the limit is a point computed again."""
    from engine import outdir
    from engine.outdir.manifest import read_base
    from engine.sweep.store import ResultStore

    target = tmp_path / "day37"
    staging = outdir.Staging.create(target)
    (staging.path / "linkedin.md").write_text("v1\n")
    outdir.commit(staging)
    (target / outdir.MANIFEST).write_text('{"files": ' + "[" * 100 + "]" * 100 + "}")
    staging = outdir.Staging.create(target)
    (staging.path / "linkedin.md").write_text("v2\n")
    with pytest.raises(UserError, match=r"unreadable \(nested more than 64 levels deep\)"):
        outdir.commit(staging)
    assert (target / "linkedin.md").read_text() == "v1\n"
    (target / outdir.BASE).write_text('{"linkedin.md": 1e400}')
    assert read_base(target) == {}
    points = tmp_path / "points.jsonl"
    good = json.dumps({"key": "k", "point": {}, "metrics": {"m": 1.0}})
    points.write_text(
        '{"key": "d", "metrics": ' + "[" * 100 + "\n" + '{"key": "n", "metrics": {"m": NaN}}\n' + good + "\n"
    )
    assert ResultStore(points).results == {"k": {"m": 1.0}}


def test_a_figures_file_nested_past_the_limit_is_the_judges_error(tmp_path):
    from engine.lab.runner import _read_figures

    path = tmp_path / "figures.json"
    path.write_text('{"labkit": 1, "figures": {"t": {"value": ' + "1" * 70 + ', "unit": "s"}}}')
    assert _read_figures(path) == {
        "error": "figures.t.value: a 70-digit integer, over the limit of 64 digits"
    }


def test_the_lab_folder_hash_refuses_a_huge_file_unread(tmp_path):
    import time

    from engine.lab import labfiles

    (tmp_path / "lab.py").write_text("print(1)\n")
    with (tmp_path / "data.bin").open("wb") as f:
        f.truncate(7 * 2**30)  # sparse: 7 GiB on paper, nothing on disk; reading it would take minutes
    started = time.perf_counter()
    with pytest.raises(ValueError, match="holds over 64 MiB"):
        labfiles.content_hash(tmp_path)
    assert time.perf_counter() - started < 1
    (tmp_path / "data.bin").unlink()
    import hashlib

    name, data = b"lab.py", b"print(1)\n"  # the digest, worked by hand: length-prefixed path and bytes
    want = hashlib.sha256(
        len(name).to_bytes(8, "big") + name + len(data).to_bytes(8, "big") + data
    ).hexdigest()
    assert labfiles.content_hash(tmp_path) == want


@pytest.mark.parametrize(
    "edit, field, words",
    [
        (lambda d: d.update(date="2999-01-01T00:00:00Z"), "date", "is in the future"),
        (
            lambda d: d["device"].update(memory_bytes=1),
            "memory.weights_bytes",
            "do not fit in the device's 1 bytes",
        ),
        (
            lambda d: d["settings"]["model"].update(num_heads=32, num_kv_heads=5),
            "settings.model",
            "num_kv_heads (5) must divide num_heads (32)",
        ),
    ],
    ids=["date-2999", "weights-bigger-than-the-card", "heads-do-not-divide"],
)
def test_a_measurement_that_could_not_have_happened_is_one_line(tmp_path, edit, field, words):
    from engine.measured import load_measurement

    path = _measurement(tmp_path, edit)
    with pytest.raises(UserError) as caught:
        load_measurement(path, day=37)
    assert (caught.value.file, caught.value.field) == (str(path), field)
    assert words in caught.value.message and "\n" not in caught.value.line()


def test_a_date_within_the_clock_skew_is_accepted():
    from datetime import UTC, datetime, timedelta

    from engine.validation import recorded_date

    soon = (datetime.now(UTC) + timedelta(seconds=limits.CLOCK_SKEW_SECONDS - 3600)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    assert recorded_date(soon) == soon
    later = (datetime.now(UTC) + timedelta(seconds=limits.CLOCK_SKEW_SECONDS + 3600)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    with pytest.raises(ValueError, match="is in the future"):
        recorded_date(later)


def test_a_negative_duration_size_or_rate_is_refused_but_a_negative_change_is_not(tmp_path):
    from engine.lab import store
    from engine.validation import validate

    with pytest.raises(UserError) as caught:
        validate(store.Figure, {"value": -92, "unit": "ns", "about": "latency"}, file="lab.json")
    assert caught.value.line() == "lab.json: a time cannot be negative, got -92 ns"
    for unit in ("MiB", "GB/s", "ops/s"):
        with pytest.raises(UserError):
            validate(store.Figure, {"value": -1, "unit": unit, "about": "x"}, file="lab.json")
    assert validate(store.Figure, {"value": -5, "unit": "%", "about": "change"}, file="lab.json").value == -5
    set_value = spec_error(
        spec_with(tmp_path, lambda d: d.setdefault("given", {}).update(wait={"value": -5, "unit": "ms"}))
    )
    assert (set_value.field, set_value.message) == ("given.wait", "a time cannot be negative, got -5 ms")
    table = {"columns": [["depth", "count"], ["p50", "us"]], "rows": [[1, 4.5], [2, -7.9]]}
    with pytest.raises(UserError, match="row 2, column p50: a time cannot be negative"):
        validate(store.Table, table, file="lab.json")


@pytest.mark.parametrize("value", [5e-324, 1e-300, -1e-20, 1e300, 1.7976931348623157e308, -1e19])
def test_a_figure_past_any_measurement_is_refused_by_its_field(tmp_path, value):
    """A subnormal or a 1e300 in a lab's figure, a table's cell or a set value is a corrupt or
    hand-edited file: one line naming the field (it printed as a 300-digit number, or reached a
    template as a division by nothing and was blamed on the template); 0 stays a figure."""
    from engine.lab import store
    from engine.validation import validate

    with pytest.raises(UserError) as caught:
        validate(store.Figure, {"value": value, "unit": "%", "about": "x"}, file="lab.json")
    assert "is past what a measurement or a setting holds" in caught.value.line()
    table = {"columns": [["depth", "count"], ["p50", "%"]], "rows": [[1, 4.5], [2, value]]}
    with pytest.raises(UserError, match="row 2, column p50: .* is past what"):
        validate(store.Table, table, file="lab.json")
    set_value = spec_error(
        spec_with(tmp_path, lambda d: d.setdefault("given", {}).update(share={"value": value, "unit": "%"}))
    )
    assert set_value.field in ("given.share", "given.share.value")  # by its range, or its magnitude
    assert validate(store.Figure, {"value": 0.0, "unit": "ns", "about": "x"}, file="lab.json").value == 0


def test_a_gpu_of_one_byte_is_not_a_card(tmp_path, monkeypatch):
    from engine import catalog

    (tmp_path / "gpus").mkdir()
    entry = {
        "display_name": "Tiny",
        "memory_bytes": 1,
        "hbm_bandwidth_bytes_per_s": 1e12,
        "bf16_dense_flops": 1e15,
    }
    (tmp_path / "gpus" / "tiny-test-card.yaml").write_text(dump_yaml(entry))
    monkeypatch.setattr(catalog, "CATALOG_DIR", tmp_path)
    catalog._gpu_entries.cache_clear()
    try:
        with pytest.raises(UserError) as caught:
            catalog.load_gpu("tiny-test-card")
    finally:
        catalog._gpu_entries.cache_clear()
        catalog.load_gpu.cache_clear()
    assert caught.value.field == "memory_bytes" and "got 1" in caught.value.message


def test_free_text_that_reaches_a_post_is_one_line(tmp_path):
    err = spec_error(spec_with(tmp_path, lambda d: d["series"].update(name="60 days\n---\nSPAM")))
    assert err.field == "series.name" and "holds a line break (U+000A)" in err.message
    err = spec_error(spec_with(tmp_path, lambda d: d["series"].update(name="x" * 161)))
    assert err.field == "series.name" and "at most 160 characters" in err.message
    spec = spec_with(tmp_path, lambda d: None, "day01")
    before = _tree(spec.parent)
    code, _, err_text = run_cli("lab", str(spec), "--machine", "box\n---\nSPAM")
    assert (
        code == 2
        and one_line(err_text) == "--machine: must be one line of text; it holds a line break (U+000A)"
    )
    assert _tree(spec.parent) == before  # the lab did not run, nothing was written


def test_chart_text_is_drawn_as_written_and_alt_text_has_no_escapes():
    """Mathtext would draw '$2 per hour vs $3 per hour' as '2perhourvs3' and fail on '$\\foo$';
    with it off both are drawn as text, and an escape in a label leaves no byte in the alt text."""
    from engine.charts import declared, literal_alt, style
    from engine.validation import validate

    title = "$2 per hour vs $3 per hour"
    bar = {"name": "cost", "title": title, "figures": ["a", "b"]}
    assert validate(declared.BarChart, bar, file="day.yaml").title == title
    alt = "Bar chart: costs. \x1b[31mred\x1b[0m: 3. \x1b]0;title\x07blue\x08e: 4."
    assert literal_alt(alt) == "Bar chart: costs. red: 3. blue: 4."
    with style.theme():
        fig = style.new_figure("x")
        texts = [fig.text(0.1, 0.5, title), fig.text(0.1, 0.2, "$\\foo$")]
        fig.canvas.draw()  # with mathtext on, '$\\foo$' stops the drawing: Unknown symbol
    assert [t.get_parse_math() for t in texts] == [False, False]


# ---- any JSON a file may hold -------------------------------------------------------------------

_JSON_PIECES = st.sampled_from(
    [
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        '"a"',
        '"\\ud800"',
        "1",
        "-0",
        "0.5",
        "1e400",
        "-1e400",
        "NaN",
        "-Infinity",
        "9" * 70,
        "true",
        "null",
        " ",
        "\n",
    ]  # fmt: skip
)
_JSON_TEXTS = st.one_of(
    st.lists(_JSON_PIECES, max_size=40).map("".join),
    st.integers(60, 70).map(lambda n: "[" * n + "]" * n),  # either side of the depth limit
    st.binary(max_size=40),
)


def _within_json_limits(value, depth=1) -> bool:
    if isinstance(value, dict):
        return depth <= limits.MAX_JSON_DEPTH and all(
            _within_json_limits(v, depth + 1) for v in value.values()
        )
    if isinstance(value, list):
        return depth <= limits.MAX_JSON_DEPTH and all(_within_json_limits(v, depth + 1) for v in value)
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return True
    if isinstance(value, int):
        return len(str(abs(value))) <= limits.MAX_INT_DIGITS
    return math.isfinite(value)


@QUICK
@given(text=_JSON_TEXTS)
def test_any_json_file_reads_within_the_limits_or_is_one_line(tmp_path_factory, text):
    """What any JSON reader of the engine gets from a file (results, manifests, figures files,
    measurements all come through limits.read_json_limited): a value inside every stated limit,
    or one line naming the file."""
    path = tmp_path_factory.mktemp("json") / "results.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    try:
        value = limits.read_json_limited(path, limits.MAX_RESULTS_BYTES, "results")
    except UserError as err:
        assert err.file == str(path) and "\n" not in err.line()
        return
    assert _within_json_limits(value)


def test_an_error_is_one_line_whatever_the_input_it_quotes_held():
    """A file name, a field or a message quoting the input may hold a line break, an escape
    sequence or a Unicode line separator: each is shown as its escape, worked by hand here."""
    err = UserError("reported 'a\nb', not \u2028 this", file="days/x\x1b[2J.yaml", field="lab.\tfigures")
    assert err.line() == "days/x\\x1b[2J.yaml: lab.\\tfigures: reported 'a\\nb', not \\u2028 this"
    assert UserError("µs and → stay as they are").line() == "µs and → stay as they are"


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d["batching"].update(workload={"trace": "/proc/self/environ"}), "batching.workload.trace"),
        (
            lambda d: d["batching"].update(workload={"trace": "../../day37.workload.csv"}),
            "batching.workload.trace",
        ),
        (lambda d: d["links_back"][0].update(spec="../days/day04.yaml"), "links_back.0.spec"),
    ],
)
def test_a_file_the_spec_names_outside_its_folder_is_refused_unread(tmp_path, edit, field):
    """A day someone else wrote cannot have the build read a file elsewhere (the process's
    environment, the person's notes) and quote it in an error: one line naming the field."""
    path = spec_with(tmp_path, edit)
    code, _, err = run_cli("build", str(path), "--out", str(tmp_path / "out"))
    assert code == 2
    line = one_line(err)
    assert line.startswith(f"{path}: {field}: ") and "must be a path inside the spec's folder" in line
    assert "PATH=" not in line and "HOME=" not in line
    assert not (tmp_path / "out" / "day37").exists()


def test_a_measurement_that_links_out_of_the_spec_folder_is_refused_unread(tmp_path):
    """A day's measurement is a file of its spec's folder: a measurement file, or the whole
    dayNN.measured folder, that links elsewhere is one line naming it, for a build and for the
    lab that would write there, and the text it leads to is never read onto a post."""
    secret = tmp_path / "elsewhere"
    secret.mkdir()
    doc = json.loads((DAYS / "day37.measured" / "nvidia-h200.json").read_text())
    doc["device"]["name"] = "OUTSIDE SECRET GPU"
    (secret / "nvidia-h200.json").write_text(json.dumps(doc))
    path = spec_with(tmp_path, lambda d: None)
    measured = path.parent / "day37.measured"
    measured.mkdir()
    (measured / "nvidia-h200.json").symlink_to(secret / "nvidia-h200.json")

    def refused() -> None:
        code, out, err = run_cli("build", str(path), "--out", str(tmp_path / "out"))
        line = one_line(err)
        assert code == 2 and "leads out of the spec's folder" in line and str(measured) in line
        assert "SECRET" not in out + err and not (tmp_path / "out" / "day37").exists()

    refused()  # the file linked
    shutil.rmtree(measured)
    measured.symlink_to(secret)
    refused()  # the whole folder
    day01 = spec_with(tmp_path, lambda d: None, name="day01")
    (day01.parent / "day01.measured").symlink_to(secret)
    code, _, err = run_cli("lab", str(day01), "--quiet")
    assert code == 2 and "leads out of the spec's folder" in one_line(err)
    assert sorted(p.name for p in secret.iterdir()) == ["nvidia-h200.json"]  # nothing written there


def test_review_and_check_refuse_a_draft_that_is_a_link_or_a_pipe_unread(built_out, tmp_path):
    """out/ is the engine's: a draft, an alt text or results.json replaced by a link (to
    /etc/passwd, a file of the person's) or a pipe is one line naming it from `review` and
    `check`, and what it leads to never lands on the review page."""
    from helpers import copy_built

    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0 TOKEN=abc123\n")
    for name in ("linkedin.md", "slot_timeline.alt.txt", "results.json", "x-thread.md"):
        # check reads the drafts and alt texts; it traces numbers to results.json only if it reads
        commands = [["review", "--out", "OUT"]] + ([] if name == "results.json" else [["check", "DAY"]])
        out = copy_built(built_out, tmp_path / f"out-{name}")
        draft = out / "day37" / name
        draft.unlink()
        if name == "x-thread.md":
            os.mkfifo(draft)
        else:
            draft.symlink_to(secret)
        for command in commands:
            code, stdout, err = run_cli(
                *[{"OUT": str(out), "DAY": str(out / "day37")}.get(a, a) for a in command]
            )
            line = one_line(err)
            assert code == 2 and line.startswith(f"{draft}: ") and "abc123" not in stdout + line, (
                name,
                command,
            )
            assert "link" in line or "regular file" in line, line
        assert "abc123" not in (out / "day37" / "index.html").read_text()
        if name == "results.json":  # check passes on the drafts, and reads nothing through the link
            code, stdout, _ = run_cli("check", str(out / "day37"))
            assert code == 0 and "abc123" not in stdout


def test_a_lab_folder_that_links_out_of_the_spec_folder_is_refused(tmp_path):
    """A day's lab is a folder beside its spec: days/day01.lab linked elsewhere is one line
    naming lab.script, for the build (which hashes the lab's files) and for engine lab."""
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(DAYS / "day01.lab", elsewhere)
    path = spec_with(tmp_path, lambda d: None, name="day01")
    shutil.copytree(DAYS / "day01.measured", path.parent / "day01.measured")
    shutil.rmtree(path.parent / "day01.lab")
    (path.parent / "day01.lab").symlink_to(elsewhere)
    for command in (["build", str(path), "--out", str(tmp_path / "out")], ["lab", str(path), "--quiet"]):
        code, _, err = run_cli(*command)
        line = one_line(err)
        assert code == 2 and line.startswith(f"{path}: lab.script: ") and "leads out" in line, command


def test_the_index_reads_no_results_through_a_link(built_out, tmp_path):
    """Every build rewrites out/index.html from each day's results.json: one that links to a
    JSON file elsewhere is shown as unreadable, its title never copied onto the index."""
    from helpers import copy_built

    out = copy_built(built_out, tmp_path / "out")
    secret = tmp_path / "elsewhere.json"
    secret.write_text(json.dumps({"title": "TOKEN=abc123", "charts": [], "checks": {}}))
    (out / "day37" / "results.json").unlink()
    (out / "day37" / "results.json").symlink_to(secret)
    elsewhere = tmp_path / "elsewhere"  # a whole day folder linked in
    elsewhere.mkdir()
    (elsewhere / "results.json").write_text(json.dumps({"title": "TOKEN=def456", "charts": [], "checks": {}}))
    (out / "day98").symlink_to(elsewhere)
    code, _, err = run_cli("build", str(DAYS / "day04.yaml"), "--out", str(out))
    index = (out / "index.html").read_text()
    assert code == 0 and "abc123" not in index and "(results.json unreadable)" in index, err
    assert "def456" not in index and "day98" not in index


def test_a_trace_that_is_a_pipe_or_a_folder_is_named_as_such_unread(tmp_path):
    """A trace in the spec's folder that is not a regular file (a named pipe would block a
    reader for ever) is refused before it is opened, with what it is, not "no such file"."""
    path = spec_with(tmp_path, lambda d: d["batching"].update(workload={"trace": "w.csv"}))
    os.mkfifo(path.parent / "w.csv")
    code, _, err = run_cli("build", str(path), "--out", str(tmp_path / "out"))
    line = one_line(err)
    assert code == 2 and line.startswith(f"{path}: batching.workload.trace: ")
    assert "is not a regular file" in line and not (tmp_path / "out" / "day37").exists()


def test_a_non_finite_result_is_one_line_naming_its_section():
    """The net under every range check: an infinity or a NaN anywhere in a section's result
    stops the build with one line naming the section and where, not a traceback from the JSON
    writer or a template's "cannot print nan"."""
    from engine import pipeline
    from engine.sections import SpecLocation

    where = SpecLocation(spec_path=Path("days/day04.yaml"))
    pipeline._refuse_non_finite({"rows": [{"p99_ms": 1.0}, {"p99_ms": 2.5}], "n": 3}, "queueing", where)
    for bad in (math.inf, -math.inf, math.nan):
        with pytest.raises(UserError) as err:
            pipeline._refuse_non_finite({"rows": [{"p99_ms": 1.0}, {"p99_ms": bad}]}, "queueing", where)
        assert err.value.field == "queueing" and "queueing.rows.1.p99_ms" in err.value.message
        assert err.value.line().startswith("days/day04.yaml: queueing: computes ")


def test_an_edited_draft_over_the_limit_stops_the_build_before_anything_changes(built_out, tmp_path):
    """An edit of 300 KB is past the limit for a draft: the build says so in one line naming it
    and changes nothing in out/ (it used to swap the new folder in, then fail reading it). The
    same for a platform's draft written by hand and for any alt text: the build reads them back."""
    import hashlib

    from helpers import copy_built

    out = copy_built(built_out, tmp_path / "out")

    def snapshot() -> dict[str, str]:
        return {
            p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*"))
            if p.is_file()
        }

    for name in ("linkedin.md", "bluesky.md", "mine.alt.txt"):
        draft = out / "day37" / name
        kept = draft.read_text() if draft.exists() else None
        draft.write_text((kept or "") + "word " * 60_000)
        before = snapshot()
        code, _, err = run_cli("build", str(DAYS / "day37.yaml"), "--out", str(out))
        assert code == 2, name
        line = one_line(err)
        assert line.startswith(f"{draft}: your edit is 3") and "over the limit of 256 KiB" in line
        assert snapshot() == before, name
        if kept is None:
            draft.unlink()
        else:
            draft.write_text(kept)


def test_a_link_in_the_spec_folder_leading_out_of_it_is_refused_unread(tmp_path):
    """A path written inside the folder that a link inside it leads out of (days/evil -> a
    folder elsewhere) is outside too; so is a kv view's config.json written as an absolute path."""
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "x.csv").write_text("TOKEN=abc123\n")
    (secret / "config.json").write_text('{"torch_dtype": "TOKEN=abc123"}')

    def through_link(d):
        d["batching"].update(workload={"trace": "evil/x.csv"})

    path = spec_with(tmp_path, through_link)
    (path.parent / "evil").symlink_to(secret)
    code, _, err = run_cli("build", str(path), "--out", str(tmp_path / "out"))
    line = one_line(err)
    assert code == 2 and line.startswith(f"{path}: batching.workload.trace: ") and "abc123" not in line

    path = spec_with(tmp_path, lambda d: d["kv_cache"].update(model=str(secret / "config.json")))
    code, _, err = run_cli("build", str(path), "--out", str(tmp_path / "out"))
    line = one_line(err)
    assert code == 2 and line.startswith(f"{path}: kv_cache.model: ") and "abc123" not in line
    assert not (tmp_path / "out" / "day37").exists()

    # a model's folder inside the spec's folder, whose config.json is the link out
    (path.parent / "my-model").mkdir()
    (path.parent / "my-model" / "config.json").symlink_to(secret / "config.json")
    path = spec_with(tmp_path, lambda d: d["kv_cache"].update(model={"config": "my-model"}))
    code, _, err = run_cli("build", str(path), "--out", str(tmp_path / "out"))
    line = one_line(err)
    assert code == 2 and line.startswith(f"{path}: kv_cache.model: ") and "leads out" in line
    assert "abc123" not in line and not (tmp_path / "out" / "day37").exists()
