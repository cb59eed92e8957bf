"""Tensor parallelism in the simulator: the calculator's split of weights and KV heads, FLOPs
over tp GPUs, and two ring all-reduces per layer over the catalog's GPU link."""

from __future__ import annotations

import json

import pytest

from engine.batching.loaders import (
    allreduce_seconds_per_token,
    num_blocks_from_catalog,
    roofline_from_catalog,
)
from engine.catalog import load_gpu, load_model
from engine.cli import main
from engine.errors import UserError
from engine.kvcache import kv_bytes_per_token, weight_bytes


def test_split_follows_the_kv_calculator_and_adds_the_allreduces():
    arch, card = load_model("llama-2-7b"), load_gpu("a100-80gb")
    one, two = (
        roofline_from_catalog("llama-2-7b", "a100-80gb"),
        roofline_from_catalog("llama-2-7b", "a100-80gb", tp=2),
    )
    assert two.weights_bytes == weight_bytes(arch, 2) and two.kv_bytes_per_token == kv_bytes_per_token(
        arch, "auto", 2
    )
    assert two.flops_per_token == one.flops_per_token / 2
    assert one.comm_seconds_per_token == 0.0
    # by hand: 32 layers × 2 all-reduces × 2·(2−1)/2 × 4,096 × 2 bytes over 300 GB/s each way
    assert card.interconnect_bytes_per_s == 300e9
    assert two.comm_seconds_per_token == pytest.approx(32 * 2 * 1.0 * 4096 * 2 / 300e9, rel=1e-12)
    # one token on two GPUs: half the weights to read, plus the all-reduces
    assert two.step(1, 1, 0) == pytest.approx(one.step(1, 1, 0) / 2 + two.comm_seconds_per_token, rel=1e-3)
    assert num_blocks_from_catalog("llama-2-7b", "a100-80gb", tp=2) > 2 * num_blocks_from_catalog(
        "llama-2-7b", "a100-80gb"
    )


def test_allreduce_needs_a_link():
    assert allreduce_seconds_per_token(32, 4096, 1, 0.0) == 0.0
    with pytest.raises(UserError) as err:
        allreduce_seconds_per_token(32, 4096, 2, 0.0, "toy-gpu")
    assert err.value.field == "gpu"


def test_simulate_tp_flag(capsys):
    args = [
        "simulate",
        "--requests",
        "50",
        "--output-tokens",
        "uniform:20:60",
        "--prompt-tokens",
        "uniform:100:400",
        "--arrival-rate",
        "20",
        "--slots",
        "32",
        "--policy",
        "paged",
        "--model",
        "llama-2-7b",
        "--gpu",
        "a100-80gb",
        "--step-time",
        "roofline",
        "--json",
    ]
    assert main(args) == 0
    one = json.loads(capsys.readouterr().out)["policies"]["paged"]
    assert main(args + ["--tp", "2"]) == 0
    two = json.loads(capsys.readouterr().out)["policies"]["paged"]
    assert two["step_time"]["comm_seconds_per_token"] > 0
    assert two["kv_blocks"]["num_blocks"] > one["kv_blocks"]["num_blocks"]
    assert two["makespan_seconds"] <= one["makespan_seconds"]
    assert main(args + ["--tp", "3"]) == 2  # 32 heads do not split over 3 GPUs
    assert "--tp" in capsys.readouterr().err
