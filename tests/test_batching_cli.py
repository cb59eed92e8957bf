"""`python -m engine simulate`: the lab through the CLI, JSON shape, and one-line errors."""

from __future__ import annotations

import json
import re
import runpy
import sys

import pytest

from engine.cli import main
from engine.commands.simulate import _number

from helpers import LAB_TRACE as _LAB_TRACE
from helpers import dump_yaml, load_yaml

LAB_TRACE = str(_LAB_TRACE)  # the lab's trace, as committed in days/, as a command-line argument


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["simulate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_lab_trace_as_json(capsys):
    code, out, _ = run_cli(capsys, "--workload", LAB_TRACE, "--slots", "16", "--json")
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == {"policies"}
    static, continuous = doc["policies"]["static"], doc["policies"]["continuous"]
    assert static["steps"] == 5_797 and continuous["steps"] == 1_148
    assert static["makespan"] == {"steps": 5_797, "seconds": pytest.approx(115.94)}
    for policy in (static, continuous):
        for key in ("steps", "utilisation", "throughput_tokens_per_step", "makespan", "latency"):
            assert key in policy
        assert set(policy["latency"]["seconds"]["ttft"]) >= {"p50", "p90", "p99"}
        assert "timeline" not in policy  # per-request arrays stay out of the CLI's JSON


def test_lab_trace_as_a_table(capsys):
    code, out, _ = run_cli(capsys, "--workload", LAB_TRACE, "--slots", "16")
    assert code == 0
    assert "5,797" in out and "1,148" in out and "14.3%" in out and "72.3%" in out
    assert "5.05x" in out


def test_generated_workload_with_paged_and_arrivals(capsys):
    code, out, _ = run_cli(
        capsys,
        "--requests",
        "300",
        "--output-tokens",
        "0.9*uniform:8:40+0.1*uniform:400:700",
        "--prompt-tokens",
        "uniform:16:256",
        "--arrival-rate",
        "20",
        "--seed",
        "4",
        "--slots",
        "16",
        "--policy",
        "static,continuous,paged",
        "--num-blocks",
        "200",
        "--json",
    )
    assert code == 0
    policies = json.loads(out)["policies"]
    assert list(policies) == ["continuous", "paged", "static"]  # sorted keys
    assert policies["paged"]["kv_blocks"]["peak"] <= 200
    assert policies["paged"]["preemptions"] >= 0 and policies["static"]["preemptions"] == 0


def test_model_and_gpu_size_the_cache_and_the_roofline(capsys):
    code, out, _ = run_cli(
        capsys,
        "--requests",
        "200",
        "--output-tokens",
        "uniform:10:100",
        "--slots",
        "32",
        "--policy",
        "paged",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h100-80gb",
        "--step-time",
        "roofline",
        "--allow-empty-prompt",  # the generated requests have no prompt
        "--json",
    )
    assert code == 0
    paged = json.loads(out)["policies"]["paged"]
    assert paged["kv_blocks"]["num_blocks"] > 10_000  # tens of thousands of 16-token blocks
    assert paged["step_time"]["kind"] == "roofline" and paged["makespan_seconds"] > 0


def test_measured_step_time(tmp_path, capsys):
    points = [{"batch": b, "context": 1024, "seconds": 0.01 + 0.001 * b} for b in (1, 2, 4, 8)]
    bench = tmp_path / "gpu.json"
    bench.write_text(json.dumps({"step_time": {"points": points}}))
    code, out, _ = run_cli(
        capsys,
        "--requests",
        "16",
        "--output-tokens",
        "10",
        "--slots",
        "16",
        "--policy",
        "continuous",
        "--step-time",
        f"measured:{bench}",
        "--json",
    )
    assert code == 0
    # 10 steps of 16 requests: 0.01 + 0.001 × 16 each
    assert json.loads(out)["policies"]["continuous"]["makespan_seconds"] == pytest.approx(0.26)


@pytest.mark.parametrize(
    "csv_text, where",
    [
        ("output_tokens\n5\n-3\n", "row 3, column output_tokens"),
        ("output_tokens\n5\n7.5\n", "row 3, column output_tokens"),
        ("prompt_tokens\n5\n", "row 1, column output_tokens"),
        ("", "row 1"),
        ("output_tokens\n5\n1e30\n", "row 3, column output_tokens"),  # the token cap
        ("output_tokens,arrival_time\n5,1e300\n", "row 2, column arrival_time"),  # the time cap
    ],
)
def test_malformed_csv_is_one_line_and_exit_2(tmp_path, capsys, csv_text, where):
    trace = tmp_path / "bad.csv"
    trace.write_text(csv_text)
    code, out, err = run_cli(capsys, "--workload", str(trace), "--slots", "4")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"{trace}: {where}: ")


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["--requests", "10", "--slots", "4"], "--output-tokens"),
        (["--requests", "10", "--output-tokens", "uniform:5:1", "--slots", "4"], "--output-tokens"),
        (["--requests", "10", "--output-tokens", "uniform:0:3", "--slots", "4"], "--output-tokens"),
        (["--requests", "10", "--output-tokens", "5", "--slots", "4", "--policy", "lifo"], "--policy"),
        (["--requests", "10", "--output-tokens", "5", "--slots", "4", "--policy", "paged"], "--num-blocks"),
        (
            [
                "--requests",
                "10",
                "--output-tokens",
                "50",
                "--slots",
                "4",
                "--policy",
                "paged",
                "--num-blocks",
                "2",
            ],
            "--num-blocks",
        ),
        (
            ["--requests", "10", "--output-tokens", "5", "--slots", "4", "--step-time", "roofline"],
            "--step-time",
        ),
        (["--requests", "10", "--output-tokens", "5", "--slots", "0"], "--slots"),
        (["--workload", LAB_TRACE, "--output-tokens", "5", "--slots", "4"], "--output-tokens"),
        (["--requests", "10", "--output-tokens", "5", "--seed", "-1", "--slots", "4"], "--seed"),
        (["--requests", "10", "--output-tokens", "exponential:inf", "--slots", "4"], "--output-tokens"),
        (["--requests", "10", "--output-tokens", "lognormal:1e308:1", "--slots", "4"], "--output-tokens"),
        (["--requests", "10", "--output-tokens", "zipf:1.5:1e19", "--slots", "4"], "--output-tokens"),
        (
            [
                "--requests",
                "10",
                "--output-tokens",
                "5",
                "--prompt-tokens",
                "constant:1000000000000000",
                "--slots",
                "4",
            ],
            "--prompt-tokens",
        ),
        (
            [
                "--requests",
                "10",
                "--output-tokens",
                "5",
                "--arrival-rate",
                "1",
                "--slots",
                "4",
                "--step-time",
                "unit:1e-15",
            ],
            "--step-time",
        ),
    ],
)
def test_flag_mistakes_name_the_flag(capsys, argv, flag):
    code, _, err = run_cli(capsys, *argv)
    assert code == 2
    assert err.startswith(f"{flag}: ") and err.count("\n") == 1


def test_module_entry_point_exits_2_on_a_bad_trace(tmp_path, capsys, monkeypatch):
    """`python -m engine simulate` with a bad trace: engine/__main__.py exits 2 with one line.
    Run here with runpy, as the interpreter runs a package's __main__; test_serve starts
    `python -m engine` as a process of its own."""
    trace = tmp_path / "bad.csv"
    trace.write_text("output_tokens\n0\n")
    monkeypatch.setattr(sys, "argv", ["engine", "simulate", "--workload", str(trace), "--slots", "4"])
    with pytest.raises(SystemExit) as done:
        runpy.run_module("engine", run_name="__main__")
    assert done.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip() == f"{trace}: row 2, column output_tokens: must be at least 1, got '0'"
    assert err.count("\n") == 1


def test_paged_without_a_cache_size_names_the_three_ways_before_simulating(capsys):
    code, out, err = run_cli(
        capsys, "--workload", LAB_TRACE, "--slots", "16", "--policy", "static,continuous,paged"
    )
    assert code == 2 and out == ""  # nothing printed for static and continuous first
    assert err.count("\n") == 1 and err.startswith("--num-blocks: paged needs")
    for way in ("--num-blocks N", "--model NAME --gpu NAME", "leave paged out of --policy"):
        assert way in err


def test_negative_seed_is_one_line(capsys):
    code, _, err = run_cli(capsys, "--requests", "10", "--output-tokens", "5", "--seed", "-3", "--slots", "4")
    assert code == 2 and err == "--seed: must be at least 0, got -3\n"


@pytest.mark.parametrize(
    "value, text",
    [
        (0, "0"),
        (1630.4, "1,630"),
        (999.7, "1,000"),
        (999.4, "999"),
        (115.94, "116"),
        (12.345, "12.3"),
        (0.99951, "1.00"),
        (0.5, "0.500"),
        (0.0213, "0.0213"),
        (-3.2, "-3.20"),
        (1_234_567.8, "1,234,568"),
        (float("nan"), "-"),
        (1e-9, "0.00000000100"),
    ],
)
def test_numbers_are_written_for_people(value, text):
    assert _number(value) == text


PEOPLE_NUMBER = re.compile(r"-?\d{1,3}(,\d{3})*(\.\d+)?[%x]?")


def test_table_numbers_have_separators_and_no_exponents(capsys):
    """40 requests of 2,000 tokens with 1,043-token prompts on 4 slots at 1 s per step: ten
    waves of about 2,000 s, so every latency is in the thousands of seconds."""
    code, out, _ = run_cli(
        capsys,
        "--requests",
        "40",
        "--output-tokens",
        "2000",
        "--prompt-tokens",
        "1043",
        "--slots",
        "4",
        "--step-time",
        "unit:1",
    )
    assert code == 0
    assert "e+" not in out and "e-" not in out
    assert out.splitlines()[0] == (
        "40 requests from generated seed=0: 80,000 output tokens "
        "(mean 2,000.0, longest 2,000), prompts mean 1,043.0"
    )
    assert "unit, 1,000 ms per step" in out
    rows = [
        line.split()
        for line in out.splitlines()
        if line.startswith(("static ", "continuous ")) and " vs " not in line
    ]
    assert len(rows) == 2
    for _name, *cells in rows:
        assert len(cells) == 10
        for cell in cells:
            assert PEOPLE_NUMBER.fullmatch(cell), cell
            digits = cell.split(".")[0].lstrip("-").replace(",", "")
            assert len(digits) < 4 or "," in cell, cell  # 1,000 and up are separated
        steps, seconds, util, per_step, rps, *latencies, preempt = cells
        assert seconds == steps  # 1 s per step
        assert latencies[-1] == steps  # the last wave finishes at the makespan: e2e p99
        assert float(latencies[0].replace(",", "")) > 1_000  # TTFT p50 waits for earlier waves
        assert (util, per_step, preempt) == ("100.0%", "4.00", "0")  # 4 slots always full
        assert rps == _number(40 / int(steps.replace(",", "")))


def test_a_generated_workload_error_names_its_own_flag(capsys):
    code, _, err = run_cli(capsys, "--requests", "20000000", "--output-tokens", "5", "--slots", "4")
    assert code == 2 and err.strip().startswith("--requests: ")


def flags_section(*argv: str):
    """The batching section the simulate flags build."""
    from engine.cli import build_parser
    from engine.commands.simulate import section_of

    return section_of(build_parser("simulate").parse_args(["simulate", *argv]))


def test_the_flags_build_the_days_batching_section():
    """The lab's run on the command line is Day 37's batching section, field for field."""
    from engine.spec import load_spec

    from helpers import DAYS

    day = load_spec(DAYS / "day37.yaml").batching
    flags = flags_section("--workload", LAB_TRACE, "--slots", "16", "--step-time", "unit:0.02")
    assert flags.model_dump(exclude={"workload"}) == day.model_dump(exclude={"workload"})
    assert flags.workload.trace == LAB_TRACE
    paged = flags_section(
        *("--requests", "30", "--output-tokens", "uniform:8:40", "--seed", "7", "--arrival-rate", "4"),
        *("--slots", "8", "--policy", "paged,prefill_first,static", "--max-wait", "0.5"),
        *(
            "--num-blocks",
            "64",
            "--block-size",
            "32",
            "--max-num-seqs",
            "6",
            "--max-num-batched-tokens",
            "512",
        ),
        "--chunked-prefill",
    )
    assert paged.model_dump(mode="json") == {
        "slots": 8,
        "workload": {
            "requests": 30,
            "output_tokens": {"kind": "uniform", "low": 8, "high": 40},
            "prompt_tokens": None,
            "arrivals": {"kind": "poisson", "rate": 4.0},
            "seed": 7,
        },
        "policies": ["paged", "prefill_first", "static"],
        "step_time": {"kind": "unit", "seconds_per_step": 0.02},
        "paged": {
            "num_blocks": 64,
            "block_size": 32,
            "max_num_seqs": 6,
            "max_num_batched_tokens": 512,
            "chunked_prefill": True,
            # vLLM 0.33.0's rules, on unless a flag turns them off
            "reserve_full_prompt": True,
            "async_scheduling": True,
            "null_block": True,
            "allow_empty_prompt": False,
        },
        "static_max_wait": 0.5,
    }


def test_each_vllm_rule_has_a_flag_that_turns_it_off():
    """--no-reserve-full-prompt, --no-async-scheduling, --no-null-block, --allow-empty-prompt:
    one field of the paged section each, and the policy built from it has them."""
    from engine.experiments.batching import policy_of

    base = (
        "--requests",
        "5",
        "--output-tokens",
        "4",
        "--slots",
        "2",
        "--policy",
        "paged",
        "--num-blocks",
        "9",
    )
    flips = {
        "--no-reserve-full-prompt": ("reserve_full_prompt", False),
        "--no-async-scheduling": ("async_scheduling", False),
        "--no-null-block": ("null_block", False),
        "--allow-empty-prompt": ("allow_empty_prompt", True),
    }
    for flag, (field, value) in flips.items():
        section = flags_section(*base, flag)
        assert section.paged is not None
        dumped = section.paged.model_dump()
        assert dumped[field] == value
        assert all(dumped[other] != v for other, v in flips.values() if other != field)
        assert getattr(policy_of("paged", section), field) == value


@pytest.mark.parametrize(
    "flags, flag, change",
    [
        (["--slots", "0"], "--slots", lambda b: b.update(slots=0)),
        (["--slots", "4", "--max-wait=-1.5"], "--max-wait", lambda b: b.update(static_max_wait=-1.5)),
        (
            ["--slots", "4", "--step-time", "unit:5000.5"],
            "--step-time",
            lambda b: b.update(step_time={"kind": "unit", "seconds_per_step": 5000.5}),
        ),
        (
            ["--slots", "4", "--policy", "paged", "--num-blocks", "0"],
            "--num-blocks",
            lambda b: b.update(policies=["paged"], paged={"num_blocks": 0}),
        ),
        (
            ["--slots", "4", "--policy", "paged", "--num-blocks", "9", "--max-num-seqs", "2000000"],
            "--max-num-seqs",
            lambda b: b.update(policies=["paged"], paged={"num_blocks": 9, "max_num_seqs": 2_000_000}),
        ),
    ],
    ids=["slots", "max-wait", "unit-step", "num-blocks", "max-num-seqs"],
)
def test_a_flag_obeys_its_spec_key_word_for_word(capsys, days_copy, flags, flag, change):

    from engine.errors import UserError
    from engine.spec import load_spec

    from helpers import DAYS

    code, _, err = run_cli(capsys, "--workload", LAB_TRACE, *flags)
    assert code == 2
    data = load_yaml((DAYS / "day37.yaml").read_text())
    change(data["batching"])
    path = days_copy / "day37.yaml"
    path.write_text(dump_yaml(data, sort_keys=False))
    with pytest.raises(UserError) as spec_err:
        load_spec(path)
    assert err.strip() == f"{flag}: {spec_err.value.message}"
