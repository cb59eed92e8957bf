"""The glue between spec sections and engines: derived figures, generated workloads, mismatches."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engine.cli import main
from engine.experiments.batching import head_of_line_example
from engine.experiments.kv_cache import halves_when_context_doubles
from engine.pipeline import build

from helpers import dump_yaml, lean_spec, load_yaml


def test_head_of_line_example_on_the_drill():
    # Seven 20-token requests and one 500-token request in one static group of 8:
    # 8 × 500 − (7 × 20 + 500) = 3,360 idle slot-steps; the median member waits 480 steps.
    example = head_of_line_example(np.array([20] * 7 + [500]), [8])
    assert example == {
        "group": 1,
        "members": 8,
        "longest": 500,
        "median": 20,
        "median_waits": 480,
        "idle_slot_steps": 3360,
    }


def test_head_of_line_example_picks_the_most_wasteful_group():
    lengths = np.array([5, 5, 5, 5, 1, 1, 1, 9])
    example = head_of_line_example(lengths, [4, 4])  # idle: 0, then 4 × 9 − 12 = 24
    assert example["group"] == 2 and example["idle_slot_steps"] == 24


def test_halving_is_checked_not_assumed():
    rows = [{"context": c, "max_requests": n} for c, n in [(512, 256), (1024, 128), (2048, 64)]]
    assert halves_when_context_doubles(rows)
    rows[2]["max_requests"] = 60
    assert not halves_when_context_doubles(rows)


def generated(days):
    path = days / "day37.yaml"
    data = load_yaml(path.read_text())
    data["batching"]["workload"] = {
        "requests": 200,
        "seed": 7,
        "output_tokens": {
            "kind": "mixture",
            "components": [
                {"weight": 0.9, "dist": {"kind": "uniform", "low": 8, "high": 40}},
                {"weight": 0.1, "dist": {"kind": "uniform", "low": 400, "high": 700}},
            ],
        },
    }
    # No charts or carousel: what is read here is the workload and the simulated results.
    path.write_text(lean_spec(dump_yaml(data, sort_keys=False)))
    return path


def test_a_generated_workload_builds_and_is_deterministic(days_copy, tmp_path):
    spec = generated(days_copy)
    build(spec, tmp_path / "a")
    build(spec, tmp_path / "b")
    a = (tmp_path / "a" / "day37" / "results.json").read_bytes()
    assert a == (tmp_path / "b" / "day37" / "results.json").read_bytes()
    results = json.loads(a)
    workload = results["batching"]["workload"]
    assert workload["requests"] == 200 and 8 <= workload["shortest"] and workload["longest"] <= 700
    static, cont = (results["batching"]["policies"][p] for p in ("static", "continuous"))
    assert static["tokens"] == cont["tokens"] == workload["total_output_tokens"]
    assert static["steps"] > cont["steps"] >= results["batching"]["ideal_steps"]


def test_a_bad_distribution_names_its_field(days_copy, tmp_path, capsys):
    spec = generated(days_copy)
    spec.write_text(spec.read_text().replace("high: 40", "high: 4"))
    assert main(["build", str(spec), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(f"{spec}: batching.workload.output_tokens")


def test_a_template_needing_a_missing_policy_is_one_line(days_copy, tmp_path, capsys):
    spec = days_copy / "day37.yaml"
    spec.write_text(spec.read_text().replace("policies: [static, continuous]", "policies: [continuous]"))
    assert main(["build", str(spec), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("templates/day37/") and "static" in err and "\n" not in err
    assert not (tmp_path / "day37").exists()


def test_a_model_is_never_quoted_past_its_context_limit():
    from engine.experiments.kv_cache import headline_row

    rows = [
        {"context": 2048, "max_requests": 58, "within_max_model_len": True},
        {"context": 4096, "max_requests": 29, "within_max_model_len": True},
        {"context": 8192, "max_requests": 14, "within_max_model_len": False},
    ]
    assert headline_row(rows, [2048, 8192])["context"] == 2048
    assert headline_row(rows, [8192])["context"] == 4096
    rows[2]["within_max_model_len"] = True
    assert headline_row(rows, [2048, 8192])["context"] == 8192


def test_nothing_left_to_halve_is_not_halving():
    rows = [{"context": c, "max_requests": 0} for c in (512, 1024, 2048)]
    assert not halves_when_context_doubles(rows)
    rows = [{"context": 512, "max_requests": 1}, {"context": 1024, "max_requests": 1}]
    assert not halves_when_context_doubles(rows)


def test_the_multiple_is_a_ratio_of_durations():
    from types import SimpleNamespace as Run

    from engine.batching import throughput_multiple

    # Untimed: steps are the only clock.
    untimed = throughput_multiple(
        Run(steps=5797, makespan_seconds=None), Run(steps=1148, makespan_seconds=None)
    )
    assert untimed == pytest.approx(5797 / 1148)
    # Timed: steps differ in length, so seconds decide (hand-made: 10 s vs 4 s → 2.5x).
    timed_static = Run(steps=500, makespan_seconds=10.0)
    timed_cont = Run(steps=100, makespan_seconds=4.0)
    assert throughput_multiple(timed_static, timed_cont) == pytest.approx(2.5)


def test_a_roofline_priced_run_quotes_the_seconds_multiple(days_copy, tmp_path):
    spec = days_copy / "day37.yaml"
    data = load_yaml(spec.read_text())
    data["batching"]["step_time"] = {"kind": "roofline", "model": "llama-2-7b", "gpu": "h100-80gb"}
    spec.write_text(lean_spec(dump_yaml(data, sort_keys=False)))  # results only are read
    build(spec, tmp_path)
    bt = json.loads((tmp_path / "day37" / "results.json").read_text())["batching"]
    static, cont = bt["policies"]["static"], bt["policies"]["continuous"]
    assert bt["multiple"] == pytest.approx(static["makespan_seconds"] / cont["makespan_seconds"])
    assert bt["multiple"] != pytest.approx(static["steps"] / cont["steps"], rel=1e-3)


def test_measured_figures_are_recomputed_from_wall_times():
    from engine.inputs import recomputed_batching

    doc = {
        "multiple": 99.0,
        "policies": {
            "static": {"wall_seconds": 2.0, "tokens": 1000, "tokens_per_second": 1.0, "steps": 10},
            "continuous": {"wall_seconds": 0.5, "tokens": 1000, "tokens_per_second": 1.0, "steps": 2},
        },
    }
    out = recomputed_batching(doc)
    assert out["multiple"] == pytest.approx(4.0)
    assert out["policies"]["continuous"]["tokens_per_second"] == pytest.approx(2000.0)


def test_compare_views_share_one_context():
    from engine.experiments.kv_cache import common_context

    llama2 = [{"context": c, "within_max_model_len": c <= 4096} for c in (2048, 4096, 8192)]
    llama3 = [{"context": c, "within_max_model_len": c <= 8192} for c in (2048, 4096, 8192)]
    assert common_context([llama2, llama3], [2048, 8192]) == 2048  # highlighted, inside both
    assert common_context([llama2, llama3], [8192]) == 4096  # none highlighted inside both
    assert common_context([llama3], [2048, 8192]) == 8192
