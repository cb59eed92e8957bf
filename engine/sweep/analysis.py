"""What a finished sweep says: each point's cost, whether it meets the targets, the cheapest
that do, and the throughput-versus-latency Pareto front. Pure functions over rows (dicts).

Definitions:
- cost per hour = GPUs (tp × replicas) × the GPU's list price per GPU-hour;
- cost per million output tokens = cost per hour / (output tokens per second × 3,600) × 10⁶,
  what the configuration costs to run at the throughput it achieved on this workload;
- meets the targets: status ok and every given latency percentile at or under its target;
- cheapest: among points that meet the targets and have a price, the lowest cost per million
  tokens (ties: lower cost per hour, then grid order), so that configurations at different
  arrival rates compare fairly; ``cheapest_per_rate`` answers "what do I need for R requests/s":
  the lowest cost per hour at each arrival rate;
- Pareto front: the ok points that no other ok point beats on both throughput per GPU (higher)
  and the chosen p99 latency (lower); sorted by latency.
"""

from __future__ import annotations

import math
from typing import Any

from engine import numbers
from engine.sweep.prices import Price, price_of


def with_costs(
    rows: list[dict[str, Any]], prices: dict[str, Price], targets: dict[str, float]
) -> list[dict[str, Any]]:
    """Each row with gpus, price, cost columns and meets_targets added (new dicts)."""
    out = []
    for row in rows:
        price = price_of(row["gpu"], prices)
        gpus = row["tp"] * row["replicas"]
        tok_s = row.get("throughput_tok_s")
        per_hour = gpus * price.usd_per_gpu_hour if price else None
        extra = {
            "gpus": gpus,
            "throughput_tok_s_per_gpu": tok_s / gpus if tok_s else None,
            "usd_per_gpu_hour": price.usd_per_gpu_hour if price else None,
            "usd_per_hour": per_hour,
            "usd_per_million_tokens": per_hour / (tok_s * 3600) * 1e6 if per_hour and tok_s else None,
            "meets_targets": meets(row, targets),
        }
        out.append({**row, **extra})
    return out


def meets(row: dict[str, Any], targets: dict[str, float]) -> bool:
    if row.get("status") != "ok":
        return False
    return all(row.get(k) is not None and row[k] <= limit for k, limit in targets.items())


def cheapest(rows: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    ranked = [
        (r["usd_per_million_tokens"], r["usd_per_hour"], i, r)
        for i, r in enumerate(rows)
        if r["meets_targets"] and r["usd_per_million_tokens"] is not None
    ]
    return [r for *_, r in sorted(ranked, key=lambda t: t[:3])[:count]]


def cheapest_per_rate(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lowest cost per hour meeting the targets, for each arrival rate in grid order."""
    best: dict[Any, tuple[tuple[float, float, int], dict[str, Any]]] = {}
    for i, r in enumerate(rows):
        if not r["meets_targets"] or r["usd_per_hour"] is None:
            continue
        rank = (r["usd_per_hour"], r["usd_per_million_tokens"], i)
        rate = r["arrival_rate"]
        if rate not in best or rank < best[rate][0]:
            best[rate] = (rank, r)
    rates = list(dict.fromkeys(r["arrival_rate"] for r in rows))
    return [best[rate][1] for rate in rates if rate in best]


def pareto_front(rows: list[dict[str, Any]], latency: str) -> list[int]:
    """Indices of the non-dominated ok rows (max throughput per GPU, min latency), by latency.

    One pass after sorting by latency (then throughput, descending): a row is on the front when
    its throughput beats every row with lower or equal latency seen so far.
    """
    ok = [
        (r[latency], -r["throughput_tok_s_per_gpu"], i)
        for i, r in enumerate(rows)
        if r.get("status") == "ok" and r.get(latency) is not None and r.get("throughput_tok_s_per_gpu")
    ]
    front, best = [], float("-inf")
    for _lat, neg_tput, i in sorted(ok):
        if -neg_tput > best:
            front.append(i)
            best = -neg_tput
    return front


def nobody_meets(rows: list[dict[str, Any]], targets: dict[str, float]) -> str | None:
    """A plain statement when no point meets the targets, naming the closest miss; else None."""
    if any(r["meets_targets"] for r in rows):
        return None
    ok = [r for r in rows if r.get("status") == "ok"]
    given = ", ".join(f"{k} ≤ {numbers.setting(v)} s" for k, v in targets.items())
    if not ok:
        return f"No configuration meets the targets ({given}): none of the {len(rows):,} points could run."

    def worst_ratio(r: dict[str, Any]) -> float:
        return max((r[k] / v if r.get(k) is not None else float("inf")) for k, v in targets.items())

    best = min(ok, key=worst_ratio)
    worst = worst_ratio(best)
    miss = f"misses by {numbers.multiple(worst)}" if math.isfinite(worst) else "has no figure for a target"
    return (
        f"No configuration meets the targets ({given}) among {len(rows):,} points; the closest, "
        f"{describe(best)}, {miss}."
    )


def describe(row: dict[str, Any]) -> str:
    """A configuration in words: 'h100-80gb ×1, llama-3-8b, max_num_seqs 128, …'."""
    parts = [f"{row['gpu']} x{row['gpus']}", row["model"]]
    if row["tp"] != 1:
        parts.append(f"tp {row['tp']}")
    if row["replicas"] != 1:
        parts.append(f"{row['replicas']} replicas ({row['router']})")
    parts += [
        f"max_num_seqs {row['max_num_seqs']}",
        f"max_num_batched_tokens {row['max_num_batched_tokens']}",
        f"kv {row['kv_dtype']}",
        f"step time {row['step_time']}",
    ]
    if row.get("arrival_rate") is not None:
        parts.append(f"{numbers.setting(row['arrival_rate'])} req/s")
    return ", ".join(parts)
