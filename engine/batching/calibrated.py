"""A calibrated step time: the roofline with achieved efficiencies, attention FLOPs and a fixed
per-layer kernel cost, fitted by least squares to measured steps.

    step = layers × kernel_s + max(bytes / (η_mem · HBM bandwidth), FLOPs / (η_flops · peak))

bytes and the dense FLOPs are the roofline's (engine.batching.steptime.RooflineStepTime): the
weights once per step, the KV read and written, 2 FLOPs per active parameter per token. On top:
attention's own FLOPs, 4 · heads · head_dim · layers per KV token a query attends over (QKᵀ and
PV, two FLOPs per multiply-add); a step's prompt tokens are counted as one causal prompt (each
attends over those before it: p²/2), an upper bound when a step prefills several prompts. The
bare roofline is this model with η = 1 and no kernel cost: a lower bound on every step, which is
how it must be quoted.

The fit: kernel_s is linear given the efficiencies (the mean residual, kept ≥ 0), so the
efficiencies are searched on a grid in (0, 1], log-spaced, then refined twice around the best;
of equally good fits the highest efficiency wins (a compute efficiency the measured points never
test stays at 1, optimistic, rather than invented). The fit's error on its own points is kept
with the model and reported wherever it is shown.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.batching.loaders import load_bench_steps, roofline_from_catalog
from engine.batching.steptime import RooflineStepTime, StepTime, _quadratic_steps
from engine.catalog import load_model
from engine.errors import UserError
from engine.limits import MAX_MEASUREMENT_BYTES, read_text_limited


@dataclass(frozen=True)
class CalibratedStepTime(StepTime):
    weights_bytes: float
    kv_bytes_per_token: float
    flops_per_token: float
    attention_flops_per_kv_token: float
    hbm_bytes_per_s: float
    peak_flops: float
    layers: int
    memory_efficiency: float = 1.0
    flops_efficiency: float = 1.0
    kernel_seconds: float = 0.0  # per layer, per step
    points: int = 0
    rmse: float = 0.0  # seconds, on the fitted points
    max_relative_error: float = 0.0
    comm_seconds_per_token: float = 0.0  # tensor parallelism's all-reduces (see the roofline)

    def __post_init__(self) -> None:
        for name in ("memory_efficiency", "flops_efficiency"):
            value = getattr(self, name)
            if not 0 < value <= 1:
                raise ValueError(f"{name} must be in (0, 1], got {value}")
        if self.kernel_seconds < 0 or self.layers < 1:
            raise ValueError("kernel_seconds must be ≥ 0 and layers ≥ 1")

    @classmethod
    def from_roofline(
        cls, roofline: RooflineStepTime, attention_flops_per_kv_token: float, layers: int, **fitted: Any
    ) -> CalibratedStepTime:
        return cls(
            roofline.weights_bytes,
            roofline.kv_bytes_per_token,
            roofline.flops_per_token,
            attention_flops_per_kv_token,
            roofline.hbm_bytes_per_s,
            roofline.peak_flops,
            layers,
            comm_seconds_per_token=roofline.comm_seconds_per_token,
            **fitted,
        )

    # ---- the three linear terms of a step (memory seconds, compute seconds at η = 1) ----------

    def _bandwidth(self) -> float:
        return self.memory_efficiency * self.hbm_bytes_per_s

    def _compute(self) -> float:
        return self.flops_efficiency * self.peak_flops

    @property
    def fixed(self) -> float:
        return self.layers * self.kernel_seconds

    @property
    def constant(self) -> None:
        return None

    @property
    def idle_seconds(self) -> float:
        return self.step(1, 1, 0)

    def seconds(self, batch: np.ndarray, context: np.ndarray, prefill: np.ndarray) -> np.ndarray:
        batch, context, prefill = (np.asarray(a, dtype=np.float64) for a in (batch, context, prefill))
        moved = self.weights_bytes + self.kv_bytes_per_token * (context + prefill)
        flops = self.flops_per_token * (batch + prefill) + self.attention_flops_per_kv_token * (
            context + prefill * prefill / 2
        )
        return (
            self.fixed
            + self.comm_seconds_per_token * (batch + prefill)
            + np.maximum(moved / self._bandwidth(), flops / self._compute())
        )

    def step(self, batch: int, context: float, prefill: int) -> float:
        b, c, p = float(batch), float(context), float(prefill)
        moved = self.weights_bytes + self.kv_bytes_per_token * (c + p)
        flops = self.flops_per_token * (b + p) + self.attention_flops_per_kv_token * (c + p * p / 2)
        return (
            self.fixed
            + self.comm_seconds_per_token * (b + p)
            + max(moved / self._bandwidth(), flops / self._compute())
        )

    def _lines(self, batch: float, first_context: float) -> tuple[float, float, float, float]:
        """A decode run's step j costs max(m0 + m1·j, f0 + f1·j) + fixed: (m0, m1, f0, f1)."""
        bw, fl = self._bandwidth(), self._compute()
        m0 = (self.weights_bytes + self.kv_bytes_per_token * first_context) / bw
        m1 = self.kv_bytes_per_token * batch / bw
        f0 = (self.flops_per_token * batch + self.attention_flops_per_kv_token * first_context) / fl
        f1 = self.attention_flops_per_kv_token * batch / fl
        return m0, m1, f0, f1

    def runner(self, batch: int, first_context: float) -> Callable[[int], float]:
        m0, m1, f0, f1 = self._lines(float(batch), float(first_context))
        fixed = self.fixed + self.comm_seconds_per_token * float(batch)

        def summed(steps: int) -> float:
            return _sum_of_max(m0, m1, f0, f1, float(steps)) + fixed * float(steps)

        return summed

    def run(self, batch: int, first_context: float, steps: int) -> float:
        return self.runner(batch, first_context)(steps)

    def guess(self, batch: int, first_context: float, seconds: float) -> int:
        m0, m1, f0, f1 = self._lines(float(batch), float(first_context))
        per_step = self.fixed + self.comm_seconds_per_token * float(batch)
        return _quadratic_steps(max(m0, f0) + per_step, max(m1, f1), seconds)

    def segment_seconds(self, batch: Any, first_context: Any, steps: Any) -> Any:
        batch, first_context, steps = np.broadcast_arrays(
            *(np.asarray(a, dtype=np.float64) for a in (batch, first_context, steps))
        )
        out = np.empty(batch.shape, dtype=np.float64)
        for index in np.ndindex(batch.shape):  # segments of a finished schedule: a vector loop
            m0, m1, f0, f1 = self._lines(float(batch[index]), float(first_context[index]))
            per_step = self.fixed + self.comm_seconds_per_token * float(batch[index])
            out[index] = _sum_of_max(m0, m1, f0, f1, float(steps[index])) + per_step * float(steps[index])
        return out if out.ndim else float(out)

    def describe(self) -> dict:
        return {
            "kind": "calibrated",
            "weights_bytes": self.weights_bytes,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "flops_per_token": self.flops_per_token,
            "attention_flops_per_kv_token": self.attention_flops_per_kv_token,
            "hbm_bytes_per_s": self.hbm_bytes_per_s,
            "peak_flops": self.peak_flops,
            "layers": self.layers,
            "memory_efficiency": self.memory_efficiency,
            "flops_efficiency": self.flops_efficiency,
            "kernel_seconds_per_layer": self.kernel_seconds,
            "points": self.points,
            "rmse_s": self.rmse,
            "max_relative_error": self.max_relative_error,
            "comm_seconds_per_token": self.comm_seconds_per_token,
        }


def _sum_of_max(m0: float, m1: float, f0: float, f1: float, k: float) -> float:
    """Σ_{j<k} max(m0 + m1·j, f0 + f1·j): two lines cross at most once, so the sum splits into
    two arithmetic series at the first whole j past the crossing."""
    if k <= 0:
        return 0.0
    gap0, slope = m0 - f0, m1 - f1  # memory minus compute at j, = gap0 + slope·j
    if slope == 0:
        split = 0.0 if gap0 >= 0 else k  # one line wins throughout
        first_memory = gap0 >= 0
    else:
        crossing = -gap0 / slope
        split = min(k, max(0.0, float(math.ceil(crossing))))
        first_memory = slope < 0  # memory wins before the crossing when it grows slower

    def series(a: float, b: float, lo: float, hi: float) -> float:  # Σ_{lo ≤ j < hi} a + b·j
        n = hi - lo
        return n * a + b * (n * (lo + hi - 1) / 2) if n > 0 else 0.0

    if first_memory:
        return series(m0, m1, 0.0, split) + series(f0, f1, split, k)
    return series(f0, f1, 0.0, split) + series(m0, m1, split, k)


# ---- the fit ------------------------------------------------------------------------------------

Point = tuple[float, float, float, float]  # batch, KV tokens read, prompt tokens, seconds


def fit(base: CalibratedStepTime, points: Iterable[Sequence[float]]) -> CalibratedStepTime:
    """Least squares over (batch, KV tokens read, prompt tokens, seconds) points."""
    data = np.asarray([tuple(p) for p in points], dtype=np.float64)
    if data.ndim != 2 or data.shape[1] != 4 or len(data) == 0:
        raise ValueError("need (batch, kv tokens, prompt tokens, seconds) points")
    batch, context, prefill, seconds = data.T
    seconds = seconds - base.comm_seconds_per_token * (batch + prefill)  # known, not fitted
    unit = CalibratedStepTime(
        **{**base.__dict__, "memory_efficiency": 1.0, "flops_efficiency": 1.0, "kernel_seconds": 0.0}
    )
    memory = (unit.weights_bytes + unit.kv_bytes_per_token * (context + prefill)) / unit.hbm_bytes_per_s
    compute = (
        unit.flops_per_token * (batch + prefill)
        + unit.attention_flops_per_kv_token * (context + prefill * prefill / 2)
    ) / unit.peak_flops

    def best_on(mem_grid: np.ndarray, flop_grid: np.ndarray) -> tuple[float, float, float, float]:
        # grid[i, j, point]: seconds without the fixed cost at η_mem = mem_grid[i], η_flops = flop_grid[j]
        bound = np.maximum(memory / mem_grid[:, None, None], compute / flop_grid[None, :, None])
        fixed = np.maximum(0.0, (seconds - bound).mean(axis=2))
        err = ((bound + fixed[..., None] - seconds) ** 2).sum(axis=2)
        # of near-equal fits, the highest efficiencies (grids run high to low, argmin takes the first)
        i, j = np.unravel_index(int(np.argmin(err)), err.shape)
        return float(mem_grid[i]), float(flop_grid[j]), float(fixed[i, j]), float(err[i, j])

    high_to_low = np.geomspace(1.0, 1e-3, 160)
    eta_m, eta_f, fixed, _ = best_on(high_to_low, high_to_low)
    for width in (1.05, 1.002):  # refine around the best, twice
        eta_m, eta_f, fixed, _ = best_on(
            np.minimum(1.0, np.geomspace(eta_m * width, eta_m / width, 81)),
            np.minimum(1.0, np.geomspace(eta_f * width, eta_f / width, 81)),
        )
    model = CalibratedStepTime(
        **{
            **unit.__dict__,
            "memory_efficiency": eta_m,
            "flops_efficiency": eta_f,
            "kernel_seconds": fixed / unit.layers,
        }
    )
    predicted = model.seconds(batch, context, prefill)
    seconds = data[:, 3]
    return CalibratedStepTime(
        **{
            **model.__dict__,
            "points": len(data),
            "rmse": float(np.sqrt(np.mean((predicted - seconds) ** 2))),
            "max_relative_error": float(np.max(np.abs(predicted - seconds) / seconds)),
        }
    )


# ---- inputs: a bench measurement, or a per-operator table ------------------------------------------

MAX_CSV_ROWS = 100_000


def points_from_file(path: str | Path) -> list[Point]:
    """Measured steps as (batch, KV tokens read, prompt tokens, seconds).

    A `.csv` is a per-operator profile: columns batch, context (KV tokens read, summed over the
    batch), prefill (prompt tokens) and seconds, optionally operator; rows of one (batch,
    context, prefill) are summed into one step. Anything else is a GPU bench measurement (the
    JSON `make bench-day37` writes): its decode points (batch, per-request context, seconds).
    """
    path = Path(path)
    if path.suffix.lower() == ".csv":
        return _points_from_csv(path)

    decode, prefill = load_bench_steps(path)
    return [(b, b * c, 0.0, s) for b, c, s in decode] + [(0.0, 0.0, tokens, s) for tokens, s in prefill]


def _points_from_csv(path: Path) -> list[Point]:
    text = read_text_limited(path, MAX_MEASUREMENT_BYTES, "profile")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        rows = list(reader)
    except csv.Error as exc:
        raise UserError(f"not a readable CSV (line {reader.line_num}): {exc}", file=path) from None
    if not rows:
        raise UserError("no rows: need columns batch, context, prefill, seconds", file=path)
    if len(rows) > MAX_CSV_ROWS:
        raise UserError(f"{len(rows):,} rows; at most {MAX_CSV_ROWS:,}", file=path)
    steps: dict[tuple[float, float, float], float] = {}
    for i, row in enumerate(rows, start=2):
        values = []
        for key in ("batch", "context", "prefill", "seconds"):
            cell = row.get(key)
            try:
                value = float(cell) if cell is not None else math.nan
            except ValueError:
                value = math.nan
            if not math.isfinite(value) or value < 0 or (key == "seconds" and value <= 0):
                raise UserError(
                    f"line {i}: must be a {'positive' if key == 'seconds' else 'non-negative'} "
                    f"number, got {cell!r}",
                    file=path,
                    field=key,
                )
            values.append(value)
        b, c, p, s = values
        steps[(b, c, p)] = steps.get((b, c, p), 0.0) + s
    return [(b, c, p, s) for (b, c, p), s in steps.items()]


def calibrate_from_catalog(
    model: str, gpu: str, path: str | Path, kv_dtype: str = "auto", tp: int = 1
) -> CalibratedStepTime:
    """The catalog's roofline terms for the model on the card, calibrated on the file's steps."""
    arch = load_model(model)
    roofline = roofline_from_catalog(model, gpu, kv_dtype=kv_dtype, tp=tp)
    attention = 4.0 * arch.num_attention_heads * arch.head_dim * arch.num_layers / tp
    base = CalibratedStepTime.from_roofline(roofline, attention, arch.num_layers)
    points = points_from_file(path)
    return fit(base, points)
