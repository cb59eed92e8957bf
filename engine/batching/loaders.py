"""The simulator's edges: step-time models and KV budgets built from the catalog or a file.

The math modules take plain numbers; this module is where names ("llama-3-8b", "h100-80gb")
and files (a GPU benchmark's JSON) become those numbers, with mistakes reported as UserErrors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.batching.steptime import MeasuredStepTime, RooflineStepTime
from engine.catalog import load_gpu, load_model
from engine.errors import UserError
from engine.kvcache import VllmBudget, kv_bytes_per_token, plan_kv_cache, weight_bytes
from engine.measured import PrefillPoint, StepPoint, read_document


def roofline_from_catalog(model: str, gpu: str, kv_dtype: str = "auto", tp: int = 1) -> RooflineStepTime:
    """Roofline numbers for a catalog model on a catalog GPU, per GPU under tensor parallelism:
    weights and KV bytes from the KV-cache calculator, 2 FLOPs per active parameter per token,
    the card's HBM bandwidth and dense bf16 peak."""
    arch = load_model(model)
    card = load_gpu(gpu)
    if arch.num_params <= 0:
        raise UserError(f"{arch.name} has no parameter count; a roofline needs one", field="model")
    active = arch.active_params or arch.num_params
    return RooflineStepTime(
        weights_bytes=float(weight_bytes(arch, tp)),
        kv_bytes_per_token=float(kv_bytes_per_token(arch, kv_dtype, tp)),
        flops_per_token=2.0 * active / tp,
        hbm_bytes_per_s=float(card.hbm_bandwidth_bytes_per_s),
        peak_flops=float(card.bf16_dense_flops),
        comm_seconds_per_token=allreduce_seconds_per_token(
            arch.num_layers, arch.hidden_size, tp, card.interconnect_bytes_per_s, card.name
        ),
    )


ALLREDUCES_PER_LAYER = 2  # Megatron-style: after attention's output and after the MLP
ACTIVATION_BYTES = 2  # bf16 activations


def allreduce_seconds_per_token(
    layers: int, hidden: int, tp: int, link_bytes_per_s: float, gpu: str = "the GPU"
) -> float:
    """What tensor parallelism's all-reduces add per token in a step: a ring all-reduce of a
    token's hidden state (hidden × 2 bytes) sends and receives 2(tp − 1)/tp of it over each
    GPU's link, twice per layer. Latency per call is left out: a bound from below, like the
    rest of the roofline."""
    if tp == 1:
        return 0.0
    if not link_bytes_per_s > 0:
        raise UserError(
            f"{gpu} has no interconnect bandwidth in the catalog; tensor parallelism "
            "needs it for the all-reduces",
            field="gpu",
        )
    per_allreduce = 2 * (tp - 1) / tp * hidden * ACTIVATION_BYTES / link_bytes_per_s
    return layers * ALLREDUCES_PER_LAYER * per_allreduce


def num_blocks_from_catalog(
    model: str,
    gpu: str,
    block_size: int = 16,
    kv_dtype: str = "auto",
    tp: int = 1,
    gpu_memory_utilization: float = 0.9,
) -> int:
    """KV blocks vLLM would allocate for the model on the card (the calculator's vLLM budget)."""
    arch = load_model(model)
    card = load_gpu(gpu)
    plan = plan_kv_cache(
        arch,
        card.memory_bytes,
        VllmBudget(gpu_memory_utilization=gpu_memory_utilization),
        kv_dtype=kv_dtype,
        tp=tp,
        block_size=block_size,
    )
    return plan.num_blocks


def load_measured_step_time(path: str | Path) -> MeasuredStepTime:
    """Fit a measured step time from a GPU benchmark result (`step_time.points`: batch, context,
    seconds). Only those points are read, so any file that has them will do."""
    return MeasuredStepTime.fit(load_measured_points(path))


def load_measured_points(path: str | Path) -> list[tuple[float, float, float]]:
    """A GPU benchmark result's decode steps: (batch, per-request context, seconds)."""
    decode, _ = load_bench_steps(path)
    return decode


def load_bench_steps(
    path: str | Path,
) -> tuple[list[tuple[float, float, float]], list[tuple[float, float]]]:
    """A GPU benchmark result's decode steps, (batch, per-request context, seconds), and its
    prefill passes, (prompt tokens, seconds): none in a file written before the bench timed them.
    The file is read once for both."""
    path = Path(path)
    step_time = read_document(path).get("step_time")
    step_time = step_time if isinstance(step_time, dict) else {}
    points = step_time.get("points")
    if not isinstance(points, list) or not points:
        raise UserError("needs a non-empty list of points", file=path, field="step_time.points")
    step_keys = _bounded(StepPoint, (("batch", 1, False), ("context", 0, False), ("seconds", 0, True)))
    triples = [_point(p, step_keys, f"step_time.points[{i}]", path) for i, p in enumerate(points)]
    passes = step_time.get("prefill", [])
    if not isinstance(passes, list):
        raise UserError("must be a list of points", file=path, field="step_time.prefill")
    pass_keys = _bounded(PrefillPoint, (("tokens", 1, False), ("seconds", 0, True)))
    pairs = [_point(p, pass_keys, f"step_time.prefill[{i}]", path) for i, p in enumerate(passes)]
    return (
        [(batch, context, seconds) for batch, context, seconds in triples],
        [(tokens, seconds) for tokens, seconds in pairs],
    )


_Bound = tuple[str, int, bool, float]  # a key, its least value, whether that is excluded, its most


def _bounded(schema: Any, keys: tuple[tuple[str, int, bool], ...]) -> tuple[_Bound, ...]:
    """``keys`` each with the most the measurement schema's field allows (``schema``:
    engine.measured's model of the point), looked up once for all the file's points."""
    return tuple((key, least, strict, _ceiling(schema, key)) for key, least, strict in keys)


def _point(point: Any, keys: tuple[_Bound, ...], where: str, path: Path) -> tuple[float, ...]:
    """The point's values for ``keys``, each within its bounds, so a file read here for its
    points alone obeys the same ceilings as a full one."""
    if not isinstance(point, dict):
        names = ", ".join(key for key, _, _, _ in keys)
        raise UserError(f"must be an object with {names}", file=path, field=where)
    values = []
    for key, least, strict, most in keys:
        value = point.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UserError(f"must be a number, got {value!r}", file=path, field=f"{where}.{key}")
        if value < least or (strict and value <= least):
            bound = f"greater than {least}" if strict else f"at least {least}"
            raise UserError(f"must be {bound}, got {value!r}", file=path, field=f"{where}.{key}")
        if value > most:
            raise UserError(f"must be at most {most:,}, got {value!r}", file=path, field=f"{where}.{key}")
        values.append(float(value))
    return tuple(values)


def _ceiling(schema: Any, key: str) -> float:
    """The field's upper bound in the measurement schema (its ``le``)."""
    return next(m.le for m in schema.model_fields[key].metadata if hasattr(m, "le"))
