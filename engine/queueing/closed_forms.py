"""Closed forms that the simulated queues are checked against.

Notation: λ = arrival rate (req/s), S = mean service time (s), μ = 1/S, c = servers,
A = λS = offered load in erlangs, ρ = A/c = utilisation per server. Every function is pure
and takes rates and times in seconds; a stable queue (ρ < 1) is required where the formula
only exists for one, and a ValueError says so otherwise.

Why each one is here:
- M/M/1 (Poisson arrivals, exponential service, one server): time in system is exponential
  with rate μ − λ, which gives the mean S/(1 − ρ) and every quantile in one line.
- Erlang C (M/M/c, one shared line, c servers): probability that a request waits, and the
  wait given that it waits is exponential with rate cμ − λ.
- Pollaczek–Khinchine (M/G/1): the mean wait for any service distribution, needed for the
  deterministic and lognormal options (M/D/1 is the CV = 0 case).
- GI/M/1 with Erlang-c inter-arrivals: c separate lines fed round-robin. Each line sees every
  c-th arrival, so its gaps are the sum of c exponentials; the root σ of σ = (λ/(λ+μ(1−σ)))^c
  plays the role that ρ plays in M/M/1.
"""

from __future__ import annotations

import math


def _check_stable(utilisation: float) -> None:
    if not 0.0 <= utilisation < 1.0:
        raise ValueError(f"utilisation must be in [0, 1) for a stable queue, got {utilisation}")


def _check_probability(p: float) -> None:
    if not 0.0 < p < 1.0:
        raise ValueError(f"quantile level must be in (0, 1), got {p}")


# --- M/M/1 -----------------------------------------------------------------------------------


def mm1_mean_sojourn(arrival_rate: float, service_mean: float) -> float:
    """Mean time in system S / (1 − ρ): the 'hockey stick' of the Day 4 post."""
    rho = arrival_rate * service_mean
    _check_stable(rho)
    return service_mean / (1.0 - rho)


def mm1_mean_wait(arrival_rate: float, service_mean: float) -> float:
    """Mean time in queue ρS / (1 − ρ): time in system less one service."""
    return mm1_mean_sojourn(arrival_rate, service_mean) - service_mean


def mm1_sojourn_quantile(p: float, arrival_rate: float, service_mean: float) -> float:
    """p-quantile of time in system, which is exponential with rate μ − λ: −ln(1 − p)/(μ − λ)."""
    _check_probability(p)
    return -math.log1p(-p) * mm1_mean_sojourn(arrival_rate, service_mean)


def mm1_wait_quantile(p: float, arrival_rate: float, service_mean: float) -> float:
    """p-quantile of the wait: P(W > t) = ρ·e^{−(μ−λ)t}, so 0 when p ≤ 1 − ρ."""
    rho = arrival_rate * service_mean
    return exponential_tail_quantile(p, rho, mm1_mean_sojourn(arrival_rate, service_mean))


def exponential_tail_quantile(p: float, mass: float, tail_mean: float) -> float:
    """Quantile of a wait that is 0 with probability 1 − mass, else exponential with tail_mean.

    M/M/1, M/M/c and GI/M/1 waits all have this shape, so one function serves the three.
    """
    _check_probability(p)
    if mass <= 1.0 - p:
        return 0.0
    return tail_mean * math.log(mass / (1.0 - p))


# --- M/M/c: Erlang B and C ---------------------------------------------------------------------


def erlang_b(servers: int, offered_load: float) -> float:
    """Blocking probability of M/M/c/c by the recursion B_k = A·B_{k−1} / (k + A·B_{k−1}).

    The recursion never forms A^c or c!, so it stays accurate for hundreds of servers where the
    textbook sum overflows.
    """
    if servers < 1 or int(servers) != servers:
        raise ValueError(f"servers must be a positive integer, got {servers}")
    if offered_load < 0:
        raise ValueError(f"offered load must be non-negative, got {offered_load}")
    b = 1.0
    for k in range(1, int(servers) + 1):
        b = offered_load * b / (k + offered_load * b)
    return b


def erlang_c(servers: int, offered_load: float) -> float:
    """Probability that a request waits in M/M/c: C = c·B / (c − A(1 − B)), B = Erlang B.

    offered_load is A = λS in erlangs; A must be below c (otherwise everyone waits forever).
    """
    _check_stable(offered_load / servers)
    b = erlang_b(servers, offered_load)
    return servers * b / (servers - offered_load * (1.0 - b))


def mmc_mean_wait(servers: int, arrival_rate: float, service_mean: float) -> float:
    """Mean time in queue for M/M/c: C / (cμ − λ)."""
    offered = arrival_rate * service_mean
    return erlang_c(servers, offered) / (servers / service_mean - arrival_rate)


def mmc_mean_sojourn(servers: int, arrival_rate: float, service_mean: float) -> float:
    """Mean time in system for M/M/c: the mean wait plus one service."""
    return mmc_mean_wait(servers, arrival_rate, service_mean) + service_mean


def mmc_wait_quantile(p: float, servers: int, arrival_rate: float, service_mean: float) -> float:
    """p-quantile of the M/M/c wait: 0 with probability 1 − C, else exponential, rate cμ − λ."""
    offered = arrival_rate * service_mean
    tail_rate = servers / service_mean - arrival_rate
    return exponential_tail_quantile(p, erlang_c(servers, offered), 1.0 / tail_rate)


def mmc_sojourn_survival(t: float, servers: int, arrival_rate: float, service_mean: float) -> float:
    """P(time in system > t) for M/M/c.

    Time in system = wait + service, independent. With probability 1 − C the wait is 0 and
    the tail is e^{−μt}; with probability C it is Exp(θ) + Exp(μ), θ = cμ − λ, whose tail is
    (θe^{−μt} − μe^{−θt}) / (θ − μ), or (1 + μt)e^{−μt} when θ = μ.
    """
    mu = 1.0 / service_mean
    theta = servers * mu - arrival_rate
    c_wait = erlang_c(servers, arrival_rate * service_mean)
    if abs(theta - mu) <= 1e-9 * mu:
        both = (1.0 + mu * t) * math.exp(-mu * t)
    else:
        both = (theta * math.exp(-mu * t) - mu * math.exp(-theta * t)) / (theta - mu)
    return (1.0 - c_wait) * math.exp(-mu * t) + c_wait * both


def mmc_sojourn_quantile(p: float, servers: int, arrival_rate: float, service_mean: float) -> float:
    """p-quantile of M/M/c time in system, by bisection on the survival function above."""
    _check_probability(p)
    target = 1.0 - p
    lo, hi = 0.0, service_mean
    while mmc_sojourn_survival(hi, servers, arrival_rate, service_mean) > target:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mmc_sojourn_survival(mid, servers, arrival_rate, service_mean) > target:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return 0.5 * (lo + hi)


# --- M/G/1: Pollaczek–Khinchine ------------------------------------------------------------------


def pk_mean_wait(arrival_rate: float, service_mean: float, service_cv: float) -> float:
    """M/G/1 mean wait, Pollaczek–Khinchine: ρS(1 + CV²) / (2(1 − ρ)).

    Only the first two moments of the service time matter; CV = 1 gives back M/M/1.
    """
    rho = arrival_rate * service_mean
    _check_stable(rho)
    return rho * service_mean * (1.0 + service_cv**2) / (2.0 * (1.0 - rho))


def md1_mean_wait(arrival_rate: float, service_mean: float) -> float:
    """M/D/1 mean wait ρS / (2(1 − ρ)): half of M/M/1's, the value of steady service."""
    return pk_mean_wait(arrival_rate, service_mean, 0.0)


# --- GI/M/1 with Erlang-c gaps: separate lines fed round-robin -----------------------------------


def round_robin_sigma(servers: int, arrival_rate: float, service_mean: float) -> float:
    """The root σ in (0, 1) of σ = (λ / (λ + μ(1 − σ)))^c for one of c round-robin lines.

    λ is the total arrival rate; each line gets every c-th request, so its gaps are Erlang(c, λ)
    with Laplace transform (λ/(λ+s))^c. The root below 1 (σ = 1 is always a root) is found by
    bisection, which stays exact as ρ → 1 where fixed-point iteration crawls. σ is the
    probability that a request waits; for c = 1 it is ρ.
    """
    rho = arrival_rate * service_mean / servers
    _check_stable(rho)
    mu = 1.0 / service_mean

    def gap(sigma: float) -> float:  # positive below the root, negative between it and 1
        return (arrival_rate / (arrival_rate + mu * (1.0 - sigma))) ** servers - sigma

    lo, hi = 0.0, rho  # less variable gaps than Poisson wait less: σ ≤ ρ, so usually gap(ρ) ≤ 0
    while gap(hi) > 0.0:
        lo, hi = hi, 0.5 * (1.0 + hi)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if gap(mid) > 0.0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15:
            break
    return 0.5 * (lo + hi)


def round_robin_mean_wait(servers: int, arrival_rate: float, service_mean: float) -> float:
    """Mean wait on one round-robin line (E_c/M/1): σ / (μ(1 − σ)) = σS / (1 − σ)."""
    sigma = round_robin_sigma(servers, arrival_rate, service_mean)
    return sigma * service_mean / (1.0 - sigma)


def round_robin_sojourn_quantile(p: float, servers: int, arrival_rate: float, service_mean: float) -> float:
    """p-quantile of time in system on a round-robin line: exponential with rate μ(1 − σ)."""
    _check_probability(p)
    sigma = round_robin_sigma(servers, arrival_rate, service_mean)
    return -math.log1p(-p) * service_mean / (1.0 - sigma)
