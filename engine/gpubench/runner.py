"""The benchmark end to end: load the weights, then memory, step time, prefill and batching, in that order,
each freeing what it allocated, under one progress bar; the result is one measurement document
(the schema is in engine.measured, which validates it before it is written)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

import torch
from tqdm import tqdm

from engine.errors import UserError
from engine.gpubench import device as dev
from engine.gpubench import memory, replay, steptime
from engine.gpubench.model import Decoder
from engine.gpubench.shapes import ModelShape

RANDOM_WEIGHTS_NOTE = "random weights: step time and memory do not depend on the weights' values"

# Step-time and batching caches must leave room for a step's activations, the CUDA graphs' pools
# and cuBLAS workspaces: they may use the memory left after the weights less a reserve of 10 % of
# it, but never more than 1 GiB. A 7B-class step at batch 16 and context 8k needs well under
# 200 MiB beside its cache, and a flat 10 % (6.6 GiB on an 80 GB card) would skip exactly that
# point, the row the day's posts are about: 16 × 8,192 × 0.5 MiB = 64 GiB of cache beside
# 12.6 GiB of weights fits an H100 80GB with about 2 GiB to spare.
KV_RESERVE_SHARE = 0.1
KV_RESERVE_MAX = 2**30


def kv_budget_bytes(free_after_weights: int) -> int:
    """What the step-time and batching caches may take of the memory left after the weights."""
    return free_after_weights - min(int(KV_RESERVE_SHARE * free_after_weights), KV_RESERVE_MAX)


def warm_runtime(model: Decoder) -> None:
    """One small prefill and decode step, before the free memory is read. CUDA loads kernels,
    and cuBLAS creates its handle and workspace, on first use: memory the caches cannot have
    either, so the figure of what fits is read after it is gone."""
    cache = model.new_cache(1, 8)
    tokens = torch.zeros(2, dtype=torch.long, device=model.device)
    model.prefill(cache, 0, tokens)
    model.decode(cache, tokens[:1], torch.full_like(tokens[:1], 2), attn_len=8)
    dev.synchronize(model.device)


CPU_PREFILL_CAP = 512

DTYPES = {"bfloat16": torch.bfloat16, "float32": torch.float32, "float16": torch.float16}


@dataclass
class BenchConfig:
    device: str  # "cuda" or "cpu"
    shape: ModelShape
    dtype: str  # a key of DTYPES
    slots: int
    contexts: list[int]
    output_tokens: list[int]  # the day's workload, unscaled
    day: int
    quick: bool = False
    workload_scale: float = 1.0
    warmup: int = 3
    repeats: int = 10
    prompt_tokens: int = 1  # 1: no separate prefill, as the lab (see engine.gpubench.replay)
    cuda_graphs: bool = True
    # The "device memory" on a CPU: the memory probe and the cache sizes use it instead of RAM.
    memory_budget_bytes: int | None = None
    cpu_threads: int | None = 1
    seed: int = 0
    extra_notes: list[str] = field(default_factory=list)

    def settings(self) -> dict:
        return {
            "model": self.shape.as_dict(),
            "dtype": self.dtype,
            "slots": self.slots,
            "contexts": list(self.contexts),
            "quick": self.quick,
            "workload_scale": self.workload_scale,
            "repeats": self.repeats,
            "warmup": self.warmup,
            "prompt_tokens": self.prompt_tokens,
            "cuda_graphs": self.cuda_graphs,
            "memory_budget_bytes": self.memory_budget_bytes,
            "cpu_threads": self.cpu_threads,
            "seed": self.seed,
        }


POLICIES = (("static", replay.run_static), ("continuous", replay.run_continuous))


def _run_policies(
    model: Decoder, config: BenchConfig, lengths: list[int], context: int, notes: list[str], bar: tqdm
) -> dict[str, replay.PolicyRun]:
    """Both policies, each on a fresh cache freed after it. If one could not use CUDA graphs and
    the other did, the other is run again eagerly: the multiple compares like with like."""
    device = torch.device(config.device)

    def run_all(names: list[str], cuda_graphs: bool) -> dict[str, replay.PolicyRun]:
        out: dict[str, replay.PolicyRun] = {}
        for name, run in POLICIES:
            if name not in names:
                continue
            bar.set_postfix_str(f"batching: {name}")
            cache = model.new_cache(config.slots, context)
            result: replay.PolicyRun | None
            try:
                result = run(
                    model,
                    cache,
                    lengths,
                    prompt_tokens=config.prompt_tokens,
                    seed=config.seed,
                    on_done=bar.update,
                    cuda_graphs=cuda_graphs,
                )
            except torch.OutOfMemoryError:
                result = None
            del cache
            dev.release(device)
            if result is None:
                bar.close()
                raise UserError(
                    f"out of device memory running {name} batching with "
                    f"{config.slots} slots × {context} positions; use "
                    f"{'' if config.quick else '--quick, '}a smaller --scale or --eager",
                    field="batching",
                )
            out[name] = result
        return out

    runs = run_all([name for name, _ in POLICIES], config.cuda_graphs)
    fell_back = [name for name, r in runs.items() if r.note]
    notes += [note for name in fell_back if (note := runs[name].note)]
    graphed = [name for name in runs if name not in fell_back]
    if config.cuda_graphs and dev.graphs_supported(device) and fell_back and graphed:
        runs.update(run_all(graphed, cuda_graphs=False))
        notes.append(
            f"batching: {', '.join(graphed)} timed again without CUDA graphs, as "
            f"{', '.join(fell_back)} had to run without them"
        )
    return runs


def run_bench(config: BenchConfig, *, progress: bool = True) -> dict:
    """Run the three measurements and return the measurement document (not yet written)."""
    device = torch.device(config.device)
    if device.type == "cpu" and config.memory_budget_bytes is None:
        raise ValueError("a CPU run needs memory_budget_bytes")
    if device.type == "cpu" and config.cpu_threads:
        torch.set_num_threads(config.cpu_threads)
    info = dev.describe(device)
    dtype = DTYPES[config.dtype]
    lengths = replay.scale_lengths(config.output_tokens, config.workload_scale)
    points_total = len(config.contexts) * len(steptime.batch_sizes(config.slots))
    # A CPU run checks the path rather than measuring a GPU: its prompts stop at 512 tokens, where
    # a pass still takes milliseconds.
    prompts = steptime.prefill_lengths(config.contexts, None if device.type == "cuda" else CPU_PREFILL_CAP)
    weights = config.shape.param_count() * dtype.itemsize
    budget = config.memory_budget_bytes
    capacity = info.memory_bytes if device.type == "cuda" or budget is None else budget
    if weights >= capacity:
        raise UserError(
            f"{config.shape.name} needs {weights / 2**30:.1f} GiB of {config.dtype} "
            f"weights; {info.name} has {capacity / 2**30:.1f} GiB"
            + (" (the CPU run's memory budget)" if device.type == "cpu" else ""),
            field="--model",
        )
    passes = 2 if config.cuda_graphs and device.type == "cuda" else 1  # graphs: a warm pass first
    bar = tqdm(
        total=len(config.contexts) + points_total + len(prompts) + 2 * passes * len(lengths),
        disable=not progress,
        desc="bench",
        unit="item",
    )
    notes = list(config.extra_notes)

    bar.set_postfix_str("loading weights")
    model = Decoder(config.shape, device=device, dtype=dtype, seed=config.seed)
    warm_runtime(model)
    free = dev.free_bytes(device)  # releases the warm-up's cache first
    if free is None:  # CPU: the budget plays the device's memory (required above)
        assert budget is not None
        free = budget - model.weight_bytes
    kv_budget = kv_budget_bytes(free)
    notes.append(
        f"step-time and batching caches limited to the memory free after the weights "
        f"less {(free - kv_budget) / 2**20:,.0f} MiB for activations and CUDA graphs"
    )
    kv_per_token = config.shape.kv_bytes_per_token(dtype.itemsize)
    context = replay.cache_context(lengths, config.prompt_tokens)
    if config.slots * context * kv_per_token > kv_budget:
        bar.close()
        raise UserError(
            f"the batching cache ({config.slots} slots × {context} positions) does not "
            f"fit beside the weights on {info.name}; use "
            f"{'' if config.quick else '--quick or '}a smaller model",
            field="batching",
        )

    bar.set_postfix_str("memory")
    fits = memory.measure_fits(
        config.contexts,
        kv_per_token,
        free,
        device,
        budget_bytes=free if device.type == "cpu" else None,
        on_context=lambda _c: bar.update(1),
    )

    bar.set_postfix_str("step time")
    points, step_notes = steptime.measure_step_times(
        model,
        config.contexts,
        config.slots,
        kv_budget,
        warmup=config.warmup,
        repeats=config.repeats,
        use_cuda_graphs=config.cuda_graphs,
        on_point=lambda: bar.update(1),
    )
    bar.update(points_total - len(points))  # the points that did not fit
    if not points:
        bar.close()
        raise UserError(
            f"no batch fits at any context beside the weights on {info.name}", field="kv_cache.contexts"
        )
    notes += step_notes
    if device.type == "cuda":
        peak, peak_note = dev.catalog_peak(info.name)
    else:
        peak, peak_note = None, "CPU run: no HBM peak to compare with"
    if peak_note:
        notes.append(peak_note)

    bar.set_postfix_str("prefill")
    prefill, prefill_notes = steptime.measure_prefill_times(
        model,
        prompts,
        kv_budget,
        warmup=config.warmup,
        repeats=config.repeats,
        use_cuda_graphs=config.cuda_graphs,
        on_point=lambda: bar.update(1),
    )
    bar.update(len(prompts) - len(prefill))
    notes += prefill_notes

    bar.set_postfix_str("batching")
    runs = _run_policies(model, config, lengths, context, notes, bar)
    bar.close()

    return {
        "schema": 1,
        "day": config.day,
        "device": {
            "kind": info.kind,
            "name": info.name,
            "slug": info.slug,
            "memory_bytes": info.memory_bytes,
        },
        "torch": torch.__version__.split("+")[0],
        "cuda": torch.version.cuda,
        "date": datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z"),
        "settings": config.settings(),
        "random_weights": True,
        "note": RANDOM_WEIGHTS_NOTE,
        "notes": notes,
        "memory": {
            "weights_bytes": model.weight_bytes,
            "free_after_weights_bytes": free,
            "kv_bytes_per_token": kv_per_token,
            "contexts": [f.model_dump() for f in fits],
        },
        "step_time": {
            "points": [asdict(p) for p in points],
            "prefill": [asdict(p) for p in prefill],
            "hbm_peak_bytes_per_s": peak,
            "share_of_peak_at_slots": steptime.share_of_peak_at_slots(points, config.slots, peak),
        },
        "batching": {
            "requests": len(lengths),
            "scale": config.workload_scale,
            "policies": {
                name: {k: v for k, v in asdict(r).items() if k != "note"} for name, r in runs.items()
            },
            "multiple": runs["static"].wall_seconds / runs["continuous"].wall_seconds,
        },
    }
