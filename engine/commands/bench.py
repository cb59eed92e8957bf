"""``python -m engine bench days/day37.yaml``: measure the day on a real device with torch.

Writes ``days/dayNN.measured/<device-slug>.json`` (schema in engine.measured), atomically, after
validating it; any mistake in the inputs stops the run before anything is written. torch is
imported only in ``run``, so the other commands never need it.

On a GPU box: clone, ``make bench-day37 DEVICE=cuda`` (a CUDA build of torch 2.13 in .venv; the
7B-class shape in bf16 needs 12.6 GiB (13.5 GB) for its weights and takes a few minutes), commit
``days/day37.measured/<gpu>.json``, set ``measured: latest`` in the spec, and build anywhere.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from pathlib import Path

from engine import catalog
from engine.errors import UserError
from engine.experiments.batching import BatchingSection
from engine.experiments.kv_cache import KvCacheSection
from engine.gpubench.shapes import BUILTIN, SEVEN_B, TINY, shape_from_arch
from engine.measured import measured_dir, write_measurement
from engine.sections import SpecLocation, blame
from engine.spec import load_spec
from engine.workload import build_workload

# On a CPU the benchmark measures memory against this budget instead of the machine's RAM:
# allocating until a CPU runs out only makes it swap.
CPU_MEMORY_BUDGET = 512 * 2**20


@dataclass(frozen=True)
class DayInputs:
    """The few fields of a day spec the benchmark reads."""

    spec_path: Path
    day: int
    contexts: list[int]
    slots: int
    output_tokens: list[int]


def _day_inputs(spec_path: Path) -> DayInputs:
    """The spec's day, contexts, slots and workload, validated by the same loader as a build."""
    spec_path = Path(spec_path)
    spec = load_spec(spec_path)
    kv_cache: KvCacheSection | None = spec.section("kv_cache")
    batching: BatchingSection | None = spec.section("batching")
    if kv_cache is None or batching is None:
        missing = "kv_cache" if kv_cache is None else "batching"
        raise UserError("missing (the bench needs it)", file=spec_path, field=missing)
    location = SpecLocation(spec_path=spec_path)
    location.trace(batching.workload, "batching.workload.trace")
    with blame(location, "batching.workload"):
        workload = build_workload(batching.workload, spec_path.parent)
    return DayInputs(
        spec_path,
        spec.day,
        list(kv_cache.contexts),
        batching.slots,
        [int(n) for n in workload.output_tokens],
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", type=Path, help="the day's spec, e.g. days/day37.yaml")
    parser.add_argument(
        "--device", choices=("cuda", "cpu"), help="default: cuda when torch sees a GPU, else cpu"
    )
    parser.add_argument(
        "--model",
        metavar="NAME",
        help="tiny, 7b-class, or a catalog model (default: 7b-class on CUDA, "
        "tiny on CPU); the weights are random",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="fewer repeats and a scaled-down workload: minutes become seconds",
    )
    parser.add_argument(
        "--scale",
        type=float,
        metavar="F",
        help="multiply every output length by F (default 1 on CUDA, 0.25 on CPU; --quick: 0.25 and 0.1)",
    )
    parser.add_argument(
        "--prompt-tokens",
        type=int,
        default=1,
        metavar="N",
        help="prompt length per request (default 1: no prefill pass, as the lab; "
        "longer prompts add one prefill pass per request)",
    )
    parser.add_argument(
        "--eager", action="store_true", help="time eager steps on CUDA instead of replaying CUDA graphs"
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="where to write <device-slug>.json (default: days/dayNN.measured/)",
    )


def _shape(name: str | None, device_type: str, spec_path: Path):
    if name is None:
        return SEVEN_B if device_type == "cuda" else TINY
    if name in BUILTIN:
        return BUILTIN[name]

    try:
        return shape_from_arch(name, catalog.load_model(name))
    except ValueError as err:
        raise UserError(str(err), file=spec_path, field="--model") from None


def run(args: argparse.Namespace) -> int:
    inputs = _day_inputs(args.spec)
    if args.scale is not None and not args.scale > 0:
        raise UserError("must be above 0", file=args.spec, field="--scale")
    if args.prompt_tokens < 1:
        raise UserError("must be at least 1", file=args.spec, field="--prompt-tokens")
    try:
        import torch  # noqa: F401  (the bench extra)
    except ImportError:
        raise UserError(
            "torch is not installed: pip install -e '.[bench]'", file=args.spec, field="--device"
        ) from None
    from engine.gpubench.device import resolve_device
    from engine.gpubench.runner import BenchConfig, run_bench

    device = resolve_device(args.device, spec_file=args.spec)
    cuda = device.type == "cuda"
    scale = (
        args.scale
        if args.scale is not None
        else {
            (True, False): 1.0,
            (True, True): 0.25,
            (False, False): 0.25,
            (False, True): 0.1,
        }[(cuda, args.quick)]
    )
    config = BenchConfig(
        device=device.type,
        shape=_shape(args.model, device.type, args.spec),
        dtype="bfloat16" if cuda else "float32",
        slots=inputs.slots,
        contexts=inputs.contexts,
        output_tokens=inputs.output_tokens,
        day=inputs.day,
        quick=args.quick,
        workload_scale=scale,
        prompt_tokens=args.prompt_tokens,
        warmup=1 if args.quick else 3,
        repeats=3 if args.quick else 10,
        cuda_graphs=cuda and not args.eager,
        memory_budget_bytes=None if cuda else CPU_MEMORY_BUDGET,
        cpu_threads=None if cuda else 1,
    )
    out_dir = args.out if args.out is not None else measured_dir(inputs.spec_path, inputs.day)
    _check_writable(out_dir)  # before minutes of measuring, not after
    doc = run_bench(config)
    path = write_measurement(doc, out_dir / f"{doc['device']['slug']}.json")
    _summary(doc, path)
    return 0


def _check_writable(folder: Path) -> None:
    """The measurement's folder must be one we can make and write; say so before measuring.

    Nothing is created here: a run refused later (a model too big, say) leaves no trace.
    """
    if folder.exists() and not folder.is_dir():
        raise UserError("is a file, not a folder for measurements", file=folder, field="--out")
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise UserError(f"cannot write into {existing}", file=folder, field="--out")


def _summary(doc: dict, path: Path) -> None:
    step = doc["step_time"]
    b = doc["batching"]
    at_slots = [p for p in step["points"] if p["batch"] == doc["settings"]["slots"]]
    print(f"wrote {path}")
    print(
        f"  {doc['device']['name']}: {doc['settings']['model']['name']} "
        f"({doc['settings']['dtype']}, random weights), "
        f"{doc['memory']['weights_bytes'] / 2**30:.2f} GiB of weights"
    )
    for fit in doc["memory"]["contexts"]:
        print(
            f"  context {fit['context']:>6}: {fit['max_requests_measured']} requests fit "
            f"(calculated {fit['max_requests_calculated']})"
        )
    for point in step.get("prefill", []):
        print(
            f"  prefill {point['tokens']:>6} tokens: {point['seconds'] * 1e3:8.2f} ms "
            f"({point['tokens'] / point['seconds']:,.0f} tokens/s)"
        )
    if at_slots:
        p = at_slots[0]
        share = step["share_of_peak_at_slots"]
        print(
            f"  step at batch {p['batch']}, context {p['context']}: {p['seconds'] * 1e3:.2f} ms, "
            f"{p['achieved_bytes_per_s'] / 1e9:.1f} GB/s"
            + (f" ({share:.0%} of peak, median over contexts)" if share is not None else "")
        )
    print(
        f"  static {b['policies']['static']['wall_seconds']:.2f} s vs continuous "
        f"{b['policies']['continuous']['wall_seconds']:.2f} s: {b['multiple']:.2f}x "
        f"({b['requests']} requests, scale {b['scale']})"
    )
    for note in doc.get("notes", []):
        print(f"  note: {note}")
