"""``python -m engine kv``: the JSON object, the table, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

from engine.catalog import load_gpu, load_model
from engine.cli import main
from engine.kvcache import VllmBudget, plan_kv_cache

FIXTURES = Path(__file__).parent / "fixtures" / "kv"


def run_json(capsys, *argv):
    assert main(["kv", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_has_the_promised_fields(capsys):
    data = run_json(capsys, "--model", "llama-2-7b", "--gpu", "a100-80gb")
    for key in (
        "bytes_per_token",
        "kv_memory_bytes",
        "block_size",
        "num_blocks",
        "kv_tokens",
        "contexts",
        "breakdown",
    ):
        assert key in data
    assert isinstance(data["bytes_per_token"], int) and isinstance(data["kv_memory_bytes"], int)
    assert data["bytes_per_token"] == 524_288
    expected = plan_kv_cache(load_model("llama-2-7b"), load_gpu("a100-80gb").memory_bytes, VllmBudget())
    assert data["num_blocks"] == expected.num_blocks
    assert [(c["context"], c["max_requests"]) for c in data["contexts"]] == [
        (c.context, c.max_requests) for c in expected.contexts
    ]
    assert data["gpu"]["name"] == "a100-80gb"


def test_lab_numbers_from_the_command_line(capsys):
    # Llama-2-7B has the lab's KV shape: 32 layers × 32 KV heads × 128 dims in fp16
    data = run_json(
        capsys,
        "--model",
        "llama-2-7b",
        "--gpu-memory-gib",
        "80",
        "--budget",
        "reserve",
        "--reserve-gib",
        "16",
    )
    assert (data["kv_memory_bytes"], data["num_blocks"]) == (64 << 30, 8192)
    assert [c["max_requests"] for c in data["contexts"]] == [256, 128, 64, 32, 16, 8, 4]


def test_given_kv_memory_uses_vllms_formula(capsys):
    data = run_json(
        capsys,
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100",
        "--kv-memory-gib",
        "54.93",
        "--context",
        "4096",
        "131072",
    )
    kv = round(54.93 * (1 << 30))
    assert data["kv_memory_bytes"] == kv
    assert data["num_blocks"] == kv // (16 * 131_072) == 28_124
    assert data["contexts"] == [
        {**data["contexts"][0], "context": 4096, "max_requests": 28_124 // 256},
        {**data["contexts"][1], "context": 131072, "max_requests": 28_124 // 8192},
    ]


def test_kv_dtype_tp_and_block_size_flags(capsys):
    data = run_json(
        capsys,
        "--model",
        "llama-3-70b",
        "--gpu",
        "h100",
        "--tp",
        "4",
        "--kv-dtype",
        "fp8",
        "--block-size",
        "32",
    )
    assert data["bytes_per_token"] == 2 * 80 * 2 * 128 * 1
    assert data["block_size"] == 32 and data["tp"] == 4 and data["kv_dtype"] == "fp8"


def test_config_json_path_works(capsys):
    data = run_json(capsys, "--model", str(FIXTURES / "llama-3-8b" / "config.json"), "--gpu", "l40s")
    assert data["model"] == "llama-3-8b" and data["bytes_per_token"] == 131_072


def test_table_is_readable(capsys):
    assert (
        main(
            [
                "kv",
                "--model",
                "llama-2-7b",
                "--gpu-memory-gib",
                "80",
                "--budget",
                "reserve",
                "--max-model-len",
                "32768",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "524,288 B" in out and "8,192 blocks of 16 tokens" in out
    assert "Where the memory goes" in out
    rows = [line.split() for line in out.splitlines() if line.strip().startswith("32,768")]
    assert rows and rows[0][-1] == "4"


def test_unknown_model_is_one_line_with_nearest_names(capsys):
    assert main(["kv", "--model", "llama-3-7b", "--gpu", "a100-80gb"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "llama-3-8b" in err


def test_unknown_gpu_is_one_line_with_nearest_names(capsys):
    assert main(["kv", "--model", "llama-3-8b", "--gpu", "h100-8gb"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "h100-80gb" in err


def test_conflicting_budget_flags_are_user_errors(capsys):
    assert (
        main(["kv", "--model", "llama-3-8b", "--gpu", "l4", "--budget", "vllm", "--kv-memory-gib", "4"]) == 2
    )
    assert (
        main(["kv", "--model", "llama-3-8b", "--gpu", "l4", "--budget", "reserve", "--gpu-util", "0.8"]) == 2
    )
    assert main(["kv", "--model", "llama-3-8b"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 3


def test_model_too_big_for_the_card_is_a_user_error(capsys):
    assert main(["kv", "--model", "llama-3-70b", "--gpu", "a100-80gb"]) == 2
    assert "--tp" in capsys.readouterr().err
