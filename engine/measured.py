"""Measurement files: what ``python -m engine bench`` writes and a build reads back (no torch).

A GPU is rented once; its numbers are committed as ``days/dayNN.measured/<device-slug>.json`` and
read by every later build, like the spec. Schema 1 (every size in bytes, every time in seconds):

    {
      "schema": 1, "day": 37,
      "device": {"kind": "cuda" | "cpu", "name": "NVIDIA H100 80GB HBM3",
                 "slug": "nvidia-h100-80gb-hbm3", "memory_bytes": int},
      "torch": "2.13.0", "cuda": "12.8" | null, "date": "2026-01-31T12:00:00Z"  (ISO-8601, UTC),
      "settings": {"model": {name, num_layers, hidden_size, num_heads, num_kv_heads, head_dim,
                             intermediate_size, vocab_size},
                   "dtype": "bfloat16" | "float32", "slots": int, "contexts": [int],
                   "quick": bool, "workload_scale": float, "repeats": int, … (more allowed)},
      "random_weights": true,
      "note": "random weights: step time and memory do not depend on the weights' values",
      "notes": [str]  (optional: skipped points, eager fallback, no catalog peak, …),
      "memory": {"weights_bytes": int, "free_after_weights_bytes": int,
                 "kv_bytes_per_token": int (optional),
                 "contexts": [{"context": int, "max_requests_measured": int,
                               "max_requests_calculated": int}]},
      "step_time": {"points": [{"batch": int, "context": int, "seconds": float,
                                "bytes_moved": int, "achieved_bytes_per_s": float}],
                    "prefill": [{"tokens": int, "seconds": float}]  (optional: one prompt's
                               prefill pass into one slot, at a few lengths),
                    "hbm_peak_bytes_per_s": float | null,
                    "share_of_peak_at_slots": float | null},
      "batching": {"requests": int, "scale": float,
                   "policies": {"static" | "continuous": {"wall_seconds": float, "steps": int,
                                "tokens": int, "tokens_per_second": float,
                                "utilisation": float}},
                   "multiple": float  (static wall seconds / continuous wall seconds)}
    }

On a CPU the memory figures are against a fixed budget (settings.memory_budget_bytes) standing in
for the device's free memory, and the peak is null. ``share_of_peak_at_slots`` is the median over
contexts of achieved / peak bandwidth at batch = slots.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from engine.errors import UserError
from engine.limits import (
    MAX_CONTEXT_TOKENS,
    MAX_CONTEXTS,
    MAX_MEASUREMENT_BYTES,
    MAX_REQUESTS,
    MAX_SLOTS,
    present,
    read_json_limited,
    resolves_inside,
)
from engine.outdir.atomic import write_json
from engine.validation import OneLine, Sentence, Strict, recorded_date, validate

SCHEMA = 1


class _Strict(Strict):
    # allow_inf_nan=False: a measured figure is finite, or it is not a measurement. strict: a
    # count is a number, not true, and a rate is not the text "1676" (nothing a bench writes).
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, strict=True)


# Caps far above any device (engine/limits.py keeps the limits of inputs; these are the
# physical bounds of a measurement): a figure past them is a corrupt or hand-edited file, and
# would otherwise be quoted on a post as a 31-digit rate.
_MAX_BYTES = 2**50  # a pebibyte
_MAX_SECONDS = 1e7  # about four months of wall time
_MAX_COUNT = 10**15  # tokens, steps
_MAX_RATE = 1e9  # tokens per second
_MAX_BANDWIDTH = 1e15  # bytes per second (a petabyte per second)


class Device(_Strict):
    kind: Literal["cuda", "cpu"]
    name: OneLine  # what the posts and the terminal say the device is
    slug: str = Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")
    memory_bytes: int = Field(ge=0, le=_MAX_BYTES)


class ModelShapeSettings(_Strict):
    name: OneLine
    num_layers: int = Field(gt=0)
    hidden_size: int = Field(gt=0)
    num_heads: int = Field(gt=0)
    num_kv_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    intermediate_size: int = Field(gt=0)
    vocab_size: int = Field(gt=0)

    @model_validator(mode="after")
    def _heads_divide(self) -> ModelShapeSettings:
        # Grouped-query attention shares each KV head among a whole number of query heads.
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_kv_heads ({self.num_kv_heads}) must divide num_heads ({self.num_heads}): "
                "no model has that shape"
            )
        return self


class Settings(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)  # a newer bench may record more settings
    model: ModelShapeSettings
    dtype: OneLine
    slots: int = Field(gt=0)
    contexts: list[int] = Field(min_length=1)
    quick: bool
    workload_scale: float = Field(gt=0)
    repeats: int = Field(gt=0)


class MemoryFit(_Strict):
    """One context's row of the memory probe; engine.gpubench.memory builds these."""

    context: int = Field(gt=0, le=MAX_CONTEXT_TOKENS)
    max_requests_measured: int = Field(ge=0, le=_MAX_COUNT)
    max_requests_calculated: int = Field(ge=0, le=_MAX_COUNT)


class Memory(_Strict):
    weights_bytes: int = Field(gt=0, le=_MAX_BYTES)
    free_after_weights_bytes: int = Field(ge=-_MAX_BYTES, le=_MAX_BYTES)
    kv_bytes_per_token: int | None = Field(default=None, gt=0, le=_MAX_BYTES)
    contexts: list[MemoryFit] = Field(max_length=MAX_CONTEXTS)


class StepPoint(_Strict):
    batch: int = Field(gt=0, le=MAX_SLOTS)
    context: int = Field(gt=0, le=MAX_CONTEXT_TOKENS)
    seconds: float = Field(gt=0, le=3600)
    bytes_moved: int = Field(gt=0, le=_MAX_BYTES)
    achieved_bytes_per_s: float = Field(gt=0, le=_MAX_BANDWIDTH)


class PrefillPoint(_Strict):
    tokens: int = Field(gt=0, le=MAX_CONTEXT_TOKENS)
    seconds: float = Field(gt=0, le=3600)


class StepTimings(_Strict):
    points: list[StepPoint] = Field(min_length=1, max_length=100_000)
    prefill: list[PrefillPoint] = Field(default_factory=list, max_length=1_000)
    hbm_peak_bytes_per_s: float | None = Field(gt=0, le=_MAX_BANDWIDTH)
    share_of_peak_at_slots: float | None = Field(ge=0, le=10)


class PolicyTiming(_Strict):
    wall_seconds: float = Field(gt=0, le=_MAX_SECONDS)
    steps: int = Field(gt=0, le=_MAX_COUNT)
    tokens: int = Field(gt=0, le=_MAX_COUNT)
    tokens_per_second: float = Field(gt=0, le=_MAX_RATE)
    utilisation: float = Field(gt=0, le=1)

    @model_validator(mode="after")
    def _rate_is_tokens_over_time(self) -> PolicyTiming:
        """The rate a post quotes must be the file's own tokens over its own wall time."""
        rate = self.tokens / self.wall_seconds
        if abs(self.tokens_per_second - rate) > 0.01 * rate:
            raise ValueError(
                f"tokens_per_second {self.tokens_per_second:g} is not tokens / "
                f"wall_seconds ({rate:g}): a corrupt or hand-edited file"
            )
        return self


class Policies(_Strict):
    static: PolicyTiming
    continuous: PolicyTiming


class Batching(_Strict):
    requests: int = Field(gt=0, le=MAX_REQUESTS)
    scale: float = Field(gt=0, le=1e6)
    policies: Policies
    multiple: float = Field(gt=0, le=1e6)


class Measurement(_Strict):
    schema_: Literal[1] = Field(alias="schema")
    day: int = Field(ge=1)
    device: Device
    torch: OneLine
    cuda: OneLine | None
    date: str
    settings: Settings
    random_weights: bool
    note: Sentence
    notes: list[Sentence] = Field(default_factory=list, max_length=50)  # as many as a lab's
    memory: Memory
    step_time: StepTimings
    batching: Batching

    _date = field_validator("date")(recorded_date)


def validate_measurement(doc: object, *, file: str | Path) -> dict:
    """The document as a plain dict if it is a valid schema-1 measurement, else a UserError
    naming the first offending field."""
    if isinstance(doc, dict) and doc.get("schema") != SCHEMA:
        raise UserError(
            f"schema {doc.get('schema')!r} is not {SCHEMA}; re-run the bench with this version of the engine",
            file=file,
            field="schema",
        )
    model = validate(Measurement, doc, file=file)
    # A CPU file edited to say `kind: cuda` must not be quoted as measured on a GPU: a CUDA run
    # records its CUDA version, and only a CPU run has a synthetic memory budget.
    if model.device.kind == "cuda" and (
        model.cuda is None or (model.settings.model_extra or {}).get("memory_budget_bytes") is not None
    ):
        raise UserError(
            "is cuda, but the file has no CUDA version or has a CPU run's synthetic "
            "memory budget: it was not measured on a GPU",
            file=file,
            field="device.kind",
        )
    # A card holds its weights: weights larger than the device's memory were not measured on
    # it (a CPU run's device memory is the machine's, which holds them too).
    if model.memory.weights_bytes > model.device.memory_bytes:
        raise UserError(
            f"{model.memory.weights_bytes:,} bytes of weights do not fit in the device's "
            f"{model.device.memory_bytes:,} bytes (device.memory_bytes): they were not measured on it",
            file=file,
            field="memory.weights_bytes",
        )
    return model.model_dump(by_alias=True)


def read_document(path: Path | str) -> dict:
    """The JSON object in a measurement file; a missing, unreadable or corrupt file is a
    UserError naming it. Shared by every reader of these files (the build, the simulator)."""
    path = Path(path)
    doc = read_json_limited(path, MAX_MEASUREMENT_BYTES, "measurement")
    if not isinstance(doc, dict):
        raise UserError("a measurement file holds one JSON object", file=path)
    return doc


def load_measurement(path: Path | str, *, day: int) -> dict:
    """Read and validate a measurement file for ``day``. A missing, corrupt or invalid file, or
    one measured for another day, is a UserError naming the file."""
    path = Path(path)
    result = validate_measurement(read_document(path), file=path)
    if result["day"] != day:
        raise UserError(f"measured for day {result['day']}, not day {day}", file=path, field="day")
    return result


def measured_dir(spec_path: Path | str, day: int) -> Path:
    """Where a day's measurements live: beside its spec, ``days/dayNN.measured/``, in its folder
    with links followed (so a lab's run is never written elsewhere through a link either)."""
    return _inside(Path(spec_path).parent / f"day{day:02d}.measured", Path(spec_path).parent)


def _inside(path: Path, spec_dir: Path) -> Path:
    """``path``, once known to be in ``spec_dir`` (its spec's folder) with links followed: a
    measurement of a day someone else wrote that links out (to a file of the person's, to
    /proc/self/environ) would have its text read, and posted as the measuring machine's name."""
    if present(path) and not resolves_inside(path, spec_dir):
        raise UserError(
            "leads out of the spec's folder through a symbolic link; a measurement is a file in it",
            file=path,
        )
    return path


def _on_accelerator(path: Path) -> bool:
    """Whether a measurement file was made on an accelerator (device kind other than cpu)."""
    try:
        return read_document(path)["device"]["kind"] != "cpu"
    except (UserError, KeyError, TypeError):
        return False  # a corrupt file is reported by _recorded_date, which reads it too


def _recorded_date(path: Path) -> datetime:
    try:
        doc = read_document(path)
        when = datetime.fromisoformat(doc["date"])
    except UserError:
        raise
    except (ValueError, KeyError, TypeError) as err:
        raise UserError(
            f"cannot read its date ({err.__class__.__name__}): a corrupt measurement file",
            file=path,
            field="date",
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def resolve_measurement(day_dir: Path | str, choice: str) -> Path | None:
    """Which measurement file a spec's ``measured:`` key means.

    ``day_dir`` is the day's measurement folder (``measured_dir(spec, day)``). ``choice``:
    ``none`` → None (simulated only); ``latest`` → the newest GPU measurement by recorded date
    (a CPU one only when there is no GPU one), ties broken by name, or None when the folder
    holds none yet; anything else → that file name in the
    folder (``.json`` may be left off), which must exist.
    """
    day_dir = Path(day_dir)
    if choice == "none":
        return None
    if choice == "latest":
        files = (
            [_inside(p, day_dir.parent) for p in sorted(day_dir.glob("*.json"))] if day_dir.is_dir() else []
        )
        if not files:
            return None
        # A GPU measurement outranks any CPU one, however recent: a CPU trial run of the bench
        # must never displace the rented GPU's committed figures from the posts.
        return max(files, key=lambda p: (_on_accelerator(p), _recorded_date(p), p.name))
    if not choice or Path(choice).name != choice or choice in (".", ".."):
        raise UserError(
            f"{choice!r} is not a file name: use latest, none, or a file in {day_dir}", field="measured"
        )
    path = _inside(day_dir / (choice if choice.endswith(".json") else f"{choice}.json"), day_dir.parent)
    if not path.is_file():
        have = ", ".join(p.name for p in sorted(day_dir.glob("*.json"))) or "none"
        raise UserError(f"no measurement file {path.name} in {day_dir} (have: {have})", field="measured")
    return path


def write_measurement(doc: dict, path: Path | str) -> Path:
    """Validate ``doc``, then write it atomically: a temporary file in the same folder, renamed
    over the target, so a reader sees the old file or the new one, never half of one."""
    path = Path(path)
    validate_measurement(doc, file=path)
    return write_json(doc, path, what="measurement")
