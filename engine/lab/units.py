"""The units a lab may report a figure in, and how each prints.

Why a closed table: a figure's unit decides how a post prints it (92 ns, 4.0 KiB, 110x) and
whether two figures can be divided; an unknown unit, or a lab reporting bytes where the spec
expects nanoseconds, must stop the run rather than reach a post. Within one dimension a value
converts exactly (a lab may report µs where the spec says ns); across dimensions it is refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Unit:
    name: str  # as written in the spec and the measurement file
    dimension: str  # time, bytes, rate, ratio, count, percent
    factor: float  # how many base units (seconds, bytes, bytes/s, 1) one of it is


_UNITS = [
    Unit("ns", "time", 1e-9),
    Unit("us", "time", 1e-6),
    Unit("µs", "time", 1e-6),
    Unit("ms", "time", 1e-3),
    Unit("s", "time", 1.0),
    Unit("B", "bytes", 1.0),
    Unit("KiB", "bytes", 2.0**10),
    Unit("MiB", "bytes", 2.0**20),
    Unit("GiB", "bytes", 2.0**30),
    Unit("TiB", "bytes", 2.0**40),
    Unit("kB", "bytes", 1e3),
    Unit("MB", "bytes", 1e6),
    Unit("GB", "bytes", 1e9),
    Unit("B/s", "rate", 1.0),
    Unit("KiB/s", "rate", 2.0**10),
    Unit("MiB/s", "rate", 2.0**20),
    Unit("GiB/s", "rate", 2.0**30),
    Unit("MB/s", "rate", 1e6),
    Unit("GB/s", "rate", 1e9),
    Unit("x", "ratio", 1.0),
    Unit("count", "count", 1.0),
    Unit("ops/s", "count_rate", 1.0),
    Unit("%", "percent", 0.01),
]
UNITS: dict[str, Unit] = {u.name: u for u in _UNITS}


def unit(name: str) -> Unit:
    """The unit called ``name``; a ValueError listing the known ones otherwise."""
    try:
        return UNITS[name]
    except KeyError:
        raise ValueError(f"unknown unit {name!r}; known: {', '.join(UNITS)}") from None


def convert(value: float, from_unit: str, to_unit: str) -> float:
    """``value`` in ``from_unit`` expressed in ``to_unit``; a ValueError across dimensions."""
    src, dst = unit(from_unit), unit(to_unit)
    if src == dst:
        return value  # exact: a value in the unit asked for is not scaled there and back
    if src.dimension != dst.dimension:
        raise ValueError(f"{from_unit} is a {src.dimension}, not a {dst.dimension} like {to_unit}")
    return value * src.factor / dst.factor


def base(value: float, unit_name: str) -> float:
    """The value in its dimension's base unit: seconds, bytes, bytes per second, or 1."""
    return value * unit(unit_name).factor


# ---- printing: the posts' unit-aware spelling ------------------------------------------------


def number(value: float) -> str:
    """Two to three significant figures, the way people quote a measurement: 92, 1.2, 1,234.

    Below 10 one decimal (1.2), from 10 a whole number with thousands separators (92, 1,234):
    a latency measured to ±5% has no business showing 92.347.
    """
    if not math.isfinite(value):
        raise ValueError(f"cannot print {value!r}")
    if abs(value) < 9.95:  # 9.97 would print as "10.0": a whole number then
        text = f"{value:.1f}"
        return "0" if text in ("0.0", "-0.0") else text
    return f"{round(value):,}"


_TIME_STEPS = [(1e-6, "ns", 1e-9), (1e-3, "µs", 1e-6), (1.0, "ms", 1e-3)]
_BYTE_STEPS = [
    (2.0**10, "B", 1.0),
    (2.0**20, "KiB", 2.0**10),
    (2.0**30, "MiB", 2.0**20),
    (2.0**40, "GiB", 2.0**30),
]


def _scaled(
    value: float, steps: list[tuple[float, str, float]], last: tuple[str, float], suffix: str = ""
) -> str:
    for below, name, factor in steps:
        # Compare the printed value, so 999.7 ns prints as 1.0 µs rather than "1,000 ns".
        if abs(value) < below and abs(float(number(value / factor).replace(",", ""))) < 1000:
            return f"{number(value / factor)} {name}{suffix}"
    name, factor = last
    return f"{number(value / factor)} {name}{suffix}"


def seconds_text(seconds: float) -> str:
    """8.3e-08 → '83 ns', 1.234e-05 → '12 µs', 0.15 → '150 ms', 2.5 → '2.5 s'."""
    return _scaled(seconds, _TIME_STEPS, ("s", 1.0))


def bytes_text(num_bytes: float) -> str:
    """4096 → '4.0 KiB', 268435456 → '256 MiB' (binary prefixes)."""
    return _scaled(num_bytes, _BYTE_STEPS, ("TiB", 2.0**40))


def figure_base(fig: Any, dimension: str | None = None) -> float:
    """A figure dict's value in base units (a plain number is taken as already in them)."""
    if isinstance(fig, dict):
        found = unit(fig["unit"])
        if dimension is not None and found.dimension != dimension:
            raise ValueError(f"a {found.dimension} figure ({fig['unit']}) where a {dimension} is needed")
        return float(fig["value"]) * found.factor
    return float(fig)


def figure_text(fig: dict[str, Any]) -> str:
    """A figure printed in its own dimension's best unit: '92 ns', '256 MiB', '1.6 GiB/s', '110x'."""
    found = unit(fig["unit"])
    value = float(fig["value"]) * found.factor
    if found.dimension == "time":
        return seconds_text(value)
    if found.dimension == "bytes":
        return bytes_text(value)
    if found.dimension == "rate":
        return bytes_text(value) + "/s"
    if found.dimension == "ratio":
        return f"{number(value)}x"
    if found.dimension == "percent":
        return f"{number(value * 100)}%"
    if found.dimension == "count_rate":
        return f"{number(value)}/s"
    return number(value)


def ratio_of(numerator: Any, denominator: Any) -> float:
    """numerator / denominator, both figures of one dimension (or plain numbers)."""
    if isinstance(numerator, dict) and isinstance(denominator, dict):
        top, bottom = unit(numerator["unit"]), unit(denominator["unit"])
        if top.dimension != bottom.dimension:
            raise ValueError(f"cannot divide a {top.dimension} by a {bottom.dimension}")
    down = figure_base(denominator)
    if down == 0:
        raise ValueError("division by a zero figure")
    return figure_base(numerator) / down
