"""``python -m engine kv``: the JSON object, the table, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

from engine.catalog import load_gpu, load_model
from engine.cli import main
from engine.kvcache import VllmBudget, plan_kv_cache

from helpers import dump_yaml, load_yaml

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


def spec_error(days: Path, change) -> str:
    """The message (after 'file: field: ') the spec gives for day37.yaml's kv_cache edited."""
    import pytest

    from engine.errors import UserError
    from engine.spec import load_spec

    from helpers import DAYS

    path = days / "day37.yaml"
    data = load_yaml((DAYS / "day37.yaml").read_text())
    change(data["kv_cache"])
    path.write_text(dump_yaml(data, sort_keys=False))
    with pytest.raises(UserError) as err:
        load_spec(path)
    return err.value.message


def test_a_flag_obeys_its_spec_key_word_for_word(days_copy, capsys):
    """The flags build the spec's kv_cache model: the same limits, the same words, the flag named."""
    cases = [
        ("--block-size", ["--block-size", "5000"], lambda kv: kv.update(block_size=5000)),
        ("--tp", ["--tp", "0"], lambda kv: kv.update(tp=0)),
        ("--context", ["--context", "0"], lambda kv: kv.update(contexts=[0], highlight=[])),
        ("--context", ["--context", "4096", "512"], lambda kv: kv.update(contexts=[4096, 512], highlight=[])),
        ("--gpu-memory-gib", ["--gpu-memory-gib", "2e6"], lambda kv: kv["gpu"].update(memory_gib=2e6)),
        (
            "--gpu-util",
            ["--gpu", "h100", "--budget", "vllm", "--gpu-util", "1.5"],
            lambda kv: kv.update(budget={"kind": "vllm", "gpu_memory_utilization": 1.5}),
        ),
        (
            "--non-torch-gib",
            ["--gpu", "h100", "--budget", "vllm", "--non-torch-gib", "-1.5"],
            lambda kv: kv.update(budget={"kind": "vllm", "non_torch_gib": -1.5}),
        ),
    ]
    for flag, flags, change in cases:
        argv = ["kv", "--model", "llama-3-8b", *flags]
        if "--gpu" not in flags and flag != "--gpu-memory-gib":
            argv += ["--gpu", "h100"]
        assert main(argv) == 2
        assert capsys.readouterr().err.strip() == f"{flag}: {spec_error(days_copy, change)}"


def test_flags_and_spec_keys_give_the_same_plan(capsys, tmp_path):
    """Every kv flag has a spec key: a view written in YAML sizes the cache exactly as the flags do."""

    from engine.experiments.kv_cache import KvCacheSection, run_view
    from engine.sections import SpecLocation

    section = KvCacheSection.model_validate(
        load_yaml(
            """
            model: llama-3-8b
            gpu: {catalog: h100, memory_gib: 79.5}
            budget: {kind: vllm, gpu_memory_utilization: 0.85, max_num_batched_tokens: 4096, non_torch_gib: 1.25}
            kv_dtype: fp8
            weight_dtype: fp8
            tp: 2
            block_size: 32
            max_model_len: 8192
            contexts: [1024, 16384]
            """
        )
    )
    from_spec = run_view(section, section.contexts, SpecLocation(tmp_path / "day.yaml"), "kv_cache")["plan"]
    from_flags = run_json(
        capsys,
        *("--model", "llama-3-8b", "--gpu", "h100", "--gpu-memory-gib", "79.5", "--gpu-util", "0.85"),
        *("--max-num-batched-tokens", "4096", "--non-torch-gib", "1.25", "--kv-dtype", "fp8"),
        *("--weight-dtype", "fp8", "--tp", "2", "--block-size", "32", "--max-model-len", "8192"),
        *("--context", "1024", "16384"),
    )
    del from_flags["gpu"]
    assert from_flags == json.loads(json.dumps(from_spec))
    # and the flags took effect: 79.5 GiB, the stated non-torch memory, the 8,192-token limit
    assert from_flags["gpu_memory_bytes"] == round(79.5 * 2**30)
    assert from_flags["budget"]["non_torch_bytes"] == round(1.25 * 2**30)
    assert [c["within_max_model_len"] for c in from_flags["contexts"]] == [True, False]


def test_flags_of_another_budget_are_refused_by_name(capsys):
    cases = [
        (
            ["--budget", "vllm", "--kv-memory-gib", "4"],
            "--kv-memory-gib: does not apply to the 'vllm' budget",
        ),
        (["--budget", "reserve", "--gpu-util", "0.8"], "--gpu-util: does not apply to the 'reserve' budget"),
        (
            ["--kv-memory-gib", "4", "--non-torch-gib", "1"],
            "--non-torch-gib: does not apply to the 'given' budget",
        ),
        (["--budget", "given"], "--kv-memory-gib: required by the 'given' budget"),
    ]
    for flags, expected in cases:
        assert main(["kv", "--model", "llama-3-8b", "--gpu", "l4", *flags]) == 2
        assert capsys.readouterr().err.strip() == expected
