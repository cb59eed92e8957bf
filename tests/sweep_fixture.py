"""A sweep's results of the shape engine.experiments.sweep writes, with hand-picked numbers:
two GPUs × two max_num_seqs × two rates, priced and ranked by engine.sweep.analysis."""

from __future__ import annotations

from typing import Any

from engine.sweep import analysis
from engine.sweep.prices import load_prices

TARGETS = {"ttft_p99": 1.0, "tpot_p50": 0.05}


def sweep_rows() -> list[dict[str, Any]]:
    rows = []
    # (gpu, max_num_seqs, rate, tok/s, ttft p99, tpot p50, e2e p99)
    for gpu, seqs, rate, tput, ttft, tpot, e2e in [
        ("h100-80gb", 64, 5.0, 1080.0, 0.070, 0.005, 1.9),
        ("h100-80gb", 64, 20.0, 3977.0, 0.105, 0.007, 2.6),
        ("h100-80gb", 256, 5.0, 1080.0, 0.070, 0.005, 1.9),
        ("h100-80gb", 256, 20.0, 3990.0, 0.102, 0.006, 2.5),
        ("a100-40gb", 64, 5.0, 1044.0, 0.270, 0.014, 3.8),
        ("a100-40gb", 64, 20.0, 2247.0, 25.1, 0.025, 41.0),
        ("a100-40gb", 256, 5.0, 1046.0, 0.269, 0.013, 3.7),
        ("a100-40gb", 256, 20.0, 2820.0, 2.36, 0.066, 9.5),
    ]:
        rows.append(
            {
                "gpu": gpu,
                "model": "llama-3-8b",
                "tp": 1,
                "replicas": 1,
                "router": "round_robin",
                "max_num_seqs": seqs,
                "max_num_batched_tokens": 4096,
                "kv_dtype": "auto",
                "step_time": "roofline",
                "arrival_rate": rate,
                "status": "ok",
                "reason": "",
                "num_blocks": 9904,
                "requests": 800,
                "makespan_s": 100.0,
                "throughput_tok_s": tput,
                "requests_per_s": rate,
                "preemptions": 0,
                "ttft_p50": ttft / 2,
                "ttft_p99": ttft,
                "tpot_p50": tpot,
                "tpot_p99": tpot * 2,
                "e2e_p50": e2e / 2,
                "e2e_p99": e2e,
            }
        )
    return rows


def sweep_results(targets: dict[str, float] = TARGETS) -> dict[str, Any]:
    rows = analysis.with_costs(sweep_rows(), load_prices(), targets)
    front = analysis.pareto_front(rows, "ttft_p99")

    def short(r: dict[str, Any]) -> dict[str, Any]:
        return {**r, "config": analysis.describe(r)}

    return {
        "source": "simulated",
        "points": len(rows),
        "feasible": len(rows),
        "meeting": sum(r["meets_targets"] for r in rows),
        "targets": targets,
        "grid": {"gpu": ["h100-80gb", "a100-40gb"], "model": ["llama-3-8b"], "arrival_rate": [5.0, 20.0]},
        "names": {
            "h100-80gb": "NVIDIA H100 80GB HBM3 (SXM5)",
            "a100-40gb": "NVIDIA A100 40GB (SXM4)",
            "llama-3-8b": "Llama-3-8B",
        },
        "pareto_latency": "ttft_p99",
        "workload": {"requests": 800, "source": "generated seed=44"},
        "cheapest": [short(r) for r in analysis.cheapest(rows, 5)],
        "cheapest_per_rate": [short(r) for r in analysis.cheapest_per_rate(rows)],
        "pareto": [short(rows[i]) for i in front],
        "pareto_index": front,
        "statement": analysis.nobody_meets(rows, targets),
        "rows": rows,
    }
