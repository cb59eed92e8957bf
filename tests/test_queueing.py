"""Day 4 queueing: simulated queues against closed forms, and the simulators against naive loops.

How close the simulation must be (and why): means are compared within 4 standard errors,
where the standard error comes from 20 batch means of the kept requests (Row.*_se). Checked
over 300 seeds at 300,000 requests, (simulated − exact)/se spreads like a t with 19 degrees
of freedom (sd 1.0–1.1) for ρ from 0.5 to 0.95, so 4 se is a two-sided 0.1 % band. With
1,000,000 requests per row that band is ±1.3 % of the exact mean at ρ = 0.5, ±3 % at 0.8,
±8 % at 0.9 and ±13 % at 0.95 (measured means land within 1 % here). p99s are compared the
same way where the batch se of a p99 was checked to be calibrated (ρ ≤ 0.8 for M/M/1, the
lab's 90 req/s for M/M/c); at ρ = 0.9 it understates the error 1.6-fold, so no p99 is tested
there. Probabilities of waiting: the batch se of the 0/1 "waited" series for Erlang C, and
±0.01 elsewhere (the seed-to-seed sd is 0.002). Every run has a fixed seed, so none of this
is flaky: the bands say how far a correct simulator may stray, and a wrong formula or
simulator lands outside them (e.g. M/M/1 instead of Pollaczek–Khinchine for CV ≠ 1).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.queueing import (
    closed_forms as cf,
)
from engine.queueing import (
    compare_lines,
    comparison_to_dict,
    erlang_c,
    mm1_sweep,
    mmc_mean_wait,
    shared_sweep,
    simulate,
    sweeps,
)
from engine.queueing.simulate import (
    round_robin_lines,
    separate_lines_starts,
    shared_line_starts,
    single_server_starts,
)
from engine.queueing.summary import Row, batch_se
from engine.queueing.traffic import ServiceLaw, draw

from helpers import examples

S = 0.010  # 10 ms mean service, as in the lab
Z = 4.0  # standard errors allowed (see module docstring)
BIG = 1_000_000  # requests per row for the mean checks


def within(simulated: float, exact: float, se: float, z: float = Z) -> bool:
    return abs(simulated - exact) <= z * se


# --- closed forms, by hand and against independent formulas ------------------------------------


def erlang_c_textbook(c: int, a: Fraction) -> Fraction:
    """Erlang C by the textbook sum, in exact rationals: independent of the recursion."""
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (sum(a**k / math.factorial(k) for k in range(c)) + top)


def test_erlang_c_hand_worked():
    # c = 2: C = 2ρ²/(1 + ρ). A = 1.8 → ρ = 0.9 → 1.62 / 1.9 = 0.852631578947…
    assert erlang_c(2, 1.8) == pytest.approx(1.62 / 1.9, rel=1e-14)
    assert erlang_c(2, 1.8) == pytest.approx(0.8526315789473684, rel=1e-14)
    # c = 3, A = 2: sum = 1 + 2 + 2 = 5, top = (8/6)·3 = 4 → C = 4/9.
    assert erlang_c(3, 2.0) == pytest.approx(4 / 9, rel=1e-14)
    # One server: the probability of waiting is ρ.
    assert erlang_c(1, 0.7) == pytest.approx(0.7, rel=1e-14)


@settings(max_examples=60, deadline=None)
@given(c=st.integers(1, 40), frac=st.fractions(Fraction(1, 100), Fraction(99, 100)))
def test_erlang_c_matches_textbook_sum(c, frac):
    a = frac * c
    assert erlang_c(c, float(a)) == pytest.approx(float(erlang_c_textbook(c, a)), rel=1e-10)


def test_erlang_c_stable_for_many_servers():
    # 400! and 380^400 overflow floats; the recursion does not.
    exact = float(erlang_c_textbook(400, Fraction(380)))
    assert erlang_c(400, 380.0) == pytest.approx(exact, rel=1e-10)
    assert 0.0 < exact < 1.0


def test_erlang_c_rejects_overload():
    with pytest.raises(ValueError):
        erlang_c(2, 2.0)


def test_mmc_matches_lab_and_mm1():
    # The lab at 90 req/s, 10 ms: 2 servers averaged 12.5 ms (Erlang C 12.54), 3 servers 10.3.
    assert 1000 * cf.mmc_mean_sojourn(2, 90, S) == pytest.approx(12.539, abs=1e-3)
    assert 1000 * cf.mmc_mean_sojourn(3, 90, S) == pytest.approx(10.333, abs=1e-3)
    # c = 1 is M/M/1, mean and p99.
    assert mmc_mean_wait(1, 90, S) == pytest.approx(cf.mm1_mean_wait(90, S), rel=1e-12)
    assert cf.mmc_sojourn_quantile(0.99, 1, 90, S) == pytest.approx(
        cf.mm1_sojourn_quantile(0.99, 90, S), rel=1e-9
    )
    assert cf.mmc_wait_quantile(0.99, 1, 90, S) == pytest.approx(cf.mm1_wait_quantile(0.99, 90, S), rel=1e-12)


def test_mm1_closed_forms():
    # S/(1 − ρ): 20, 33.3, 50, 100, 200, 1000 ms (the lab measured 19.9 … 1,223.7).
    got = [1000 * cf.mm1_mean_sojourn(r / S, S) for r in (0.5, 0.7, 0.8, 0.9, 0.95, 0.99)]
    assert got == pytest.approx([20, 100 / 3, 50, 100, 200, 1000], rel=1e-9)
    # p99 at ρ = 0.9: ln(100) · 100 ms = 460.5 ms (the lab measured 481.2).
    assert 1000 * cf.mm1_sojourn_quantile(0.99, 90, S) == pytest.approx(460.517, abs=1e-3)
    # Wait quantile: P(W > t) = ρ e^{−t(μ−λ)} → 0 below 1 − ρ.
    assert cf.mm1_wait_quantile(0.05, 90, S) == 0.0
    t = cf.mm1_wait_quantile(0.99, 90, S)
    assert 0.9 * math.exp(-t * 10) == pytest.approx(0.01, rel=1e-12)


@pytest.mark.parametrize("c,lam", [(2, 90.0), (3, 250.0), (2, 100.0), (4, 399.0)])
def test_mmc_sojourn_quantile_inverts_survival(c, lam):
    # (2, 100) hits the θ = μ branch of the survival function.
    q = cf.mmc_sojourn_quantile(0.99, c, lam, S)
    assert cf.mmc_sojourn_survival(q, c, lam, S) == pytest.approx(0.01, rel=1e-9)


def test_mmc_survival_continuous_at_theta_equals_mu():
    at = cf.mmc_sojourn_survival(0.03, 2, 100.0, S)
    near = cf.mmc_sojourn_survival(0.03, 2, 100.0 + 1e-4, S)
    assert at == pytest.approx(near, rel=1e-5)


def test_pollaczek_khinchine():
    assert cf.pk_mean_wait(80, S, 1.0) == pytest.approx(cf.mm1_mean_wait(80, S), rel=1e-12)
    assert cf.md1_mean_wait(80, S) == pytest.approx(cf.mm1_mean_wait(80, S) / 2, rel=1e-12)


@pytest.mark.parametrize("c", [1, 2, 3, 8])
@pytest.mark.parametrize("rho", [0.3, 0.9, 0.999])
def test_round_robin_sigma_solves_its_equation(c, rho):
    lam = rho * c / S
    sigma = cf.round_robin_sigma(c, lam, S)
    assert sigma == pytest.approx((lam / (lam + (1 - sigma) / S)) ** c, abs=1e-12)
    if c == 1:
        assert sigma == pytest.approx(rho, abs=1e-12)
    else:  # Erlang gaps are steadier than Poisson ones: fewer wait
        assert 0.0 < sigma < rho


# --- the simulators against naive loops --------------------------------------------------------


def naive_fifo(arrivals, services, servers):
    """FIFO with c servers, written the slow obvious way: scan for the server that frees first."""
    free = [0.0] * servers
    starts = []
    for a, w in zip(arrivals, services):
        k = min(range(servers), key=free.__getitem__)
        start = max(a, free[k])
        free[k] = start + w
        starts.append(start)
    return np.array(starts)


# A coarse grid makes ties and near-ties (arrival just as a server frees) common.
grid = st.one_of(st.integers(0, 30).map(lambda k: k / 10), st.floats(0.0, 5.0))
times = st.lists(grid, min_size=1, max_size=60)


@settings(max_examples=examples(40, 800), deadline=None)
@given(gaps=times, data=st.data(), servers=st.integers(1, 4))
def test_simulators_match_naive_loop(gaps, data, servers):
    n = len(gaps)
    work = data.draw(st.lists(grid, min_size=n, max_size=n))
    arrivals, services = np.cumsum(gaps), np.array(work)
    expected = naive_fifo(arrivals, services, servers)
    assert np.allclose(shared_line_starts(arrivals, services, servers), expected, atol=1e-9)
    if servers == 1:
        assert np.allclose(single_server_starts(arrivals, services), expected, atol=1e-9)
    lines = data.draw(st.lists(st.integers(0, servers - 1), min_size=n, max_size=n))
    line_of = np.array(lines)
    got = separate_lines_starts(arrivals, services, line_of, servers)
    for line in range(servers):
        mine = line_of == line
        assert np.allclose(got[mine], naive_fifo(arrivals[mine], services[mine], 1), atol=1e-9)


def test_shared_line_by_hand():
    # Two servers. Requests 1 and 2 arrive together; server A frees at 10 ms, B at 20 ms.
    # Request 3 (10.1 ms) finds A free; request 4 (10.2 ms) waits for B at 20 ms.
    arrivals = np.array([0.0, 0.0, 0.0101, 0.0102])
    services = np.array([0.010, 0.020, 0.010, 0.010])
    starts = shared_line_starts(arrivals, services, 2)
    assert starts == pytest.approx([0.0, 0.0, 0.0101, 0.020], abs=1e-15)
    assert np.all(starts >= arrivals)


def test_idle_server_means_exactly_no_wait():
    arrivals = np.array([0.1, 0.2, 5.0, 5.1])
    services = np.array([0.3, 0.3, 0.01, 0.01])
    assert (single_server_starts(arrivals, services) - arrivals).tolist()[2:] == [0.0, 0.0]
    assert np.array_equal(shared_line_starts(arrivals, services, 4), arrivals)


def test_round_robin_deals_in_turn():
    assert round_robin_lines(7, 3).tolist() == [0, 1, 2, 0, 1, 2, 0]


# --- the blocked shared line against the one-request-at-a-time loop, to the bit ----------------


def by_heap(arrivals, services, servers):
    """The shared line one request at a time (the route short runs take)."""
    return np.asarray(simulate._by_heap(arrivals.tolist(), services.tolist(), [-np.inf] * servers))


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(1, 300),
    seed=st.integers(0, 2**32 - 1),
    servers=st.integers(2, 4),
    load=st.sampled_from([0.3, 0.9, 1.0, 2.0]),
    check=st.sampled_from([1, 2, 16]),
    checks_per_block=st.integers(1, 3),
)
def test_blocks_give_the_loops_start_times_to_the_bit(n, seed, servers, load, check, checks_per_block):
    """Tiny blocks and checks, so that a short run crosses many blocks: blocks that meet their
    guess at once, late or never, and the give-up. Times on a 0.1 grid make ties (an arrival
    just as a server frees) common."""
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(np.round(rng.exponential(1.0, n), 1))
    services = np.round(rng.exponential(load * servers, n), 1)
    expected = by_heap(arrivals, services, servers)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(simulate, "CHECK", check)
        got = simulate._by_blocks(arrivals, services, servers, check * checks_per_block)
    assert got.dtype == expected.dtype and np.array_equal(got, expected)
    assert np.allclose(got, naive_fifo(arrivals, services, servers), atol=1e-9)


@pytest.mark.parametrize("servers", [2, 3, 8])
@pytest.mark.parametrize("rho", [0.5, 0.9, 0.999, 1.2])
def test_long_runs_take_the_blocks_and_keep_the_loops_start_times(servers, rho):
    """At the size where shared_line_starts switches to blocks: below saturation (most blocks
    meet their guess), at it, and overloaded (none does: the give-up)."""
    n = simulate.BLOCKS_FROM
    d = draw(n, seed=servers)
    arrivals, services = d.arrivals(rho * servers / S), d.services(S)
    assert np.array_equal(
        shared_line_starts(arrivals, services, servers), by_heap(arrivals, services, servers)
    )


def test_a_block_is_whole_checks():
    arrivals = np.arange(100.0)
    with pytest.raises(ValueError):
        simulate._by_blocks(arrivals, arrivals, 2, simulate.CHECK + 1)


# --- M/M/1 against S/(1 − ρ) and its exponential quantiles ---------------------------------------


@pytest.fixture(scope="module")
def mm1_rows():
    return mm1_sweep([0.5, 0.7, 0.8, 0.9, 0.95], S, BIG, seed=2024)


def test_mm1_mean_time_in_system(mm1_rows):
    for row in mm1_rows:
        exact = S / (1 - row.utilisation)
        assert within(row.mean_sojourn, exact, row.mean_sojourn_se), row
        assert within(row.mean_wait, exact - S, row.mean_wait_se), row
        # How close that is: ±1.3 % of the exact mean at ρ = 0.5 … ±8 % at 0.9, ±13 % at 0.95.
        assert Z * row.mean_sojourn_se < 0.15 * exact
        assert row.expected.source == "M/M/1"
        assert row.expected.mean_sojourn == pytest.approx(exact, rel=1e-12)


def test_mm1_sweep_shape(mm1_rows):
    assert [r.utilisation for r in mm1_rows] == [0.5, 0.7, 0.8, 0.9, 0.95]
    # Common random numbers: the same requests at a higher load can only wait longer.
    means = [r.mean_sojourn for r in mm1_rows]
    assert means == sorted(means)
    for row in mm1_rows:
        assert row.warmup == BIG // 10 and row.requests + row.warmup == BIG


def test_mm1_p99_against_exponential(mm1_rows):
    law = ServiceLaw.of()
    d = draw(BIG, seed=7, law=law)
    for rho in (0.5, 0.7, 0.8):
        arrivals, services = d.arrivals(rho / S), d.services(S)
        sojourn = (single_server_starts(arrivals, services) + services - arrivals)[BIG // 10 :]
        exact = cf.mm1_sojourn_quantile(0.99, rho / S, S)  # −ln(0.01) · S/(1 − ρ)
        assert within(np.quantile(sojourn, 0.99), exact, batch_se(sojourn, 0.99)), rho
    # The sweep reports the same statistic at ρ = 0.9; the lab's 481.2 ms was one draw of it.
    row = mm1_rows[3]
    assert row.utilisation == 0.9
    assert row.expected.p99_sojourn == pytest.approx(0.4605, abs=1e-4)


def test_mm1_probability_of_waiting_and_busy_fraction(mm1_rows):
    for row in mm1_rows:
        # PASTA: an arrival finds the server busy with probability ρ.
        assert row.prob_wait == pytest.approx(row.utilisation, abs=0.01)
        assert row.busy_fraction == pytest.approx(row.utilisation, abs=0.01)


def assert_littles_law(row: Row) -> None:
    # L (time average over the window) = λ W (customer average); only edge effects differ.
    assert row.mean_in_system == pytest.approx(row.observed_arrival_rate * row.mean_sojourn, rel=0.005), row
    assert row.observed_arrival_rate == pytest.approx(row.arrival_rate, rel=0.01)


def test_littles_law(mm1_rows, at_the_labs_load):
    """One server, and one shared line of two and three (every policy's rows: below)."""
    for row in list(mm1_rows) + at_the_labs_load.rows[1:]:
        assert_littles_law(row)


# --- general service: Pollaczek–Khinchine --------------------------------------------------------


@pytest.mark.parametrize("service,cv", [("deterministic", None), ("lognormal", 0.5), ("lognormal", 1.0)])
def test_mg1_mean_wait_pollaczek_khinchine(service, cv):
    row = mm1_sweep([0.8], S, BIG, seed=11, service=service, service_cv=cv)[0]
    exact = cf.pk_mean_wait(80, S, 0.0 if cv is None else cv)
    assert row.expected.mean_wait == pytest.approx(exact, rel=1e-12)
    assert within(row.mean_wait, exact, row.mean_wait_se), row
    # …and far from M/M/1 when the CV is not 1.
    if cv != 1.0:
        assert not within(row.mean_wait, cf.mm1_mean_wait(80, S), row.mean_wait_se)


def test_service_laws_have_the_stated_mean_and_cv():
    for law in (ServiceLaw.of("lognormal", 0.5), ServiceLaw.of("lognormal", 1.5)):
        work = draw(BIG, seed=5, law=law).work
        assert work.mean() == pytest.approx(1.0, abs=4 * law.cv / math.sqrt(BIG))
        assert work.std() / work.mean() == pytest.approx(law.cv, rel=0.05)
    assert np.all(draw(10, seed=5, law=ServiceLaw.of("deterministic")).work == 1.0)
    with pytest.raises(ValueError):
        ServiceLaw.of("uniform")
    with pytest.raises(ValueError):
        ServiceLaw.of("exponential", 0.5)


# --- one shared line (Erlang C) against separate lines -------------------------------------------


@dataclass(frozen=True)
class LabsLoad:
    """The lab's M/M/c runs (90 req/s, 10 ms service, 1, 2 and 3 servers; BIG requests): the
    rows shared_sweep reports, and the requests and start times it computed them from."""

    rows: list[Row]
    arrivals: np.ndarray
    services: np.ndarray
    starts: dict[int, np.ndarray]


@pytest.fixture(scope="module")
def at_the_labs_load() -> LabsLoad:
    """One simulation of the lab's load, shared by every test of it: a million requests through
    one shared line per server count, and a second run of the same configuration with another
    seed would check the same thing again. The start times are
    recorded as the sweep computes them, so the tests that need every request's wait read the
    very run whose rows they check."""
    starts: dict[int, np.ndarray] = {}
    requests: list[tuple[np.ndarray, np.ndarray]] = []

    def recorded(arrivals: np.ndarray, services: np.ndarray, servers: int) -> np.ndarray:
        requests.append((arrivals, services))
        starts[servers] = shared_line_starts(arrivals, services, servers)
        return starts[servers]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sweeps, "shared_line_starts", recorded)
        rows = shared_sweep([1, 2, 3], 90, S, BIG, seed=90)
    assert sorted(starts) == [1, 2, 3]
    arrivals, services = requests[0]
    assert all(a is arrivals and s is services for a, s in requests)  # one set of requests
    return LabsLoad(rows, arrivals, services, starts)


def test_shared_line_against_erlang_c_at_the_labs_load(at_the_labs_load):
    rows = at_the_labs_load.rows
    assert [row.servers for row in rows] == [1, 2, 3]
    for row in rows:
        c = row.servers
        assert within(row.mean_wait, mmc_mean_wait(c, 90, S), row.mean_wait_se), row
        assert within(row.mean_sojourn, cf.mmc_mean_sojourn(c, 90, S), row.mean_sojourn_se), row
        assert row.prob_wait == pytest.approx(erlang_c(c, 0.9), abs=0.01)
    _, two, three = rows
    assert two.expected.source == "M/M/c (Erlang C)"
    # The lab: 2 servers avg 12.5 ms / p99 53.8 ms; 3 servers avg 10.3 / p99 46.7.
    assert 1000 * two.expected.p99_sojourn == pytest.approx(53.76, abs=0.01)
    assert 1000 * three.expected.p99_sojourn == pytest.approx(46.67, abs=0.01)


@pytest.mark.parametrize("c", [2, 3])
def test_erlang_c_probability_of_waiting_and_p99(c, at_the_labs_load):
    arrivals, services = at_the_labs_load.arrivals, at_the_labs_load.services
    wait = (at_the_labs_load.starts[c] - arrivals)[BIG // 10 :]
    waited = (wait > 0).astype(float)
    assert within(waited.mean(), erlang_c(c, 0.9), batch_se(waited))
    p99_wait = cf.mmc_wait_quantile(0.99, c, 90, S)
    assert within(np.quantile(wait, 0.99), p99_wait, batch_se(wait, 0.99))
    sojourn = wait + services[BIG // 10 :]
    p99 = cf.mmc_sojourn_quantile(0.99, c, 90, S)
    assert within(np.quantile(sojourn, 0.99), p99, batch_se(sojourn, 0.99))


@pytest.fixture(scope="module", params=[(2, 0.9), (3, 0.9), (2, 0.6)])
def comparison(request):
    c, rho = request.param
    return c, rho, compare_lines(c, rho * c / S, S, BIG, seed=42)


def test_each_policy_matches_its_closed_form(comparison):
    c, rho, cmp = comparison
    lam = rho * c / S
    exact = {
        "shared": (erlang_c(c, rho * c), mmc_mean_wait(c, lam, S)),
        # A Poisson stream split at random: c independent M/M/1 queues at λ/c.
        "separate_random": (rho, cf.mm1_mean_wait(lam / c, S)),
        # Dealt in turn: c independent E_c/M/1 queues.
        "separate_round_robin": (
            cf.round_robin_sigma(c, lam, S),
            cf.round_robin_mean_wait(c, lam, S),
        ),
    }
    for policy, (p_wait, mean_wait) in exact.items():
        row = cmp[policy]
        assert row.policy == policy and row.servers == c
        assert row.utilisation == pytest.approx(rho, rel=1e-12)
        assert within(row.mean_wait, mean_wait, row.mean_wait_se), row
        assert row.prob_wait == pytest.approx(p_wait, abs=0.01), row
        assert row.expected.mean_wait == pytest.approx(mean_wait, rel=1e-12)


def test_littles_law_for_each_policy(comparison):
    _, _, cmp = comparison
    for policy in ("shared", "separate_random", "separate_round_robin"):
        assert_littles_law(cmp[policy])


def test_shared_beats_separate(comparison):
    c, rho, cmp = comparison
    shared, rr, rnd = (cmp[p] for p in ("shared", "separate_round_robin", "separate_random"))
    for stat in ("mean_wait", "p99_wait", "mean_sojourn", "p99_sojourn"):
        assert getattr(shared, stat) < getattr(rr, stat) < getattr(rnd, stat), stat
        for policy in ("separate_random", "separate_round_robin"):
            ratio = cmp["ratios"][policy][stat]
            assert ratio == pytest.approx(getattr(cmp[policy], stat) / getattr(shared, stat))
            assert ratio > 1.0
    # The measured gap agrees with the closed-form gap M/M/1(λ/c) ÷ Erlang C, within the
    # two relative standard errors combined.
    lam = rho * c / S
    exact = cf.mm1_mean_wait(lam / c, S) / mmc_mean_wait(c, lam, S)
    rel_se = math.hypot(rnd.mean_wait_se / rnd.mean_wait, shared.mean_wait_se / shared.mean_wait)
    assert cmp["ratios"]["separate_random"]["mean_wait"] == pytest.approx(exact, rel=Z * rel_se)


# --- determinism and plain JSON -------------------------------------------------------------------


def test_same_seed_same_numbers_other_seed_other_numbers():
    a = comparison_to_dict(compare_lines(2, 150, S, 20_000, seed=1))
    b = comparison_to_dict(compare_lines(2, 150, S, 20_000, seed=1))
    c = comparison_to_dict(compare_lines(2, 150, S, 20_000, seed=2))
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert a["shared"]["mean_wait_ms"] != c["shared"]["mean_wait_ms"]
    assert [r.to_dict() for r in mm1_sweep([0.9], S, 20_000, 5)] == [
        r.to_dict() for r in mm1_sweep([0.9], S, 20_000, 5)
    ]


def test_to_dict_is_plain_json_in_milliseconds():
    row = mm1_sweep([0.7], S, 20_000, seed=3)[0]
    d = row.to_dict()
    assert json.loads(json.dumps(d, allow_nan=False)) == d
    assert d["mean_sojourn_ms"] == pytest.approx(1000 * row.mean_sojourn)
    assert d["p99_wait_ms"] == pytest.approx(1000 * row.p99_wait)
    assert d["mean_wait_se_ms"] == pytest.approx(1000 * row.mean_wait_se)
    assert d["service_mean_ms"] == pytest.approx(10.0)
    assert d["utilisation"] == 0.7 and d["servers"] == 1 and d["prob_wait"] == row.prob_wait
    assert d["expected"]["mean_sojourn_ms"] == pytest.approx(1000 * S / 0.3)
    assert "mean_sojourn" not in d  # no unit-less times
    # Service laws without a closed form for c > 1 say so rather than guess.
    cmp = comparison_to_dict(compare_lines(2, 150, S, 20_000, seed=1, service="deterministic"))
    assert cmp["shared"]["expected"] is None
    assert cmp["separate_random"]["expected"]["source"].startswith("M/G/1")
    assert json.loads(json.dumps(cmp, allow_nan=False)) == cmp
