"""The calibrated step time: closed-form sums against step-by-step sums, and the least-squares
fit against points generated from known efficiencies (a synthetic fixture, labelled as such:
no GPU measured these)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.batching import RooflineStepTime
from engine.batching.calibrated import CalibratedStepTime, fit, points_from_file
from engine.batching.steptime import run_seconds, steps_to_reach

# 7B-like: 14 GB of weights, 512 KiB of KV per token, 14 GFLOP per token, on 2 TB/s and 312 TFLOP/s
ROOF = RooflineStepTime(14e9, 524_288, 14e9, 2.039e12, 312e12)
ATTENTION = 4.0 * 32 * 128 * 32  # 4 · heads · head_dim · layers
BASE = CalibratedStepTime.from_roofline(ROOF, ATTENTION, 32)
# what the synthetic "measurements" are generated from
TRUE = CalibratedStepTime.from_roofline(
    ROOF, ATTENTION, 32, memory_efficiency=0.72, flops_efficiency=0.55, kernel_seconds=25e-6
)


def synthetic_points() -> list[tuple[float, float, float, float]]:
    """SYNTHETIC: decode steps over batch × context and prompt-only steps, priced by TRUE."""
    points = []
    for b in (1, 4, 16, 64, 128, 256):
        for c in (128, 1024, 4096):
            points.append((b, b * c, 0, float(TRUE.seconds([b], [b * c], [0])[0])))
    for p in (256, 1024, 4096):
        points.append((0, 0, p, float(TRUE.seconds([0], [0], [p])[0])))
    return points


@settings(max_examples=80, deadline=None)
@given(
    batch=st.integers(1, 512),
    context=st.integers(0, 10**6),
    steps=st.integers(0, 3000),
    eta_m=st.floats(0.05, 1.0),
    eta_f=st.floats(0.05, 1.0),
    kernel=st.floats(0, 1e-4),
)
def test_segment_sums_match_step_by_step(batch, context, steps, eta_m, eta_f, kernel):
    model = CalibratedStepTime.from_roofline(
        ROOF, ATTENTION, 32, memory_efficiency=eta_m, flops_efficiency=eta_f, kernel_seconds=kernel
    )
    per_step = model.seconds(np.full(steps, batch), context + batch * np.arange(steps), np.zeros(steps))
    expected = per_step.sum()
    assert model.segment_seconds(batch, context, steps) == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert model.run(batch, context, steps) == pytest.approx(expected, rel=1e-9, abs=1e-12)
    # the fewest steps reaching a time, settled against the same sums
    target = expected * 0.6
    m = steps_to_reach(model, batch, context, target)
    assert run_seconds(model, batch, context, m) >= target
    if m > 0:
        assert run_seconds(model, batch, context, m - 1) < target


@settings(max_examples=60, deadline=None)
@given(
    batch=st.integers(0, 512),
    context=st.integers(0, 10**6),
    prefill=st.integers(0, 8192),
    eta_m=st.floats(0.05, 1.0),
    eta_f=st.floats(0.05, 1.0),
    kernel=st.floats(0, 1e-4),
)
def test_the_bare_roofline_is_a_lower_bound(batch, context, prefill, eta_m, eta_f, kernel):
    model = CalibratedStepTime.from_roofline(
        ROOF, ATTENTION, 32, memory_efficiency=eta_m, flops_efficiency=eta_f, kernel_seconds=kernel
    )
    a = [batch], [context], [prefill]
    assert model.seconds(*a)[0] >= ROOF.seconds(*a)[0]
    bare = CalibratedStepTime.from_roofline(ROOF, 0.0, 32)  # η = 1, no kernels, no attention
    assert bare.seconds(*a)[0] == pytest.approx(ROOF.seconds(*a)[0], rel=1e-12)


def test_fit_recovers_the_efficiencies_it_was_generated_from():
    model = fit(BASE, synthetic_points())
    assert model.memory_efficiency == pytest.approx(0.72, rel=3e-3)
    assert model.flops_efficiency == pytest.approx(0.55, rel=3e-3)
    assert model.kernel_seconds == pytest.approx(25e-6, rel=0.05)
    assert model.points == 21 and model.max_relative_error < 5e-3
    assert model.describe()["kind"] == "calibrated"


def test_decode_points_alone_leave_compute_at_its_peak():
    """Memory-bound decode steps never test the FLOP rate: the fit keeps η_flops at 1 (the
    optimistic end), rather than inventing a slowness the data does not show."""
    decode = [p for p in synthetic_points() if p[2] == 0 and p[0] <= 16]
    model = fit(BASE, decode)
    assert model.flops_efficiency == 1.0
    assert model.memory_efficiency == pytest.approx(0.72, rel=3e-3)


def test_operator_table_and_bench_file_give_the_same_points(tmp_path):
    points = synthetic_points()
    table = tmp_path / "synthetic-operators.csv"
    lines = ["operator,batch,context,prefill,seconds"]
    for b, c, p, s in points:  # each step split into two operators that sum to it
        lines += [f"attention,{b},{c},{p},{s * 0.3!r}", f"mlp,{b},{c},{p},{s * 0.7!r}"]
    table.write_text("\n".join(lines) + "\n")
    read = points_from_file(table)
    assert [(b, c, p) for b, c, p, _ in read] == [(b, c, p) for b, c, p, _ in points]
    np.testing.assert_allclose([s for *_, s in read], [s for *_, s in points], rtol=1e-12)
    bench = tmp_path / "synthetic-bench.json"
    decode = [p for p in points if p[2] == 0]
    bench.write_text(
        json.dumps(
            {
                "note": "synthetic",
                "step_time": {
                    "points": [{"batch": b, "context": c // b, "seconds": s} for b, c, _, s in decode]
                },
            }
        )
    )
    assert points_from_file(bench) == [(float(b), float(c), 0.0, s) for b, c, _, s in decode]


def test_a_bench_file_with_prefill_passes_pins_the_compute_efficiency(tmp_path):
    """The bench's prefill passes are prompt-only steps (no decodes, nothing read from the cache):
    with them the file alone recovers both efficiencies the synthetic points came from."""
    points = synthetic_points()
    decode = [p for p in points if p[2] == 0]
    prefill = [p for p in points if p[2] > 0]
    bench = tmp_path / "synthetic-bench.json"
    bench.write_text(
        json.dumps(
            {
                "step_time": {
                    "points": [{"batch": b, "context": c // b, "seconds": s} for b, c, _, s in decode],
                    "prefill": [{"tokens": p, "seconds": s} for _, _, p, s in prefill],
                }
            }
        )
    )
    read = points_from_file(bench)
    assert read[len(decode) :] == [(0.0, 0.0, float(p), s) for _, _, p, s in prefill]
    model = fit(BASE, read)
    assert model.flops_efficiency == pytest.approx(0.55, rel=3e-3)
    assert model.memory_efficiency == pytest.approx(0.72, rel=3e-3)


@pytest.mark.parametrize(
    "step, passes, field, words",
    [
        ({}, [{"tokens": 0}], "step_time.prefill[0].tokens", "at least 1"),
        ({}, [{"tokens": 10**30, "seconds": 0.1}], "step_time.prefill[0].tokens", "at most 100,000,000"),
        ({"context": 10**30}, [], "step_time.points[0].context", "at most 100,000,000"),
        ({"seconds": 1e300}, [], "step_time.points[0].seconds", "at most 3,600"),
    ],
)
def test_a_bad_or_huge_point_names_its_field(tmp_path, step, passes, field, words):
    """The measurement schema's ceilings hold for a file read for its points alone."""
    from engine.errors import UserError

    bench = tmp_path / "bad-bench.json"
    point = {"batch": 1, "context": 8, "seconds": 0.01, **step}
    bench.write_text(json.dumps({"step_time": {"points": [point], "prefill": passes}}))
    with pytest.raises(UserError) as err:
        points_from_file(bench)
    assert err.value.field == field and words in err.value.message


def test_a_bad_operator_table_names_the_file_and_column(tmp_path):
    from engine.errors import UserError

    table = tmp_path / "bad.csv"
    table.write_text("batch,context,prefill,seconds\n1,10,0,-1\n")
    with pytest.raises(UserError) as err:
        points_from_file(table)
    assert err.value.field == "seconds" and "line 2" in err.value.message


def test_a_day_spec_can_ask_for_the_calibrated_step_time(tmp_path):
    from engine.errors import UserError
    from engine.experiments.batching import BatchingSection, step_time_of
    from engine.sections import SpecLocation

    table = tmp_path / "ops.csv"
    table.write_text(
        "batch,context,prefill,seconds\n"
        + "".join(f"{b},{c},{p},{s!r}\n" for b, c, p, s in synthetic_points())
    )
    section = BatchingSection.model_validate(
        {
            "slots": 8,
            "workload": {"trace": "x.csv"},
            "policies": ["continuous"],
            "step_time": {"kind": "calibrated", "model": "llama-2-7b", "gpu": "a100-80gb", "file": "ops.csv"},
        }
    )
    model = step_time_of(section, SpecLocation(tmp_path / "day99.yaml"), None)
    assert isinstance(model, CalibratedStepTime) and model.points == 21
    table.unlink()
    with pytest.raises(UserError):
        step_time_of(section, SpecLocation(tmp_path / "day99.yaml"), None)


def test_calibrated_on_the_h200_file_predicts_the_h200_run_within_a_tenth():
    """Independent truth from a real card: days/day37.measured/nvidia-h200.json holds both the
    steps the model is fitted on and the lab's 200 requests replayed on the same card under
    static and continuous batching. Priced by the fit, the simulated schedules land within 11 %
    of the measured wall times (under them: the replay also pays Python between steps)."""
    from engine import batching
    from engine.batching.calibrated import calibrate_from_catalog
    from engine.workload import load_trace

    from helpers import DAYS

    file = DAYS / "day37.measured" / "nvidia-h200.json"
    measured = json.loads(file.read_text())["batching"]["policies"]
    model = calibrate_from_catalog("llama-2-7b", "h200", file)
    assert model.points == 36 and model.max_relative_error < 0.10  # 32 decode steps, 4 prefills
    workload = load_trace(DAYS / "day37.workload.csv")
    for name in ("static", "continuous"):
        policy = batching.registry.build(name, batching.PolicySettings())
        result = batching.simulate(workload, policy, slots=16, step_time=model)
        assert result.steps == measured[name]["steps"]  # the same rules, step for step
        ratio = result.makespan_seconds / measured[name]["wall_seconds"]
        assert 0.89 < ratio < 1.0, (name, ratio)
