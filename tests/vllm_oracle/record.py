"""Record what vLLM's own V1 scheduler does, step by step, for the workloads the tests replay.

Runs in its own virtual environment (setup.sh), never the project's: it imports vLLM, which the
project does not depend on. The real `vllm.v1.core.sched.scheduler.Scheduler` (synchronous) and
`AsyncScheduler` (the engine's default) are driven by a fake model runner that samples one token
for every scheduled request whose prompt is complete, as a real runner does; nothing of the
scheduler is reimplemented here.

The driver is vLLM's engine loop reduced to its order of calls. Step t is the t-th call of
`schedule()`; requests whose arrival step is ≤ t are added just before it.
  * synchronous (EngineCore.step): schedule step t, then update_from_output(step t).
  * async (EngineCore.step_with_batch_queue, a batch queue of two): schedule step t, then
    update_from_output(step t − 1); step t is scheduled before step t − 1's tokens are known.

Per step it records each request's scheduled tokens, the requests preempted while scheduling it,
and the requests whose last token that step sampled. Output: one gzip JSON per setting in
tests/data/ (see README.md for the format).

    /tmp/vllm-venv/bin/python tests/vllm_oracle/record.py [--out tests/data] [--workloads 200]
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import logging
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

import torch  # noqa: E402
import vllm  # noqa: E402
from vllm.config import CacheConfig, DeviceConfig, ModelConfig, SchedulerConfig, VllmConfig  # noqa: E402
from vllm.sampling_params import SamplingParams  # noqa: E402
from vllm.v1.core.sched.async_scheduler import AsyncScheduler  # noqa: E402
from vllm.v1.core.sched.scheduler import Scheduler  # noqa: E402
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec  # noqa: E402
from vllm.v1.outputs import ModelRunnerOutput  # noqa: E402
from vllm.v1.request import Request  # noqa: E402
from vllm.v1.structured_output import StructuredOutputManager  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
TOKEN = 7  # what the fake runner samples: never EOS (ignore_eos is set anyway)

# The settings recorded: vLLM 0.33.0's defaults, each of the two turned off, and both off.
SETTINGS = {
    "shipped": {"reserve_full_isl": True, "async_scheduling": True},
    "gate_off": {"reserve_full_isl": False, "async_scheduling": True},
    "sync": {"reserve_full_isl": True, "async_scheduling": False},
    "gate_off_sync": {"reserve_full_isl": False, "async_scheduling": False},
}

_MODEL_CONFIG: ModelConfig | None = None


def model_config() -> ModelConfig:
    """A one-layer model config read from a local folder: the scheduler reads only its limits
    (max_model_len is set per run on the scheduler config)."""
    global _MODEL_CONFIG
    if _MODEL_CONFIG is None:
        folder = Path(os.environ.get("TMPDIR", "/tmp")) / "vllm-oracle-model"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.json").write_text(
            json.dumps(
                {
                    "architectures": ["LlamaForCausalLM"],
                    "model_type": "llama",
                    "hidden_size": 64,
                    "intermediate_size": 128,
                    "num_attention_heads": 4,
                    "num_key_value_heads": 4,
                    "num_hidden_layers": 1,
                    "vocab_size": 1000,
                    "max_position_embeddings": 1 << 20,
                    "torch_dtype": "float32",
                    "rms_norm_eps": 1e-5,
                }
            )
        )
        _MODEL_CONFIG = ModelConfig(
            model=str(folder), skip_tokenizer_init=True, dtype="float32", max_model_len=1 << 16
        )
    return _MODEL_CONFIG


def make_scheduler(config: dict, max_model_len: int) -> Scheduler:
    """The scheduler of one run. Prefix caching is off: the project models no shared prefixes
    (the prompts here are distinct anyway)."""
    setting = SETTINGS[config["setting"]]
    scheduler_config = SchedulerConfig(
        max_num_seqs=config["max_num_seqs"],
        max_num_batched_tokens=config["max_num_batched_tokens"],
        max_model_len=max_model_len,
        enable_chunked_prefill=config["chunked_prefill"],
        async_scheduling=setting["async_scheduling"],
        scheduler_reserve_full_isl=setting["reserve_full_isl"],
        is_encoder_decoder=False,
    )
    cache_config = CacheConfig(block_size=config["block_size"], enable_prefix_caching=False)
    vllm_config = VllmConfig(
        scheduler_config=scheduler_config,
        model_config=model_config(),
        cache_config=cache_config,
        device_config=DeviceConfig(device="cpu"),  # no accelerator: the scheduler needs none
    )
    blocks = config["num_gpu_blocks"]
    kv_cache_config = KVCacheConfig(
        num_blocks=blocks,
        kv_cache_tensors=[],
        kv_cache_groups=[
            KVCacheGroupSpec(
                ["layer"],
                FullAttentionSpec(
                    block_size=config["block_size"], num_kv_heads=1, head_size=1, dtype=torch.float32
                ),
            )
        ],
    )
    vllm_config.cache_config.num_gpu_blocks = blocks
    cls = AsyncScheduler if setting["async_scheduling"] else Scheduler
    return cls(
        vllm_config=vllm_config,
        kv_cache_config=kv_cache_config,
        structured_output_manager=StructuredOutputManager(vllm_config),
        block_size=config["block_size"],
        log_stats=False,
    )


def make_request(index: int, prompt: int, output: int) -> Request:
    params = SamplingParams(max_tokens=output, ignore_eos=True)
    # distinct prompt tokens per request (no prefix caching is on, but no accidental sharing)
    tokens = [(index * 131 + k) % 997 + 1 for k in range(prompt)]
    return Request(
        request_id=str(index),
        prompt_token_ids=tokens,
        sampling_params=params,
        pooling_params=None,
        arrival_time=float(index),
    )


def run(config: dict, requests: list[list[int]], step_limit: int) -> list[list]:
    """Drive the scheduler; per step [[[request, tokens], …], [preempted], [finished]]."""
    max_model_len = max(p + o for _, p, o in requests)
    scheduler = make_scheduler(config, max_model_len)
    asynchronous = SETTINGS[config["setting"]]["async_scheduling"]
    order = sorted(range(len(requests)), key=lambda i: (requests[i][0], i))
    added = 0
    pending = None  # (scheduler output, requests that sample) not yet processed
    finished: set[str] = set()
    steps: list[list] = []
    t = 0
    while len(finished) < len(requests):
        if t >= step_limit:
            raise RuntimeError(f"no end after {step_limit} steps")
        while added < len(order) and requests[order[added]][0] <= t:
            i = order[added]
            scheduler.add_request(make_request(i, requests[i][1], requests[i][2]))
            added += 1
        out = scheduler.schedule()
        # a request samples a token in this step once its prompt is fully computed
        sampling = [rid for rid in out.num_scheduled_tokens if not scheduler.requests[rid].is_prefill_chunk]
        record = [
            sorted([int(r), n] for r, n in out.num_scheduled_tokens.items()),
            sorted(int(r) for r in (out.preempted_req_ids or ())),
            [],
        ]
        steps.append(record)
        if asynchronous:
            if pending is not None:
                process(scheduler, *pending, steps, finished)
            pending = (out, sampling, t)
        else:
            process(scheduler, out, sampling, t, steps, finished)
        t += 1
    if pending is not None:
        process(scheduler, *pending, steps, finished)
    while steps and steps[-1] == [[], [], []]:
        steps.pop()
    return steps


def process(scheduler, out, sampling, t, steps, finished) -> None:
    """The fake runner's output for step t, then the scheduler's update; finishes are recorded
    at the step that sampled the last token."""
    ids = list(out.num_scheduled_tokens)
    runner = ModelRunnerOutput(
        req_ids=ids,
        req_id_to_index={rid: k for k, rid in enumerate(ids)},
        sampled_token_ids=[[TOKEN] if rid in sampling else [] for rid in ids],
    )
    outputs = scheduler.update_from_output(out, runner)
    for engine_outputs in outputs.values():
        for o in engine_outputs.outputs:
            if o.finish_reason is not None and o.request_id not in finished:
                finished.add(o.request_id)
                steps[t][2].append(int(o.request_id))
    steps[t][2].sort()


# ---- workloads ---------------------------------------------------------------------------------


def random_case(rng: random.Random, index: int) -> dict:
    """One small workload and its limits: blocks from scarce to plentiful, chunked prefill on
    and off, token budgets 8..2048, arrivals all at once or Poisson (a step grid)."""
    n = rng.randint(1, 24)
    long_prompts = rng.random() < 0.3
    prompts = [rng.randint(1, 300 if long_prompts else 60) for _ in range(n)]
    outputs = [rng.randint(1, 48) for _ in range(n)]
    block_size = rng.choice([1, 2, 4, 8, 16])
    need = max(-(-(p + o) // block_size) for p, o in zip(prompts, outputs))
    scarcity = rng.choice(["scarce", "tight", "medium", "plentiful"])
    total = sum(-(-(p + o) // block_size) for p, o in zip(prompts, outputs))
    usable = {
        "scarce": need + rng.randint(0, 2),
        "tight": need + rng.randint(0, max(1, need)),
        "medium": max(need, total // 2),
        "plentiful": total + rng.randint(0, 8),
    }[scarcity]
    max_num_seqs = rng.choice([1, 2, 3, 4, 8, 16, 32])
    chunked = rng.random() < 0.6
    longest = max(p + o for p, o in zip(prompts, outputs))
    if chunked:
        budget = max(max_num_seqs, rng.choice([8, 16, 32, 64, 128, 512, 2048]))
    else:
        budget = max(max_num_seqs, longest, rng.choice([8, 64, 256, 2048]))
        budget = min(budget, 2048) if longest <= 2048 else budget
    if rng.random() < 0.5:
        arrivals = [0] * n
    else:
        rate = rng.choice([0.05, 0.2, 1.0, 3.0])  # requests per step
        clock, arrivals = 0.0, []
        for _ in range(n):
            clock += rng.expovariate(rate)
            arrivals.append(int(clock))
    return {
        "name": f"random-{index:03d}",
        "num_gpu_blocks": usable + 1,  # vLLM keeps one block back (the null block)
        "block_size": block_size,
        "max_num_seqs": max_num_seqs,
        "max_num_batched_tokens": budget,
        "chunked_prefill": chunked,
        "requests": [[a, p, o] for a, p, o in zip(arrivals, prompts, outputs)],
    }


def lab_cases() -> list[dict]:
    """The lab trace (days/day37.workload.csv): output lengths only, all at once; its prompts are
    empty, so each gets the one prompt token vLLM needs. Block size 16 (days/day37.yaml), 16
    running requests (its slots). 16 blocks cannot hold its longest request (vLLM refuses that
    at start-up): the tight pool is the least that holds it, beside 64."""
    with open(ROOT / "days" / "day37.workload.csv", newline="") as handle:
        outputs = [int(row["output_tokens"]) for row in csv.DictReader(handle)]
    requests = [[0, 1, o] for o in outputs]
    need = max(-(-(1 + o) // 16) for o in outputs)
    cases = []
    for blocks in (need + 1, 64):
        for chunked, budget in ((True, 2048), (False, 2048)):
            cases.append(
                {
                    "name": f"day37-{blocks}blocks-{'chunked' if chunked else 'whole'}",
                    "num_gpu_blocks": blocks,
                    "block_size": 16,
                    "max_num_seqs": 16,
                    "max_num_batched_tokens": budget,
                    "chunked_prefill": chunked,
                    "requests": requests,
                }
            )
    return cases


def events(steps: list[list]) -> dict[str, list[int]]:
    """The steps as three flat tables, rows in order: ``scheduled`` (step, request, tokens),
    ``preempted`` and ``finished`` (step, request). The test reads each as one array, where a
    list a step would be millions of small objects to decode and to hold."""
    scheduled, preempted, finished = [], [], []
    for t, (tokens, pre, fin) in enumerate(steps):
        for request, count in sorted(tokens):
            scheduled += [t, request, count]
        for request in sorted(pre):
            preempted += [t, request]
        for request in sorted(fin):
            finished += [t, request]
    return {"scheduled": scheduled, "preempted": preempted, "finished": finished}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "data")
    parser.add_argument("--workloads", type=int, default=200)
    parser.add_argument("--seed", type=int, default=37)
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)
    rng = random.Random(args.seed)
    cases = [random_case(rng, k) for k in range(args.workloads)] + lab_cases()
    args.out.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    for setting, flags in SETTINGS.items():
        traces = []
        for case in cases:
            config = {**{k: v for k, v in case.items() if k not in ("name", "requests")}, "setting": setting}
            limit = (
                50 * sum(p + o + 1 for _, p, o in case["requests"])
                + max(a for a, _, _ in case["requests"])
                + 100
            )
            traces.append({**case, **events(run(config, case["requests"], limit))})
        document = {
            "vllm": vllm.__version__,
            "setting": setting,
            "scheduler_reserve_full_isl": flags["reserve_full_isl"],
            "async_scheduling": flags["async_scheduling"],
            "enable_prefix_caching": False,
            "seed": args.seed,
            "traces": traces,
        }
        path = args.out / f"vllm_oracle_{setting}.json.gz"
        data = json.dumps(document, separators=(",", ":"), sort_keys=True).encode()
        # mtime=0: the same recording gives the same bytes
        path.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
        print(f"{path.name}: {len(traces)} traces, {path.stat().st_size} bytes", file=sys.stderr)
    print(f"recorded in {time.monotonic() - began:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
