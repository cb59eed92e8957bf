"""Which closed form a simulated row should agree with, and what it says.

A row is one queueing policy at one load. Where theory gives an exact answer it is attached
to the row, so that a post can print "simulated 12.6 ms, Erlang C 12.5 ms" from one place:

- one server, exponential service: M/M/1 (mean, probability of waiting, p99s);
- one server, other service: Pollaczek–Khinchine (means only; P(wait) = ρ for any M/G/1);
- a shared line, c > 1 servers, exponential service: Erlang C (means, P(wait), p99s);
- separate lines, random split: a Poisson stream split at random is c Poisson streams of λ/c,
  so each line is the one-server case at λ/c;
- separate lines, round-robin, exponential service: E_c/M/1 (σ replaces ρ; means and p99s).

Anything else (M/D/c, M/G/c, round-robin with non-exponential service) has no simple exact
form and gets None rather than an approximation posing as truth.
"""

from __future__ import annotations

from engine.queueing import closed_forms as cf
from engine.queueing.summary import Expected
from engine.queueing.traffic import ServiceLaw

P99 = 0.99


def single_server(arrival_rate: float, service_mean: float, law: ServiceLaw) -> Expected:
    """M/M/1 or, for other service laws, M/G/1 by Pollaczek–Khinchine."""
    rho = arrival_rate * service_mean
    if law.kind == "exponential":
        return Expected(
            source="M/M/1",
            prob_wait=rho,
            mean_wait=cf.mm1_mean_wait(arrival_rate, service_mean),
            mean_sojourn=cf.mm1_mean_sojourn(arrival_rate, service_mean),
            p99_wait=cf.mm1_wait_quantile(P99, arrival_rate, service_mean),
            p99_sojourn=cf.mm1_sojourn_quantile(P99, arrival_rate, service_mean),
        )
    wait = cf.pk_mean_wait(arrival_rate, service_mean, law.cv)
    return Expected(
        source="M/G/1 (Pollaczek–Khinchine)",
        prob_wait=rho,
        mean_wait=wait,
        mean_sojourn=wait + service_mean,
    )


def shared_line(servers: int, arrival_rate: float, service_mean: float, law: ServiceLaw) -> Expected | None:
    """Erlang C for one line feeding c servers; exact only for exponential service."""
    if servers == 1:
        return single_server(arrival_rate, service_mean, law)
    if law.kind != "exponential":
        return None
    return Expected(
        source="M/M/c (Erlang C)",
        prob_wait=cf.erlang_c(servers, arrival_rate * service_mean),
        mean_wait=cf.mmc_mean_wait(servers, arrival_rate, service_mean),
        mean_sojourn=cf.mmc_mean_sojourn(servers, arrival_rate, service_mean),
        p99_wait=cf.mmc_wait_quantile(P99, servers, arrival_rate, service_mean),
        p99_sojourn=cf.mmc_sojourn_quantile(P99, servers, arrival_rate, service_mean),
    )


def separate_random(servers: int, arrival_rate: float, service_mean: float, law: ServiceLaw) -> Expected:
    """c independent one-server queues, each fed a Poisson stream of λ/c."""
    return single_server(arrival_rate / servers, service_mean, law)


def separate_round_robin(
    servers: int, arrival_rate: float, service_mean: float, law: ServiceLaw
) -> Expected | None:
    """E_c/M/1 for each line: waits are 0 with probability 1 − σ, else exponential."""
    if servers == 1:
        return single_server(arrival_rate, service_mean, law)
    if law.kind != "exponential":
        return None
    sigma = cf.round_robin_sigma(servers, arrival_rate, service_mean)
    tail_mean = service_mean / (1.0 - sigma)  # 1 / (μ(1 − σ))
    wait = cf.round_robin_mean_wait(servers, arrival_rate, service_mean)
    return Expected(
        source="E_c/M/1 (round-robin)",
        prob_wait=sigma,
        mean_wait=wait,
        mean_sojourn=wait + service_mean,
        p99_wait=cf.exponential_tail_quantile(P99, sigma, tail_mean),
        p99_sojourn=cf.round_robin_sojourn_quantile(P99, servers, arrival_rate, service_mean),
    )
