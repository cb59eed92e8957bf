"""Queueing experiments for Day 4: simulated FIFO queues checked against closed forms.

Modules, one idea each: traffic (seeded arrivals and service times), simulate (who starts
when), summary (a Row of statistics), closed_forms (M/M/1, Erlang C, Pollaczek–Khinchine,
E_c/M/1), expected (which closed form a row should match), sweeps (the Day 4 runs, which
engine.experiments.queueing makes from a spec's section).
Times are seconds everywhere except Row.to_dict, which gives milliseconds (keys ending _ms).
"""

from engine.queueing.closed_forms import (
    erlang_b,
    erlang_c,
    md1_mean_wait,
    mm1_mean_sojourn,
    mm1_mean_wait,
    mm1_sojourn_quantile,
    mm1_wait_quantile,
    mmc_mean_sojourn,
    mmc_mean_wait,
    mmc_sojourn_quantile,
    mmc_wait_quantile,
    pk_mean_wait,
    round_robin_mean_wait,
    round_robin_sigma,
)
from engine.queueing.summary import WARMUP_FRACTION, Expected, Row
from engine.queueing.sweeps import compare_lines, comparison_to_dict, mm1_sweep, shared_sweep
from engine.queueing.traffic import SERVICE_KINDS, ServiceLaw

__all__ = [
    "SERVICE_KINDS",
    "WARMUP_FRACTION",
    "Expected",
    "Row",
    "ServiceLaw",
    "compare_lines",
    "comparison_to_dict",
    "erlang_b",
    "erlang_c",
    "md1_mean_wait",
    "mm1_mean_sojourn",
    "mm1_mean_wait",
    "mm1_sojourn_quantile",
    "mm1_sweep",
    "mm1_wait_quantile",
    "mmc_mean_sojourn",
    "mmc_mean_wait",
    "mmc_sojourn_quantile",
    "mmc_wait_quantile",
    "pk_mean_wait",
    "round_robin_mean_wait",
    "round_robin_sigma",
    "shared_sweep",
]
