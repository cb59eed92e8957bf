"""Measurements from a real device are inputs, like the spec.

``python -m engine bench`` writes days/dayNN.measured/<device>.json once, on a GPU; the spec's
``measured:`` key (latest, a file name, or none) makes every later build, on any laptop, read
it back so the posts can say what was measured and where.
"""
from __future__ import annotations

from typing import Any

from engine.errors import UserError
from engine.experiments import Context, blame
from engine.spec import DaySpec


def measurement_folder(ctx: Context):
    return ctx.spec_path.with_suffix(".measured")


def run(spec: DaySpec, ctx: Context) -> dict[str, Any] | None:
    choice = spec.measured
    if choice is None or choice == "none":
        return None
    from engine import measured

    folder = measurement_folder(ctx)
    with blame(ctx, "measured"):
        path = measured.resolve_measurement(folder, choice)
        if path is None:
            raise UserError(f"no measurement file in {folder} (run: make bench-day{spec.day:02d})")
    data = measured.load_measurement(path, day=spec.day)
    return {"file": f"{folder.name}/{path.name}", **data}
