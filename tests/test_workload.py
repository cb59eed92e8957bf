"""Workloads: traces replay exactly, mistakes name file/row/column, generators match their laws."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError

from engine.errors import UserError
from engine.workload import (
    MAX_ARRIVAL_SECONDS,
    MAX_TOKENS,
    Exponential,
    Gamma,
    GeneratedWorkload,
    Lognormal,
    Mixture,
    Normal,
    Poisson,
    Uniform,
    Workload,
    WorkloadSpec,
    Zipf,
    build_workload,
    generate,
    load_trace,
    parse_distribution,
)

from helpers import LAB_TRACE, dump_yaml, load_yaml  # the lab's trace, as committed in days/


def write(tmp_path: Path, text: str, name: str = "trace.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---- traces -----------------------------------------------------------------------------------


def test_lab_trace_is_the_reference_draw():
    """day37-lab.md: 182 short, 18 long, 13,280 tokens, longest 661; all at t = 0, no prompts."""
    w = load_trace(LAB_TRACE)
    assert w.n == 200
    assert int(w.output_tokens.sum()) == 13_280
    assert int(w.output_tokens.max()) == 661
    assert int(((w.output_tokens >= 8) & (w.output_tokens <= 40)).sum()) == 182
    assert int(((w.output_tokens >= 400) & (w.output_tokens <= 700)).sum()) == 18
    assert not w.has_prompts and not w.has_arrivals
    assert w.output_tokens.tolist()[:4] == [13, 40, 589, 14]  # arrival order kept


def test_optional_columns_and_blank_lines(tmp_path):
    """A column the reader does not know is refused (a misspelt one ignored would replay the
    wrong lengths), so the extra `id` column this file once carried is gone."""
    path = write(tmp_path, "output_tokens,prompt_tokens,arrival_time\n5,100,0\n\n7,0,0.5\n13.0,3,0.5\n")
    w = load_trace(path)
    assert w.output_tokens.tolist() == [5, 7, 13]
    assert w.prompt_tokens.tolist() == [100, 0, 3]
    assert w.arrival_time.tolist() == [0.0, 0.5, 0.5]
    assert w.source == f"trace {path}"


@pytest.mark.parametrize(
    "header, column, words",
    [
        ("output_tokens,promt_tokens", 2, "unknown column 'promt_tokens'; did you mean 'prompt_tokens'?"),
        (
            "id,output_tokens",
            1,
            "unknown column 'id'; the columns are output_tokens, prompt_tokens, arrival_time",
        ),
        (
            "output_tokens,",
            2,
            "a column with no name; the columns are output_tokens, prompt_tokens, arrival_time",
        ),
    ],
)
def test_an_unknown_column_is_refused_with_the_nearest_name(tmp_path, header, column, words):
    path = write(tmp_path, header + "\n5,100\n")
    with pytest.raises(UserError) as caught:
        load_trace(path)
    assert (caught.value.message, caught.value.field) == (words, f"row 1, column {column}")


def test_summary_is_plain_json():
    summary = load_trace(LAB_TRACE).summary()
    assert json.loads(json.dumps(summary)) == summary
    assert summary["requests"] == 200 and summary["total_output_tokens"] == 13_280
    assert summary["longest"] == 661 and summary["shortest"] == 8
    assert summary["mean"] == pytest.approx(66.4)


@pytest.mark.parametrize(
    "text, row, column, words",
    [
        ("output_tokens\n5\n-2\n", 3, "output_tokens", "at least 1"),
        ("output_tokens\n5\n0\n", 3, "output_tokens", "at least 1"),
        ("output_tokens\n3.5\n", 2, "output_tokens", "whole number"),
        ("output_tokens\nten\n", 2, "output_tokens", "whole number"),
        ("output_tokens,prompt_tokens\n5,-1\n", 2, "prompt_tokens", "at least 0"),
        ("output_tokens,prompt_tokens\n5,\n", 2, "prompt_tokens", "empty"),
        ("output_tokens,arrival_time\n5,1.0\n6,0.5\n", 3, "arrival_time", "must not decrease"),
        ("output_tokens,arrival_time\n5,soon\n", 2, "arrival_time", "seconds"),
        ("output_tokens,arrival_time\n5,-1\n", 2, "arrival_time", "≥ 0"),
        ("prompt_tokens\n5\n", 1, "output_tokens", "missing required column"),
        ("output_tokens\n", 2, "output_tokens", "no requests"),
    ],
)
def test_malformed_trace_names_file_row_and_column(tmp_path, text, row, column, words):
    path = write(tmp_path, text)
    with pytest.raises(UserError) as caught:
        load_trace(path)
    err = caught.value
    assert err.file == str(path)
    assert err.field == f"row {row}, column {column}"
    assert words in err.message
    assert "\n" not in err.line()


def test_a_row_with_a_cell_no_column_names_is_refused(tmp_path):
    """'7,9' under a one-column header: the 9 is no column's (a shifted row, a value lost); both
    readers refuse it, naming the row, where the fast one had skipped it."""
    for text, row in (("output_tokens\n5\n7,9\n", 3), ("output_tokens,prompt_tokens\n5,1\n6,2,3\n", 3)):
        with pytest.raises(UserError) as caught:
            load_trace(write(tmp_path, text))
        assert caught.value.field == f"row {row}" and "a cell no column names" in caught.value.message
    assert load_trace(write(tmp_path, "output_tokens\n5\n\n6\n")).output_tokens.tolist() == [5, 6]


def test_empty_and_missing_files(tmp_path):
    with pytest.raises(UserError, match="empty file") as caught:
        load_trace(write(tmp_path, ""))
    assert caught.value.field == "row 1"
    with pytest.raises(UserError, match="no such workload file"):
        load_trace(tmp_path / "absent.csv")


def test_build_workload_resolves_trace_relative_to_spec_folder(tmp_path):
    write(tmp_path, "output_tokens\n4\n", name="w.csv")
    spec = TypeAdapter(WorkloadSpec).validate_python({"trace": "w.csv"})
    assert build_workload(spec, tmp_path).output_tokens.tolist() == [4]


# ---- generated workloads --------------------------------------------------------------------------


def spec(**kw) -> GeneratedWorkload:
    base = {"requests": 20_000, "output_tokens": {"kind": "constant", "value": 5}}
    base.update(kw)
    return GeneratedWorkload.model_validate(base)


def test_generation_is_deterministic_per_seed_and_streams_are_independent():
    a = generate(spec(output_tokens={"kind": "uniform", "low": 1, "high": 100}, seed=7))
    b = generate(spec(output_tokens={"kind": "uniform", "low": 1, "high": 100}, seed=7))
    c = generate(spec(output_tokens={"kind": "uniform", "low": 1, "high": 100}, seed=8))
    assert np.array_equal(a.output_tokens, b.output_tokens) and a.source == "generated seed=7"
    assert not np.array_equal(a.output_tokens, c.output_tokens)
    # adding prompts and arrivals leaves the output lengths as they were
    d = generate(
        spec(
            output_tokens={"kind": "uniform", "low": 1, "high": 100},
            seed=7,
            prompt_tokens={"kind": "constant", "value": 3},
            arrivals={"kind": "poisson", "rate": 2.0},
        )
    )
    assert np.array_equal(a.output_tokens, d.output_tokens)


def test_uniform_is_inclusive_on_both_ends():
    out = generate(spec(output_tokens={"kind": "uniform", "low": 8, "high": 12})).output_tokens
    assert set(out.tolist()) == {8, 9, 10, 11, 12}


def test_clipped_normal_and_lognormal_stay_in_bounds_and_centre_right():
    normal = generate(
        spec(output_tokens={"kind": "normal", "mean": 100, "std": 30, "low": 50, "high": 140})
    ).output_tokens
    assert normal.min() == 50 and normal.max() == 140
    assert np.median(normal) == pytest.approx(100, abs=2)
    logn = generate(spec(output_tokens={"kind": "lognormal", "median": 200, "sigma": 0.8})).output_tokens
    assert np.median(logn) == pytest.approx(200, rel=0.03)
    assert logn.min() >= 1


def test_exponential_rounded_up_has_the_geometric_mean():
    """ceil(Exp(mean m)) is geometric: E = 1 / (1 − e^(−1/m))."""
    m = 20.0
    out = generate(spec(output_tokens={"kind": "exponential", "mean": m})).output_tokens
    assert out.min() >= 1
    assert out.mean() == pytest.approx(1 / (1 - math.exp(-1 / m)), rel=0.03)
    capped = generate(spec(output_tokens={"kind": "exponential", "mean": m, "cap": 30})).output_tokens
    assert capped.max() == 30


def test_zipf_mass_at_one_is_one_over_zeta():
    """P(k = 1) = 1/ζ(2) = 6/π² for a = 2, whatever the cap."""
    out = generate(spec(output_tokens={"kind": "zipf", "a": 2.0, "cap": 500})).output_tokens
    assert (out == 1).mean() == pytest.approx(6 / math.pi**2, abs=0.015)
    assert out.max() <= 500


def test_mixture_shares_follow_weights():
    mix = parse_distribution("0.9*uniform:8:40+0.1*uniform:400:700")
    out = generate(spec(output_tokens=mix.model_dump())).output_tokens
    assert ((out >= 400).mean()) == pytest.approx(0.1, abs=0.01)
    assert set(np.unique(out[out < 400])) <= set(range(8, 41))


def test_poisson_and_gamma_arrivals():
    poisson = generate(spec(arrivals={"kind": "poisson", "rate": 4.0})).arrival_time
    gaps = np.diff(np.concatenate(([0.0], poisson)))
    assert gaps.mean() == pytest.approx(0.25, rel=0.03)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.05)
    assert np.all(np.diff(poisson) >= 0)
    bursty = generate(spec(arrivals={"kind": "gamma", "rate": 4.0, "cv": 3.0})).arrival_time
    gaps = np.diff(np.concatenate(([0.0], bursty)))
    assert gaps.mean() == pytest.approx(0.25, rel=0.1)
    assert gaps.std() / gaps.mean() == pytest.approx(3.0, rel=0.1)


def test_output_lengths_below_one_are_refused_from_the_spec():
    for dist in (
        {"kind": "constant", "value": 0},
        {"kind": "uniform", "low": 0, "high": 3},
        {"kind": "normal", "mean": 5, "std": 1, "low": 0},
    ):
        with pytest.raises(ValidationError, match="at least 1 token"):
            spec(output_tokens=dist)
    # prompts may be empty
    assert generate(spec(requests=3, prompt_tokens={"kind": "constant", "value": 0})).prompt_tokens.sum() == 0


def test_unknown_fields_and_kinds_are_errors():
    with pytest.raises(ValidationError):
        spec(output_tokens={"kind": "uniform", "low": 1, "hi": 3})
    with pytest.raises(ValidationError):
        spec(output_tokens={"kind": "pareto", "a": 1})
    with pytest.raises(ValidationError):
        TypeAdapter(WorkloadSpec).validate_python({"trace": "x.csv", "seed": 3})


def test_workload_validates_its_arrays():
    with pytest.raises(ValueError):
        Workload.of([3, 0])
    with pytest.raises(ValueError):
        Workload.of([3, 4], arrival_time=[1.0, 0.5])
    w = Workload.of([3, 4])
    with pytest.raises(ValueError):
        w.output_tokens[0] = 9  # read-only


# ---- the CLI's mini-syntax --------------------------------------------------------------------------


def test_parse_distribution_forms():
    assert parse_distribution("100").model_dump() == {"kind": "constant", "value": 100}
    assert parse_distribution("uniform:8:40") == Uniform(low=8, high=40)
    assert parse_distribution("normal:100:20:10:300") == Normal(mean=100, std=20, low=10, high=300)
    assert parse_distribution("lognormal:150:0.7") == Lognormal(median=150, sigma=0.7)
    assert parse_distribution("exponential:50:400") == Exponential(mean=50, cap=400)
    assert parse_distribution("zipf:1.5:1000") == Zipf(a=1.5, cap=1000)
    mix = parse_distribution("0.9*uniform:8:40+0.1*uniform:400:700")
    assert isinstance(mix, Mixture)
    assert [c.weight for c in mix.components] == [0.9, 0.1]
    assert mix.components[1].dist == Uniform(low=400, high=700)


@pytest.mark.parametrize(
    "text",
    [
        "uniform:9:3",
        "gauss:1",
        "uniform:1:2:3",
        "normal:x:1",
        "0.5*constant:1+uniform:1:2",
        "-1*constant:3",
        "zipf:0.5:10",
    ],
)
def test_parse_distribution_errors_are_user_errors(text):
    with pytest.raises(UserError):
        parse_distribution(text)


@settings(max_examples=60, deadline=None)
@given(low=st.integers(0, 1000), extra=st.integers(0, 1000), weight=st.floats(0.01, 10))
def test_parse_distribution_round_trips(low, extra, weight):
    text = f"{weight!r}*uniform:{low}:{low + extra}+1*constant:{low}"
    mix = parse_distribution(text)
    assert mix.components[0].weight == weight
    assert mix.components[0].dist.bounds() == (low, low + extra)
    assert mix.bounds() == (low, low + extra)


def test_poisson_and_gamma_models_reject_bad_rates():
    with pytest.raises(ValidationError):
        Poisson(rate=0)
    with pytest.raises(ValidationError):
        Gamma(rate=1, cv=0)


# ---- distributions written in a spec ------------------------------------------------------------


def test_spec_accepts_the_cli_syntax_wherever_a_distribution_goes():
    """`output_tokens: uniform:10:50` in a day spec means what --output-tokens uniform:10:50 does."""
    g = GeneratedWorkload.model_validate(
        {
            "requests": 4,
            "output_tokens": "uniform:10:50",
            "prompt_tokens": "constant:7",
        }
    )
    assert g.output_tokens == Uniform(low=10, high=50)
    assert g.prompt_tokens.model_dump() == {"kind": "constant", "value": 7}
    via_adapter = TypeAdapter(WorkloadSpec).validate_python(
        {"requests": 4, "output_tokens": "0.9*uniform:8:40+0.1*uniform:400:700"}
    )
    assert [c.dist for c in via_adapter.output_tokens.components] == [
        Uniform(low=8, high=40),
        Uniform(low=400, high=700),
    ]
    # a bare whole number is a constant (YAML reads `output_tokens: 100` as an int)
    assert spec(output_tokens=100).output_tokens.model_dump() == {"kind": "constant", "value": 100}
    # inside a mixture's component too
    mix = spec(output_tokens={"kind": "mixture", "components": [{"weight": 1, "dist": "uniform:3:9"}]})
    assert mix.output_tokens.components[0].dist == Uniform(low=3, high=9)
    # and the at-least-one-token rule still holds for the string form
    with pytest.raises(ValidationError, match="at least 1 token"):
        spec(output_tokens="uniform:0:5")


def first_message(exc: ValidationError) -> tuple[str, str]:
    err = exc.errors()[0]
    return ".".join(str(p) for p in err["loc"]), err["msg"].removeprefix("Value error, ")


@pytest.mark.parametrize(
    "value, reason",
    [
        ("unifrm:10:50", "unknown distribution 'unifrm'"),
        ("uniform:50:10", "high (10) must be at least low (50)"),
        ("uniform:1:2:3", "uniform takes at most 2 numbers"),
        ([10, 50], ", got list [10, 50]"),
        (3.5, ", got float 3.5"),
        (True, ", got bool True"),
        (None, ", got nothing"),
    ],
)
def test_a_wrong_distribution_says_what_a_distribution_looks_like(value, reason):
    with pytest.raises(ValidationError) as caught:
        TypeAdapter(WorkloadSpec).validate_python({"requests": 4, "output_tokens": value})
    where, message = first_message(caught.value)
    assert where.endswith("output_tokens")
    assert message.startswith(
        "expected a distribution like uniform:8:40 or {kind: uniform, low: 8, high: 40}"
    )
    assert reason in message and "\n" not in message
    assert "valid dictionary" not in message


def test_negative_seed_is_refused_by_the_model():
    with pytest.raises(ValidationError) as caught:
        spec(seed=-1)
    assert caught.value.errors()[0]["loc"] == ("seed",)
    assert caught.value.errors()[0]["type"] == "greater_than_equal"
    assert generate(spec(requests=3, seed=0)).source == "generated seed=0"


def test_day_spec_with_the_cli_syntax_loads_and_a_typo_is_one_line(days_copy):
    """The walkthrough: `output_tokens: uniform:10:50` under batching.workload in a day spec."""

    from engine.spec import load_spec

    path = days_copy / "day37.yaml"
    data = load_yaml(path.read_text())

    def write_workload(workload: dict) -> None:
        data["batching"]["workload"] = workload
        path.write_text(dump_yaml(data, sort_keys=False))

    write_workload({"requests": 50, "output_tokens": "uniform:10:50", "seed": 3})
    assert load_spec(path).batching.workload.output_tokens == Uniform(low=10, high=50)
    write_workload({"requests": 50, "output_tokens": "uniform:10"})
    with pytest.raises(UserError) as caught:
        load_spec(path)
    assert caught.value.field == "batching.workload.output_tokens"
    assert caught.value.message.startswith("expected a distribution like uniform:8:40 or {kind: ")
    write_workload({"requests": 50, "output_tokens": "uniform:10:50", "seed": -1})
    with pytest.raises(UserError) as caught:
        load_spec(path)
    assert caught.value.line() == f"{path}: batching.workload.seed: must be at least 0, got -1"


# ---- caps: no input asks for petabytes ---------------------------------------------------------


@pytest.mark.parametrize(
    "text, row, column, words",
    [
        ("output_tokens\n5\n1000000000000000\n", 3, "output_tokens", "at most 10,000,000 tokens"),
        ("output_tokens\n1e30\n", 2, "output_tokens", "at most 10,000,000 tokens"),
        ("output_tokens\n10000001\n", 2, "output_tokens", "at most 10,000,000 tokens"),
        ("output_tokens,prompt_tokens\n5,99999999999\n", 2, "prompt_tokens", "at most 10,000,000"),
        ("output_tokens,arrival_time\n5,1e300\n", 2, "arrival_time", "at most 1e+09 s"),
        ("output_tokens,arrival_time\n5,1000000000.5\n", 2, "arrival_time", "at most 1e+09 s"),
        ("output_tokens,arrival_time\n5,inf\n", 2, "arrival_time", "finite"),
    ],
)
def test_trace_values_beyond_the_caps_name_row_and_column(tmp_path, text, row, column, words):
    path = write(tmp_path, text)
    with pytest.raises(UserError) as caught:
        load_trace(path)
    err = caught.value
    assert (err.file, err.field) == (str(path), f"row {row}, column {column}")
    assert words in err.message and "\n" not in err.line()


def test_trace_values_at_the_caps_load(tmp_path):
    path = write(tmp_path, "output_tokens,prompt_tokens,arrival_time\n10000000,10000000,1e9\n")
    w = load_trace(path)
    assert w.output_tokens.tolist() == [MAX_TOKENS] and w.prompt_tokens.tolist() == [MAX_TOKENS]
    assert w.arrival_time.tolist() == [MAX_ARRIVAL_SECONDS]


@pytest.mark.parametrize(
    "text",
    [
        "lognormal:1e308:1",  # median beyond the cap
        "lognormal:100:11",  # sigma beyond 10
        "exponential:inf",  # not finite
        "exponential:nan",
        "exponential:20000000",
        "exponential:50:10000001",
        "zipf:1.5:100000000000000000000",  # a cap beyond int64
        "zipf:inf:10",
        "constant:10000001",
        "uniform:1:20000000",
        "normal:inf:1",
        "normal:100:1e300",
        "0.5*constant:3+inf*constant:4",
    ],
)
def test_distribution_numbers_beyond_the_caps_are_user_errors(text):
    with pytest.raises(UserError) as caught:
        parse_distribution(text)
    assert "\n" not in caught.value.line()


@pytest.mark.parametrize(
    "field, value",
    [
        ("output_tokens", {"kind": "lognormal", "median": 1e308, "sigma": 1}),
        ("output_tokens", {"kind": "exponential", "mean": float("inf")}),
        ("output_tokens", {"kind": "zipf", "a": 1.5, "cap": 2**64}),
        ("output_tokens", {"kind": "uniform", "low": 1, "high": 10**15}),
        ("prompt_tokens", {"kind": "constant", "value": 10**12}),
        (
            "output_tokens",
            {"kind": "mixture", "components": [{"weight": float("inf"), "dist": "uniform:1:3"}]},
        ),
        ("arrivals", {"kind": "poisson", "rate": float("nan")}),
        ("arrivals", {"kind": "gamma", "rate": 2, "cv": float("inf")}),
        ("requests", 10**12),
    ],
)
def test_spec_numbers_beyond_the_caps_name_the_field(field, value):
    with pytest.raises(ValidationError) as caught:
        spec(**{field: value})
    assert first_message(caught.value)[0].startswith(field)


def test_unbounded_draws_are_clipped_at_the_cap():
    """A lognormal without `high` or an exponential without `cap` never draws past 10M tokens."""
    wide = generate(
        spec(
            requests=2_000,
            output_tokens={"kind": "lognormal", "median": 5e6, "sigma": 3},
            prompt_tokens={"kind": "exponential", "mean": 1e7},
        )
    )
    assert wide.output_tokens.max() == MAX_TOKENS and wide.prompt_tokens.max() == MAX_TOKENS
    assert wide.output_tokens.min() >= 1
    normal = generate(spec(requests=200, output_tokens={"kind": "normal", "mean": 1e7, "std": 1e7}))
    assert normal.output_tokens.max() == MAX_TOKENS


def test_extreme_but_finite_arrival_numbers_draw_without_error():
    """An infinite rate puts everyone at t = 0; a cv so small its square underflows gives equal
    gaps; a huge cv gives bursts (mostly zero gaps)."""
    assert not generate(spec(requests=5, arrivals={"kind": "poisson", "rate": float("inf")})).has_arrivals
    smooth = generate(spec(requests=5, arrivals={"kind": "gamma", "rate": 4, "cv": 1e-200}))
    assert smooth.arrival_time.tolist() == [0.25, 0.5, 0.75, 1.0, 1.25]
    bursty = generate(spec(requests=50, arrivals={"kind": "gamma", "rate": 4, "cv": 30}))
    assert np.all(np.isfinite(bursty.arrival_time))


def test_arrivals_past_the_cap_are_refused_when_drawn():
    slow = spec(requests=10, arrivals={"kind": "poisson", "rate": 1e-12})
    with pytest.raises(UserError) as caught:
        generate(slow)
    assert caught.value.field == "arrivals.rate" and "1e+09 s" in caught.value.message
    # a slow but legal process is fine
    assert generate(spec(requests=10, arrivals={"kind": "poisson", "rate": 1e-6})).arrival_time[-1] < 1e9


def test_workload_arrays_beyond_the_caps_are_refused():
    with pytest.raises(ValueError, match="10,000,000"):
        Workload.of([MAX_TOKENS + 1])
    with pytest.raises(ValueError, match="10,000,000"):
        Workload.of([3], prompt_tokens=[10**15])
    with pytest.raises(ValueError, match="finite"):
        Workload.of([3], arrival_time=[1e300])
    with pytest.raises(ValueError, match="finite"):
        Workload.of([3], arrival_time=[float("nan")])


def test_day_spec_beyond_a_cap_is_one_line(days_copy):

    from engine.spec import load_spec

    path = days_copy / "day37.yaml"
    data = load_yaml(path.read_text())
    data["batching"]["workload"] = {"requests": 50, "output_tokens": "lognormal:1e308:1"}
    path.write_text(dump_yaml(data, sort_keys=False))
    with pytest.raises(UserError) as caught:
        load_spec(path)
    assert caught.value.field == "batching.workload.output_tokens"
    assert "\n" not in caught.value.line()


def test_mixture_shares_that_do_not_add_up_are_a_typo():
    from engine.errors import UserError

    with pytest.raises(UserError, match="add up to 1.1"):
        parse_distribution("0.9*uniform:8:40+0.2*uniform:400:700")
    assert parse_distribution("9*uniform:8:40+1*uniform:400:700").components[0].weight == 9
    assert parse_distribution("0.5*constant:3+0.5*constant:4").bounds() == (3, 4)
