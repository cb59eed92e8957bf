"""Seconds: step-time models against closed forms, the clock against Little's law."""

from __future__ import annotations

import json
import math
import mmap
import time
import tracemalloc
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.batching import (
    ContinuousPolicy,
    MeasuredStepTime,
    PagedPolicy,
    RooflineStepTime,
    StaticPolicy,
    UnitStepTime,
    simulate,
)
from engine.batching.loaders import load_measured_step_time, roofline_from_catalog
from engine.batching.paged import UNGATED_SYNC_RULES
from engine.batching.steptime import _stop, clock_functions, run_seconds, step_seconds, steps_to_reach, stop
from engine.errors import UserError
from engine.workload import GeneratedWorkload, Workload, generate, load_trace

from helpers import LAB_TRACE  # the lab's trace, as committed in days/

# A 7B model in fp16 on a 2 TB/s, 1 PFLOP/s card, the lab's 512 KiB of KV per token.
SEVEN_B = RooflineStepTime(
    weights_bytes=14e9,
    kv_bytes_per_token=524_288,
    flops_per_token=14e9,
    hbm_bytes_per_s=2e12,
    peak_flops=1e15,
)


# ---- the models ------------------------------------------------------------------------------------


def test_roofline_by_hand():
    one = SEVEN_B.seconds(np.array([1]), np.array([0]), np.array([0]))[0]
    assert one == pytest.approx(14e9 / 2e12)  # memory-bound: 7 ms to read the weights
    # 16 requests at 2,048 tokens read 16 GiB of KV on top of the weights
    kv = 16 * 2048 * 524_288
    assert SEVEN_B.seconds(np.array([16]), np.array([16 * 2048]), np.array([0]))[0] == pytest.approx(
        (14e9 + kv) / 2e12
    )
    # a 4,096-token prompt is compute-bound: 4,096 × 14 GFLOP at 1 PFLOP/s
    assert SEVEN_B.seconds(np.array([0]), np.array([0]), np.array([4096]))[0] == pytest.approx(
        4096 * 14e9 / 1e15
    )


MODELS = [
    UnitStepTime(0.02),
    SEVEN_B,
    RooflineStepTime(1e9, 2e5, 5e12, 1e12, 1e14),  # compute-bound at first, memory-bound later
    MeasuredStepTime(intercept=0.008, per_token=5e-5, per_context_token=3e-9),
]


@settings(max_examples=80, deadline=None)
@given(
    model=st.sampled_from(MODELS),
    batch=st.integers(1, 512),
    context=st.integers(0, 10**6),
    steps=st.integers(0, 3000),
)
def test_segment_sums_match_step_by_step(model, batch, context, steps):
    per_step = model.seconds(np.full(steps, batch), context + batch * np.arange(steps), np.zeros(steps))
    assert model.segment_seconds(batch, context, steps) == pytest.approx(per_step.sum(), rel=1e-9, abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    model=st.sampled_from(MODELS),
    batch=st.integers(0, 64),
    context=st.integers(0, 10**5),
    seconds=st.floats(0, 50),
)
def test_steps_to_reach_is_the_fewest(model, batch, context, seconds):
    m = steps_to_reach(model, batch, context, seconds)
    assert run_seconds(model, batch, context, m) >= seconds
    if m > 0:
        assert run_seconds(model, batch, context, m - 1) < seconds


TP_ROOFLINE = RooflineStepTime(7e9, 2.6e5, 7e9, 2e12, 3e14, comm_seconds_per_token=4e-6)


@settings(max_examples=60, deadline=None)
@given(
    model=st.sampled_from([*MODELS, TP_ROOFLINE]),
    batch=st.integers(0, 64),
    context=st.integers(0, 10**5),
    steps=st.one_of(st.none(), st.integers(0, 400)),
    need=st.one_of(st.none(), st.floats(-1, 8)),
)
def test_the_clocks_one_call_stop_is_the_runner_and_reach(model, batch, context, steps, need):
    """stop(): the run up to the next event, or the fewest steps that last `need` seconds if
    fewer; the roofline's own one-call version gives the same integers and the same floats
    as the runner and reach() (the generic path), and both meet the definition."""
    if steps is None and need is None:
        return  # nothing ahead: the simulator ends the run without asking
    k, span = stop(model, batch, context, steps, need)
    assert (k, span) == _stop(model, batch, context, steps, need)
    assert span == run_seconds(model, batch, context, k)
    if need is not None and need <= 0:
        assert k == 0
    elif need is not None and (steps is None or run_seconds(model, batch, context, steps) >= need):
        assert span >= need and (k == 0 or run_seconds(model, batch, context, k - 1) < need)
    else:
        assert k == steps


@settings(max_examples=80, deadline=None)
@given(
    model=st.sampled_from([*MODELS, TP_ROOFLINE]),
    batch=st.integers(0, 40),
    context=st.integers(0, 10**6),
    prefill=st.one_of(st.just(0), st.integers(0, 5000)),
    next_batch=st.integers(0, 40),
    first_context=st.integers(0, 10**6),
    steps=st.one_of(st.none(), st.integers(0, 400)),
    deadline=st.one_of(st.none(), st.floats(0, 10)),
    now=st.floats(0, 5),
    batch_limit=st.sampled_from([0, 8, 64]),
)
def test_the_clocks_advance_is_one_step_then_stop(
    model, batch, context, prefill, next_batch, first_context, steps, deadline, now, batch_limit
):
    """advance(): step t's seconds (the idle time if it ran nothing), then stop() with the
    need left before the deadline; the models' one-call versions give the same integers and
    floats as the generic step and stop, whatever batch sizes they worked out ahead."""
    if steps is None and deadline is None:
        return
    this = model.idle_seconds if batch == 0 and prefill == 0 else step_seconds(model, batch, context, prefill)
    need = None if deadline is None else deadline - (now + this)
    k, span = _stop(model, next_batch, first_context, steps, need)
    got = clock_functions(model, batch_limit).advance(
        batch, context, prefill, next_batch, first_context, steps, deadline, now
    )
    assert got == (k, this + span)


def test_measured_fit_recovers_exact_coefficients():
    points = [(b, c, 0.006 + 4e-5 * b + 2e-9 * b * c) for b in (1, 4, 16, 64) for c in (128, 1024, 4096)]
    fit = MeasuredStepTime.fit(points)
    assert fit.intercept == pytest.approx(0.006)
    assert fit.per_token == pytest.approx(4e-5)
    assert fit.per_context_token == pytest.approx(2e-9)
    assert fit.points == 12 and fit.rmse == pytest.approx(0, abs=1e-12)


def test_measured_fit_keeps_coefficients_non_negative():
    """Steps that get faster with more batch (noise) must not give a negative per-token cost."""
    points = [(1, 100, 0.010), (8, 100, 0.009), (32, 100, 0.008)]
    fit = MeasuredStepTime.fit(points)
    assert min(fit.intercept, fit.per_token, fit.per_context_token) >= 0
    assert fit.per_token == 0 and fit.per_context_token == 0
    assert fit.intercept == pytest.approx(0.009)  # the best constant is the mean


def test_load_measured_file(tmp_path):
    doc = {
        "step_time": {
            "points": [
                {"batch": b, "context": c, "seconds": 0.005 + 1e-4 * b, "bytes_moved": 1}
                for b in (1, 2, 4, 8)
                for c in (512, 2048)
            ]
        }
    }
    path = tmp_path / "h100.json"
    path.write_text(json.dumps(doc))
    fit = load_measured_step_time(path)
    assert fit.per_token == pytest.approx(1e-4) and fit.intercept == pytest.approx(0.005)
    doc["step_time"]["points"][3]["seconds"] = -1
    path.write_text(json.dumps(doc))
    with pytest.raises(UserError) as caught:
        load_measured_step_time(path)
    assert caught.value.field == "step_time.points[3].seconds" and caught.value.file == str(path)
    path.write_text("{not json")
    with pytest.raises(UserError, match="not valid JSON"):
        load_measured_step_time(path)
    with pytest.raises(UserError, match="no such"):
        load_measured_step_time(tmp_path / "absent.json")


def test_roofline_from_catalog_uses_the_kv_calculator():
    """Llama-2-7B: 2 × 32 layers × 32 KV heads × 128 × 2 bytes = 524,288 B per token."""
    model = roofline_from_catalog("llama-2-7b", "h100-80gb")
    assert model.kv_bytes_per_token == 524_288
    assert model.weights_bytes == pytest.approx(2 * 6.74e9, rel=0.01)
    assert model.flops_per_token == pytest.approx(2 * 6.74e9, rel=0.01)


# ---- the clock -------------------------------------------------------------------------------------


def brute_force_seconds(result, model) -> float:
    """Σ over steps of the model's time for what runs in it, recounted request by request. A
    static group's finished members pad on until the group ends, their reads still growing."""
    s = result.schedule
    in_batch_until = s.end if s.groups is None else s.groups.end[s.groups.member_group]
    batch, context, prefill = (np.zeros(result.steps, dtype=np.int64) for _ in range(3))
    for i in range(len(s.decode_start)):  # each stay in the batch at steps [its decode start, until)
        first, until = int(s.decode_start[i]), int(in_batch_until[i])
        batch[first:until] += 1
        context[first:until] += s.context[i] + np.arange(1, until - first + 1)  # its cache + new token
    for k, tokens in zip(s.chunk_step.tolist(), s.chunk_tokens.tolist()):
        prefill[k] += tokens
    # Each step priced by the model on its own (one call for every step's row, not one per step).
    busy = (batch > 0) | (prefill > 0)
    priced = model.seconds(batch[busy], context[busy], prefill[busy])
    return float(priced.sum()) + model.idle_seconds * int((~busy).sum())


def test_roofline_clock_sums_what_each_step_runs():
    lab = load_trace(LAB_TRACE)
    w = Workload.of(lab.output_tokens, prompt_tokens=(np.arange(lab.n) * 37) % 300)
    for policy in (StaticPolicy(), ContinuousPolicy()):
        r = simulate(w, policy, slots=16, step_time=SEVEN_B)
        assert r.makespan_seconds == pytest.approx(brute_force_seconds(r, SEVEN_B), rel=1e-9)


def test_batch_dependent_clock_with_arrivals_is_causal():
    """With roofline steps and Poisson arrivals, nobody starts before arriving, and each request
    joins no earlier than the first step that begins after its arrival."""
    w = generate(
        GeneratedWorkload.model_validate(
            {
                "requests": 600,
                "seed": 3,
                "output_tokens": {"kind": "uniform", "low": 5, "high": 80},
                "prompt_tokens": {"kind": "uniform", "low": 0, "high": 400},
                "arrivals": {"kind": "poisson", "rate": 40.0},
            }
        )
    )
    for policy in (
        StaticPolicy(max_wait=0.05),
        ContinuousPolicy(),
        PagedPolicy(**UNGATED_SYNC_RULES, num_blocks=120),
    ):
        r = simulate(w, policy, slots=8, step_time=SEVEN_B)
        for name in ("queueing", "ttft", "e2e"):
            assert r.latency.seconds[name].min() >= -1e-9
        assert r.makespan_seconds == pytest.approx(brute_force_seconds(r, SEVEN_B), rel=1e-9)


def integral_in_system(arrival: np.ndarray, departure: np.ndarray) -> float:
    """∫ N(t) dt by sweeping arrival (+1) and departure (−1) events in time order."""
    times = np.concatenate((arrival, departure))
    change = np.concatenate((np.ones_like(arrival), -np.ones_like(departure)))
    order = np.argsort(times, kind="stable")
    in_system = np.cumsum(change[order])
    return float(np.sum(in_system[:-1] * np.diff(times[order])))


@pytest.mark.parametrize(
    "policy", [ContinuousPolicy(), PagedPolicy(**UNGATED_SYNC_RULES, num_blocks=2_000, block_size=16)]
)
def test_littles_law_and_the_utilisation_law_on_poisson_arrivals(policy):
    """λ = 8/s into 16 slots of 20 ms steps, mean output 66 tokens: offered load λ·E[S] = 10.6
    slots. Little: time-average in system = λ·W. Utilisation law: busy share = λ·E[S] / slots."""
    rate, slots, dt = 8.0, 16, 0.02
    w = generate(
        GeneratedWorkload.model_validate(
            {
                "requests": 20_000,
                "seed": 11,
                "output_tokens": {
                    "kind": "mixture",
                    "components": [
                        {"weight": 0.9, "dist": {"kind": "uniform", "low": 8, "high": 40}},
                        {"weight": 0.1, "dist": {"kind": "uniform", "low": 400, "high": 700}},
                    ],
                },
                "arrivals": {"kind": "poisson", "rate": rate},
            }
        )
    )
    r = simulate(w, policy, slots=slots, step_time=UnitStepTime(dt))
    departure = r.schedule.finish * dt
    window = float(departure.max())
    in_system = integral_in_system(w.arrival_time, departure) / window
    mean_e2e = float(r.latency.seconds["e2e"].mean())
    # the sample-path identity: the clock and the latencies tell the same story
    assert in_system == pytest.approx(w.n / window * mean_e2e, rel=1e-9)
    # Little's law with the offered rate
    assert in_system == pytest.approx(rate * mean_e2e, rel=0.03)
    # the utilisation law, from the workload alone
    offered = rate * w.output_tokens.mean() * dt / slots
    assert r.utilisation == pytest.approx(offered, rel=0.03)


def test_same_inputs_same_bytes():
    w = generate(
        GeneratedWorkload.model_validate(
            {
                "requests": 300,
                "seed": 5,
                "output_tokens": {"kind": "lognormal", "median": 40, "sigma": 1, "high": 400},
                "arrivals": {"kind": "gamma", "rate": 20, "cv": 2},
            }
        )
    )
    for policy in (
        StaticPolicy(max_wait=0.1),
        ContinuousPolicy(),
        PagedPolicy(**UNGATED_SYNC_RULES, num_blocks=60, block_size=8),
    ):
        a = json.dumps(simulate(w, policy, slots=8, step_time=UnitStepTime(0.02)).to_dict(), sort_keys=True)
        b = json.dumps(simulate(w, policy, slots=8, step_time=UnitStepTime(0.02)).to_dict(), sort_keys=True)
        assert a == b
    assert not math.isnan(json.loads(a)["latency"]["seconds"]["e2e"]["p99"])


# ---- no per-step arrays, and memory ----------------------------------------------------------------------------


@pytest.mark.parametrize("step_time", [None, *MODELS])
def test_a_thousand_requests_at_the_token_cap_on_one_slot(step_time):
    """1,000 requests of 10,000,000 tokens (half with 10M-token prompts) on one slot: ten billion
    steps. Nothing may be built per step: each policy runs in well under a second and 50 MiB."""
    from engine.workload import MAX_TOKENS

    w = Workload.of(np.full(1_000, MAX_TOKENS), prompt_tokens=(np.arange(1_000) % 2) * MAX_TOKENS)
    for policy in (StaticPolicy(), ContinuousPolicy(), PagedPolicy(**UNGATED_SYNC_RULES, block_size=16)):
        tracemalloc.start()
        began = time.perf_counter()
        try:
            r = simulate(w, policy, slots=1, step_time=step_time)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert time.perf_counter() - began < 5 and peak < 50 * 2**20, (policy, peak)
        assert r.steps == 1_000 * MAX_TOKENS  # a prompt's prefill step emits its first token
        assert r.tokens == 1_000 * MAX_TOKENS and r.busy_steps == r.steps
        if step_time is not None:  # one request at a time: continuous and static agree
            assert r.makespan_seconds > 0
            assert r.latency.seconds["e2e"].max() == pytest.approx(r.makespan_seconds)
        if isinstance(policy, PagedPolicy):  # a 20M-token request holds 1,250,000 blocks of 16
            assert r.kv_blocks["peak"] == 2 * MAX_TOKENS // 16


def _timed_paged_run():
    w = generate(
        GeneratedWorkload.model_validate(
            {
                "requests": 1_500,
                "seed": 9,
                "output_tokens": {"kind": "lognormal", "median": 60, "sigma": 1, "high": 600},
                "prompt_tokens": {"kind": "lognormal", "median": 200, "sigma": 1, "high": 1500},
                "arrivals": {"kind": "poisson", "rate": 30.0},
            }
        )
    )
    return w, PagedPolicy(num_blocks=400, block_size=16, max_num_seqs=24, max_num_batched_tokens=2048)


def test_a_clock_over_many_points_works_a_block_at_a_time(monkeypatch):
    """SegmentClock.at and step_of over 60,000 points, 2,000 at a time: the same values as one
    call over all of them, with temporaries of one block (a step-time model's sums make a dozen
    arrays as long as their input: all at once, over a million requests' times, they were most
    of a run's memory). The peak stays within the points, the answer and a MiB."""
    from engine.batching import clock as clocks

    w, policy = _timed_paged_run()
    r = simulate(w, policy, slots=24, step_time=SEVEN_B)
    clock = clocks.clock_for(r.schedule, SEVEN_B)
    rng = np.random.default_rng(4)
    steps = rng.integers(0, r.steps + 50, 60_000)
    seconds = rng.uniform(-1.0, 1.01 * r.makespan_seconds, 60_000)
    monkeypatch.setattr(clocks, "BLOCK", 2_000)
    tracemalloc.start()
    try:
        at = clock.at(steps)
        at_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        joins = clock.step_of(seconds)
        join_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert at_peak < 2 * steps.nbytes + 2**20 and join_peak < 2 * seconds.nbytes + 2**20, (at_peak, join_peak)
    monkeypatch.setattr(clocks, "BLOCK", 10**9)  # one call over every point
    assert np.array_equal(at, clock.at(steps)) and np.array_equal(joins, clock.step_of(seconds))


def test_a_run_gives_the_same_results_in_blocks_of_any_size(monkeypatch):
    """The whole timed paged run, its clock and metrics evaluated 97 points at a time, gives the
    same results.json bytes as in one call each."""
    from engine.batching import clock as clocks

    w, policy = _timed_paged_run()
    whole = json.dumps(simulate(w, policy, slots=24, step_time=SEVEN_B).to_dict(), sort_keys=True)
    monkeypatch.setattr(clocks, "BLOCK", 97)
    assert json.dumps(simulate(w, policy, slots=24, step_time=SEVEN_B).to_dict(), sort_keys=True) == whole


def _windowed_cases():
    """Timed runs whose clocks have every kind of segment: chunked prefills and preemptions
    (paged), static groups that pad their finished members, and stays that never decode (one
    output token: the prefill step emits it)."""
    w, policy = _timed_paged_run()
    yield "paged, chunked, preempting", w, policy, 24
    rng = np.random.default_rng(9)
    n = 400
    one_token = Workload(
        prompt_tokens=rng.integers(1, 300, n),
        output_tokens=np.where(rng.random(n) < 0.3, 1, rng.integers(1, 200, n)),
        arrival_time=np.sort(rng.uniform(0, 4.0, n)),
        source="drawn",
    )
    yield "continuous, a third never decode", one_token, ContinuousPolicy(), 16
    yield "static groups", one_token, StaticPolicy(), 16
    yield "paged, scarce blocks", one_token, PagedPolicy(num_blocks=60, block_size=16, max_num_seqs=16), 16


@pytest.mark.parametrize("case", list(_windowed_cases()), ids=lambda c: c[0])
def test_the_clock_asked_a_window_at_a_time_gives_the_whole_clocks_answers(case):
    """clock.asked builds the clock a window of steps at a time (at a million requests the whole
    clock is a hundred MiB) and answers every question in one pass: the same floats and steps,
    bit for bit, as the whole schedule's clock, for any number of windows, up to one per event.
    Asked at every segment edge and the steps beside it, at each segment's exact start time
    (where one window hands over to the next) and just either side, before and after the run."""
    from engine.batching import clock as clocks

    _, w, policy, slots = case
    r = simulate(w, policy, slots=slots, step_time=SEVEN_B)
    whole = clocks.clock_for(r.schedule, SEVEN_B)
    assert isinstance(whole, clocks.SegmentClock)
    rng = np.random.default_rng(3)
    edges = whole.edges
    steps = np.concatenate((edges, edges + 1, edges - 1, rng.integers(0, r.steps + 50, 3_000)))
    steps = steps[steps >= 0]
    times = whole.times
    seconds = np.concatenate(
        (times, np.nextafter(times, np.inf), np.nextafter(times, -np.inf), [-1.0, 0.0]),
    )
    seconds = np.concatenate((seconds, rng.uniform(0, 1.05 * times[-1], 3_000)))
    want_at, want_of = whole.at(steps), whole.step_of(seconds)
    for windows in (1, 2, 3, 7, 64, 400):  # 400: a window per event on the smaller runs
        (at, at_too), (of,) = clocks.asked(
            r.schedule, SEVEN_B, at=(steps, steps[::-1]), step_of=(seconds,), windows=windows
        )
        assert np.array_equal(at, want_at), windows
        assert np.array_equal(at_too, want_at[::-1]), windows
        assert np.array_equal(of, want_of), windows


def test_the_clock_asked_on_a_grid_is_the_grid():
    """A constant step time needs no windows: asked gives the grid clock's own answers."""
    from engine.batching import clock as clocks

    r = simulate(
        *_timed_paged_run()[:1],
        PagedPolicy(num_blocks=400, block_size=16),
        slots=8,
        step_time=UnitStepTime(0.02),
    )
    grid = clocks.GridClock(0.02)
    steps, seconds = np.arange(0, r.steps + 5), np.linspace(-0.1, r.makespan_seconds + 1, 777)
    (at,), (of,) = clocks.asked(r.schedule, UnitStepTime(0.02), at=(steps,), step_of=(seconds,))
    assert np.array_equal(at, grid.at(steps)) and np.array_equal(of, grid.step_of(seconds))


def test_the_paged_loop_lets_go_of_its_working_lists_before_its_schedule(monkeypatch):
    """After the run, the loop's per-request lists (inputs, queue and pool state) are dropped
    before the stays become arrays; the schedule is the one built with them still there. Its
    scratch (given mappings of its own here, as a million requests' is) goes back to the system,
    and the schedule holds none of it: a result that held mappings would let a process keeping
    tens of thousands of results run out of them."""
    from engine.batching import paged
    from engine.batching.paged import _Simulation

    monkeypatch.setattr(paged, "MAPPED_BYTES", 0)

    w, policy = _timed_paged_run()
    runs = []
    for end in (False, True):
        sim = _Simulation(
            np.zeros(w.n, dtype=np.int64),
            w.prompt_tokens,
            w.output_tokens,
            24,
            policy,
            (SEVEN_B, w.arrival_time),
        )
        policy.check(w.prompt_tokens, w.output_tokens, 24)
        sim.run()
        if end:
            # the per-request state that only the loop reads lives in mappings of its own, which
            # go back to the system with it (the stays' arrays would otherwise sit above its holes)
            pages = [weakref.ref(getattr(sim, name).obj) for name in ("generated", "offset", "due", "held")]
            sim.end_run()
            assert not any(
                len(getattr(sim, name)) for name in ("prompt", "output", "arrival", "offset", "due")
            )
            assert all(page() is None for page in pages)
        runs.append(sim.schedule())
    kept, ended = runs
    for name, value in vars(kept).items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(value, getattr(ended, name)), name
            assert not any(isinstance(owner, mmap.mmap) for owner in _owners(getattr(ended, name))), name
        else:
            assert value == getattr(ended, name), name


def _owners(array: np.ndarray):
    """What an array's memory belongs to: its bases, and the object behind a memoryview."""
    owner = array.base
    while owner is not None:
        yield owner
        owner = getattr(owner, "base", None) if isinstance(owner, np.ndarray) else getattr(owner, "obj", None)


def test_arrivals_too_many_steps_away_are_refused():
    w = Workload.of([3, 3], arrival_time=[0.0, 1e9])
    with pytest.raises(UserError) as caught:
        simulate(w, ContinuousPolicy(), slots=1, step_time=UnitStepTime(1e-7))
    assert caught.value.field == "step_time"
    r = simulate(w, ContinuousPolicy(), slots=1, step_time=UnitStepTime(1e-5))  # 1e14 steps: fine
    assert r.schedule.first_start.tolist() == [0, 10**14]


def test_a_quadrillion_steps_keep_whole_number_counts():
    """Arrivals spread over 1e9 s at 1 µs per step: steps near 10^15, where products of steps
    and counts pass int64. Busy and held slot-steps, busy steps and KV blocks stay exact, and
    both ways of counting blocks agree."""
    from engine.batching.blocks import blocks_at

    n = 10_000
    w = Workload.of(np.full(n, 3), prompt_tokens=np.arange(n) % 5, arrival_time=np.linspace(0, 1e9, n))
    r = simulate(w, PagedPolicy(**UNGATED_SYNC_RULES, block_size=1), slots=2, step_time=UnitStepTime(1e-6))
    assert r.steps == 10**15 + 3  # the last arrival's 3 tokens, the first from its prefill step
    width = np.diff(np.append(r.series["step"], r.steps))
    assert (r.series["busy"] * width).sum() == r.tokens == 30_000
    # every step that runs emits a token (a prefill step emits the first): nothing else is busy
    assert r.busy_steps == 30_000
    assert (r.series["held"] * width).sum() == r.occupancy * 2 * r.steps == 30_000
    s = r.schedule
    points = np.unique(np.concatenate((s.start, s.decode_start, s.end - 1)))
    by_crossings = blocks_at(s, 1, points, "crossings")
    assert np.array_equal(by_crossings, blocks_at(s, 1, points, "residues"))
    # a 4-token prompt, then two decode steps reading 5 and 6 tokens
    assert r.kv_blocks["peak"] == by_crossings.max() == 4 + 2


@pytest.mark.parametrize("dt", [1, 2])
def test_a_whole_number_step_time_prices_steps_as_seconds(dt):
    """A step time given as an int is seconds all the same: every latency is its step count
    times dt (requests all arrive at 0, so each counts from step 0 and from 0 s alike)."""
    w = Workload(np.array([3, 1, 5, 2]), np.array([4, 0, 2, 7]), np.zeros(4), "by hand")
    r = simulate(w, ContinuousPolicy(), slots=2, step_time=UnitStepTime(dt))
    assert r.latency.seconds is not None
    for name, steps in r.latency.steps.items():
        np.testing.assert_array_equal(r.latency.seconds[name], steps * dt)
        assert r.latency.seconds[name].dtype == np.float64
    assert r.makespan_seconds == r.steps * dt
